package ui

import (
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/rollout"
	"github.com/bringup-dev/bringup/remote/startup"
)

// drive runs cmd as the program would and feeds what it answers back,
// recursively. Commands that do not answer at once (ticks) are left.
func drive(t *testing.T, m *Model, cmd tea.Cmd) {
	t.Helper()
	if cmd == nil {
		return
	}
	ch := make(chan tea.Msg, 1)
	go func() { ch <- cmd() }()
	var msg tea.Msg
	select {
	case msg = <-ch:
	case <-time.After(20 * time.Millisecond):
		return // a tick
	}
	switch msg := msg.(type) {
	case tea.BatchMsg:
		for _, c := range msg {
			drive(t, m, c)
		}
	case actionIssued, actionsIssued, rolloutIssued:
		_, next := m.Update(msg)
		drive(t, m, next)
	}
}

// feed sends a batch built from the fixture with hosts changed by edit
// and the given events, and drives what it asks for.
func feed(t *testing.T, m *Model, edit func(hs []remote.HostState), evs ...event.Event) {
	t.Helper()
	b := fleetFixture()
	b.Events = evs
	if edit != nil {
		edit(b.Hosts)
	}
	_, cmd := m.Update(batchMsg(b))
	drive(t, m, cmd)
}

func actionEv(host string, id int, name string, stage event.ActionStage) event.Event {
	return event.Event{Host: host, Kind: event.KindAction, Time: now,
		Action: &event.ActionResult{ID: id, Name: name, Stage: stage}}
}

func calls(src *fakeSource) []doCall { return append([]doCall(nil), src.calls...) }

func TestPreflightRefusalThenSafeMode(t *testing.T) {
	m, src := newTestModel(t, 120, 40)
	press(m, "j", "j", "r") // gpu3 runs validate with CUDA graphs on
	if m.dialog == nil || m.dialog.kind != dlgPreflight {
		t.Fatalf("r on gpu3 did not open the preflight dialog: %+v", m.dialog)
	}
	out := render(m)
	for _, want := range []string{"preflight refused", "not capture-safe", "set kdtree-verify to off, then restart",
		"set kdtree-verify to on, then restart", "type 1 (the number of hosts) to confirm"} {
		if !strings.Contains(out, want) {
			t.Errorf("preflight dialog lacks %q:\n%s", want, out)
		}
	}
	cmd := press(m, "enter") // the first safe mode offered: on
	if len(src.calls) != 0 {
		t.Fatal("Do called inside Update")
	}
	drive(t, m, cmd)
	want := []doCall{
		{"gpu3", remote.Action{Kind: remote.ActSetMode, Kernel: "kdtree-verify", Mode: "on"}},
		{"gpu3", remote.Action{Kind: remote.ActRestart}},
	}
	if got := calls(src); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Do calls %+v, want %+v", got, want)
	}
}

func TestPreflightOverrideNeedsTheHostCount(t *testing.T) {
	m, src := newTestModel(t, 120, 40)
	press(m, "j", "j", "r")
	drive(t, m, press(m, "2", "enter"))
	if len(src.calls) != 0 || m.dialog == nil {
		t.Fatalf("the wrong count went on: calls %v, dialog %v", src.calls, m.dialog)
	}
	if !strings.Contains(m.status, "type 1") {
		t.Fatalf("status %q does not say what to type", m.status)
	}
	drive(t, m, press(m, "backspace", "1", "enter"))
	want := doCall{"gpu3", remote.Action{Kind: remote.ActRestart, Force: true}}
	if got := calls(src); len(got) != 1 || got[0] != want {
		t.Fatalf("Do calls %+v, want %+v", got, want)
	}
	if m.dialog != nil {
		t.Fatal("dialog still open")
	}
}

func TestPreflightErrorFromTheDriverShows(t *testing.T) {
	m, _ := newTestModel(t, 120, 40)
	ev := actionEv("gpu3", 4, "restart", event.ActionFailed)
	ev.Action.Err = (&remote.PreflightError{Host: "gpu3", Reason: "kdtree-verify=validate is not capture-safe", SafeModes: []string{"off", "on"}}).Error()
	feed(t, m, nil, ev)
	if !m.statusErr || !strings.Contains(m.status, "preflight: kdtree-verify=validate is not capture-safe") {
		t.Fatalf("status %q", m.status)
	}
}

func setupPending(t *testing.T, m *Model, _ *fakeSource) {
	feed(t, m, func(hs []remote.HostState) {
		hs[2].UnitState.Environment = []string{"KDTREE_MODE=on"}
		hs[2].Modes = modes(kernels.DefaultCatalog(), "on")
		hs[2].KernelHashes = map[string]string{"kdtree-verify": "5e6f7a8b9c0d1e2f"}
	})
}

