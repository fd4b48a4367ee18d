package remote

import (
	"context"
	"errors"
	"time"
)

// ErrReadOnly is returned for every changing action in read-only mode.
var ErrReadOnly = errors.New("read-only mode: actions that change hosts are disabled")

// Clock tells the fleet the time. Simulated fleets pass their scaled clock
// so that stuck detection runs in host time.
type Clock interface{ Now() time.Time }

// RealClock is the host clock of real hosts: the local time (their
// timestamps are close to it; they come from the hosts themselves).
type RealClock struct{}

// Now is time.Now.
func (RealClock) Now() time.Time { return time.Now() }

// ErrCancelled is the cause of an action the person cancelled (Cancel).
var ErrCancelled = errors.New("cancelled")

// ErrNoSuchAction is Cancel's answer for an action that has ended (or
// was never given on that host).
var ErrNoSuchAction = errors.New("no such action under way")

// Reconnecter is a driver whose connection can stop on a failure that is
// never retried on its own (a host key refused, authentication failed) and
// wait for the person to say the cause is fixed. *live.Host is one.
type Reconnecter interface {
	// Retry dials again now and reports whether the connection was
	// stopped that way; one that is up or retrying by itself is left alone.
	Retry() bool
}

// ErrNotStopped is Reconnect's answer for a host whose connection is not
// waiting for the person: it is up, or retrying on its own.
var ErrNotStopped = errors.New("the connection is not stopped (it is up or reconnecting on its own)")

// ErrNotRunning is Do's refusal while the fleet is not running: before
// Run, or after it returned.
var ErrNotRunning = errors.New("the fleet is not running (actions are taken between Run's start and its end)")

// expectBytesKey carries an action's ExpectBytes hook in its context.
type expectBytesKey struct{}

// WithExpectBytes returns ctx carrying expect, which ExpectBytes under it
// calls: the fleet hands a driver's Do the hook that moves the action's
// deadline.
func WithExpectBytes(ctx context.Context, expect func(n int64)) context.Context {
	return context.WithValue(ctx, expectBytesKey{}, expect)
}

// ExpectBytes tells the fleet that the action running under ctx sends n
// bytes (a redeploy, once it knows what differs): its deadline grows by
// the time they take at the fleet's slowest allowed rate. Outside an
// action the fleet runs, or once the deadline has passed, it does nothing.
func ExpectBytes(ctx context.Context, n int64) {
	if expect, ok := ctx.Value(expectBytesKey{}).(func(int64)); ok {
		expect(n)
	}
}
