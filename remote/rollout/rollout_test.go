package rollout

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
)

// fakeFleet is a hand-driven stand-in for fleet.Fleet: it numbers the
// actions the rollout issues, keeps every host's snapshot, and builds the
// batches the test feeds to Observe.
type fakeFleet struct {
	t      *testing.T
	r      *Rollout
	cat    kernels.Catalog
	now    time.Time
	nextID int
	hosts  []remote.HostState
	steps  []Step         // every step issued, in order
	last   map[string]int // host → id of its latest action
	fail   map[string]error
}

func newFleet(t *testing.T, names ...string) *fakeFleet {
	t.Helper()
	f := &fakeFleet{t: t, cat: kernels.DefaultCatalog(), now: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
		last: map[string]int{}, fail: map[string]error{}}
	for _, n := range names {
		// Every host serving in mode validate, with graphs off (so the
		// mode passed its preflight), in its first invocation.
		env := []string{"KDTREE_MODE=validate"}
		f.hosts = append(f.hosts, remote.HostState{Name: n,
			UnitState: event.Unit{ActiveState: "active", SubState: "running", Environment: env},
			Modes:     f.cat.ModesIn(env),
			Startup:   startup.Startup{Phase: startup.Serving, InvocationID: n + "-inv0", StartedAt: f.now.Add(-time.Hour)}})
	}
	return f
}

func (f *fakeFleet) plan(p Plan) {
	f.t.Helper()
	p.Now = func() time.Time { return f.now }
	r, err := New(p, f.cat)
	if err != nil {
		f.t.Fatalf("New: %v", err)
	}
	f.r = r
	f.issue(r.Start(f.snapshot()))
}

func (f *fakeFleet) host(name string) *remote.HostState {
	for i := range f.hosts {
		if f.hosts[i].Name == name {
			return &f.hosts[i]
		}
	}
	f.t.Fatalf("no host %s", name)
	return nil
}

func (f *fakeFleet) snapshot() []remote.HostState { return slices.Clone(f.hosts) }

// issue hands steps to the "fleet" as the loop would.
func (f *fakeFleet) issue(steps []Step) {
	for _, s := range steps {
		f.steps = append(f.steps, s)
		if err := f.fail[s.Host]; err != nil {
			f.r.Issued(s, 0, err)
			continue
		}
		f.nextID++
		f.last[s.Host] = f.nextID
		f.r.Issued(s, f.nextID, nil)
	}
}

// observe feeds a batch with evs and issues what comes back.
func (f *fakeFleet) observe(evs ...event.Event) {
	f.now = f.now.Add(time.Second)
	f.issue(f.r.Observe(remote.Batch{Hosts: f.snapshot(), Events: evs}))
}

// action is the outcome of host's latest action.
func (f *fakeFleet) action(host string, stage event.ActionStage, errText string) event.Event {
	return event.Event{Host: host, Kind: event.KindAction, Time: f.now,
		Action: &event.ActionResult{ID: f.last[host], Stage: stage, Err: errText}}
}

// done reports host's latest action done, applying a mode change to the
// host's environment as a real host would.
func (f *fakeFleet) done(host string) {
	f.t.Helper()
	s := f.lastStep(host)
	h := f.host(host)
	switch s.Action.Kind {
	case remote.ActSetMode:
		h.UnitState.Environment = []string{"KDTREE_MODE=" + s.Action.Mode}
	case remote.ActUndoMode:
		h.UnitState.Environment = []string{"KDTREE_MODE=validate"}
	default: // the other actions leave the environment as it is
	}
	h.Modes = f.cat.ModesIn(h.UnitState.Environment)
	f.observe(f.action(host, event.ActionDone, ""))
}

func (f *fakeFleet) lastStep(host string) Step {
	f.t.Helper()
	for i := len(f.steps) - 1; i >= 0; i-- {
		if f.steps[i].Host == host {
			return f.steps[i]
		}
	}
	f.t.Fatalf("no step issued for %s", host)
	return Step{}
}

// run moves host's startup to a new invocation in phase p.
func (f *fakeFleet) run(host, inv string, p startup.Phase, d *startup.Diagnosis) {
	h := f.host(host)
	if h.Startup.InvocationID != inv {
		h.Startup = startup.Startup{InvocationID: inv, StartedAt: f.now}
	}
	h.Startup.Phase, h.Startup.Diag = p, d
	h.UnitState.ActiveState, h.UnitState.SubState = "active", "running"
	if p == startup.Failed {
		h.UnitState.ActiveState, h.UnitState.SubState = "failed", "failed"
	}
	h.Startup.Spans = append(h.Startup.Spans, startup.Span{Phase: p, Start: f.now})
	f.observe()
}