func TestHostViewModesOnDiskAndStarted(t *testing.T) {
	m, src := newTestModel(t, 120, 40)
	src.local = map[string]string{"kdtree-verify": "1a2b3c4d5e6f"}
	setupPending(t, m, src)
	press(m, "j", "j", "enter")
	out := render(m)
	for _, want := range []string{"kdtree-verify  on disk on · started with validate · ↻ restart pending",
		"build 5e6f7a8b ≠ local 1a2b3c4d"} {
		if !strings.Contains(out, want) {
			t.Errorf("host view lacks %q:\n%s", want, out)
		}
	}
	press(m, "esc", "k")
	press(m, "enter")
	if out := render(m); strings.Contains(out, "restart pending") {
		t.Errorf("gpu2 runs the mode on disk but shows a pending restart:\n%s", out)
	}
}

func TestUndoConfirmsThenDo(t *testing.T) {
	m, src := newTestModel(t, 120, 40)
	press(m, "j", "j", "u")
	out := render(m)
	for _, want := range []string{"Undo the last mode change of kdtree-verify on gpu3?", "put back kdtree-verify's drop-in"} {
		if !strings.Contains(out, want) {
			t.Errorf("undo confirmation lacks %q:\n%s", want, out)
		}
	}
	drive(t, m, press(m, "y"))
	want := doCall{"gpu3", remote.Action{Kind: remote.ActUndoMode, Kernel: "kdtree-verify"}}
	if got := calls(src); len(got) != 1 || got[0] != want {
		t.Fatalf("Do calls %+v, want %+v", got, want)
	}
}

func setupDrift(t *testing.T, m *Model, src *fakeSource) {
	src.local = map[string]string{"kdtree-verify": "aaaa1111"}
	feed(t, m, func(hs []remote.HostState) {
		for i := range hs {
			hs[i].KernelHashes = map[string]string{"kdtree-verify": "aaaa1111"}
		}
		hs[1].KernelHashes["kdtree-verify"] = "bbbb2222"
	})
}

func TestDriftBadge(t *testing.T) {
	m, src := newTestModel(t, 120, 40)
	if out := render(m); strings.Contains(out, "drift") || strings.Contains(out, "≠build") {
		t.Fatalf("drift shown without hashes:\n%s", out)
	}
	setupDrift(t, m, src)
	out := render(m)
	if !strings.Contains(lines(out)[0], "drift 1/4") {
		t.Errorf("header lacks the drift badge: %q", lines(out)[0])
	}
	if row := rowOf(out, "gpu2"); !strings.Contains(row, "≠build") {
		t.Errorf("gpu2 row lacks ≠build: %q", row)
	}
	if row := rowOf(out, "gpu1"); strings.Contains(row, "≠build") {
		t.Errorf("gpu1 runs the build but shows ≠build: %q", row)
	}
	// Every host on the build: no badge.
	feed(t, m, func(hs []remote.HostState) {
		for i := range hs {
			hs[i].KernelHashes = map[string]string{"kdtree-verify": "aaaa1111"}
		}
	})
	if out := render(m); strings.Contains(out, "drift") || strings.Contains(out, "≠build") {
		t.Fatalf("drift shown with every host on the build:\n%s", out)
	}
	// No local hash, the hosts disagree: the odd one out.
	src.local = nil
	feed(t, m, func(hs []remote.HostState) {
		for i := range hs {
			hs[i].KernelHashes = map[string]string{"kdtree-verify": "aaaa1111"}
		}
		hs[3].KernelHashes["kdtree-verify"] = "cccc3333"
	})
	out = render(m)
	if !strings.Contains(lines(out)[0], "drift: 2 versions") || !strings.Contains(rowOf(out, "gpu4"), "drift") {
		t.Fatalf("hosts disagreeing without a local hash:\n%s", out)
	}
}

func setupProgress(t *testing.T, m *Model, _ *fakeSource) {
	a := &event.ActionResult{ID: 3, Name: "redeploy kdtree-verify", Stage: event.ActionProgress, Percent: 58, Detail: "116/200 files"}
	feed(t, m, func(hs []remote.HostState) { hs[1].Action = a },
		event.Event{Host: "gpu2", Kind: event.KindAction, Time: now, Action: a})
}

