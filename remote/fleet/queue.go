package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
)

// Do starts action a on host and returns its id at once; the outcome comes
// back as KindAction events. Changing actions are refused in read-only
// mode, and every action while the fleet is not running (ErrNotRunning).
//
// A host's actions run one at a time in the order given, except that a
// stop or reset-failed cancels the restarts still pending on the host and
// runs instead of waiting for them. Each action has a deadline
// (Options.Deadlines, counted from its start): past it the action is
// cancelled and ends as failed (*DeadlineError), and the host's next
// action goes ahead.
func (f *Fleet) Do(host string, a remote.Action) (int, error) {
	i, ok := f.byName[host]
	if !ok {
		return 0, fmt.Errorf("unknown host %q", host)
	}
	if f.opts.ReadOnly && a.Kind.Changes() {
		return 0, fmt.Errorf("%s on %s: %w", a, host, remote.ErrReadOnly)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	ctx := f.actx
	if ctx == nil || ctx.Err() != nil {
		return 0, fmt.Errorf("%s on %s: %w", a, host, remote.ErrNotRunning)
	}
	f.nextID++
	actx, cancel := context.WithCancelCause(ctx)
	q := &queued{id: f.nextID, action: a, cancel: cancel, done: make(chan struct{})}
	ahead := slices.Clone(f.queues[i])
	if preempts(a.Kind) {
		for _, p := range ahead {
			if p.action.Kind == remote.ActRestart {
				p.cancel(&PreemptedError{Host: host, Action: p.action, By: a, ByID: q.id})
			}
		}
	}
	if f.queues == nil {
		f.queues = map[int][]*queued{}
	}
	f.queues[i] = append(f.queues[i], q)
	f.actions.Add(1)
	go f.runAction(ctx, actx, i, q, ahead)
	return q.id, nil
}

// Cancel ends host's action id, queued or running: its context is
// cancelled with ErrCancelled, the driver stops what it waits for, and
// the action ends as failed with that cause (a bench reports what it
// measured until then first). It returns at once. It changes nothing on
// the host by itself, so read-only mode allows it.
func (f *Fleet) Cancel(host string, id int) error {
	i, ok := f.byName[host]
	if !ok {
		return fmt.Errorf("unknown host %q", host)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, q := range f.queues[i] {
		if q.id == id {
			q.cancel(remote.ErrCancelled)
			return nil
		}
	}
	return fmt.Errorf("cancel #%d on %s: %w", id, host, remote.ErrNoSuchAction)
}

// queued is one accepted action that has not ended.
type queued struct {
	id     int
	action remote.Action
	cancel context.CancelCauseFunc // ends it, queued or running
	done   chan struct{}           // closed when the host's queue moves past it
}

// errPastDeadline is the cause an action is cancelled with when its
// deadline passes.
var errPastDeadline = errors.New("past its deadline")

// runAction waits for the actions ahead of q on host i, runs q under
// actx (which its deadline, a preempting action or the fleet's end
// cancel) and reports its outcome. Events go out under the fleet's ctx,
// so that an action's cancellation is still reported.
func (f *Fleet) runAction(ctx, actx context.Context, i int, q *queued, ahead []*queued) {
	defer f.actions.Done()
	released := false
	release := func() {
		if !released {
			released = true
			f.dequeue(i, q)
		}
	}
	defer release()
	defer q.cancel(nil)
	spec, a := f.specs[i], q.action
	host := spec.Driver.Name()
	emit := f.emitter(ctx)
	report := func(stage event.ActionStage, err error) {
		r := &event.ActionResult{ID: q.id, Name: a.String(), Stage: stage}
		if err != nil {
			r.Err = err.Error()
		}
		emit(event.Event{Host: host, Kind: event.KindAction, Time: f.opts.Clock.Now(), Action: r})
	}
	for _, p := range ahead {
		select {
		case <-p.done:
		case <-actx.Done():
			// Preempted before it started (or the fleet stopped: then
			// nothing is reported, as nobody listens).
			report(event.ActionFailed, f.actionErr(actx, host, spec.Unit, a, nil, nil))
			return
		}
	}
	report(event.ActionStarted, nil)
	// Progress a driver reports belongs to this action: give it the id
	// the driver does not know.
	progress := func(ev event.Event) bool {
		if ev.Kind == event.KindAction && ev.Action != nil && ev.Action.ID == 0 {
			r := *ev.Action
			r.ID = q.id
			if r.Name == "" {
				r.Name = a.String()
			}
			ev.Action = &r
		}
		return emit(ev)
	}
	dl := f.opts.Deadlines
	clock := startClock(dl.For(a.Kind), dl.RedeployRate, func() { q.cancel(errPastDeadline) })
	defer clock.stop()
	result := make(chan error, 1)
	go func() { result <- spec.Driver.Do(remote.WithExpectBytes(actx, clock.expect), a, progress) }()
	var err error
	select {
	case err = <-result:
	case <-actx.Done():
		select {
		case err = <-result:
		case <-time.After(dl.Grace):
			// The driver has not returned: the outcome is reported and the
			// host's queue moves on; the driver is still waited for, so
			// that Run returns only after it (its late error changes
			// nothing: the failure is out).
			report(event.ActionFailed, f.actionErr(actx, host, spec.Unit, a, clock, nil))
			release()
			_ = <-result
			return
		}
	}
	if err != nil {
		report(event.ActionFailed, f.actionErr(actx, host, spec.Unit, a, clock, err))
		return
	}
	report(event.ActionDone, nil)
}

// actionErr is the error an action ended with: what cancelled it (its
// deadline, a preempting action), with what the driver returned (err; nil
// when it had not returned), or err alone.
func (f *Fleet) actionErr(actx context.Context, host, unit string, a remote.Action, clock *actionClock, err error) error {
	cause := context.Cause(actx)
	var pe *PreemptedError
	switch {
	case errors.Is(cause, errPastDeadline) && clock != nil:
		after, bytes := clock.limit()
		return &DeadlineError{Host: host, Action: a, Unit: unit, After: after, Bytes: bytes, Err: err, Grace: f.opts.Deadlines.Grace}
	case errors.As(cause, &pe):
		e := *pe
		e.Err = err
		return &e
	case err == nil:
		return cause
	}
	return err
}

// dequeue takes q off host i's queue and lets the actions behind it go.
func (f *Fleet) dequeue(i int, q *queued) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queues[i] = slices.DeleteFunc(f.queues[i], func(p *queued) bool { return p == q })
	close(q.done)
}
