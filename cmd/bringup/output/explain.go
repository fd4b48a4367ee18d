package output

import (
	"fmt"
	"io"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/logfile"
	"github.com/bringup-dev/bringup/remote/sanitize"
	"github.com/bringup-dev/bringup/remote/startup"
)

// ExplainJSON prints the changes as `bringup watch --json` would for a
// host named "log" (no latency: nothing was received live), then the v1
// summary line with the outcome, exit code, what was read, the trail and
// the diagnosis.
func ExplainJSON(w io.Writer, x startup.Explanation, lg logfile.Summary, exit int) {
	st := x.Startup
	for _, c := range x.Changes {
		Change(w, remote.HostChange{Host: "log", Change: c}, st.StartedAt, true)
	}
	timed, lines := lg.Timed, lg.Lines
	l := Line{Kind: "summary", Command: "explain", Outcome: string(x.Outcome), Exit: &exit,
		Format: string(lg.Format), Timed: &timed, Lines: &lines, Engine: st.Engine, EngineVersion: x.EngineVersion, Phase: string(st.Phase)}
	for _, sp := range st.Spans {
		l.Trail = append(l.Trail, SpanOf(sp))
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
// hint, evidence and fix.
func Explain(w io.Writer, name string, x startup.Explanation, lg logfile.Summary) {
	st := x.Startup
	engine := st.Engine
	if engine == "" {
		engine = "engine unknown"
	}
	if x.EngineVersion != "" {
		engine += " " + sanitize.String(x.EngineVersion)
	}
	fmt.Fprintf(w, "%s · %s · %d lines (%s)\n", sanitize.String(name), engine, lg.Lines, lg.Format)
	for _, sp := range st.Spans {
		d := "—"
		switch {
		case sp.Inferred:
			d = "(its begin is not in the log)"
		case lg.Timed && !sp.End.IsZero():
			d = sp.End.Sub(sp.Start).Round(time.Second).String()
		case lg.Timed:
			d = "…"
		}
		fmt.Fprintf(w, "  %-14s %s\n", sp.Phase, d)
	}
	switch x.Outcome {
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
		fmt.Fprintf(w, "  hint: %s\n", d.Hint)
		if len(d.Evidence) > 0 {
			fmt.Fprintln(w, "  evidence:")
			for _, l := range d.Evidence {
				fmt.Fprintf(w, "    %s\n", l)
			}
		}
		if d.Fix != nil {
			fmt.Fprintf(w, "  fix: %s\n", d.Fix.Command("HOST"))
		}
	}
}