func TestRedeployProgressBar(t *testing.T) {
	m, src := newTestModel(t, 120, 40)
	setupProgress(t, m, src)
	out := render(m)
	want := "redeploy kdtree-verify █████▊░░░░ 58% · 116/200 files"
	if st := lines(out)[len(lines(out))-2]; !strings.Contains(st, "gpu2 "+want) {
		t.Errorf("status line %q lacks the progress bar", st)
	}
	if row := rowOf(out, "gpu2"); !strings.Contains(row, "58%") {
		t.Errorf("gpu2 row lacks the progress: %q", row)
	}
	press(m, "j", "enter")
	if out := render(m); !strings.Contains(out, "▶ redeploy kdtree-verify") || !strings.Contains(out, "58% · 116/200 files") {
		t.Errorf("host view lacks the progress:\n%s", out)
	}
	// Done: the bar goes.
	done := &event.ActionResult{ID: 3, Name: "redeploy kdtree-verify", Stage: event.ActionDone}
	feed(t, m, func(hs []remote.HostState) { hs[1].Action = done },
		event.Event{Host: "gpu2", Kind: event.KindAction, Time: now, Action: done})
	if out := render(m); strings.Contains(out, "  ▶ redeploy") || strings.Contains(lines(out)[len(lines(out))-2], "58%") {
		t.Errorf("progress still shown after done:\n%s", out)
	}
}

func setupCommands(t *testing.T, m *Model, _ *fakeSource) {
	cmd := func(d string, c event.Command) event.Event {
		return event.Event{Host: "gpu3", Kind: event.KindCommand, Time: at(d), Command: &c}
	}
	start := actionEv("gpu3", 5, "mode kdtree-verify=on", event.ActionStarted)
	start.Time = at("12m20s")
	done := actionEv("gpu3", 5, "mode kdtree-verify=on", event.ActionDone)
	done.Time = at("12m22s")
	feed(t, m, nil,
		start,
		cmd("12m21s", event.Command{Via: "sftp", Text: "write /etc/systemd/system/sglang.service.d/60-bringup-kdtree-verify.conf", Result: "312 bytes", Duration: 40 * time.Millisecond}),
		cmd("12m21s", event.Command{Via: "dbus", Text: "org.freedesktop.systemd1.Manager.Reload", Duration: 180 * time.Millisecond}),
		cmd("12m22s", event.Command{Via: "exec", Text: "systemctl show -p Environment sglang.service", Exit: 0, Result: "KDTREE_MODE=on", Duration: 85 * time.Millisecond}),
		done,
		cmd("12m23s", event.Command{Via: "exec", Text: "sudo -n install -m 0644 x /opt/kdtree/site", Exit: 1, Err: "sudo: a password is required", Duration: 1200 * time.Millisecond}),
	)
}

func TestCommandLogListsCommands(t *testing.T) {
	m, src := newTestModel(t, 160, 48)
	setupCommands(t, m, src)
	press(m, "@")
	out := render(m)
	for _, want := range []string{
		"10:12:20 gpu3 #5   mode kdtree-verify=on started",
		"dbus  org.freedesktop.systemd1.Manager.Reload → 180ms",
		"exec  systemctl show -p Environment sglang.service → exit 0 · KDTREE_MODE=on · 85ms",
		"10:12:22 gpu3 #5   mode kdtree-verify=on done",
		"→ error: sudo: a password is required · 1.2s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("@ lacks %q:\n%s", want, out)
		}
	}
	// Commands are not journal lines.
	r := m.ring("gpu3")
	for seq := r.first(); seq < r.total; seq++ {
		if strings.Contains(r.at(seq).Text, "systemctl show") {
			t.Fatal("a command reached the host's log pane")
		}
	}
}

func TestCommandLogIsBoundedAndScrolls(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	var evs []event.Event
	for i := range maxActions + 20 {
		evs = append(evs, event.Event{Host: "gpu1", Kind: event.KindCommand, Time: now.Add(time.Duration(i) * time.Second),
			Command: &event.Command{Via: "exec", Text: "true #" + strconv.Itoa(i)}})
	}
	feed(t, m, nil, evs...)
	if len(m.remoteCommands.entries) != maxActions || m.remoteCommands.dropped != 20 {
		t.Fatalf("%d entries, %d dropped; want %d, 20", len(m.remoteCommands.entries), m.remoteCommands.dropped, maxActions)
	}
	press(m, "@")
	if out := render(m); !strings.Contains(out, "true #519") || !strings.Contains(out, "20 older dropped") {
		t.Fatalf("@ does not end at the newest:\n%s", out)
	}
	press(m, "g")
	if out := render(m); !strings.Contains(out, "true #20 ") || strings.Contains(out, "true #519") {
		t.Fatalf("g did not go to the oldest:\n%s", out)
	}
	press(m, "G", "esc")
	if m.focus.top() != focusTable {
		t.Fatal("esc did not close @")
	}
}

