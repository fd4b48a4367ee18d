package startup

import (
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
)

const sgReady = "[2025-01-24 09:40:08] The server is fired up and ready to roll!"

func TestServingNeedsEvidence(t *testing.T) {
	tests := []struct {
		name         string
		requireProbe bool
		steps        func(h *host)
		want         Phase
	}{
		{"ready line but unit activating", false, func(h *host) { h.unit("activating", "start", ""); h.lines(sgReady) }, Warmup},
		{"active and ready, no probes at all", false, func(h *host) { h.unit("active", "running", ""); h.lines(sgReady) }, Serving},
		{"active and ready, probe required", true, func(h *host) { h.unit("active", "running", ""); h.lines(sgReady) }, Warmup},
		{"probed host waits for an OK", false, func(h *host) { h.unit("active", "running", ""); h.probe(false); h.lines(sgReady) }, Warmup},
		{"probed host serves on OK", false, func(h *host) { h.unit("active", "running", ""); h.probe(false); h.lines(sgReady); h.probe(true) }, Serving},
		{"probe OK without ready line", true, func(h *host) { h.unit("active", "running", ""); h.probe(true) }, Starting},
		{"active alone is not serving", false, func(h *host) { h.unit("active", "running", "") }, Starting},
		// The log store's view: probes while a host view was open, then
		// the prober stopped; the run serves on its unit and ready line.
		{"probed, then the prober stopped", false, func(h *host) {
			h.unit("active", "running", "")
			h.probe(false)
			h.apply(event.Event{Kind: event.KindProbe, Probe: &event.Probe{Path: "/health", Stopped: true}})
			h.lines(sgReady)
		}, Serving},
		{"the prober stopped, probe still required", true, func(h *host) {
			h.unit("active", "running", "")
			h.apply(event.Event{Kind: event.KindProbe, Probe: &event.Probe{Path: "/health", OK: true, Stopped: true}})
			h.lines(sgReady)
		}, Warmup},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHost(t, Options{Engine: "sglang", RequireProbe: tt.requireProbe})
			tt.steps(h)
			if got := h.phase(); got != tt.want {
				t.Errorf("phase = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestChangesReported(t *testing.T) {
	h := newHost(t, Options{Engine: "sglang"})
	h.unit("activating", "start", "")
	h.unit("active", "running", "")
	h.lines(sgWeights, sgReady)
	var phases []string
	for _, c := range h.kinds(ChangePhase) {
		phases = append(phases, string(c.From)+">"+string(c.Phase))
	}
	// The ready line is serving's evidence: with the unit active and no
	// probe expected, the host serves at once (warmup is what a ready
	// host shows while the unit or the probe has not agreed yet).
	if got := strings.Join(phases, " "); got != "stopped>starting starting>weights weights>serving" {
		t.Errorf("phase changes: %s", got)
	}
	units := h.kinds(ChangeUnit)
	if len(units) != 2 || units[0].Unit != "activating/start" || units[1].Unit != "active/running" {
		t.Errorf("unit changes: %+v", units)
	}
	if c := h.kinds(ChangePhase)[1]; !c.Time.Equal(t0.Add(3 * time.Second)) {
		t.Errorf("weights entered at %v, want the line's time", c.Time)
	}
}

func TestStuckAndRecovery(t *testing.T) {
	h := newHost(t, Options{Engine: "sglang", StuckAfter: map[Phase]time.Duration{Weights: time.Minute}})
	h.unit("activating", "start", "")
	h.lines(sgWeights) // at t0+2s
	if ch := h.tr.Tick(t0.Add(62 * time.Second)); ch != nil {
		t.Fatalf("stuck too early: %+v", ch)
	}
	ch := h.tr.Tick(t0.Add(63 * time.Second))
	if len(ch) != 1 || ch[0].Phase != Stuck || ch[0].From != Weights {
		t.Fatalf("tick: %+v", ch)
	}
	if st := h.tr.State(); st.Phase != Stuck || st.StuckIn != Weights || !st.PhaseSince.Equal(t0.Add(63*time.Second)) {
		t.Errorf("state %s in %s since %v", st.Phase, st.StuckIn, st.PhaseSince)
	}
	if ch := h.tr.Tick(t0.Add(time.Hour)); ch != nil {
		t.Errorf("stuck twice: %+v", ch)
	}
	h.now = t0.Add(70 * time.Second)
	h.lines("Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.17s/it]")
	if st := h.tr.State(); st.Phase != Weights || st.Progress.Done != 1 || st.StuckIn != "" {
		t.Errorf("after a shard line: %s %+v", st.Phase, st.Progress)
	}
	// Serving and starting are never stuck.
	h2 := newHost(t, Options{Engine: "sglang"})
	h2.unit("active", "running", "")
	if ch := h2.tr.Tick(t0.Add(24 * time.Hour)); ch != nil {
		t.Errorf("starting went stuck: %+v", ch)
	}
}

func TestUnreachableKeepsState(t *testing.T) {
	h := newHost(t, Options{Engine: "sglang"})
	h.unit("activating", "start", "")
	h.lines(sgWeights)
	h.apply(event.Event{Kind: event.KindConn, Conn: &event.Conn{State: event.ConnDown}})
	if st := h.tr.State(); st.Phase != Unknown || st.LastKnown != Weights {
		t.Fatalf("down: %s, last known %s", st.Phase, st.LastKnown)
	}
	if ch := h.tr.Tick(t0.Add(time.Hour)); ch != nil {
		t.Errorf("unreachable host went stuck: %+v", ch)
	}
	h.apply(event.Event{Kind: event.KindConn, Conn: &event.Conn{State: event.ConnUp}})
	st := h.tr.State()
	if st.Phase != Weights || st.LastKnown != "" || !st.PhaseSince.Equal(t0.Add(2*time.Second)) {
		t.Errorf("up again: %s since %v", st.Phase, st.PhaseSince)
	}
}

// TestRestartLoop runs a failing invocation, systemd's auto-restart and a
// second invocation: the second starts clean, the restart is counted once,
// and late lines of the first are dropped.
func TestRestartLoop(t *testing.T) {
	h := newHost(t, Options{Engine: "sglang"})
	h.unit("activating", "start", "")
	h.lines(sgCapture, "torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing")
	h.exitFailure()
	h.apply(event.Event{Kind: event.KindJournal, Journal: &event.Journal{
		InvocationID: "inv-1", PID: 1, MessageID: "5eb03494b6584870a536b337290809b3",
		Message: "sglang.service: Scheduled restart job, restart counter is at 1.", Fields: map[string]string{"N_RESTARTS": "1"},
	}})
	if st := h.tr.State(); st.Phase != Restarting || st.Diag == nil || st.Diag.Cause != "graph-capture-host-sync" {
		t.Fatalf("after restart scheduled: %s %+v", st.Phase, st.Diag)
	}
	h.apply(event.Event{Kind: event.KindUnit, Unit: &event.Unit{ActiveState: "activating", SubState: "auto-restart", Result: "exit-code", InvocationID: "inv-1", NRestarts: 1}})
	h.inv = "inv-2"
	h.apply(event.Event{Kind: event.KindUnit, Unit: &event.Unit{ActiveState: "activating", SubState: "start", InvocationID: "inv-2", NRestarts: 1}})
	st := h.tr.State()
	if st.Phase != Starting || st.InvocationID != "inv-2" || st.Diag != nil || len(st.Spans) != 1 || st.Restarts != 1 {
		t.Fatalf("new invocation: %+v", st)
	}
	// A late line of inv-1 must not touch inv-2.
	h.apply(event.Event{Kind: event.KindJournal, Journal: &event.Journal{InvocationID: "inv-1", Message: "[2025-01-24 09:39:20 TP0] Received sigquit from a child process. It usually means the child failed."}})
	h.lines(sgWeights)
	h.exitFailure()
	if d := h.tr.State().Diag; d == nil || d.Cause != "unit-failed" || d.Phase != Weights {
		t.Errorf("second run's diagnosis: %+v", d)
	}
	// A manual restart (new invocation, counter unchanged) counts too.
	h.inv = "inv-3"
	h.unit("activating", "start", "")
	if st := h.tr.State(); st.Restarts != 2 || st.Phase != Starting {
		t.Errorf("manual restart: restarts %d, phase %s", st.Restarts, st.Phase)
	}
}

func TestCleanStop(t *testing.T) {
	h := newHost(t, Options{Engine: "sglang"})
	h.unit("active", "running", "")
	h.lines(sgReady)
	h.systemd("Stopping sglang.service - SGLang server...", "sglang.service: Deactivated successfully.", "Stopped sglang.service - SGLang server.")
	h.unit("inactive", "dead", "success")
	st := h.tr.State()
	if st.Phase != Stopped || st.Diag != nil || len(h.kinds(ChangeFail)) != 0 {
		t.Errorf("clean stop: %s %+v", st.Phase, st.Diag)
	}
	if last := st.Spans[len(st.Spans)-1]; last.Phase != Serving || last.End.IsZero() {
		t.Errorf("serving span not closed: %+v", last)
	}
}

func TestStateIsACopy(t *testing.T) {
	h := seedStory(t, "validate", false)
	st := h.tr.State()
	st.Spans[0].Phase = "x"
	st.Diag.Evidence[0] = "x"
	st.Diag.Cause = "x"
	again := h.tr.State()
	if again.Spans[0].Phase != Starting || again.Diag.Evidence[0] == "x" || again.Diag.Cause == "x" {
		t.Errorf("State shares memory with the tracker")
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		pack RulePack
		want string
	}{
		{RulePack{Engine: "x", Phases: []PhaseRule{{Keywords: []string{"abc"}, Pattern: "("}}}, "pack x: phases[0].pattern: "},
		{RulePack{Engine: "x", Phases: []PhaseRule{{Keywords: []string{"abc"}}, {Pattern: "a"}}}, "pack x: phases[1].keywords: empty"},
		{RulePack{Engine: "x", Failures: []FailureRule{{Keywords: []string{"a"}, Cause: "c"}}}, "pack x: failures[0].keywords[0]"},
		{RulePack{Engine: "x", Failures: []FailureRule{{Keywords: []string{"abc"}}}}, "pack x: failures[0].cause: empty"},
		{RulePack{Engine: "x", Phases: []PhaseRule{{Keywords: []string{"abc"}, Phase: "nope"}}}, "pack x: phases[0].phase: "},
		{RulePack{Engine: "x", Failures: []FailureRule{{Keywords: []string{"abc"}, Cause: "c", InPhases: []Phase{Failed}}}}, "pack x: failures[0].in_phases[0]"},
		{RulePack{Engine: "x", DetectPattern: "["}, "pack x: detect_pattern: "},
	}
	for _, tt := range tests {
		_, err := tt.pack.Compile()
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%+v: err = %v, want prefix %q", tt.pack, err, tt.want)
		}
	}
	if _, err := CompilePacks(BuiltinPacks()); err != nil {
		t.Errorf("built-in packs: %v", err)
	}
}

// TestUserPack checks a pack from config adds a wording the built-ins do
// not know, with compiled packs shared between trackers.
func TestUserPack(t *testing.T) {
	user := RulePack{Engine: "sglang", Phases: []PhaseRule{{Keywords: []string{"Weights incoming"}, Pattern: `Weights incoming (?P<done>\d+) of (?P<total>\d+)`, Phase: Weights, Label: "files"}}}
	packs, err := CompilePacks(append(BuiltinPacks(), user))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		h := newHost(t, Options{Engine: "sglang", Compiled: packs})
		h.unit("activating", "start", "")
		h.lines("[2027-01-01 00:00:00 TP0] Weights incoming 2 of 7")
		if st := h.tr.State(); st.Phase != Weights || st.Progress != (Progress{2, 7, "files"}) {
			t.Errorf("user pack: %s %+v", st.Phase, st.Progress)
		}
	}
}

// FuzzApply feeds arbitrary messages through every path of the tracker; it
// must not panic, and its state must stay coherent.
func FuzzApply(f *testing.F) {
	for _, s := range []string{sgWeights, sgCapture, sgReady, "Capturing batches (bs=", "Loading safetensors checkpoint shards: 1% Completed | 99999999999999999999999/3", "sglang.service: Scheduled restart job, restart counter is at x.", "Starting x.service...", "Failed with result '", "\x00\xff", "Error: Exception: "} {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, msg string, kind uint8) {
		tr := NewTracker(Options{})
		at := t0
		for i := range 3 {
			at = at.Add(time.Second)
			j := &event.Journal{Message: msg, PID: int(kind % 2), InvocationID: []string{"", "a", "b"}[(int(kind)+i)%3]}
			if kind&4 != 0 {
				j.MessageID = "98e322203f7a4ed290d09fe03c09fe15"
			}
			tr.Apply(event.Event{Kind: event.KindJournal, Time: at, Journal: j})
			tr.Apply(event.Event{Kind: event.KindUnit, Time: at, Unit: &event.Unit{ActiveState: msg, SubState: msg, Result: msg, InvocationID: msg}})
			tr.Tick(at.Add(time.Hour))
		}
		st := tr.State()
		if st.Phase == "" || st.Phase == Failed && st.Diag == nil {
			t.Errorf("incoherent state: %+v", st)
		}
	})
}

