package sim

import (
	"sync"
	"time"
)

// Clock tells the simulated hosts what time it is on their side. Host
// timestamps (Event.Time) come from it; the real time an event is seen
// comes from Options.Seen.
type Clock interface {
	Now() time.Time
}

// speeder is a Clock that runs at a known multiple of real time, so a run
// loop can sleep exactly until the next due event.
type speeder interface {
	Speed() float64
}

// ScaledClock maps real elapsed time, multiplied by a speed factor, onto a
// virtual time that starts at the real time of its creation, so simulated
// hosts show current-looking timestamps.
type ScaledClock struct {
	base  time.Time // virtual time at start; equal to the real start
	speed float64
	real  func() time.Time
}

// NewScaledClock returns a clock that starts now and runs speed times as
// fast as real time; realNow is the source of real time (nil: time.Now).
func NewScaledClock(speed float64, realNow func() time.Time) *ScaledClock {
	if realNow == nil {
		realNow = time.Now
	}
	if speed <= 0 {
		speed = 1
	}
	return &ScaledClock{base: realNow(), speed: speed, real: realNow}
}

// Now returns the virtual time.
func (c *ScaledClock) Now() time.Time {
	return c.base.Add(time.Duration(float64(c.real().Sub(c.base)) * c.speed))
}

// Speed returns the speed factor.
func (c *ScaledClock) Speed() float64 { return c.speed }

// ManualClock is a clock that moves only when told to, for tests.
type ManualClock struct {
	mu sync.Mutex
	t  time.Time
}

// NewManualClock returns a clock standing at t.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{t: t} }

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d and returns the new time.
func (c *ManualClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}