// through takes host through its whole sequence to serving.
func (f *fakeFleet) through(host string, inv string) {
	f.t.Helper()
	for f.lastStep(host).Action.Kind != remote.ActRestart {
		f.done(host)
	}
	f.done(host)
	f.run(host, inv, startup.Starting, nil)
	f.run(host, inv, startup.Serving, nil)
}

func (f *fakeFleet) kinds(host string) []string {
	var out []string
	for _, s := range f.steps {
		if s.Host == host {
			out = append(out, s.Action.String())
		}
	}
	return out
}

func (f *fakeFleet) lane(host string) Lane {
	f.t.Helper()
	for _, l := range f.r.Lanes() {
		if l.Host == host {
			return l
		}
	}
	f.t.Fatalf("no lane %s", host)
	return Lane{}
}

func (f *fakeFleet) wantStages(want map[string]Stage) {
	f.t.Helper()
	for h, s := range want {
		if got := f.lane(h).Stage; got != s {
			f.t.Errorf("%s: stage %s, want %s", h, got, s)
		}
	}
}

var oom = &startup.Diagnosis{Cause: "gpu-oom", Summary: "CUDA out of memory loading weights", Hint: "lower --mem-fraction-static",
	Phase: startup.Weights, Evidence: []string{"torch.OutOfMemoryError: CUDA out of memory."}}

func modeOn() *ModeChange { return &ModeChange{Kernel: "kdtree-verify", Mode: "on"} }

func TestSecondFailsHaltsAndRollsBack(t *testing.T) {
	f := newFleet(t, "gpu1", "gpu2", "gpu3")
	f.plan(Plan{Hosts: []string{"gpu1", "gpu2", "gpu3"}, Mode: modeOn()})
	if got := f.kinds("gpu1"); !slices.Equal(got, []string{"mode kdtree-verify=on"}) {
		t.Fatalf("first steps %v, want the mode change on gpu1 only", got)
	}
	f.wantStages(map[string]Stage{"gpu1": StageApplying, "gpu2": StagePending, "gpu3": StagePending})

	f.through("gpu1", "gpu1-inv1")
	f.wantStages(map[string]Stage{"gpu1": StageServing, "gpu2": StageApplying})
	if got := f.kinds("gpu1"); !slices.Equal(got, []string{"mode kdtree-verify=on", "restart"}) {
		t.Errorf("gpu1 actions %v", got)
	}

	f.done("gpu2") // mode
	f.done("gpu2") // restart
	f.run("gpu2", "gpu2-inv1", startup.Weights, nil)
	f.wantStages(map[string]Stage{"gpu2": StageStarting})
	f.run("gpu2", "gpu2-inv1", startup.Failed, oom)

	st := f.r.State()
	if st.Status != Halted || st.Host != "gpu2" || st.Diag == nil || st.Diag.Cause != "gpu-oom" {
		t.Fatalf("state %+v, want halted on gpu2 with gpu-oom", st)
	}
	f.wantStages(map[string]Stage{"gpu1": StageServing, "gpu2": StageFailed, "gpu3": StageUntouched})
	if !f.r.Settled() {
		t.Error("a halted rollout with no rollback under way should be settled")
	}
	// gpu3 failing on its own afterwards changes nothing and issues nothing.
	f.run("gpu3", "gpu3-inv1", startup.Failed, oom)
	if got := f.kinds("gpu3"); len(got) != 0 {
		t.Fatalf("gpu3 got actions %v, want none", got)
	}
	if l := f.lane("gpu2"); l.PrevMode != "validate" || l.Diag == nil || l.Until.IsZero() {
		t.Errorf("gpu2 lane %+v: want prev mode validate, diagnosis, end time", l)
	}

	steps, err := f.r.Rollback("gpu2")
	if err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	want := []Step{{Host: "gpu2", Action: remote.Action{Kind: remote.ActUndoMode, Kernel: "kdtree-verify"}}}
	if !slices.Equal(steps, want) {
		t.Fatalf("rollback steps %+v, want %+v", steps, want)
	}
	f.issue(steps)
	f.wantStages(map[string]Stage{"gpu2": StageRollingBack})
	if f.r.Settled() {
		t.Error("settled with a rollback under way")
	}
	f.done("gpu2") // undo: gpu2 was serving before, so a restart follows
	if s := f.lastStep("gpu2"); s.Action.Kind != remote.ActRestart {
		t.Fatalf("after the undo: %v, want restart", s.Action)
	}
	f.done("gpu2")
	f.run("gpu2", "gpu2-inv2", startup.Serving, nil)
	f.wantStages(map[string]Stage{"gpu2": StageRolledBack, "gpu3": StageUntouched})
	if m := f.host("gpu2").Modes[0].Mode; m != "validate" {
		t.Errorf("gpu2 mode after rollback %s", m)
	}
	if !f.r.Settled() {
		t.Error("not settled after the rollback ended")
	}
	if _, err := f.r.Rollback("gpu2"); err == nil {
		t.Error("a second rollback of gpu2 was accepted")
	}
	if _, err := f.r.Rollback("gpu3"); !errors.Is(err, ErrNoRollback) {
		t.Errorf("rollback of untouched gpu3: %v, want ErrNoRollback", err)
	}
}