// TestJoinedLate covers attaching to a run that started long before: its
// startup lines are not in the backlog, so a healthy probe is the evidence
// for serving; a run whose startup was seen still needs the ready line.
func TestJoinedLate(t *testing.T) {
	unitAt := func(h *host, start time.Time) {
		h.apply(event.Event{Kind: event.KindUnit, Unit: &event.Unit{Name: "sglang.service", ActiveState: "active",
			SubState: "running", InvocationID: h.inv, ExecMainStart: start}})
	}

	late := newHost(t, Options{Engine: "sglang"})
	unitAt(late, t0.Add(-3*time.Hour)) // started hours before the backlog
	late.lines(`[2026-11-30 10:00:02] INFO:     127.0.0.1:5 - "GET /health HTTP/1.1" 200 OK`)
	if got := late.tr.State().Phase; got == Serving {
		t.Fatalf("serving before any probe")
	}
	late.probe(false)
	if got := late.tr.State().Phase; got == Serving {
		t.Fatalf("serving on a failed probe")
	}
	late.probe(true)
	if got := late.tr.State().Phase; got != Serving {
		t.Fatalf("joined late with a healthy probe: phase %s, want serving", got)
	}

	seen := newHost(t, Options{Engine: "sglang"})
	unitAt(seen, t0)
	seen.lines("[2026-11-30 10:00:02 TP0] Load weight begin. avail mem=139.29 GB")
	seen.probe(true)
	if got := seen.tr.State().Phase; got == Serving {
		t.Fatalf("a run whose startup is in view needs its ready line; phase %s", got)
	}
}

