package startup

import (
	"time"

	"bringup/kernels"
	"bringup/remote/event"
)

// Options configures a Tracker.
type Options struct {
	// Engine is "sglang", "vllm", or "auto"/"" to detect it from the logs.
	Engine string
	// Kernels says which kernel modes are capture-safe; the modes in force
	// are read from the unit's Environment.
	Kernels kernels.Catalog
	// Packs are the rule packs; nil means the built-in ones.
	Packs []RulePack
}

// RulePack is a set of rules for one engine. (Placeholder until the rule
// engine lands.)
type RulePack struct {
	Engine string
}

// Tracker folds one host's events into its Startup.
type Tracker struct {
	opts  Options
	state Startup
}

// NewTracker returns a tracker in phase Stopped.
func NewTracker(opts Options) *Tracker {
	return &Tracker{opts: opts, state: Startup{Phase: Stopped}}
}

// Apply folds ev and reports what changed.
func (t *Tracker) Apply(ev event.Event) []Change { return nil }

// Tick re-evaluates time-based state (stuck detection) at host time now.
func (t *Tracker) Tick(now time.Time) []Change { return nil }

// State returns a copy of the current startup.
func (t *Tracker) State() Startup { return t.state }