func TestRestartFollowsTheNewInvocation(t *testing.T) {
	m, _ := newTestModel(t, 120, 40)
	press(m, "j", "j", "j", "enter") // gpu4
	feed(t, m, nil, event.Event{Host: "gpu4", Kind: event.KindJournal, Time: now, Journal: &event.Journal{InvocationID: "old", Message: "old run"}})
	press(m, "f") // pause the pane
	drive(t, m, press(m, "r", "y"))
	if !m.host.log.follow {
		t.Fatal("the pane does not follow after the restart")
	}
	press(m, "k") // the person scrolls up while it stops
	feed(t, m, nil, event.Event{Host: "gpu4", Kind: event.KindJournal, Time: now, Journal: &event.Journal{InvocationID: "new1234567890abc", Message: "first line"}})
	if !m.host.log.follow {
		t.Fatal("the pane does not follow the new invocation")
	}
	if out := render(m); !strings.Contains(out, "── new invocation new123456789 ──") || !strings.Contains(out, "first line") {
		t.Fatalf("no marker at the new invocation:\n%s", out)
	}
}

// startRolloutOn marks hosts (table rows), opens R, sets the mode to off
// (from on) and confirms.
func startRolloutOn(t *testing.T, m *Model, rows ...int) {
	t.Helper()
	for _, r := range rows {
		press(m, "g")
		for range r {
			press(m, "j")
		}
		press(m, "space")
	}
	press(m, "R", "l", "enter")
	if m.dialog == nil || m.dialog.rollout == nil || !m.dialog.rollout.confirming {
		t.Fatalf("rollout form did not reach its confirmation:\n%s", render(m))
	}
	drive(t, m, press(m, "y"))
	if m.rollout == nil || m.focus.view() != focusRollout {
		t.Fatal("no rollout view")
	}
}

// serving and failing are startups of a new invocation.
func newRun(inv string, ph startup.Phase, d *startup.Diagnosis) startup.Startup {
	st := startup.Startup{InvocationID: inv, StartedAt: at("9m"), Phase: ph, PhaseSince: at("9m40s"), Engine: "sglang", Diag: d,
		Spans: spans(startup.Starting, "9m", startup.Init, "9m05s", startup.Weights, "9m40s")}
	if ph == startup.Serving || ph == startup.Failed {
		st.PhaseSince = at("12m")
		st.Spans = spans(startup.Starting, "9m", startup.Init, "9m05s", startup.Weights, "9m40s", startup.GraphCapture, "11m30s", ph, "12m")
	}
	return st
}

var captureDiag = &startup.Diagnosis{Cause: "gpu-oom", Summary: "CUDA out of memory during graph capture",
	Hint: "lower --mem-fraction-static or --cuda-graph-max-bs, then restart", Phase: startup.GraphCapture,
	Evidence: []string{"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"}}

func setupRolloutRunning(t *testing.T, m *Model, _ *fakeSource) {
	startRolloutOn(t, m, 0, 1)
	feed(t, m, nil, actionEv("gpu1", 1, "mode kdtree-verify=off", event.ActionDone))
	feed(t, m, func(hs []remote.HostState) { hs[0].Startup = newRun("inv-gpu1", startup.Weights, nil) },
		actionEv("gpu1", 2, "restart", event.ActionDone))
}

// setupRolloutHalted rolls out to gpu1 and gpu2; gpu1 serves, gpu2 fails.
func setupRolloutHalted(t *testing.T, m *Model, _ *fakeSource) {
	setupRolloutRunning(t, m, nil)
	haltRollout(t, m)
}

// haltRollout takes the running rollout on: gpu1 serves, gpu2 fails.
func haltRollout(t *testing.T, m *Model) {
	serving := func(hs []remote.HostState) { hs[0].Startup = newRun("inv-gpu1", startup.Serving, nil) }
	feed(t, m, serving)
	feed(t, m, serving, actionEv("gpu2", 3, "mode kdtree-verify=off", event.ActionDone))
	feed(t, m, func(hs []remote.HostState) {
		serving(hs)
		hs[1].Startup = newRun("inv-gpu2", startup.Failed, captureDiag)
		hs[1].UnitState.ActiveState, hs[1].UnitState.SubState = "failed", "failed"
	}, actionEv("gpu2", 4, "restart", event.ActionDone))
}

