// Package logs is `bringup logs HOST`: the unit's journal read over the
// host's SSH connection, each line sanitised, the line where a phase
// begins marked, and the phase engine's diagnosis at the end (one-shot)
// or whenever the run settles (following).
package logs

import (
	"fmt"
	"io"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/sanitize"
	"github.com/bringup-dev/bringup/remote/startup"
)

// Printer prints a unit's journal lines as they are folded through the
// phase engine. It is pure: the lines and the unit's state are handed in,
// and it writes to w. It is not safe for concurrent use.
type Printer struct {
	w       io.Writer
	tracker *startup.Tracker
	loc     *time.Location
	begun   bool
	last    time.Time // host time of the last line
	// told is the key of the last verdict printed (run and phase), so
	// that a settled run is said once.
	told string
}

// NewPrinter returns a printer writing to w, times in loc (nil: local).
func NewPrinter(w io.Writer, opts startup.Options, loc *time.Location) *Printer {
	if loc == nil {
		loc = time.Local
	}
	return &Printer{w: w, tracker: startup.NewTracker(opts), loc: loc}
}

// phaseMark is the mark of a line where a phase begins: "▶ [PHASE] ".
func phaseMark(p startup.Phase) string { return "▶ [" + string(p) + "] " }

// Line folds one journal event and prints it: its time, a mark where a
// phase begins, and its text, sanitised (a host's text is untrusted). A
// gap (a reconnect, journald's suppression) prints as a note.
func (p *Printer) Line(ev event.Event) {
	if !p.begun && ev.Kind == event.KindJournal {
		// As explain does: the unit was running from the first line read;
		// the unit's real state, when known, comes with State.
		p.begun = true
		p.tracker.Apply(event.Event{Kind: event.KindUnit, Time: ev.Time, Unit: &event.Unit{ActiveState: "active", SubState: "running"}})
	}
	switch {
	case ev.Kind == event.KindGap && ev.Gap != nil:
		fmt.Fprintf(p.w, "%s    -- %s --\n", p.stamp(ev.Time), sanitize.String(gapText(ev.Gap)))
		return
	case ev.Kind != event.KindJournal || ev.Journal == nil:
		p.tracker.Apply(ev)
		return
	}
	if !ev.Time.IsZero() {
		p.last = ev.Time
	}
	j := *ev.Journal // the caller's event stays its own
	j.Message = sanitize.Text(j.Message)
	ev.Journal = &j
	mark := "  "
	for _, c := range p.tracker.Apply(ev) {
		if c.Kind == startup.ChangePhase && c.Phase != c.From {
			mark = phaseMark(c.Phase)
		}
	}
	fmt.Fprintf(p.w, "%s %s%s\n", p.stamp(ev.Time), mark, j.Message)
}

// gapText is what a gap in the journal says.
func gapText(g *event.Gap) string {
	if g.Message != "" {
		return g.Reason + ": " + g.Message
	}
	return g.Reason
}

// stamp is t as journalctl's short format has it, in the printer's zone.
func (p *Printer) stamp(t time.Time) string {
	if t.IsZero() {
		return "               "
	}
	return t.In(p.loc).Format("Jan 02 15:04:05") // journalctl's short format
}

// State folds the unit's state as read from systemd (ActiveState,
// SubState) at host time at: the one-shot read's last word on the run.
func (p *Printer) State(active, sub string, at time.Time) {
	if active == "" {
		return
	}
	if at.IsZero() {
		at = p.last
	}
	u := &event.Unit{ActiveState: sanitize.String(active), SubState: sanitize.String(sub)}
	p.tracker.Apply(event.Event{Kind: event.KindUnit, Time: at, Unit: u})
}

// Settled reports whether the current run has reached a verdict worth
// printing (served or failed) that has not been printed yet.
func (p *Printer) Settled() bool {
	st := p.tracker.State()
	return decided(st) && p.told != verdictKey(st)
}

// decided says the run served or failed.
func decided(st startup.Startup) bool {
	return st.Phase == startup.Serving || failed(st)
}

// failed says the latest run failed (as explain's verdict reads it: a
// run that failed is failed while systemd schedules its restart too).
func failed(st startup.Startup) bool {
	if n := len(st.Runs); n > 0 && st.Runs[n-1].Failed() {
		return true
	}
	return st.Phase == startup.Failed
}

func verdictKey(st startup.Startup) string { return fmt.Sprintf("%d/%s", st.Run, st.Phase) }

// Verdict prints the diagnosis of the latest run: served, failed (cause,
// hint, evidence, fix, as explain prints them) or where it is.
func (p *Printer) Verdict() {
	st := p.tracker.State()
	p.told = verdictKey(st)
	fmt.Fprintln(p.w, "──")
	switch {
	case failed(st):
		output.Verdict(p.w, startup.OutcomeFailed, st)
	case st.Phase == startup.Serving:
		output.Verdict(p.w, startup.OutcomeServed, st)
	case st.Phase == "":
		fmt.Fprintln(p.w, "NO RUN: the lines read show no startup")
	default:
		fmt.Fprintf(p.w, "UNDER WAY: in %s\n", st.Phase)
	}
}
