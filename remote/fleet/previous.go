package fleet

import (
	"github.com/bringup-dev/bringup/remote/history"
)

// PreviousSink finds a host's previous serving run with its decode rate,
// whatever its modes (store.Sink is one). It answers from memory, without
// IO.
type PreviousSink interface {
	Previous(host, unit string) (history.Record, bool)
}

// PreviousRun is host's previous serving run under unit with a steady
// decode rate, from the fleet's history (Options.Previous): what a
// rollout compares the run it starts with. ok is false without one, or
// without such a run. It does no IO.
func (f *Fleet) PreviousRun(host, unit string) (history.Record, bool) {
	if f.opts.Previous == nil {
		return history.Record{}, false
	}
	return f.opts.Previous.Previous(host, unit)
}

// SlowerBy is the drop in decode rate that marks a host's kernel modes as
// slower than before (Options.SlowerBy; 0: history.DefaultSlowerBy).
func (f *Fleet) SlowerBy() float64 { return f.opts.SlowerBy }