// TestRestartOfFailedUnit: systemd reports a failed unit being started as
// failed with the new invocation id and its result reset to success before
// ActiveState moves on (seen over D-Bus on the testbed). That is the new
// run starting, not failing.
func TestRestartOfFailedUnit(t *testing.T) {
	h := newHost(t, Options{Engine: "sglang"})
	h.unit("active", "running", "success")
	h.exitFailure()
	h.unit("failed", "failed", "exit-code")
	if st := h.tr.State(); st.Phase != Failed {
		t.Fatalf("phase = %s, want failed", st.Phase)
	}
	h.inv = "inv-2"
	h.unit("failed", "failed", "success")
	if st := h.tr.State(); st.Phase != Starting || st.InvocationID != "inv-2" || st.Diag != nil {
		t.Fatalf("after the new id with failed/success: phase %s, invocation %s, diag %+v; want starting inv-2, no diagnosis", st.Phase, st.InvocationID, st.Diag)
	}
	h.unit("active", "running", "success")
	if st := h.tr.State(); st.Phase == Failed {
		t.Fatalf("new run failed: %+v", st)
	}
}

// TestBacklogAfterUnitState: attaching to a host whose unit was restarted
// after a failure, the unit state (the new run) can arrive before the
// journal backlog, which holds the old run's failure and then the new
// run's lines. The old run's lines must not take over.
func TestBacklogAfterUnitState(t *testing.T) {
	tr := newHost(t, Options{Engine: "sglang"}).tr
	now := t0.Add(time.Minute)
	tr.Apply(event.Event{Host: "gpu1", Kind: event.KindUnit, Time: now, Unit: &event.Unit{
		Name: "sglang.service", ActiveState: "active", SubState: "running", Result: "success", InvocationID: "inv-2"}})
	line := func(inv string, at time.Time, pid int, msg string) {
		tr.Apply(event.Event{Host: "gpu1", Kind: event.KindJournal, Time: at, Journal: &event.Journal{
			Unit: "sglang.service", InvocationID: inv, PID: pid, Priority: 6, Message: msg}})
	}
	line("inv-1", t0, 1, "sglang.service: Main process exited, code=exited, status=1/FAILURE")
	line("inv-1", t0.Add(time.Second), 1, "sglang.service: Failed with result 'exit-code'.")
	line("inv-2", t0.Add(10*time.Second), 1, "Started sglang.service - SGLang.")
	if st := tr.State(); st.Phase == Failed || st.InvocationID != "inv-2" || st.Diag != nil {
		t.Fatalf("phase %s, invocation %s, diag %+v: the old run's backlog took over", st.Phase, st.InvocationID, st.Diag)
	}
}

