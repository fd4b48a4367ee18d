package output

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
)

// TestChange pins watch's two formats for a phase change and a failure:
// the text line people read and the JSON line scripts parse.
func TestChange(t *testing.T) {
	start := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	phase := remote.HostChange{Host: "gpu1", Seen: start.Add(201 * time.Second),
		Change: startup.Change{Kind: startup.ChangePhase, Time: start.Add(200 * time.Second), Phase: startup.Weights, From: startup.Init,
			Progress: startup.Progress{Done: 3, Total: 8, Label: "shards"}}}
	fail := remote.HostChange{Host: "gpu3", Seen: start.Add(631 * time.Second),
		Change: startup.Change{Kind: startup.ChangeFail, Time: start.Add(630 * time.Second), Phase: startup.Failed,
			Diag: &startup.Diagnosis{Cause: "graph-capture-host-sync", Summary: "a host sync during CUDA graph capture",
				Hint: "set a capture-safe mode", Phase: startup.GraphCapture, KernelMode: "kdtree-verify=validate",
				Evidence: []string{"RuntimeError: CUDA error: operation not permitted when stream is capturing"},
				Fix:      &startup.Fix{Kernel: "kdtree-verify", Mode: "on"}}}}

	var text bytes.Buffer
	Change(&text, phase, start, false)
	Change(&text, fail, start, false)
	want := "2026-11-30T10:03:20.000000Z gpu1     weights at +3m20s (3/8 shards)\n" +
		"2026-11-30T10:10:30.000000Z gpu3     FAILED in graph-capture at +10m30s: a host sync during CUDA graph capture [graph-capture-host-sync]\n" +
		strings.Repeat(" ", len(TimeLayout)+9) + " hint: set a capture-safe mode\n" +
		strings.Repeat(" ", len(TimeLayout)+9) + " evidence: RuntimeError: CUDA error: operation not permitted when stream is capturing\n" +
		strings.Repeat(" ", len(TimeLayout)+9) + " fix: bringup mode gpu3 kdtree-verify=on --restart\n"
	if text.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", text.String(), want)
	}

	var js bytes.Buffer
	Change(&js, phase, start, true)
	Change(&js, fail, start, true)
	lines := strings.Split(strings.TrimSpace(js.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("JSON: %d lines, want 2:\n%s", len(lines), js.String())
	}
	var p, f Line
	if err := json.Unmarshal([]byte(lines[0]), &p); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &f); err != nil {
		t.Fatal(err)
	}
	checkLines(t, js.String())
	if p.V != 1 || p.Kind != "phase" || p.Phase != "weights" || p.From != "init" || p.Progress == nil || *p.Progress != (Progress{3, 8, "shards"}) ||
		p.Elapsed == nil || *p.Elapsed != 200 || p.Time != "2026-11-30T10:03:20Z" || p.Latency == nil || *p.Latency != 1 {
		t.Errorf("phase line %s", lines[0])
	}
	if f.Kind != "failed" || f.Cause != "graph-capture-host-sync" || f.FailedIn != "graph-capture" || f.KernelMode != "kdtree-verify=validate" ||
		f.Fix != "bringup mode gpu3 kdtree-verify=on --restart" || len(f.Evidence) != 1 || f.Elapsed == nil || *f.Elapsed != 630 {
		t.Errorf("failure line %s", lines[1])
	}
}

