package startup_test

import (
	"strings"
	"testing"
)

// TestCorpusUnrecognisedSaysPhase: where no rule knows the error, the
// diagnosis is phase-generic, not a guess: "<phase> failed (no rule knows
// this error): <the line>" with that phase's hint where the phase is known,
// "unrecognised error: <the line>" where it is not. The cause id stays
// "unrecognised" (the phase is the diagnosis's own field), so a script and
// the generalisation figure can count the honest unknowns.
func TestCorpusUnrecognisedSaysPhase(t *testing.T) {
	n := 0
	for _, c := range readCorpus(t) {
		if c.Expect != "failed" || c.Cause != "unrecognised" {
			continue
		}
		n++
		d := explainCorpus(t, c).Startup.Diag
		if d == nil {
			t.Errorf("%s: no diagnosis", c.Name)
			continue
		}
		want := "unrecognised error: "
		if c.FailedIn != "starting" {
			want = c.FailedIn + " failed (no rule knows this error): "
		}
		if !strings.HasPrefix(d.Summary, want) || len(d.Summary) == len(want) {
			t.Errorf("%s: summary %q, want %q and the line", c.Name, d.Summary, want)
		}
		if !strings.Contains(d.Hint, "no known failure matched") {
			t.Errorf("%s: hint %q does not say no rule matched", c.Name, d.Hint)
		}
	}
	if n == 0 {
		t.Fatal("no corpus log labelled unrecognised")
	}
	t.Logf("%d unrecognised logs, each phase-generic", n)
}
