package rollout

import (
	"errors"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
)

// TestDriverHoldsBatchesWhileIssuing: a batch that reports an action's
// outcome before the door's answer (its id) came back is held, then
// observed once the answer is in, so the next step is not lost.
func TestDriverHoldsBatchesWhileIssuing(t *testing.T) {
	f := newFleet(t, "gpu1")
	r, err := New(Plan{Hosts: []string{"gpu1"}, Mode: modeOn(), Now: func() time.Time { return f.now }}, kernels.DefaultCatalog())
	if err != nil {
		t.Fatal(err)
	}
	d := NewDriver(r)
	steps := d.Start(f.snapshot())
	if len(steps) != 1 || steps[0].Action.Kind != remote.ActSetMode {
		t.Fatalf("first steps %+v, want the mode change", steps)
	}
	done := remote.Batch{Hosts: f.snapshot(), Events: []event.Event{{Host: "gpu1", Kind: event.KindAction, Time: f.now,
		Action: &event.ActionResult{ID: 7, Stage: event.ActionDone}}}}
	if got := d.Observe(done); got != nil {
		t.Fatalf("observed while issuing: steps %+v", got)
	}
	next := d.Answer(DoSteps(func(string, remote.Action) (int, error) { return 7, nil }, steps))
	if len(next) != 1 || next[0].Action.Kind != remote.ActRestart {
		t.Fatalf("after the answer: steps %+v, want the restart the held outcome allows", next)
	}
	if !d.Ours(7) || d.Ours(8) {
		t.Error("Ours: the mode change's id is the rollout's, no other")
	}
	// A refusal at the door fails the host and halts the rollout.
	d.Answer([]Issued{{Step: next[0], Err: errors.New("read-only")}})
	if st := r.State(); st.Status != Halted || st.Host != "gpu1" {
		t.Fatalf("state %+v after a refused restart, want halted on gpu1", st)
	}
}

// TestProvisionalFailureWaitsForItsCause: a failure the fleet marks
// provisional does not halt the rollout until the fleet settles it, so
// the halt carries the cause the journal named.
func TestProvisionalFailureWaitsForItsCause(t *testing.T) {
	f := newFleet(t, "gpu1")
	f.plan(Plan{Hosts: []string{"gpu1"}})
	f.done("gpu1")
	h := f.host("gpu1")
	h.Startup = startup.Startup{InvocationID: "gpu1-inv1", StartedAt: f.now, Phase: startup.Failed,
		Diag: &startup.Diagnosis{Cause: startup.CauseUnitFailed}}
	h.UnitState.ActiveState, h.UnitState.SubState = "failed", "failed"
	h.Provisional = true
	f.observe()
	f.wantStages(map[string]Stage{"gpu1": StageStarting})
	h.Provisional = false
	h.Startup.Diag = oom
	f.observe()
	f.wantStages(map[string]Stage{"gpu1": StageFailed})
	if st := f.r.State(); st.Diag == nil || st.Diag.Cause != "gpu-oom" {
		t.Fatalf("halted on %+v, want the settled cause gpu-oom", st.Diag)
	}
}
