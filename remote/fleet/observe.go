package fleet

import (
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/startup"
)

// Observer derives something from every host's startup beside the fold —
// an ETA from the history (History), the decode rate against the kernel
// modes a host ran before (Throughput), the kernel builds the hosts loaded
// (KernelCheck) — and adds it to the hosts' snapshots. Observers are
// given to New in Options.Observers; the fold knows none of them by name.
type Observer interface {
	// Follow starts following host h as the fold begins; the fold calls
	// it once per host, from its goroutine, and asks the HostObserver it
	// returns about that host alone.
	Follow(h Folded) HostObserver
}

// HostObserver follows one host for an Observer. Its calls come from the
// fold goroutine, one at a time, so it keeps its state without locks; they
// come for every event, so they must be cheap and do no IO (a Recorder's
// IO happens on the fleet's writer goroutine).
type HostObserver interface {
	// Observe hears of ev, just folded into h, and of the startup changes
	// it made (none for most events).
	Observe(h Folded, ev event.Event, changes []startup.Change)
	// Derive adds what the observer derives to s, the host's snapshot at
	// host time now, being taken (s.Startup and s.GPU are set). timed
	// says the value changes with the clock alone (an ETA), so the host
	// is taken anew at every snapshot.
	Derive(s *remote.HostState, now time.Time) (timed bool)
}

// Folded is one host as the fold holds it, as an observer reads it during
// Follow and Observe. It is valid only during the call.
type Folded struct {
	f *Fleet
	h *hostFold
}

// Name is the host's name.
func (v Folded) Name() string { return v.h.state.Name }

// Unit is the unit the host runs.
func (v Folded) Unit() string { return v.h.state.Unit }

// Modes are the kernel modes in the unit's environment as last read (nil:
// not read yet).
func (v Folded) Modes() []kernels.ActiveMode { return v.h.state.Modes }

// GPU is the newest GPU sample; ok is false before the first.
func (v Folded) GPU() (g event.GPU, ok bool) {
	if n := len(v.h.state.GPU); n > 0 {
		return v.h.state.GPU[n-1], true
	}
	return event.GPU{}, false
}

// Bench is the host's last bench result (nil: none).
func (v Folded) Bench() *remote.BenchRun { return v.h.state.Bench }

// Startup is the host's startup as its tracker holds it now: a copy, so an
// observer asks for it only when an event concerns it.
func (v Folded) Startup() startup.Startup { return v.h.tracker.State() }

// StatsLines counts the serving stats lines the host's tracker has read:
// a cheap look for whether its decode rate may have moved.
func (v Folded) StatsLines() int { return v.h.tracker.StatsLines() }

// Record hands r to the fleet's history writer (Options.Records), or drops
// and counts it when the writer is behind; without a Recorder it keeps
// nothing.
func (v Folded) Record(r history.Record) { v.f.queue(r) }

// follow starts every observer on host h.
func (f *Fleet) follow(h *hostFold) {
	h.observers = make([]HostObserver, len(f.opts.Observers))
	for i, o := range f.opts.Observers {
		h.observers[i] = o.Follow(Folded{f, h})
	}
}

// observe tells every observer of h about ev and the changes it made.
func (f *Fleet) observe(h *hostFold, ev event.Event, changes []startup.Change) {
	for _, o := range h.observers {
		o.Observe(Folded{f, h}, ev, changes)
	}
}

// derive has every observer of h add what it derives to s; timed says one
// of them changes with the clock alone.
func (h *hostFold) derive(s *remote.HostState, now time.Time) (timed bool) {
	for _, o := range h.observers {
		if o.Derive(s, now) {
			timed = true
		}
	}
	return timed
}
