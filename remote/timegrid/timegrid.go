// Package timegrid lines timers up on a shared grid of wall-clock
// instants, so that a process following hundreds of hosts wakes once for
// the many timers that fall due close together instead of once for each.
// Each wake-up of an idle Go process costs far more than the work it
// does: on a quiet 256-host console, the runtime's sysmon, parking and
// unparking threads and the context switches under them were over half
// of the CPU (perf, measured), for work that could wait a second: a
// keepalive check, a steady host's probe, the fleet's stuck check.
package timegrid

import "time"

// Grain is the grid for timers that may fire up to a second late.
const Grain = time.Second

// For is the grain for a timer that repeats every period: Grain, but at
// most a quarter of the period, so that a short period (a test's) is
// not stretched by a second.
func For(period time.Duration) time.Duration { return max(min(Grain, period/4), 0) }

// Align returns d lengthened so that now+d falls on a multiple of grain
// in Unix time: every timer aligned with the same grain fires at one of
// the same instants. A grain of zero or less leaves d as it is.
func Align(now time.Time, d, grain time.Duration) time.Duration {
	if grain <= 0 {
		return d
	}
	off := time.Duration(now.Add(d).UnixNano() % int64(grain))
	if off < 0 {
		off += grain
	}
	if off == 0 {
		return d
	}
	return d + grain - off
}