func TestRolloutHaltsThenRollsBack(t *testing.T) {
	m, src := newTestModel(t, 120, 40)
	setupRolloutRunning(t, m, src)
	on := remote.Action{Kind: remote.ActSetMode, Kernel: "kdtree-verify", Mode: "off"}
	restart := remote.Action{Kind: remote.ActRestart}
	if got := calls(src); len(got) != 2 || got[0] != (doCall{"gpu1", on}) || got[1] != (doCall{"gpu1", restart}) {
		t.Fatalf("Do calls %+v, want gpu1's mode then restart", got)
	}
	if out := render(m); !strings.Contains(rowOf(out, "gpu1"), "starting") || !strings.Contains(rowOf(out, "gpu2"), "pending") {
		t.Fatalf("rollout view:\n%s", out)
	}
	haltRollout(t, m)
	if got := calls(src); len(got) != 4 || got[2] != (doCall{"gpu2", on}) || got[3] != (doCall{"gpu2", restart}) {
		t.Fatalf("Do calls %+v, want gpu2's mode then restart after gpu1 served", got)
	}
	if st := m.rollout.r.State(); st.Status != rollout.Halted || st.Host != "gpu2" {
		t.Fatalf("state %+v, want halted on gpu2", st)
	}
	out := render(m)
	for _, want := range []string{"halted on gpu2", "✗ gpu2: CUDA out of memory during graph capture", "[b] roll gpu2 back to kdtree-verify=on"} {
		if !strings.Contains(out, want) {
			t.Errorf("halted view lacks %q:\n%s", want, out)
		}
	}
	press(m, "b")
	if m.dialog == nil || !strings.Contains(render(m), "Roll gpu2 back to kdtree-verify=on?") {
		t.Fatalf("b did not ask:\n%s", render(m))
	}
	drive(t, m, press(m, "y"))
	undo := remote.Action{Kind: remote.ActUndoMode, Kernel: "kdtree-verify"}
	if got := calls(src); len(got) != 5 || got[4] != (doCall{"gpu2", undo}) {
		t.Fatalf("Do calls %+v, want gpu2's undo", got)
	}
	feed(t, m, nil, actionEv("gpu2", 5, "undo mode kdtree-verify", event.ActionDone))
	if got := calls(src); len(got) != 6 || got[5] != (doCall{"gpu2", restart}) {
		t.Fatalf("Do calls %+v, want gpu2's restart after the undo", got)
	}
}

func TestRolloutHoldsBatchesWhileIssuing(t *testing.T) {
	m, src := newTestModel(t, 120, 40)
	press(m, "space", "R", "l", "l", "l", "enter")
	cmd := press(m, "y")
	// The mode change is done before its id came back.
	feed(t, m, nil, actionEv("gpu1", 1, "mode kdtree-verify=on", event.ActionDone))
	if got := calls(src); len(got) != 0 {
		t.Fatalf("Do calls %+v before the command ran", got)
	}
	drive(t, m, cmd)
	if got := calls(src); len(got) != 2 || got[1].a.Kind != remote.ActRestart {
		t.Fatalf("Do calls %+v, want the restart after the held outcome", got)
	}
}

func TestRolloutAbort(t *testing.T) {
	m, _ := newTestModel(t, 120, 40)
	setupRolloutRunning(t, m, nil)
	press(m, "a")
	if st := m.rollout.r.State(); st.Status != rollout.Aborted {
		t.Fatalf("state %+v after a", st)
	}
	if out := render(m); !strings.Contains(out, "aborted") || !strings.Contains(rowOf(out, "gpu2"), "untouched") {
		t.Fatalf("aborted view:\n%s", out)
	}
}

func TestRolloutPreflightForTheTargetMode(t *testing.T) {
	m, src := newTestModel(t, 120, 40)
	press(m, "R", "l", "l", "enter") // mode validate on all hosts
	if m.dialog == nil || m.dialog.kind != dlgPreflight || m.dialog.hosts != 4 {
		t.Fatalf("no preflight for a rollout to validate: %+v", m.dialog)
	}
	if out := render(m); !strings.Contains(out, "Rollout to 4 hosts: preflight refused") || !strings.Contains(out, "type 4") {
		t.Fatalf("preflight dialog:\n%s", out)
	}
	drive(t, m, press(m, "4", "enter"))
	if m.rollout == nil || !m.rollout.r.Plan().Force || len(src.calls) != 1 || src.calls[0].a.Mode != "validate" {
		t.Fatalf("override did not start a forced rollout: calls %+v", src.calls)
	}
}
