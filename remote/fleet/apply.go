package fleet

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/deployment"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
)

// ApplyReport hears how Apply goes, as it goes. Calls come from Apply's
// goroutine, one at a time.
type ApplyReport interface {
	// Refused: the fleet's door refused a on host; its later actions are
	// not issued.
	Refused(host string, a remote.Action, err error)
	// Action is an outcome (started, progress, done, failed) of one of the
	// actions Apply issued.
	Action(ev event.Event)
	// Change is a startup change of a host whose restart Apply follows;
	// started is when that host's startup began.
	Change(c remote.HostChange, started time.Time)
	// Ended: the restart's new invocation on h serves, or failed.
	Ended(h remote.HostState)
}

// Applied is one host's outcome.
type Applied struct {
	Host     string
	Failed   bool          // an action failed or was refused, or the new invocation failed
	Finished bool          // false: ctx ended first
	Phase    startup.Phase // the followed startup's last phase
}

// applyRun is one host's progress through its steps.
type applyRun struct {
	Applied
	// steps are the indexes of the host's steps in the schedule; current
	// is the id of its action in flight (0: none).
	steps   []int
	current int
	// oldInv is the invocation before the restart; following is set once
	// the restart is done, until the new invocation serves or fails.
	oldInv    string
	following bool
	printing  bool // the restart started: report the host's changes
	// head is the host whose new run settles this one's (remote.Step.Head).
	head string
}

// ErrStepSkipped says a step was never issued: a step of another host it
// waited for (a deployment's node) failed.
var ErrStepSkipped = errors.New("not issued: a step it waited for on another node failed")

// Apply issues actions on each of hosts, in order (the next only after the
// one before is done: a failed mode change never leads to a restart),
// follows a restart until the new invocation serves or fails (its
// provisional failure settled), and returns each host's outcome when all
// have finished or ctx ends. states are the hosts' states before, as
// AwaitUnits returned them.
func (fl *Follower) Apply(ctx context.Context, hosts []string, states map[string]remote.HostState, actions []remote.Action, rep ApplyReport) []Applied {
	steps := make([]remote.Step, 0, len(hosts)*len(actions))
	for _, h := range hosts {
		for _, a := range actions {
			steps = append(steps, remote.Step{Host: h, Action: a})
		}
	}
	return fl.ApplySteps(ctx, hosts, steps, states, rep)
}

// ApplySteps is Apply of a plan (deployment.Steps): each step is issued
// once those it waits for are done (its host's before it, its group's of
// lower stages), and a restart is followed until the new invocation
// serves or fails; a node whose Head is set settles with its head. A
// step that waited for one that failed is never issued: a host's own
// later steps quietly, another host's reported as refused
// (ErrStepSkipped). hosts are the hosts of the outcome, in order.
func (fl *Follower) ApplySteps(ctx context.Context, hosts []string, steps []remote.Step, states map[string]remote.HostState, rep ApplyReport) []Applied {
	sched := deployment.NewSchedule(steps)
	runs := make([]*applyRun, len(hosts))
	byName := map[string]*applyRun{}
	for i, name := range hosts {
		runs[i] = &applyRun{Applied: Applied{Host: name}, oldInv: states[name].UnitState.InvocationID}
		byName[name] = runs[i]
	}
	for i, st := range steps {
		if r := byName[st.Host]; r != nil {
			r.steps = append(r.steps, i)
			if st.Head != "" {
				r.head = st.Head
			}
		}
	}
	byID := map[int]int{} // action id → step
	// settle marks r finished once none of its steps is waiting or under
	// way and it follows no restart.
	settle := func(r *applyRun) {
		for _, i := range r.steps {
			if st := sched.State(i); st == deployment.StepWaiting || st == deployment.StepIssued {
				return
			}
		}
		r.Finished = !r.following
	}
	issue := func() {
		for more := true; more; {
			more = false
			ready, skipped := sched.Next()
			for _, i := range skipped {
				st := sched.Step(i)
				r := byName[st.Host]
				if !r.Failed {
					rep.Refused(st.Host, st.Action, ErrStepSkipped)
				}
				r.Failed = true
				settle(r)
			}
			for _, i := range ready {
				st := sched.Step(i)
				r := byName[st.Host]
				id, err := fl.fleet.Do(st.Host, st.Action)
				if err != nil {
					rep.Refused(st.Host, st.Action, err)
					sched.Ended(i, false)
					r.Failed, more = true, true
					settle(r)
					continue
				}
				r.current = id
				byID[id] = i
			}
		}
	}
	issue()
	for _, r := range runs {
		settle(r)
	}
	finished := func() bool {
		return !slices.ContainsFunc(runs, func(r *applyRun) bool { return !r.Finished })
	}
	if !finished() {
		_ = fl.Until(ctx, 0, func(b remote.Batch) bool {
			for _, ev := range b.Events {
				i, ok := byID[actionID(ev)]
				if !ok {
					continue
				}
				st := sched.Step(i)
				r := byName[st.Host]
				if r.current != ev.Action.ID {
					continue
				}
				rep.Action(ev)
				spec, _ := st.Action.Kind.Spec()
				switch ev.Action.Stage {
				case event.ActionStarted:
					r.printing = r.printing || spec.Follows
				case event.ActionFailed:
					r.Failed, r.current = true, 0
					sched.Ended(i, false)
					issue()
					settle(r)
				case event.ActionDone:
					r.current = 0
					r.following = r.following || spec.Follows
					sched.Ended(i, true)
					issue()
					settle(r)
				case event.ActionProgress: // the step goes on
				}
			}
			started := map[string]time.Time{}
			for _, h := range b.Hosts {
				started[h.Name] = h.Startup.StartedAt
			}
			for _, c := range b.Changes {
				if r := byName[c.Host]; r != nil && r.printing {
					rep.Change(c, started[c.Host])
				}
			}
			for _, h := range b.Hosts {
				r := byName[h.Name]
				if r == nil || !r.following {
					continue
				}
				r.Phase = h.Startup.Phase
				// Only the new invocation counts: the old run's serving
				// state must not end the wait.
				if h.Startup.InvocationID == "" || h.Startup.InvocationID == r.oldInv || !h.Settled() {
					continue
				}
				r.following = false
				r.Failed = r.Failed || h.Startup.Phase == startup.Failed
				settle(r)
				rep.Ended(h)
			}
			// A node other than the head settles with it: serving once
			// the head's new run serves, failed (its peer lost) once the
			// head's failed.
			for _, r := range runs {
				hr := byName[r.head]
				if !r.following || hr == nil || hr.following || !hr.Finished {
					continue
				}
				r.following = false
				r.Failed = r.Failed || hr.Failed
				settle(r)
			}
			return finished()
		})
	}
	out := make([]Applied, len(runs))
	for i, r := range runs {
		out[i] = r.Applied
	}
	return out
}

// actionID is the id of the action ev reports on; 0 for other events.
func actionID(ev event.Event) int {
	if ev.Kind != event.KindAction || ev.Action == nil {
		return 0
	}
	return ev.Action.ID
}
