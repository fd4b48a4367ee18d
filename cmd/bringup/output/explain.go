package output

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/logfile"
	"github.com/bringup-dev/bringup/remote/sanitize"
	"github.com/bringup-dev/bringup/remote/startup"
)

// ExplainJSON prints the changes as `bringup watch --json` would for a
// host named "log" (no latency: nothing was received live; no time where
// the log has none), then the v1 summary line with the outcome, exit
// code, what was read, the trail (no seconds for a span a line without a
// time of its own bounds) and the diagnosis.
func ExplainJSON(w io.Writer, x startup.Explanation, lg logfile.Summary, exit int, notes *ExplainNotes) {
	st := x.Startup
	for _, c := range x.Changes {
		if !lg.Timed { // every line has the same made-up time: say none
			l := changeLine(remote.HostChange{Host: "log", Change: c}, time.Time{})
			l.Time, l.untimed = "", true
			emit(w, l)
			continue
		}
		Change(w, remote.HostChange{Host: "log", Change: c}, st.StartedAt, true)
	}
	timed, lines := lg.Timed, lg.Lines
	l := Line{Kind: "summary", Command: "explain", Outcome: string(x.Outcome), Exit: &exit,
		Format: string(lg.Format), Timed: &timed, Lines: &lines, Engine: st.Engine, EngineVersion: x.Startup.EngineVersion, Phase: string(st.Phase), Run: st.Run}
	if len(st.Runs) > 1 {
		// The trail and diagnosis are the last run's; runs holds each.
		for _, r := range st.Runs {
			ro := RunOf(r)
			if !lg.Timed {
				ro.Start, ro.End, ro.Seconds = "", "", nil
			}
			l.Runs = append(l.Runs, ro)
		}
	}
	for _, sp := range st.Spans {
		so := SpanOf(sp)
		switch {
		case !lg.Timed:
			so.Start, so.End, so.Seconds = "", "", nil
		case !sp.End.IsZero() && notes.untimed(sp):
			so.Seconds = nil // measured to the time of the line before: wrong
		}
		l.Trail = append(l.Trail, so)
	}
	if d := st.Diag; d != nil {
		l.Cause, l.Summary, l.Hint, l.Evidence, l.KernelMode, l.FailedIn = d.Cause, d.Summary, d.Hint, d.Evidence, d.KernelMode, string(d.Phase)
		if d.Fix != nil {
			l.Fix = fmt.Sprintf("bringup mode HOST %s=%s --restart", d.Fix.Kernel, d.Fix.Mode)
		}
	}
	emit(w, l)
}

// Explain prints the trail with timings, then the verdict, cause,
// hint, evidence and fix. A log of several runs of the unit (systemd
// restarted it) lists them first, then prints a block per run: its start,
// trail and verdict, the last run's in full, since the verdict is its.
func Explain(w io.Writer, name string, x startup.Explanation, lg logfile.Summary, notes *ExplainNotes) {
	st := x.Startup
	engine := st.Engine
	if engine == "" {
		engine = "engine unknown"
	}
	if x.Startup.EngineVersion != "" {
		engine += " " + sanitize.String(x.Startup.EngineVersion)
	}
	fmt.Fprintf(w, "%s · %s · %d lines (%s)\n", sanitize.String(name), engine, lg.Lines, lg.Format)
	if len(st.Runs) < 2 {
		explainTrail(w, st.Spans, lg.Timed, notes)
		verdict(w, x.Outcome, st, lg.Timed, notes)
		return
	}
	last := st.Runs[len(st.Runs)-1]
	fmt.Fprintf(w, "%d runs of the unit (systemd started it again); the verdict is run %d's\n", st.Run, last.N)
	if first := st.Runs[0].N; first > 1 {
		fmt.Fprintf(w, "  runs 1-%d: before the runs kept\n", first-1)
	}
	for _, r := range st.Runs {
		fmt.Fprintf(w, "  run %-3d %s\n", r.N, runLine(r, lg.Timed))
	}
	for _, r := range st.Runs[:len(st.Runs)-1] {
		fmt.Fprintf(w, "run %d%s\n", r.N, runStart(r, lg.Timed))
		explainTrail(w, r.Spans, lg.Timed, notes)
		fmt.Fprintln(w, runVerdict(r))
		if d := r.Diag; d != nil && r.Failed() {
			fmt.Fprintf(w, "  hint: %s\n", d.Hint)
			if len(d.Evidence) > 0 {
				fmt.Fprintf(w, "  evidence: %s\n", evidenceLine(d.Evidence[0], notes))
			}
		}
	}
	fmt.Fprintf(w, "run %d%s\n", last.N, runStart(last, lg.Timed))
	explainTrail(w, st.Spans, lg.Timed, notes)
	verdict(w, x.Outcome, st, lg.Timed, notes)
}