// TestLinesStampedAfterTheFailure: systemd says the run failed (over
// D-Bus) before the journal delivers the lines the process printed just
// before it died, and journald, which stamps a line when it reads it,
// stamped them after the failure. Until the journal shows the run's end
// they still place it; a line after that end does not.
func TestLinesStampedAfterTheFailure(t *testing.T) {
	h := newHost(t, Options{Engine: "sglang"})
	h.unit("activating", "start", "")
	h.unit("failed", "failed", "exit-code")
	h.lines(sgWeights, sgCapture, "Fatal Python error: Segmentation fault")
	st := h.tr.State()
	if st.Phase != Failed || st.Diag == nil || st.Diag.Phase != GraphCapture || st.Diag.Cause != "segfault" {
		t.Fatalf("phase %s, diagnosis %+v: want a segfault in graph-capture", st.Phase, st.Diag)
	}
	for _, sp := range st.Spans {
		if sp.End.Before(sp.Start) {
			t.Errorf("span %s ends (%s) before it starts (%s)", sp.Phase, sp.End, sp.Start)
		}
	}
	h.exitFailure()
	h.lines("[2025-01-24 09:40:01 TP0] Init torch distributed begin.", sgReady)
	if got := h.tr.State(); got.Diag == nil || got.Diag.Phase != GraphCapture || len(got.Spans) != len(st.Spans) {
		t.Errorf("after the run's end: diagnosis %+v, %d spans (want graph-capture, %d)", got.Diag, len(got.Spans), len(st.Spans))
	}
}