// TestTimeout: the text line of a watch's timeout; under --json the
// summary line says it, with exit 2 and each host's last phase.
func TestTimeout(t *testing.T) {
	var js, text bytes.Buffer
	Timeout(&text, 90*time.Second, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if text.String() != "2026-01-02T03:04:05.000000Z timeout after 1m30s\n" {
		t.Errorf("text timeout %q", text.String())
	}
	hosts := []remote.HostState{{Name: "gpu1"}, {Name: "gpu2"}}
	hosts[0].Startup.Phase, hosts[1].Startup.Phase = startup.Serving, startup.Weights
	WatchSummary(&js, "watch", hosts, Deployments{}, "timeout", 2, "timeout after 1m30s")
	checkLines(t, js.String())
	var l Line
	if err := json.Unmarshal(js.Bytes(), &l); err != nil || l.Kind != "summary" || l.Command != "watch" || l.Outcome != "timeout" ||
		l.Exit == nil || *l.Exit != 2 || l.Err != "timeout after 1m30s" || len(l.Hosts) != 2 ||
		l.Hosts[0].Host != "gpu1" || l.Hosts[0].Outcome != "serving" || l.Hosts[0].Phase != "serving" || l.Hosts[1].Outcome != "unsettled" {
		t.Errorf("JSON timeout %q: %+v %v", js.String(), l, err)
	}
}

// TestNotLoadedUnit: a host without the unit (systemd's LoadState
// not-found) says so in watch's line and status's state column, instead
// of passing for a stopped unit ("inactive/dead").
func TestNotLoadedUnit(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	missing := event.Unit{Name: "sglang.service", LoadState: "not-found", ActiveState: "inactive", SubState: "dead"}
	tr := startup.NewTracker(startup.Options{Engine: "sglang"})
	var text bytes.Buffer
	for _, c := range tr.Apply(event.Event{Host: "gpu2", Kind: event.KindUnit, Time: at, Unit: &missing}) {
		Change(&text, remote.HostChange{Host: "gpu2", Seen: at, Change: c}, time.Time{}, false)
	}
	if want := "2026-11-30T10:00:00.000000Z gpu2     unit not-found\n"; !strings.Contains(text.String(), want) {
		t.Errorf("watch lines:\n%s\nwant the line %q", text.String(), want)
	}

	var table bytes.Buffer
	hs := remote.HostState{Name: "gpu2", Unit: "sglang.service", UnitState: missing, Conn: event.Conn{State: event.ConnUp}}
	StatusTable(&table, []remote.HostState{hs})
	if row := table.String(); !strings.Contains(row, "not-found") || strings.Contains(row, "inactive/dead") {
		t.Errorf("status table:\n%s\nwant the state column to say not-found", row)
	}
	if s := StatusOf(hs); s.State != "not-found" {
		t.Errorf("status --json state %q, want not-found", s.State)
	}
	running := missing
	running.ActiveState, running.SubState = "active", "running"
	if s := StatusOf(remote.HostState{UnitState: running}); s.State != "active/running, not-found" {
		t.Errorf("a running unit whose file went away: state %q", s.State)
	}
}

// TestNotice pins the watch line of a host key learned on first contact,
// and that other gaps and notes print nothing there.
func TestNotice(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	msg := "learned new host key for gpu1: ssh-ed25519 SHA256:abc, added to /root/.ssh/known_hosts:3"
	learned := event.Event{Host: "gpu1", Kind: event.KindGap, Time: at, Seen: at, Gap: &event.Gap{Reason: event.GapHostKey, Message: msg}}
	other := event.Event{Host: "gpu1", Kind: event.KindGap, Time: at, Gap: &event.Gap{Reason: "note", Message: "unit state read through systemctl"}}
	var text, js bytes.Buffer
	for _, ev := range []event.Event{learned, other} {
		Notice(&text, ev, false)
		Notice(&js, ev, true)
	}
	if want := "2026-11-30T10:00:00.000000Z gpu1     " + msg + "\n"; text.String() != want {
		t.Errorf("text %q, want %q", text.String(), want)
	}
	checkLines(t, js.String())
	var l Line
	if err := json.Unmarshal(js.Bytes(), &l); err != nil || l.Kind != "host-key" || l.Host != "gpu1" || l.Summary != msg || l.Latency == nil || *l.Latency != 0 {
		t.Errorf("JSON %s: %+v, %v", js.String(), l, err)
	}
}

// TestChangeUnknownSaysWhy: a host that cannot be reached prints as
// unknown with the connection's error, in text and in JSON (conn_error,
// as status names it).
func TestChangeUnknownSaysWhy(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	refused := "dial 127.0.0.1: connect 127.0.0.1:1: dial tcp 127.0.0.1:1: connect: connection refused"
	c := remote.HostChange{Host: "gpu1", Seen: at, ConnErr: refused,
		Change: startup.Change{Kind: startup.ChangePhase, Time: at, Phase: startup.Unknown, From: startup.Stopped}}
	var text, js bytes.Buffer
	Change(&text, c, time.Time{}, false)
	Change(&js, c, time.Time{}, true)
	if want := "2026-11-30T10:00:00.000000Z gpu1     unknown (" + refused + ")\n"; text.String() != want {
		t.Errorf("text %q, want %q", text.String(), want)
	}
	var l Line
	if err := json.Unmarshal(js.Bytes(), &l); err != nil || l.Phase != "unknown" || l.ConnErr != refused {
		t.Errorf("JSON %s: %+v %v", js.String(), l, err)
	}
	if err := ValidateLine(js.Bytes()); err != nil {
		t.Errorf("JSON %s: %v", js.String(), err)
	}
}

// TestStatusRuns: status --json names the unit's current run, and lists
// the runs when systemd started the unit more than once.
func TestStatusRuns(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	hs := remote.HostState{Name: "gpu3"}
	hs.Startup.Phase, hs.Startup.Run = startup.Init, 3
	for n := 1; n <= 3; n++ {
		r := startup.Run{N: n, Start: at.Add(time.Duration(n) * time.Minute), Outcome: startup.Failed, Reached: startup.Init}
		if n == 3 {
			r.Outcome = startup.Init
		}
		hs.Startup.Runs = append(hs.Startup.Runs, r)
	}
	s := StatusOf(hs)
	if s.Run != 3 || len(s.Runs) != 3 || s.Runs[0].Outcome != "failed" || s.Runs[2].Outcome != "init" {
		t.Errorf("status line run %d, runs %+v; want run 3 and three runs, two failed", s.Run, s.Runs)
	}
	one := remote.HostState{Name: "gpu1"}
	one.Startup.Run, one.Startup.Runs = 1, []startup.Run{{N: 1, Outcome: startup.Serving}}
	if s := StatusOf(one); s.Run != 1 || s.Runs != nil {
		t.Errorf("one run: run %d, runs %+v; want run 1 and no list", s.Run, s.Runs)
	}
}