// runStart is " · started <time>" where the log is timed.
func runStart(r startup.Run, timed bool) string {
	if !timed || r.Start.IsZero() {
		return ""
	}
	return " · started " + r.Start.Format(time.DateTime)
}

// runLine is a run in one line: when it started, how it ended, after how
// long and, failed, why.
func runLine(r startup.Run, timed bool) string {
	var b strings.Builder
	if timed && !r.Start.IsZero() {
		b.WriteString(r.Start.Format(time.DateTime) + "  ")
	}
	switch {
	case r.Failed():
		fmt.Fprintf(&b, "failed in %s", failedIn(r))
	case r.Outcome == startup.Serving:
		b.WriteString("served")
	case r.Outcome == startup.Stopped:
		fmt.Fprintf(&b, "stopped in %s before it served", reachedOf(r))
	default:
		fmt.Fprintf(&b, "in %s", r.Outcome)
	}
	if timed && !r.End.IsZero() {
		fmt.Fprintf(&b, " after %s", r.Duration(r.End).Round(time.Second))
	}
	if c := r.Cause(); c != "" {
		fmt.Fprintf(&b, " [%s]", c)
	}
	return b.String()
}

// runVerdict is an earlier run's verdict line.
func runVerdict(r startup.Run) string {
	switch {
	case r.Failed() && r.Diag != nil:
		return fmt.Sprintf("FAILED in %s: %s [%s]", r.Diag.Phase, r.Diag.Summary, r.Diag.Cause)
	case r.Failed():
		return "FAILED"
	case r.Outcome == startup.Serving:
		return "SERVED, then stopped"
	default:
		return fmt.Sprintf("STOPPED in %s before it served", reachedOf(r))
	}
}

func failedIn(r startup.Run) startup.Phase {
	if r.Diag != nil {
		return r.Diag.Phase
	}
	return reachedOf(r)
}

func reachedOf(r startup.Run) startup.Phase {
	if r.Reached == "" {
		return startup.Starting
	}
	return r.Reached
}

func explainTrail(w io.Writer, spans []startup.Span, timed bool, notes *ExplainNotes) {
	for _, sp := range spans {
		d := "—"
		switch {
		case sp.Inferred:
			d = "(its begin is not in the log)"
		case timed && !sp.End.IsZero() && notes.untimed(sp):
			// Measured to the time of the line before, it would be wrong.
			d = "— (a line without a time of its own bounds it)"
		case timed && !sp.End.IsZero():
			d = sp.End.Sub(sp.Start).Round(time.Second).String()
		case timed:
			d = "…"
		}
		fmt.Fprintf(w, "  %-14s %s\n", sp.Phase, d)
	}
}

// Verdict prints a startup's verdict: served, undecided, or failed with
// its cause, when, hint, evidence and fix (explain's last lines; logs'
// too, whose lines always have times).
func Verdict(w io.Writer, outcome startup.Outcome, st startup.Startup) {
	verdict(w, outcome, st, true, nil)
}

// evidenceLine is an evidence text, with its line number in the log
// where notes know it.
func evidenceLine(e string, notes *ExplainNotes) string {
	if n := notes.lineOfEvidence(e); n > 0 {
		return fmt.Sprintf("line %d: %s", n, e)
	}
	return e
}

// verdict is Verdict of a log that is timed or not (an untimed one has
// no time of failure to give), with the evidence's line numbers where
// notes know them.
func verdict(w io.Writer, outcome startup.Outcome, st startup.Startup, timed bool, notes *ExplainNotes) {
	switch outcome {
	case startup.OutcomeServed:
		fmt.Fprintln(w, "SERVED: the engine said it is ready")
	case startup.OutcomeUndecided:
		fmt.Fprintf(w, "UNDECIDED: the log ends in %s with no error as its last word\n", st.Phase)
	case startup.OutcomeFailed:
		d := st.Diag
		if d == nil {
			fmt.Fprintln(w, "FAILED")
			return
		}
		fmt.Fprintf(w, "FAILED in %s: %s [%s]\n", d.Phase, d.Summary, d.Cause)
		if timed && !d.Time.IsZero() {
			fmt.Fprintf(w, "  at: %s\n", d.Time.Format(time.DateTime))
		}
		fmt.Fprintf(w, "  hint: %s\n", d.Hint)
		if len(d.Evidence) > 0 {
			fmt.Fprintln(w, "  evidence:")
			for _, l := range d.Evidence {
				fmt.Fprintf(w, "    %s\n", evidenceLine(l, notes))
			}
		}
		if d.Fix != nil {
			fmt.Fprintf(w, "  fix: %s\n", d.Fix.Command("HOST"))
		}
	}
}
