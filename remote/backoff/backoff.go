// Package backoff is bringup's retry pacing: a jittered exponential
// backoff shared by everything that reconnects or restarts a remote stream
// (the SSH connection, the journal follower, the GPU sampler). It is a
// leaf: pure arithmetic over an injected random source.
package backoff

import (
	"math"
	"math/rand/v2"
	"time"
)

// Backoff is a jittered exponential backoff (gRPC's connection backoff):
// Base, then ×Factor per attempt, capped at Max, each delay spread by
// ±Jitter and never above Max. Reset after a successful connection.
type Backoff struct {
	Base   time.Duration
	Factor float64
	Max    time.Duration
	Jitter float64        // fraction, 0.2 = ±20 %
	Rand   func() float64 // uniform in [0,1); nil = math/rand/v2
	n      int
}

// New returns bringup's reconnect backoff: 1 s × 1.6, cap 2 min, ±20 %.
func New(random func() float64) *Backoff {
	return &Backoff{Base: time.Second, Factor: 1.6, Max: 2 * time.Minute, Jitter: 0.2, Rand: random}
}

// Next returns the delay before the next attempt and advances.
func (b *Backoff) Next() time.Duration {
	d := float64(b.Base) * math.Pow(b.Factor, float64(b.n))
	if d > float64(b.Max) {
		d = float64(b.Max)
	} else {
		b.n++
	}
	r := b.Rand
	if r == nil {
		r = rand.Float64
	}
	d *= 1 + b.Jitter*(2*r()-1)
	if d > float64(b.Max) {
		d = float64(b.Max)
	}
	return time.Duration(d)
}

// Reset starts the sequence again at Base.
func (b *Backoff) Reset() { b.n = 0 }
