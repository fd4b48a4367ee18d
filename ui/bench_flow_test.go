package ui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
)

// benchCount is a bench's counted progress event, as remote/live sends it
// (the fleet gives it the action's id).
func benchCount(host string, id, done, total int, res *event.Bench) event.Event {
	a := &event.ActionResult{ID: id, Name: "bench 64×8", Stage: event.ActionProgress, Done: done, Total: total, Percent: done * 100 / total}
	if res != nil {
		a.Bench, a.Detail = res, res.Summary()
	}
	return event.Event{Host: host, Kind: event.KindAction, Time: now, Action: a}
}

// TestBenchKeyFlow: b on a serving host asks first (N, concurrency, the
// host), y issues the bench through the source, the overlay counts its
// requests as they come (the log is spared the counts), esc stops it
// through the source's Cancel (not the UI: it does no IO), and the
// result, partial here, shows in the host view, in its log and in the
// status line once the action ended.
func TestBenchKeyFlow(t *testing.T) {
	m, src := newTestModel(t, 200, 44)
	press(m, "b") // gpu1 serves
	if m.dialog == nil || m.dialog.kind != dlgConfirm || m.dialog.action.Kind != remote.ActBench {
		t.Fatalf("b did not open the bench confirmation: %+v", m.dialog)
	}
	out := render(m)
	for _, want := range []string{"Bench gpu1: 64 requests, 8 at a time?", "send 64 completions, at most 8 at a time, to sglang.service's",
		"changes nothing on the host", "never more than 64 requests"} {
		if !strings.Contains(out, want) {
			t.Errorf("confirmation lacks %q:\n%s", want, out)
		}
	}
	cmd := press(m, "y")
	if len(src.calls) != 0 {
		t.Fatal("Do called inside Update")
	}
	drive(t, m, cmd)
	if got := calls(src); len(got) != 1 || got[0].host != "gpu1" || got[0].a.Kind != remote.ActBench || got[0].a.Requests != 64 || got[0].a.Concurrency != 8 {
		t.Fatalf("Do calls = %+v", got)
	}
	if m.focus.top() != focusBench {
		t.Fatalf("no progress overlay: focus %s", m.focus.top())
	}
	feed(t, m, nil, event.Event{Host: "gpu1", Kind: event.KindAction, Time: now, Action: &event.ActionResult{ID: 1, Name: "bench 64×8", Stage: event.ActionStarted}},
		benchCount("gpu1", 1, 1, 64, nil), benchCount("gpu1", 1, 24, 64, nil))
	out = render(m)
	if !strings.Contains(out, "24/64 requests") || !strings.Contains(out, "esc/ctrl+c") {
		t.Errorf("the overlay does not count the requests:\n%s", out)
	}

	// ctrl+c stops the bench, not the console.
	cmd = press(m, "ctrl+c")
	if cmd == nil {
		t.Fatal("ctrl+c in the overlay did nothing")
	}
	switch msg := cmd().(type) {
	case tea.QuitMsg:
		t.Fatal("ctrl+c quit the console while a bench ran")
	case benchCancelled:
		if len(msg.errs) != 0 {
			t.Fatalf("stop: %v", msg.errs)
		}
	default:
		t.Fatalf("stop answered %#v", msg)
	}
	if len(src.cancels) != 1 || src.cancels[0].host != "gpu1" || src.cancels[0].a.Requests != 1 {
		t.Fatalf("Cancel calls = %+v", src.cancels)
	}
	if !strings.Contains(render(m), "stopping") {
		t.Error("the overlay does not say it is stopping")
	}

	res := &event.Bench{Requests: 30, OK: 30, Concurrency: 8, Interrupted: true, Duration: 2 * time.Second, ReqPerSec: 15, OutputTokens: 1920, OutputTPS: 960,
		TTFTP50: 41 * time.Millisecond, TTFTP99: 88 * time.Millisecond, LatencyP50: 610 * time.Millisecond, LatencyP99: 930 * time.Millisecond}
	withBench := func(hs []remote.HostState) {
		hs[0].Bench = &remote.BenchRun{Time: now, Action: 1, Modes: map[string]string{"kdtree-verify": "on"}, Bench: *res}
	}
	failed := actionEv("gpu1", 1, "bench 64×8", event.ActionFailed)
	failed.Action.Err = "gpu1: bench stopped after 30 of 64 requests: cancelled"
	feed(t, m, withBench, benchCount("gpu1", 1, 30, 64, res), failed)
	if m.focus.top() == focusBench || m.bench != nil {
		t.Fatalf("the overlay stayed after the bench ended: focus %s", m.focus.top())
	}
	if !strings.Contains(m.status, "gpu1: bench 960 output tok/s · 15.0 req/s · TTFT p50 41ms p99 88ms · latency p50 610ms p99 930ms · 30/30 ok, 8 at a time") || !strings.Contains(m.status, "stopped early") || !m.statusErr {
		t.Errorf("status = %q (err %v)", m.status, m.statusErr)
	}
	press(m, "enter")
	out = render(m)
	for _, want := range []string{"bench 960 output tok/s · 15.0 req/s", "#1 bench 64×8 result: 960 output tok/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("host view lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "24/64 requests") {
		t.Errorf("the log shows the request counts:\n%s", out)
	}
}

// TestBenchRefusedNotServing: b on a host that does not serve says why and
// asks nothing; in read-only mode a bench is still offered (it changes
// nothing on the host).
func TestBenchRefusedNotServing(t *testing.T) {
	m, src := newTestModel(t, 120, 40)
	press(m, "j", "b") // gpu2 loads weights
	if m.dialog != nil {
		t.Fatalf("a dialog opened on a host not serving: %+v", m.dialog)
	}
	if !strings.Contains(m.status, "gpu2: not serving (phase weights): a smoke load needs a serving host") || !m.statusErr {
		t.Errorf("status = %q", m.status)
	}
	// Marked hosts: one not serving refuses the lot, naming it.
	press(m, "k", "space", "j", "space", "b")
	if m.dialog != nil || !strings.Contains(m.status, "gpu2: not serving") {
		t.Errorf("marked gpu1+gpu2: dialog %+v, status %q", m.dialog, m.status)
	}
	src.ro = true
	m2, _ := newTestModel(t, 120, 40)
	m2.src = src
	press(m2, "b")
	if m2.dialog == nil || m2.dialog.action.Kind != remote.ActBench {
		t.Errorf("read-only refused the bench: status %q", m2.status)
	}
}