func TestRollbackOfHostThatWasNotRunningOnlyUndoes(t *testing.T) {
	f := newFleet(t, "gpu1")
	h := f.host("gpu1")
	h.Startup = startup.Startup{Phase: startup.Failed, InvocationID: "gpu1-inv0", StartedAt: f.now.Add(-time.Hour), Diag: oom}
	f.plan(Plan{Hosts: []string{"gpu1"}, Mode: modeOn()})
	f.done("gpu1")
	f.done("gpu1")
	f.run("gpu1", "gpu1-inv1", startup.Failed, oom)
	steps, err := f.r.Rollback("gpu1")
	if err != nil {
		t.Fatal(err)
	}
	f.issue(steps)
	f.done("gpu1")
	if got := f.kinds("gpu1"); !slices.Equal(got, []string{"mode kdtree-verify=on", "restart", "undo mode kdtree-verify"}) {
		t.Errorf("actions %v: a host that was failed before is not restarted by the rollback", got)
	}
	f.wantStages(map[string]Stage{"gpu1": StageRolledBack})
}

func TestOldInvocationServingIsNotSuccess(t *testing.T) {
	f := newFleet(t, "gpu1", "gpu2")
	f.plan(Plan{Hosts: []string{"gpu1", "gpu2"}})
	if got := f.kinds("gpu1"); !slices.Equal(got, []string{"restart"}) {
		t.Fatalf("rolling restart steps %v", got)
	}
	// The snapshot still shows the old run serving, before and after the
	// restart action is done.
	f.observe()
	f.done("gpu1")
	f.observe()
	f.wantStages(map[string]Stage{"gpu1": StageRestarting, "gpu2": StagePending})
	// A new invocation serving before the restart is reported done does
	// not count either (the action's outcome is what says it was ours).
	f2 := newFleet(t, "gpu1")
	f2.plan(Plan{Hosts: []string{"gpu1"}})
	f2.run("gpu1", "gpu1-inv1", startup.Serving, nil)
	f2.wantStages(map[string]Stage{"gpu1": StageRestarting})
	f2.done("gpu1")
	f2.wantStages(map[string]Stage{"gpu1": StageServing})
	if st := f2.r.State(); st.Status != Done {
		t.Errorf("state %+v, want done", st)
	}

	f.run("gpu1", "gpu1-inv1", startup.Starting, nil)
	f.wantStages(map[string]Stage{"gpu1": StageStarting, "gpu2": StagePending})
	f.run("gpu1", "gpu1-inv1", startup.Serving, nil)
	f.through("gpu2", "gpu2-inv1")
	if st := f.r.State(); st.Status != Done {
		t.Errorf("state %+v, want done", st)
	}
	if _, err := f.r.Rollback("gpu1"); !errors.Is(err, ErrNoRollback) {
		t.Errorf("rollback after a rolling restart: %v, want ErrNoRollback", err)
	}
}

