package rollout

import (
	"context"
	"time"

	"github.com/bringup-dev/bringup/remote"
)

// Driver is the one loop around a Rollout, shared by the console and
// `bringup rollout`: steps go out through the fleet's door, their ids come
// back, and batches that arrive while steps are out are held, so that the
// rollout never sees an action's outcome before its id. It does no IO
// itself: the caller hands the steps to the door (DoSteps, in a command or
// a tea.Cmd) and feeds back what came of them. Use it from one goroutine.
type Driver struct {
	r       *Rollout
	issuing int            // step lists handed out and not yet answered
	held    []remote.Batch // batches to observe once they are
	ours    map[int]bool   // ids of the actions the rollout issued
}

// Issued is what the door answered for one step.
type Issued struct {
	Step Step
	ID   int
	Err  error
}

// NewDriver drives r.
func NewDriver(r *Rollout) *Driver { return &Driver{r: r, ours: map[int]bool{}} }

// Rollout is the state machine driven.
func (d *Driver) Rollout() *Rollout { return d.r }

// Ours reports whether the action with id was issued by the rollout.
func (d *Driver) Ours(id int) bool { return d.ours[id] }

// Start begins the rollout on the fleet's snapshot; the steps it returns
// go to the door, in order, and their answer to Answer.
func (d *Driver) Start(hosts []remote.HostState) []Step { return d.out(d.r.Start(hosts)) }

// Observe hands a batch to the rollout, or holds it while steps are out.
// It returns the steps to issue next.
func (d *Driver) Observe(b remote.Batch) []Step {
	if d.issuing > 0 {
		d.held = append(d.held, b)
		return nil
	}
	return d.out(d.r.Observe(b))
}

// Answer feeds back what the door said to a list of steps Start, Observe,
// Answer or Rollback returned, then the batches held meanwhile; it
// returns the steps to issue next.
func (d *Driver) Answer(res []Issued) []Step {
	for _, s := range res {
		d.r.Issued(s.Step, s.ID, s.Err)
		if s.Err == nil {
			d.ours[s.ID] = true
		}
	}
	d.issuing = max(0, d.issuing-1)
	if d.issuing > 0 {
		return nil
	}
	var steps []Step
	held := d.held
	d.held = nil
	for _, b := range held {
		steps = append(steps, d.r.Observe(b)...)
	}
	return d.out(steps)
}

// Rollback starts rolling host back (Rollout.Rollback) and returns the
// steps to issue.
func (d *Driver) Rollback(host string) ([]Step, error) {
	steps, err := d.r.Rollback(host)
	return d.out(steps), err
}

// out counts a non-empty list of steps as handed out.
func (d *Driver) out(steps []Step) []Step {
	if len(steps) > 0 {
		d.issuing++
	}
	return steps
}

// Door is where steps go: Fleet.Do, or the console's Source.
type Door func(host string, a remote.Action) (int, error)

// DoSteps issues steps through door in order (one host's actions must
// reach the fleet in the order given) and returns its answers.
func DoSteps(door Door, steps []Step) []Issued {
	out := make([]Issued, len(steps))
	for i, s := range steps {
		id, err := door(s.Host, s.Action)
		out[i] = Issued{Step: s, ID: id, Err: err}
	}
	return out
}

// Hooks hear a blocking Run as it goes; nil fields are skipped.
type Hooks struct {
	Issued func([]Issued)     // steps just handed to the door
	Batch  func(remote.Batch) // every batch read, before the rollout sees it
	Step   func()             // after each round: the lanes may have changed
}

// Follower is what Run drives a rollout through: the door actions go in
// by and the batches of a running fleet. *fleet.Follower is one; the
// rollout needs no more of the fleet, so the console that runs one links
// only the contract.
type Follower interface {
	Do(host string, a remote.Action) (int, error)
	Until(ctx context.Context, tick time.Duration, step func(remote.Batch) bool) error
}

// Run drives the rollout over a running fleet until it settles (nil), ctx
// ends or the fleet stops (that error); steps are those to issue first.
// It ticks once a second so that timeouts count while hosts are quiet.
func (d *Driver) Run(ctx context.Context, fl Follower, steps []Step, h Hooks) error {
	issue := func(steps []Step) {
		for len(steps) > 0 {
			res := DoSteps(fl.Do, steps)
			if h.Issued != nil {
				h.Issued(res)
			}
			steps = d.Answer(res)
		}
		if h.Step != nil {
			h.Step()
		}
	}
	issue(steps)
	if d.r.Settled() {
		return nil
	}
	return fl.Until(ctx, time.Second, func(b remote.Batch) bool {
		if h.Batch != nil {
			h.Batch(b)
		}
		issue(d.Observe(b))
		return d.r.Settled()
	})
}
