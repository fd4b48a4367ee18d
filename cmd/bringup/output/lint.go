package output

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/bringup-dev/bringup/kernels/capturelint"
	"github.com/bringup-dev/bringup/remote/sanitize"
)

// LintResult is what `bringup lint` found in one kernel's tree.
type LintResult struct {
	Dir      string                    `json:"dir"`
	Kernel   string                    `json:"kernel,omitempty"`
	Report   capturelint.Report        `json:"report"`
	Verdicts []capturelint.ModeVerdict `json:"verdicts,omitempty"`
	Skipped  []string                  `json:"skipped,omitempty"` // files too large to read
	Exit     int                       `json:"exit"`
}

// clean makes the text a tree supplied safe for a terminal or a log:
// file names, calls and the notes that quote them.
func clean(s string) string { return sanitize.String(s) }

// LintJSON prints the result as one JSON object, its text sanitised.
func LintJSON(w io.Writer, r LintResult) {
	r.Dir = clean(r.Dir)
	fs := make([]capturelint.Finding, len(r.Report.Findings))
	for i, f := range r.Report.Findings {
		f.File, f.Func, f.Call, f.Via = clean(f.File), clean(f.Func), clean(f.Call), clean(f.Via)
		fs[i] = f
	}
	r.Report.Findings = fs
	for i := range r.Skipped {
		r.Skipped[i] = clean(r.Skipped[i])
	}
	errs := make([]capturelint.FileError, len(r.Report.FileErrors))
	for i, e := range r.Report.FileErrors {
		e.File, e.Msg = clean(e.File), clean(e.Msg)
		errs[i] = e
	}
	r.Report.FileErrors = errs
	out := struct {
		V       int    `json:"v"`
		Kind    string `json:"kind"`
		Command string `json:"command"`
		LintResult
	}{SchemaVersion, "summary", "lint", r}
	b, _ := json.Marshal(out)
	fmt.Fprintf(w, "%s\n", b)
}

// Lint prints each finding with its place, function, reason and the modes
// that reach it; then, for a kernel of the catalog, each mode's verdict
// beside the declared one.
func Lint(w io.Writer, r LintResult) {
	rep := r.Report
	what := "no kernel named: every finding counts as every mode"
	if r.Kernel != "" {
		what = "kernel " + clean(r.Kernel)
	}
	fmt.Fprintf(w, "%s · %d Python files · %s\n", clean(r.Dir), rep.Files, what)
	for _, f := range rep.Findings {
		modes := "modes: " + strings.Join(f.Modes, ", ")
		switch {
		case f.AllModes && r.Kernel != "":
			modes = "all modes"
		case f.AllModes:
			modes = "any mode"
		case len(f.Modes) == 0:
			modes = "no mode reaches it"
		}
		fmt.Fprintf(w, "%s:%d:%d  %s  %s  [%s, %s]\n", clean(f.File), f.Line, f.Col, clean(f.Func), clean(f.Call), modes, f.Confidence)
		fmt.Fprintf(w, "    %s\n", f.Reason)
		if f.Via != "" {
			fmt.Fprintf(w, "    reached: %s\n", clean(f.Via))
		}
	}
	if len(rep.Findings) == 0 {
		fmt.Fprintln(w, "no capture-illegal call found")
	}
	for _, e := range rep.FileErrors {
		fmt.Fprintf(w, "%s:%d:%d: syntax: %s (the lint read on past it)\n", clean(e.File), e.Line, e.Col+1, clean(e.Msg))
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "%s: skipped, larger than %d bytes\n", clean(s), capturelint.MaxFileSize)
	}
	if len(r.Verdicts) > 0 {
		fmt.Fprintln(w, "modes (catalog vs lint):")
		for _, v := range r.Verdicts {
			extra := ""
			if v.Possible > 0 {
				extra = fmt.Sprintf(" (+%d possible, low confidence)", v.Possible)
			}
			fmt.Fprintf(w, "  %-10s %s%s\n", v.Mode, v.Note, extra)
		}
	}
}
