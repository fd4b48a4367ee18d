package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// storeHosts is the fleet of TestStoreFleet: the most test hosts one run
// may boot.
const storeHosts = 16

// TestStoreFleet follows 16 real hosts through VictoriaLogs only: each
// host's systemd-journal-upload feeds the testbed's store, and `bringup
// watch --json --source victorialogs=URL` sees every phase of the 15
// hosts in mode on and gpu3's validate-mode capture failure with its
// cause, without opening an SSH connection but one to gpu3 once it fails
// (its unit's Environment, so that the diagnosis names the mode; closed
// when watch ends). Then `bringup mode gpu3
// kdtree-verify=on --restart` acts over SSH (opened for the action, closed
// after), follows the new run through the store to serving, and a last
// watch through the store shows gpu3 serving.
func TestStoreFleet(t *testing.T) {
	tb := testbed.StartWith(t, testbed.Options{Hosts: storeHosts, LogStore: true, Host: func(i int) testbed.HostOptions {
		if i == 2 {
			return testbed.HostOptions{KernelMode: "validate"}
		}
		return testbed.HostOptions{KernelMode: "on"}
	}})
	w := &actWorld{tb: tb, cfg: tb.Inventory() + "/config.yaml"}
	src := "--source=victorialogs=" + tb.LogStoreURL()
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()

	// sshSessions counts the established connections to each host's sshd,
	// read in the hosts' own network namespaces (not over SSH).
	sshSessions := func() map[string]int {
		t.Helper()
		s, err := tb.SSHSessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	var out, errOut syncBuffer
	codeCh := make(chan int, 1)
	start := time.Now()
	go func() {
		codeCh <- run(ctx, testEnv(&out, &errOut), []string{"watch", "--json", "--timeout", "4m", "--config", w.cfg, src})
	}()
	time.Sleep(2 * time.Second) // watch is up and tailing before the units start
	for _, h := range tb.Hosts() {
		w.sh(t, ctx, h.Name, "systemctl start sglang")
	}
	unitsStarted := time.Now()
	// While watch follows the whole fleet through the store, no host has
	// an SSH connection (the test's own, which started the units, are
	// closed): the starts above are done. gpu3 alone may have one once its
	// run fails, opened to read its unit's Environment (the kernel mode).
	time.Sleep(3 * time.Second)
	if s := sshSessions(); len(s) > 1 || len(s) == 1 && s["gpu3"] == 0 {
		t.Errorf("SSH connections while watching through the store: %v", s)
	}
	code := <-codeCh
	took := time.Since(unitsStarted)
	if code != exitFailed {
		t.Fatalf("watch exit %d, want %d\n%s%s", code, exitFailed, out.String(), errOut.String())
	}
	story := readWatch(t, out.String())
	for _, h := range tb.Hosts() {
		if h.Name == "gpu3" {
			continue
		}
		for _, want := range []string{"starting", "init", "weights", "kv-cache", "graph-capture", "http", "warmup", "serving"} {
			if !slices.Contains(story.phases[h.Name], want) {
				t.Errorf("%s phases %v lack %s", h.Name, story.phases[h.Name], want)
			}
		}
	}
	fail, ok := story.failed["gpu3"]
	if !ok || fail.Cause != "graph-capture-host-sync" || fail.FailedIn != "graph-capture" || fail.KernelMode != "kdtree-verify=validate" {
		t.Fatalf("gpu3 failure = %+v\n%s", fail, out.String())
	}
	if len(story.failed) != 1 {
		t.Errorf("failed hosts %v, want gpu3 only", story.failed)
	}
	t.Logf("%d hosts through the store: units started → every host settled in %v (watch ran %v)", storeHosts, took.Round(10*time.Millisecond), time.Since(start).Round(10*time.Millisecond))
	if s := sshSessions(); len(s) > 0 {
		t.Errorf("SSH connections after watching through the store: %v", s)
	}

	// The fix, over SSH for gpu3 only; its outcome read from the store.
	code, mout, merr := w.bringup(ctx, "mode", "gpu3", "kdtree-verify=on", "--restart", "--yes", "--timeout", "2m", "--config", w.cfg, src)
	if code != exitServing {
		t.Fatalf("mode gpu3 kdtree-verify=on --restart through the store: exit %d\n%s%s", code, mout, merr)
	}
	for _, want := range []string{"mode kdtree-verify=on: done", "restart: done", "serving (invocation"} {
		if !strings.Contains(mout, want) {
			t.Errorf("mode output lacks %q:\n%s", want, mout)
		}
	}
	if s := sshSessions(); len(s) > 0 {
		t.Errorf("SSH connections left after the action: %v", s)
	}
	code, wout, werr := w.bringup(ctx, "watch", "--json", "--timeout", "1m", "--config", w.cfg, src, "gpu3")
	if code != exitServing || !slices.Contains(readWatch(t, wout).phases["gpu3"], "serving") {
		t.Fatalf("watch gpu3 through the store after the fix: exit %d\n%s%s", code, wout, werr)
	}
	fmt.Fprintln(testWriter{t}, "gpu3 after the fix, through the store:\n"+wout)
	// doctor on the store: it answers, each host's journal and the
	// unit's entries arrive, no clock ahead (the inventory's
	// config-store.yaml names the store).
	code, dout, derr := w.bringup(ctx, "doctor", "--json", "--config", tb.Inventory()+"/"+testbed.StoreConfigName, "gpu1", "gpu3")
	status := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(dout), "\n") {
		var c struct{ Kind, Host, Check, Status string }
		if err := json.Unmarshal([]byte(l), &c); err == nil && c.Kind == "check" {
			status[c.Host+" "+c.Check] = c.Status
		}
	}
	for _, h := range []string{"gpu1", "gpu3"} {
		for _, c := range []string{"log store", "uploads", "clock"} {
			if status[h+" "+c] != "ok" {
				t.Errorf("doctor through the store: %s %s is %q (exit %d)\n%s%s", h, c, status[h+" "+c], code, dout, derr)
			}
		}
	}
	// status through the store: every host serving, the state marked as
	// read from the journal.
	code, sout, serr := w.bringup(ctx, "status", "--json", "--config", w.cfg, src)
	var rows []output.Line
	for l := range strings.Lines(strings.TrimSpace(sout)) {
		if err := output.ValidateLine([]byte(l)); err != nil {
			t.Errorf("status through the store: %v\n%s", err, l)
		}
		var row output.Line
		if err := json.Unmarshal([]byte(l), &row); err == nil && row.Kind == "status" {
			rows = append(rows, row)
		}
	}
	if code != exitServing || len(rows) != storeHosts {
		t.Fatalf("status through the store: exit %d, %d hosts\n%s%s", code, len(rows), sout, serr)
	}
	for _, h := range rows {
		if h.Phase != "serving" || h.StatePath != "journal" {
			t.Errorf("status %s: phase %s, state path %q, want serving from the journal", h.Host, h.Phase, h.StatePath)
		}
	}

	// Side by side, at once on the same hosts and load: a watch over SSH
	// and one through the store, the units stopped first so that both
	// wait, then all 16 started. Time to a full table (a line for every
	// host) and the latency each adds (a phase line's receipt less its
	// host timestamp), medians over the new runs' phase lines.
	for _, h := range tb.Hosts() {
		w.sh(t, ctx, h.Name, "systemctl stop sglang")
	}
	// The store learns a unit's state from PID 1's journal lines, which
	// reach it through systemd-journal-upload a moment after the stop: a
	// watch begun before they are in replays the runs that served and may
	// end on them (flaky here: half the runs). Both watches start once
	// the store too says every unit stopped, as they would for someone
	// who stopped a fleet and then watched it start.
	for deadline := time.Now().Add(time.Minute); ; {
		_, sout, _ := w.bringup(ctx, "status", "--json", "--config", w.cfg, src)
		stopped := 0
		for l := range strings.Lines(strings.TrimSpace(sout)) {
			var row output.Line
			if err := json.Unmarshal([]byte(l), &row); err == nil && row.Kind == "status" && row.Phase == "stopped" {
				stopped++
			}
		}
		if stopped == storeHosts {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store says %d of %d units stopped a minute after the stop\n%s", stopped, storeHosts, sout)
		}
		time.Sleep(500 * time.Millisecond)
	}
	type watcher struct {
		name        string
		out, errOut syncBuffer
		code        chan int
		full        time.Duration
	}
	began := time.Now()
	var ws []*watcher
	for _, c := range []struct{ name, src string }{{"ssh", "--source=ssh"}, {"store", src}} {
		wr := &watcher{name: c.name, code: make(chan int, 1)}
		ws = append(ws, wr)
		go func() {
			wr.code <- run(ctx, testEnv(&wr.out, &wr.errOut), []string{"watch", "--json", "--timeout", "3m", "--config", w.cfg, c.src})
		}()
	}
	for _, wr := range ws {
		for {
			hosts := map[string]bool{}
			for _, l := range watchLines(t, wr.out.String()) {
				if l.Host != "" { // a fleet-wide line (a note, the summary) is no host's
					hosts[l.Host] = true
				}
			}
			if len(hosts) == storeHosts {
				wr.full = time.Since(began)
				break
			}
			if time.Since(began) > time.Minute {
				t.Fatalf("%s watch: lines for %d hosts after a minute\n%s%s", wr.name, len(hosts), wr.out.String(), wr.errOut.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	startAt := time.Now()
	for _, h := range tb.Hosts() {
		w.sh(t, ctx, h.Name, "systemctl start sglang")
	}
	for _, wr := range ws {
		if code := <-wr.code; code != exitServing {
			t.Fatalf("%s watch: exit %d\n%s%s", wr.name, code, wr.out.String(), wr.errOut.String())
		}
		var lat []time.Duration
		for _, l := range watchLines(t, wr.out.String()) {
			at, err := time.Parse(output.JSONTimeLayout, l.Time)
			if l.Kind == "phase" && err == nil && l.Latency != nil && !at.Before(startAt.Truncate(time.Second)) {
				lat = append(lat, time.Duration(*l.Latency*float64(time.Second)))
			}
		}
		if len(lat) < storeHosts*8 {
			t.Errorf("%s watch: %d phase lines of the new runs, want every phase of 16 hosts", wr.name, len(lat))
			continue
		}
		slices.Sort(lat)
		t.Logf("%s: full table after %v; phase-line latency median %v, p90 %v (%d lines)", wr.name,
			wr.full.Round(time.Millisecond), lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*9/10].Round(time.Millisecond), len(lat))
	}
}

// testWriter sends lines to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
