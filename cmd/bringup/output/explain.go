package output

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/logfile"
	"github.com/bringup-dev/bringup/remote/startup"
)

// ExplainSummary is the last line of `bringup explain --json`.
type ExplainSummary struct {
	Kind    string             `json:"kind"` // "explained"
	Outcome startup.Outcome    `json:"outcome"`
	Format  logfile.Format     `json:"format"`
	Timed   bool               `json:"timed"` // the log carried times: durations mean something
	Lines   int                `json:"lines"`
	Engine  string             `json:"engine,omitempty"`
	Phase   startup.Phase      `json:"phase"`
	Trail   []startup.Span     `json:"trail"`
	Diag    *startup.Diagnosis `json:"diagnosis,omitempty"`
}

// ExplainJSON prints the changes as `bringup watch --json` would for a
// host named "log", then one summary line.
func ExplainJSON(w io.Writer, x startup.Explanation, lg logfile.Log) {
	st := x.Startup
	for _, c := range x.Changes {
		Change(w, remote.HostChange{Host: "log", Seen: c.Time, Change: c}, st.StartedAt, true)
	}
	sum := ExplainSummary{"explained", x.Outcome, lg.Format, lg.Timed, len(lg.Events), st.Engine, st.Phase, st.Spans, st.Diag}
	b, _ := json.Marshal(sum)
	fmt.Fprintf(w, "%s\n", b)
}

// Explain prints the trail with timings, then the verdict, cause,
// hint, evidence and fix.
func Explain(w io.Writer, name string, x startup.Explanation, lg logfile.Log) {
	st := x.Startup
	engine := st.Engine
	if engine == "" {
		engine = "engine unknown"
	}
	fmt.Fprintf(w, "%s · %s · %d lines (%s)\n", name, engine, len(lg.Events), lg.Format)
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
			fmt.Fprintf(w, "  fix: bringup mode HOST %s=%s --restart\n", d.Fix.Kernel, d.Fix.Mode)
		}
	}
}
