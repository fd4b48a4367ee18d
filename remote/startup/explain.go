package startup

import (
	"time"

	"github.com/bringup-dev/bringup/remote/event"
)

// Outcome is what a saved log says of its startup.
type Outcome string

// The outcomes of a saved log.
const (
	OutcomeServed    Outcome = "served"    // the engine said it is ready and nothing failed after
	OutcomeFailed    Outcome = "failed"    // the startup failed; the diagnosis says why
	OutcomeUndecided Outcome = "undecided" // the log ends mid-way, with no error as its last word
)

// Explanation is the fold of a saved log.
type Explanation struct {
	Outcome Outcome  `json:"outcome"`
	Startup Startup  `json:"startup"`
	Changes []Change `json:"changes"`
}

// Explain folds a saved log — its lines as journal events, in order —
// through the same tracker the console runs on a live host. The log is
// taken as the output of a unit that was running from its first line, and
// its end as the end of the process: a log whose last word is an error
// failed. Lines of systemd about the unit, where the log has them, say the
// rest as they would live.
func Explain(evs []event.Event, opts Options) Explanation {
	tr := NewTracker(opts)
	var out []Change
	var first, last time.Time
	if len(evs) > 0 {
		first, last = evs[0].Time, evs[len(evs)-1].Time
	}
	out = append(out, tr.Apply(event.Event{Kind: event.KindUnit, Time: first, Unit: &event.Unit{ActiveState: "active", SubState: "running"}})...)
	for _, ev := range evs {
		out = append(out, tr.Apply(ev)...)
	}
	out = append(out, tr.End(last)...)
	st := tr.State()
	x := Explanation{Outcome: OutcomeUndecided, Startup: st, Changes: out}
	switch st.Phase {
	case Failed:
		x.Outcome = OutcomeFailed
	case Serving:
		x.Outcome = OutcomeServed
	default: // undecided
	}
	return x
}
