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
	x := NewExplainer(opts, true)
	for _, ev := range evs {
		x.Add(ev)
	}
	return x.Finish()
}

// Explainer is Explain one event at a time, for a log read as a stream:
// it holds the tracker's state and, when asked to, the changes, never the
// lines.
type Explainer struct {
	tracker     *Tracker
	keepChanges bool
	changes     []Change
	begun       bool
	last        time.Time
}

// NewExplainer starts the fold of a saved log. keepChanges keeps every
// change for Finish's Explanation (JSON output prints them); without it
// only the verdict is kept.
func NewExplainer(opts Options, keepChanges bool) *Explainer {
	return &Explainer{tracker: NewTracker(opts), keepChanges: keepChanges}
}

// Add folds the log's next line and returns what it changed (the
// caller may note where each change came from: the line, its number).
func (x *Explainer) Add(ev event.Event) []Change {
	if !x.begun {
		// The unit was running from the log's first line.
		x.begun = true
		x.keep(x.tracker.Apply(event.Event{Kind: event.KindUnit, Time: ev.Time, Unit: &event.Unit{ActiveState: "active", SubState: "running"}}))
	}
	x.last = ev.Time
	cs := x.tracker.Apply(ev)
	x.keep(cs)
	return cs
}

func (x *Explainer) keep(cs []Change) {
	if x.keepChanges {
		x.changes = append(x.changes, cs...)
	}
}

// Finish ends the fold at the log's last line and says what the log shows.
func (x *Explainer) Finish() Explanation {
	if !x.begun {
		x.keep(x.tracker.Apply(event.Event{Kind: event.KindUnit, Unit: &event.Unit{ActiveState: "active", SubState: "running"}}))
	}
	x.keep(x.tracker.End(x.last))
	st := x.tracker.State()
	out := Explanation{Outcome: OutcomeUndecided, Startup: st, Changes: x.changes}
	// The verdict is the last run's: a run that failed is failed while
	// systemd schedules its restart too.
	end := st.Phase
	if n := len(st.Runs); n > 0 && st.Runs[n-1].Failed() {
		end = Failed
	}
	switch end {
	case Failed:
		out.Outcome = OutcomeFailed
	case Serving:
		out.Outcome = OutcomeServed
	default: // undecided
	}
	return out
}
