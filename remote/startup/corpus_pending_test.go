package startup_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/remote/startup"
)

// pendingDir holds a new batch of real logs, in the corpus format, scored
// as it came, before any rule is changed for it: the generalisation figure.
// Its logs' wrong verdicts are printed, not failed on; a log moves to
// testdata/corpus once the rules read it right.
const pendingDir = "testdata/corpus-pending"

// genericCause reports whether cause says only "it failed in this phase"
// (or that the error is unknown): not a claim about the root cause.
func genericCause(cause string) bool {
	if cause == startup.CauseUnrecognised {
		return true
	}
	p, ok := strings.CutSuffix(cause, "-failed")
	return ok && startup.Phase(p).Rank() > startup.Starting.Rank()
}

// pendingScore is one log's score against its label.
type pendingScore struct {
	causeRight      bool // the cause class and the phase (or the outcome) are the label's
	allRight        bool // TestCorpus's verdict: trail and root line too
	confidentWrong  bool // a specific cause that is not the label's
	falseFailure    bool // a success or a cut-off start said to have failed
	missedFailure   bool // a failure not said to have failed
	said, wrongness string
}

func scorePending(c corpusLog, x startup.Explanation) pendingScore {
	wrong, ff := verdict(c, x)
	s := pendingScore{allRight: wrong == "", falseFailure: ff, wrongness: wrong, said: string(x.Outcome)}
	d := x.Startup.Diag
	if d != nil {
		s.said += fmt.Sprintf(" %s in %s", d.Cause, d.Phase)
	}
	failed := x.Outcome == startup.OutcomeFailed && d != nil
	switch c.Expect {
	case "failed":
		s.missedFailure = !failed
		s.causeRight = failed && d.Cause == c.Cause && string(d.Phase) == c.FailedIn
		s.confidentWrong = failed && d.Cause != c.Cause && !genericCause(d.Cause)
	case "served":
		s.causeRight = x.Outcome == startup.OutcomeServed
	case "running":
		s.causeRight = x.Outcome == startup.OutcomeUndecided
	}
	return s
}

func TestGenericCause(t *testing.T) {
	for cause, want := range map[string]bool{
		"unrecognised":         true,
		"graph-capture-failed": true,
		"warmup-failed":        true,
		"weights-failed":       true,
		"dist-init-failed":     false,
		"gpu-oom":              false,
		"starting-failed":      false,
	} {
		if got := genericCause(cause); got != want {
			t.Errorf("genericCause(%q) = %v, want %v", cause, got, want)
		}
	}
}

// TestCorpusPending scores the pending batch the way TestCorpus scores the
// corpus and prints the figure README's generalisation table records. A
// wrong verdict is the figure, not a failure; a pending log that breaks
// the format, or that repeats a corpus log's name or source, fails.
func TestCorpusPending(t *testing.T) {
	pending := readPending(t)
	if len(pending) == 0 {
		t.Skip("no pending batch in " + pendingDir)
	}
	known := map[string]string{}
	for _, c := range readCorpus(t) {
		known[c.Name] = c.Name
		known[normaliseSource(c.Source)] = c.Name
	}
	var causeRight, allRight, confident, falseFail, missed int
	var wrongs []string
	for _, c := range pending {
		if n, ok := known[c.Name]; ok {
			t.Errorf("%s: already in the corpus as %s", c.Name, n)
		}
		if n, ok := known[normaliseSource(c.Source)]; ok {
			t.Errorf("%s: its source %s is already in the corpus (%s)", c.Name, c.Source, n)
		}
		s := scorePending(c, explainCorpus(t, c))
		for _, b := range []struct {
			on bool
			n  *int
		}{{s.causeRight, &causeRight}, {s.allRight, &allRight}, {s.confidentWrong, &confident}, {s.falseFailure, &falseFail}, {s.missedFailure, &missed}} {
			if b.on {
				*b.n++
			}
		}
		if !s.causeRight {
			label := c.Expect
			if c.Expect == "failed" {
				label += " " + c.Cause + " in " + c.FailedIn
			}
			mark := ""
			if s.confidentWrong {
				mark = " [confident wrong]"
			}
			wrongs = append(wrongs, fmt.Sprintf("%s: said %s, label %s%s", c.Name, s.said, label, mark))
		}
		t.Logf("%-70s %s · %s", c.Name, map[bool]string{true: "right", false: "WRONG"}[s.causeRight], s.wrongness)
	}
	n := len(pending)
	t.Logf("pending batch: %d logs; cause class and phase right %d (%.0f%%), all right (trail, root line too) %d (%.0f%%); "+
		"%d confident wrong causes, %d false failures, %d failures missed",
		n, causeRight, 100*float64(causeRight)/float64(n), allRight, 100*float64(allRight)/float64(n), confident, falseFail, missed)
	for _, w := range wrongs {
		t.Log("  " + w)
	}
}
