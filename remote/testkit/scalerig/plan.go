// Package scalerig feeds a real VictoriaLogs the journals of N hosts with
// no host booted: each host replays a real startup of the corpus
// (remote/startup/testdata/corpus), shifted in time, as journald records
// it and systemd-journal-upload ships it (_HOSTNAME, _SYSTEMD_UNIT,
// _SYSTEMD_INVOCATION_ID, cursors, PID 1's messages about the unit),
// through the store's own journald insert API. A share of the hosts
// replays a failed startup. The console side (the store fleet, the
// console model) is measured by `testbed scale` (cmd/testbed), which
// uses it.
package scalerig

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/remote/startup/corpus"
)

// Unit is the unit every rig host runs.
const Unit = "sglang.service"

// The MESSAGE_IDs of PID 1's messages the rig writes (systemd's
// sd-messages.h; the same as a real capture, remote/vlogs/testdata).
const (
	msgStarted       = "39f53479d3a045ac8e11786248231fbf"
	msgExited        = "98e322203f7a4ed290d09fe03c09fe15"
	msgFailureResult = "d9b373ed55a64feb8242e02dbe79a49c"
)

// Entry is one journal entry: its time and its fields in the order they
// are written.
type Entry struct {
	Time   time.Time
	Fields [][2]string
}

// Host is one rig host's startup.
type Host struct {
	Name   string
	Engine string
	Log    string // the corpus log's name
	Fail   bool   // the log is a failed startup
	Cause  string // its cause id, when Fail
	Start  time.Time
	// FailedAt is PID 1's "Failed with result" entry's time (zero when
	// the startup serves): the failure's journal timestamp.
	FailedAt time.Time
	Entries  []Entry
}

// PlanOptions shape a plan.
type PlanOptions struct {
	Hosts int
	// FailEvery: every FailEvery-th host replays a failed startup, the
	// others a served one (default 10: a tenth fail).
	FailEvery int
	// First is the first host's start; each next host starts Stagger
	// later (0: all at once).
	First   time.Time
	Stagger time.Duration
	// Duration is how long one startup's lines are spread over (default
	// 30 s): a corpus log is the lines a report kept, about 12, of a
	// startup that took tens of seconds to minutes.
	Duration time.Duration
	// Run numbers the start (0 the first): a later run is each host's
	// unit started again (a rollout's restart), with its own invocation
	// id, its entries' sequence numbers after the run before's.
	Run int
}

// Plan builds the hosts' startups from the corpus logs: served and failed
// logs only (a log that ends mid-startup has no final state to wait for),
// taken in turn. Pure: the same inputs give the same entries.
func Plan(logs []corpus.Log, o PlanOptions) ([]Host, error) {
	if o.FailEvery <= 0 {
		o.FailEvery = 10
	}
	if o.Duration <= 0 {
		o.Duration = 30 * time.Second
	}
	var served, failed []corpus.Log
	for _, l := range logs {
		switch l.Expect {
		case "served":
			served = append(served, l)
		case "failed":
			failed = append(failed, l)
		}
	}
	if len(served) == 0 || len(failed) == 0 {
		return nil, fmt.Errorf("scalerig: corpus has %d served and %d failed logs; need both", len(served), len(failed))
	}
	hosts := make([]Host, o.Hosts)
	for i := range hosts {
		fail := i%o.FailEvery == o.FailEvery-1
		var l corpus.Log
		if fail {
			l = failed[(i/o.FailEvery)%len(failed)]
		} else {
			l = served[i%len(served)]
		}
		hosts[i] = host(i, o.Run, l, fail, o.First.Add(time.Duration(i)*o.Stagger), o.Duration)
	}
	return hosts, nil
}

// Name is rig host i's name (its _HOSTNAME).
func Name(i int) string { return fmt.Sprintf("gpu%05d", i) }

