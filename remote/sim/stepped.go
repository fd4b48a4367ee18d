package sim

import (
	"context"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
)

// Stepped is a simulated host whose Run moves only when told: each time
// sent on To it steps the host to, then reports that it is up to date (a
// Conn up event at that time, which changes nothing), so a caller knows
// when the fleet has folded everything up to then. Tests and goldens of
// whole stories use it to run the simulation deterministically.
type Stepped struct {
	*Host
	To chan time.Time
}

// NewStepped wraps h; To holds one pending step.
func NewStepped(h *Host) Stepped { return Stepped{Host: h, To: make(chan time.Time, 1)} }

// Run steps the host on each time sent on To until ctx ends.
func (s Stepped) Run(ctx context.Context, emit remote.Emit) error {
	if ev, ok := s.clockEvent(); ok && !emit(ev) {
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case t := <-s.To:
			for _, ev := range s.Step(t) {
				if !emit(ev) {
					return nil
				}
			}
			// The marker is at t itself, off the host's clock if that is
			// off: it tells the caller which step the fleet has folded.
			mark := s.stamp(event.Event{Kind: event.KindConn, Conn: &event.Conn{State: event.ConnUp}})
			mark.Time = t
			if !emit(mark) {
				return nil
			}
		}
	}
}
