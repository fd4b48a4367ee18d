package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
)

// stepRun drives a rollout over gpu1 and gpu2 through its Driver, the way
// `bringup rollout` and the console do: steps go to a door that numbers
// them, batches (empty ones are the loop's ticks) go to Observe.
type stepRun struct {
	*fakeFleet
	d *Driver
}

func newStepRun(t *testing.T, p Plan) *stepRun {
	t.Helper()
	f := newFleet(t, "gpu1", "gpu2")
	p.Hosts = []string{"gpu1", "gpu2"}
	p.Now = func() time.Time { return f.now }
	r, err := New(p, f.cat)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f.r = r
	s := &stepRun{fakeFleet: f, d: NewDriver(r)}
	s.answer(s.d.Start(f.snapshot()))
	return s
}

func (s *stepRun) door(host string, a remote.Action) (int, error) {
	s.nextID++
	s.last[host] = s.nextID
	s.steps = append(s.steps, Step{Host: host, Action: a})
	return s.nextID, nil
}

func (s *stepRun) answer(steps []Step) {
	for len(steps) > 0 {
		steps = s.d.Answer(DoSteps(s.door, steps))
	}
}

// wait lets d pass and ticks the loop.
func (s *stepRun) wait(d time.Duration) {
	s.now = s.now.Add(d)
	s.answer(s.d.Observe(remote.Batch{Hosts: s.snapshot()}))
}

// say reports host's latest action at stage.
func (s *stepRun) say(host string, stage event.ActionStage) {
	s.answer(s.d.Observe(remote.Batch{Hosts: s.snapshot(), Events: []event.Event{s.action(host, stage, "")}}))
}

// startup puts host's unit in a new invocation in phase p.
func (s *stepRun) startup(host string, p startup.Phase) {
	h := s.host(host)
	h.Startup = startup.Startup{InvocationID: host + "-new", StartedAt: s.now, Phase: p}
	h.UnitState.ActiveState, h.UnitState.SubState = "active", "running"
	if p == startup.Failed {
		h.Startup.Diag = oom
		h.UnitState.ActiveState, h.UnitState.SubState = "failed", "failed"
	}
	s.wait(time.Second)
}

// TestStepDeadline: a step whose action never answers halts the rollout
// after Plan.StepTimeout of silence, naming the host and the step; word
// from the action (its start, its progress) restarts the count; a restart
// that is done waits for its startup under Plan.Timeout only; a rollback
// step that never answers fails the rollback, naming its step.
func TestStepDeadline(t *testing.T) {
	const after = DefaultStepTimeout + time.Second
	for _, c := range []struct {
		name   string
		plan   Plan
		script func(s *stepRun)
		status Status
		err    string           // in State.Err; "" for none
		stages map[string]Stage // lanes; nil: gpu1 failed, gpu2 untouched
		lane   string           // in gpu1's Lane.Err; "" for none
	}{{
		name:   "a mode change that never answers",
		plan:   Plan{Mode: modeOn()},
		script: func(s *stepRun) { s.wait(DefaultStepTimeout); s.wait(time.Second) },
		status: Halted,
		err:    "gpu1: step 1 of 2 (mode kdtree-verify=on): no answer from its action after 2m0s",
	}, {
		name:   "silence up to the deadline is allowed",
		plan:   Plan{Mode: modeOn()},
		script: func(s *stepRun) { s.wait(DefaultStepTimeout) },
		status: Running,
		stages: map[string]Stage{"gpu1": StageApplying, "gpu2": StagePending},
	}, {
		name: "started, then silent",
		plan: Plan{Mode: modeOn()},
		script: func(s *stepRun) {
			s.wait(time.Minute)
			s.say("gpu1", event.ActionStarted)
			s.wait(DefaultStepTimeout)
			s.wait(time.Second)
		},
		status: Halted,
		err:    "gpu1: step 1 of 2 (mode kdtree-verify=on): no answer",
	}, {
		name: "progress keeps a long redeploy alive, then its restart never answers",
		plan: Plan{Redeploy: "kdtree-verify"},
		script: func(s *stepRun) {
			for range 4 {
				s.wait(90 * time.Second)
				s.say("gpu1", event.ActionProgress)
			}
			s.say("gpu1", event.ActionDone)
			s.wait(after)
		},
		status: Halted,
		err:    "gpu1: step 2 of 2 (restart): no answer from its action after 2m0s",
	}, {
		name: "a done restart awaits its startup under the plan's timeout only",
		plan: Plan{},
		script: func(s *stepRun) {
			s.say("gpu1", event.ActionDone)
			s.startup("gpu1", startup.Weights)
			s.wait(10 * time.Minute)
		},
		status: Running,
		stages: map[string]Stage{"gpu1": StageStarting, "gpu2": StagePending},
	}, {
		name:   "the plan's step timeout",
		plan:   Plan{StepTimeout: 10 * time.Second},
		script: func(s *stepRun) { s.wait(11 * time.Second) },
		status: Halted,
		err:    "gpu1: step 1 of 1 (restart): no answer from its action after 10s",
	}, {
		name: "an answer after the halt is ignored",
		plan: Plan{Mode: modeOn()},
		script: func(s *stepRun) {
			s.wait(after)
			s.say("gpu1", event.ActionDone)
			s.wait(after)
		},
		status: Halted,
		err:    "gpu1: step 1 of 2 (mode kdtree-verify=on)",
	}, {
		name: "a rollback step that never answers",
		plan: Plan{Mode: modeOn()},
		script: func(s *stepRun) {
			s.say("gpu1", event.ActionDone) // mode
			s.say("gpu1", event.ActionDone) // restart
			s.startup("gpu1", startup.Failed)
			steps, err := s.d.Rollback("gpu1")
			if err != nil {
				s.t.Fatalf("rollback: %v", err)
			}
			s.answer(steps)
			s.wait(after)
		},
		status: Halted,
		err:    "", // the halt's own cause (the failed startup) stays
		stages: map[string]Stage{"gpu1": StageRollbackFailed, "gpu2": StageUntouched},
		lane:   "gpu1: step 1 of 2 (undo mode kdtree-verify): no answer from its action after 2m0s",
	}} {
		t.Run(c.name, func(t *testing.T) {
			s := newStepRun(t, c.plan)
			c.script(s)
			st := s.r.State()
			if st.Status != c.status {
				t.Errorf("status %s, want %s (state %+v)", st.Status, c.status, st)
			}
			if c.err == "" && c.status == Halted && st.Err != "" {
				t.Errorf("halted with %q, want the startup's failure", st.Err)
			}
			if !strings.Contains(st.Err, c.err) || c.status == Halted && c.err != "" && st.Host != "gpu1" {
				t.Errorf("state %+v, want halted on gpu1 with %q", st, c.err)
			}
			if st.TimedOut {
				t.Error("a step's deadline is not the host's timeout (exit 2): TimedOut set")
			}
			if c.stages == nil {
				c.stages = map[string]Stage{"gpu1": StageFailed, "gpu2": StageUntouched}
			}
			s.wantStages(c.stages)
			if got := s.lane("gpu1").Err; c.lane != "" && !strings.Contains(got, c.lane) {
				t.Errorf("gpu1's lane: %q, want %q", got, c.lane)
			}
			if c.status != Running && !s.r.Settled() {
				t.Error("not settled: the loop would wait for ever")
			}
		})
	}
}
