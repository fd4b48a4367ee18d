package fleet

import (
	"context"
	"slices"
	"time"

	"github.com/bringup-dev/bringup/remote"
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

// applyRun is one host's progress through its actions.
type applyRun struct {
	Applied
	actions []remote.Action
	next    int // index of the next action to issue
	current int // id of the action in flight; 0: none
	// oldInv is the invocation before the restart; following is set once
	// the restart is done, until the new invocation serves or fails.
	oldInv    string
	following bool
	printing  bool // the restart started: report the host's changes
}

// Apply issues actions on each of hosts, in order (the next only after the
// one before is done: a failed mode change never leads to a restart),
// follows a restart until the new invocation serves or fails (its
// provisional failure settled), and returns each host's outcome when all
// have finished or ctx ends. states are the hosts' states before, as
// AwaitUnits returned them.
func (fl *Follower) Apply(ctx context.Context, hosts []string, states map[string]remote.HostState, actions []remote.Action, rep ApplyReport) []Applied {
	runs := make([]*applyRun, len(hosts))
	byName := map[string]*applyRun{}
	byID := map[int]*applyRun{}
	for i, name := range hosts {
		runs[i] = &applyRun{Applied: Applied{Host: name}, actions: actions, oldInv: states[name].UnitState.InvocationID}
		byName[name] = runs[i]
	}
	issue := func(r *applyRun) {
		if r.next >= len(r.actions) {
			r.Finished = !r.following
			return
		}
		a := r.actions[r.next]
		r.next++
		id, err := fl.fleet.Do(r.Host, a)
		if err != nil {
			rep.Refused(r.Host, a, err)
			r.Failed, r.Finished = true, true
			return
		}
		r.current = id
		byID[id] = r
	}
	for _, r := range runs {
		issue(r)
	}
	finished := func() bool {
		return !slices.ContainsFunc(runs, func(r *applyRun) bool { return !r.Finished })
	}
	if !finished() {
		_ = fl.Until(ctx, 0, func(b remote.Batch) bool {
			for _, ev := range b.Events {
				r := byID[actionID(ev)]
				if r == nil || r.current != ev.Action.ID {
					continue
				}
				rep.Action(ev)
				spec, _ := r.actions[r.next-1].Kind.Spec()
				switch ev.Action.Stage {
				case event.ActionStarted:
					r.printing = r.printing || spec.Follows
				case event.ActionFailed:
					r.Failed, r.Finished, r.current = true, true, 0
				case event.ActionDone:
					r.current = 0
					r.following = r.following || spec.Follows
					issue(r)
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
				r.Failed = h.Startup.Phase == startup.Failed
				r.Finished = r.Failed || r.next >= len(r.actions)
				rep.Ended(h)
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