// TestFailureNeedsTheUnitToAgree: a new invocation shown failed while its
// unit runs (a unit read mid-restart) is not a failure until the unit
// says the process is gone, or the grace period passes.
func TestFailureNeedsTheUnitToAgree(t *testing.T) {
	for _, tc := range []struct {
		name    string
		resolve func(f *fakeFleet)
		want    Stage
	}{
		{"startup goes on", func(f *fakeFleet) { f.run("gpu1", "gpu1-inv1", startup.Serving, nil) }, StageServing},
		{"unit fails", func(f *fakeFleet) { f.run("gpu1", "gpu1-inv1", startup.Failed, oom) }, StageFailed},
		{"grace passes", func(f *fakeFleet) {
			f.now = f.now.Add(failGrace)
			f.observe()
		}, StageFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFleet(t, "gpu1")
			f.plan(Plan{Hosts: []string{"gpu1"}})
			f.done("gpu1")
			h := f.host("gpu1")
			h.Startup = startup.Startup{InvocationID: "gpu1-inv1", StartedAt: f.now, Phase: startup.Failed,
				Diag: &startup.Diagnosis{Cause: "unit-failed"}}
			f.observe() // the unit still says active/running
			f.wantStages(map[string]Stage{"gpu1": StageStarting})
			tc.resolve(f)
			f.wantStages(map[string]Stage{"gpu1": tc.want})
		})
	}
}

func TestBatches(t *testing.T) {
	f := newFleet(t, "gpu1", "gpu2", "gpu3", "gpu4", "gpu5")
	f.plan(Plan{Hosts: []string{"gpu1", "gpu2", "gpu3", "gpu4", "gpu5"}, Batch: 2, Mode: modeOn(), Redeploy: "kdtree-verify"})
	for _, h := range []string{"gpu1", "gpu2"} {
		if got := f.kinds(h); len(got) != 1 {
			t.Fatalf("%s: %v, want its first step", h, got)
		}
	}
	f.through("gpu1", "gpu1-inv1")
	if got := f.kinds("gpu3"); len(got) != 0 {
		t.Fatalf("gpu3 started before gpu2 served: %v", got)
	}
	f.through("gpu2", "gpu2-inv1")
	if got := f.kinds("gpu2"); !slices.Equal(got, []string{"mode kdtree-verify=on", "redeploy kdtree-verify", "restart"}) {
		t.Errorf("gpu2 actions %v", got)
	}
	f.wantStages(map[string]Stage{"gpu3": StageApplying, "gpu4": StageApplying, "gpu5": StagePending})
	f.through("gpu4", "gpu4-inv1")
	f.through("gpu3", "gpu3-inv1")
	f.wantStages(map[string]Stage{"gpu5": StageApplying})
	f.through("gpu5", "gpu5-inv1")
	if st := f.r.State(); st.Status != Done {
		t.Errorf("state %+v, want done", st)
	}
	if l := f.lane("gpu5"); l.Batch != 2 || len(l.Phases) != 2 {
		t.Errorf("gpu5 lane %+v: want batch 2 and its two spans", l)
	}
}

func TestActionErrorsHalt(t *testing.T) {
	for _, tc := range []struct {
		name string
		act  func(f *fakeFleet)
		want string
	}{
		{"refused at issue", func(f *fakeFleet) {
			f.fail["gpu2"] = fmt.Errorf("mode on gpu2: %w", remote.ErrReadOnly)
			f.through("gpu1", "gpu1-inv1")
		}, "read-only"},
		{"mode change failed", func(f *fakeFleet) {
			f.through("gpu1", "gpu1-inv1")
			f.observe(f.action("gpu2", event.ActionFailed, "gpu2: sudo: a password is required"))
		}, "sudo"},
		{"restart refused by preflight", func(f *fakeFleet) {
			f.through("gpu1", "gpu1-inv1")
			f.done("gpu2")
			f.observe(f.action("gpu2", event.ActionFailed, "gpu2: preflight: not capture-safe"))
		}, "preflight"},
		{"timeout", func(f *fakeFleet) {
			f.through("gpu1", "gpu1-inv1")
			f.done("gpu2")
			f.done("gpu2")
			f.run("gpu2", "gpu2-inv1", startup.Weights, nil)
			f.now = f.now.Add(time.Hour)
			f.observe()
		}, "not serving after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFleet(t, "gpu1", "gpu2", "gpu3")
			f.plan(Plan{Hosts: []string{"gpu1", "gpu2", "gpu3"}, Mode: modeOn(), Timeout: 20 * time.Minute})
			tc.act(f)
			st := f.r.State()
			if st.Status != Halted || st.Host != "gpu2" || !strings.Contains(st.Err, tc.want) {
				t.Fatalf("state %+v, want halted on gpu2 with %q", st, tc.want)
			}
			if st.TimedOut != (tc.name == "timeout") {
				t.Errorf("TimedOut %v", st.TimedOut)
			}
			f.wantStages(map[string]Stage{"gpu1": StageServing, "gpu2": StageFailed, "gpu3": StageUntouched})
			if l := f.lane("gpu2"); !strings.Contains(l.Err, tc.want) {
				t.Errorf("gpu2 lane error %q", l.Err)
			}
			if got := f.kinds("gpu3"); len(got) != 0 {
				t.Errorf("gpu3 got %v", got)
			}
			n := len(f.steps)
			f.observe()
			if len(f.steps) != n {
				t.Errorf("steps issued after the halt: %v", f.steps[n:])
			}
		})
	}
}