// host is one host's entries: PID 1's "Started", the log's lines spread
// over d, and for a failed startup the main process's exit and the unit's
// failure, as systemd 252 writes them.
func host(i, run int, l corpus.Log, fail bool, start time.Time, d time.Duration) Host {
	name := Name(i)
	h := Host{Name: name, Engine: l.Engine, Log: l.Name, Fail: fail, Start: start}
	if fail {
		h.Cause = l.Cause
	}
	machine := hexID(name, "machine")
	boot := hexID(name, "boot")
	seqID := hexID(name, "seqnum")
	inv := hexID(name, "invocation"+strconv.Itoa(run))
	pid := strconv.Itoa(1000 + i%30000)
	seq := run * 1_000_000
	add := func(t time.Time, fields ...[2]string) {
		seq++
		mono := t.Sub(start) + time.Hour
		cursor := fmt.Sprintf("s=%s;i=%x;b=%s;m=%x;t=%x;x=%s", seqID, seq, boot, mono.Microseconds(), t.UnixMicro(), hexID(name, strconv.Itoa(seq))[:16])
		common := [][2]string{
			{"__CURSOR", cursor},
			{"__REALTIME_TIMESTAMP", strconv.FormatInt(t.UnixMicro(), 10)},
			{"__MONOTONIC_TIMESTAMP", strconv.FormatInt(mono.Microseconds(), 10)},
			{"_BOOT_ID", boot},
			{"_MACHINE_ID", machine},
			{"_HOSTNAME", name},
		}
		h.Entries = append(h.Entries, Entry{Time: t, Fields: append(common, fields...)})
	}
	pid1 := func(t time.Time, id, msg string, extra ...[2]string) {
		f := [][2]string{{"PRIORITY", "6"}, {"SYSLOG_FACILITY", "3"}, {"SYSLOG_IDENTIFIER", "systemd"}, {"TID", "1"},
			{"_PID", "1"}, {"_UID", "0"}, {"_GID", "0"}, {"_COMM", "systemd"}, {"_EXE", "/usr/lib/systemd/systemd"},
			{"_TRANSPORT", "journal"}, {"_SYSTEMD_CGROUP", "/init.scope"}, {"_SYSTEMD_UNIT", "init.scope"}, {"_SYSTEMD_SLICE", "-.slice"},
			{"MESSAGE_ID", id}, {"UNIT", Unit}, {"INVOCATION_ID", inv}, {"MESSAGE", msg}}
		add(t, append(f, extra...)...)
	}
	pid1(start, msgStarted, "Started "+Unit+" - inference server.", [2]string{"JOB_TYPE", "start"}, [2]string{"JOB_RESULT", "done"})
	lines := strings.Split(strings.TrimRight(l.Body, "\n"), "\n")
	step := d / time.Duration(len(lines)+1)
	t := start
	for _, line := range lines {
		t = t.Add(step)
		add(t, [2]string{"PRIORITY", "6"}, [2]string{"SYSLOG_FACILITY", "3"}, [2]string{"SYSLOG_IDENTIFIER", "python3"},
			[2]string{"_PID", pid}, [2]string{"_UID", "0"}, [2]string{"_GID", "0"}, [2]string{"_COMM", "python3"},
			[2]string{"_TRANSPORT", "stdout"}, [2]string{"_STREAM_ID", hexID(name, "stream")},
			[2]string{"_SYSTEMD_CGROUP", "/system.slice/" + Unit}, [2]string{"_SYSTEMD_UNIT", Unit},
			[2]string{"_SYSTEMD_SLICE", "system.slice"}, [2]string{"_SYSTEMD_INVOCATION_ID", inv},
			[2]string{"MESSAGE", line})
	}
	if fail {
		t = t.Add(50 * time.Millisecond)
		pid1(t, msgExited, Unit+": Main process exited, code=exited, status=1/FAILURE",
			[2]string{"COMMAND", "ExecStart"}, [2]string{"EXIT_CODE", "exited"}, [2]string{"EXIT_STATUS", "1"})
		t = t.Add(time.Millisecond)
		pid1(t, msgFailureResult, Unit+": Failed with result 'exit-code'.", [2]string{"UNIT_RESULT", "exit-code"})
		h.FailedAt = t
	}
	return h
}

// hexID is a stable 128-bit id in journald's spelling, from a host's name
// and what it identifies.
func hexID(name, what string) string {
	s := sha256.Sum256([]byte(name + "\x00" + what))
	return hex.EncodeToString(s[:16])
}
