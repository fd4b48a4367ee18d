package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
)

// The loops every reader of a fleet shares, written once: run the fleet,
// read its batches until a condition, stop it. Commands (watch, status,
// the changing commands, rollout) are these plus their printing.

// ErrFleetStopped is Until's error when the fleet stopped before the
// condition held.
var ErrFleetStopped = errors.New("the fleet stopped")

// Follower runs one fleet and reads its batches. It owns the fleet's Run
// goroutine: Follow starts it, Stop ends it and waits for it.
type Follower struct {
	fleet  *Fleet
	cancel context.CancelFunc
	done   chan struct{}
	last   []remote.HostState
}

// Follow starts f under ctx and returns its follower once f accepts
// actions (Do). Call Stop when done.
func Follow(ctx context.Context, f *Fleet) *Follower {
	ctx, cancel := context.WithCancel(ctx)
	fl := &Follower{fleet: f, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(fl.done)
		_ = f.Run(ctx) // Run reports what goes wrong on a host as events
	}()
	<-f.accepting
	return fl
}

// Fleet is the fleet followed: its door (Do) and catalog.
func (fl *Follower) Fleet() *Fleet { return fl.fleet }

// Do is the fleet's Do: the door actions go in by, next to the batches
// they come back in.
func (fl *Follower) Do(host string, a remote.Action) (int, error) { return fl.fleet.Do(host, a) }

// Last is the latest snapshot read (nil before the first batch).
func (fl *Follower) Last() []remote.HostState { return fl.last }

// Stop stops the fleet and waits up to wait (0: for as long as it takes)
// for its hosts and actions to stop; the error says they did not.
func (fl *Follower) Stop(wait time.Duration) error {
	fl.cancel()
	if wait <= 0 {
		<-fl.done
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-fl.done:
		return nil
	case <-t.C:
		return fmt.Errorf("hosts did not stop within %s", wait)
	}
}

// Until hands each batch to step until step returns true (then nil), ctx
// ends (ctx.Err()) or the fleet stops (ErrFleetStopped). With tick > 0,
// step also gets an empty batch that often, for clocks that run while the
// hosts are quiet (a timeout).
func (fl *Follower) Until(ctx context.Context, tick time.Duration, step func(remote.Batch) bool) error {
	var ticks <-chan time.Time
	if tick > 0 {
		t := time.NewTicker(tick)
		defer t.Stop()
		ticks = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticks:
			if step(remote.Batch{}) {
				return nil
			}
		case b, ok := <-fl.fleet.Updates():
			if !ok {
				return ErrFleetStopped
			}
			// A batch of the hosts taken anew (Options.Deltas) reaches
			// step whole: fl.last is a copy of its own.
			fl.last = b.Apply(fl.last)
			b.Hosts = fl.last
			if step(b) {
				return nil
			}
		}
	}
}

// Watch hands each batch to seen until every host has settled (serving, or
// failed with a settled cause: HostState.Settled) and returns the last
// snapshot; or ctx's error, or ErrFleetStopped.
func (fl *Follower) Watch(ctx context.Context, seen func(remote.Batch)) ([]remote.HostState, error) {
	err := fl.Until(ctx, 0, func(b remote.Batch) bool {
		seen(b)
		return remote.AllSettled(b.Hosts)
	})
	return fl.last, err
}

// quiet is how long Snapshot waits, once every host has answered, for the
// journal backlog to be folded in.
const quiet = 750 * time.Millisecond

// Snapshot reads until every host has answered (its unit state read and,
// once the unit is active, a probe made; or its connection failed for
// good, or its dial was refused: see Refused), the journal backlog has had a moment to fold in and no failure
// is provisional, or until timeout or ctx. It returns the last snapshot.
func (fl *Follower) Snapshot(ctx context.Context, timeout time.Duration) []remote.HostState {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var calm time.Time // when every host had answered
	_ = fl.Until(ctx, quiet/3, func(remote.Batch) bool {
		if calm.IsZero() && answered(fl.last) {
			calm = time.Now()
		}
		return !calm.IsZero() && time.Since(calm) >= quiet && !anyProvisional(fl.last)
	}) // a timeout returns what there is: status shows who did not answer
	return fl.last
}

func answered(hosts []remote.HostState) bool {
	if len(hosts) == 0 {
		return false
	}
	for _, h := range hosts {
		switch {
		case h.Conn.State == event.ConnUnreachable, Refused(h.Conn):
		case h.UnitState.ActiveState == "":
			return false
		case h.UnitState.ActiveState == "active" && h.Probe.Path == "":
			return false
		}
	}
	return true
}

// Refused says a host's connection is down because its dial was refused:
// nothing listens on its SSH port. The connection retries it (the console
// waits for a host that is booting), but for a one-shot look (Snapshot:
// status, bench) it is the host's answer, and waiting out the timeout for
// it only hid the reason behind a "timeout".
func Refused(c event.Conn) bool {
	return c.State == event.ConnDown && strings.Contains(c.Err, "connection refused")
}

func anyProvisional(hosts []remote.HostState) bool {
	return slices.ContainsFunc(hosts, func(h remote.HostState) bool { return h.Provisional })
}

// AwaitUnits waits up to wait until the unit state of every one of hosts
// is known and returns their states, before anything changes them; a host
// found unreachable, or silent past wait, is an error naming it.
func (fl *Follower) AwaitUnits(ctx context.Context, hosts []string, wait time.Duration) (map[string]remote.HostState, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var states map[string]remote.HostState
	var unreachable error
	err := fl.Until(ctx, 0, func(b remote.Batch) bool {
		states = map[string]remote.HostState{}
		ready := true
		for _, h := range b.Hosts {
			if !slices.Contains(hosts, h.Name) {
				continue
			}
			if h.Conn.State == event.ConnUnreachable {
				unreachable = fmt.Errorf("%s is unreachable (%s): nothing changed", h.Name, h.Conn.Err)
				return true
			}
			ready = ready && h.UnitState.ActiveState != ""
			states[h.Name] = h
		}
		return ready
	})
	switch {
	case unreachable != nil:
		return nil, unreachable
	case errors.Is(err, context.DeadlineExceeded):
		silent := hosts
		if fl.last != nil {
			silent = nil
			for _, h := range fl.last {
				if slices.Contains(hosts, h.Name) && h.UnitState.ActiveState == "" {
					// A host that is down says why: its connection's last error.
					why := string(h.Conn.State)
					if h.Conn.Err != "" && h.Conn.State != event.ConnUp {
						why += ": " + h.Conn.Err
					}
					silent = append(silent, fmt.Sprintf("%s (%s)", h.Name, why))
				}
			}
		}
		return nil, fmt.Errorf("no unit state after %s from %s: nothing changed", wait, strings.Join(silent, ", "))
	case errors.Is(err, ErrFleetStopped):
		return nil, errors.New("fleet stopped before the hosts answered")
	case err != nil:
		return nil, fmt.Errorf("waiting for the hosts' unit state: %w", err)
	}
	return states, nil
}