func TestUnrelatedFailuresIgnored(t *testing.T) {
	f := newFleet(t, "gpu1", "gpu2", "other")
	f.plan(Plan{Hosts: []string{"gpu1", "gpu2"}, Mode: modeOn()})
	// A host outside the plan fails, with an action of its own failing.
	f.run("other", "other-inv1", startup.Failed, oom)
	f.observe(event.Event{Host: "other", Kind: event.KindAction, Action: &event.ActionResult{ID: 999, Stage: event.ActionFailed, Err: "boom"}})
	// gpu2, not reached yet, fails on its own run.
	f.run("gpu2", "gpu2-old", startup.Failed, oom)
	if st := f.r.State(); st.Status != Running {
		t.Fatalf("state %+v, want running", st)
	}
	f.through("gpu1", "gpu1-inv1")
	f.through("gpu2", "gpu2-inv1")
	if st := f.r.State(); st.Status != Done {
		t.Fatalf("state %+v, want done", st)
	}
	if l := f.lane("gpu2"); l.PrevMode != "validate" {
		t.Errorf("gpu2 prev mode %q", l.PrevMode)
	}
}

func TestAbort(t *testing.T) {
	f := newFleet(t, "gpu1", "gpu2", "gpu3")
	f.plan(Plan{Hosts: []string{"gpu1", "gpu2", "gpu3"}, Batch: 2, Mode: modeOn()})
	f.done("gpu1") // gpu1's restart is issued; gpu2's mode change is in flight
	f.r.Abort()
	if st := f.r.State(); st.Status != Aborted {
		t.Fatalf("state %+v", st)
	}
	f.wantStages(map[string]Stage{"gpu1": StageRestarting, "gpu2": StageHalted, "gpu3": StageUntouched})
	f.done("gpu2") // its mode change ends: nothing follows
	if got := f.kinds("gpu2"); len(got) != 1 {
		t.Errorf("gpu2 actions after abort %v", got)
	}
	// gpu1's restart is still followed to its end.
	f.done("gpu1")
	f.run("gpu1", "gpu1-inv1", startup.Serving, nil)
	f.wantStages(map[string]Stage{"gpu1": StageServing})
	if st := f.r.State(); st.Status != Aborted {
		t.Errorf("state %+v after abort", st)
	}
	if _, err := f.r.Rollback("gpu2"); err != nil {
		t.Errorf("rollback of the halted gpu2: %v", err)
	}
}

func TestNewValidates(t *testing.T) {
	cat := kernels.DefaultCatalog()
	for _, tc := range []struct {
		name string
		p    Plan
		want string
	}{
		{"no hosts", Plan{}, "no hosts"},
		{"duplicate", Plan{Hosts: []string{"a", "a"}}, "twice"},
		{"empty name", Plan{Hosts: []string{""}}, "empty"},
		{"negative batch", Plan{Hosts: []string{"a"}, Batch: -1}, "batch"},
		{"unknown kernel", Plan{Hosts: []string{"a"}, Mode: &ModeChange{Kernel: "x", Mode: "on"}}, "unknown kernel"},
		{"unknown mode", Plan{Hosts: []string{"a"}, Mode: &ModeChange{Kernel: "kdtree-verify", Mode: "fast"}}, "no mode"},
		{"unknown redeploy", Plan{Hosts: []string{"a"}, Redeploy: "x"}, "redeploy"},
	} {
		if _, err := New(tc.p, cat); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	r, err := New(Plan{Hosts: []string{"gpu1", "gpu2"}, Mode: modeOn()}, cat)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Plan().String(), "set kdtree-verify=on, then restart, on gpu1, gpu2 one at a time, waiting for serving"; got != want {
		t.Errorf("plan %q, want %q", got, want)
	}
	if r.Plan().Batch != 1 {
		t.Errorf("default batch %d", r.Plan().Batch)
	}
}
