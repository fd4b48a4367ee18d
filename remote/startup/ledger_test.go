package startup

import (
	"fmt"
	"slices"
	"testing"
)

// Rules of each tier, for the ledger's tests.
var (
	ruleHW      = &compiledFailure{FailureRule: FailureRule{Cause: "gpu-xid", Hardware: true}}
	ruleOOM     = &compiledFailure{FailureRule: FailureRule{Cause: "gpu-oom"}}
	ruleNCCL    = &compiledFailure{FailureRule: FailureRule{Cause: "nccl"}}
	ruleWrapper = &compiledFailure{FailureRule: FailureRule{Cause: "scheduler-exception", Wrapper: true}}
	ruleRelay   = &compiledFailure{FailureRule: FailureRule{Cause: "process-died", Relay: true}}
)

// TestLedgerRoot: the root cause is the earliest line of the best tier,
// a decoy last whatever its rule.
func TestLedgerRoot(t *testing.T) {
	c := func(r *compiledFailure, line string) cand { return cand{rule: r, line: line, decoy: isDecoy(line)} }
	for _, tc := range []struct {
		name  string
		cands []cand
		want  int
	}{
		{name: "none", want: -1},
		{name: "a specific line over the wrapper before it",
			cands: []cand{c(ruleWrapper, "Scheduler hit an exception"), c(ruleOOM, "torch.OutOfMemoryError: CUDA out of memory")}, want: 1},
		{name: "the earliest of one tier",
			cands: []cand{c(ruleNCCL, "NCCL error 1"), c(ruleOOM, "torch.OutOfMemoryError: CUDA out of memory")}, want: 0},
		{name: "an unrecognised error over a wrapper over a relay",
			cands: []cand{c(ruleRelay, "rank 1 died"), c(ruleWrapper, "Scheduler hit an exception"), c(&unrecognisedRule, "ValueError: bad")}, want: 2},
		{name: "hardware over everything",
			cands: []cand{c(ruleOOM, "torch.OutOfMemoryError: CUDA out of memory"), c(ruleHW, "NVRM: Xid 79")}, want: 1},
		{name: "a warning loses to a wrapper, whatever its rule",
			cands: []cand{c(ruleOOM, "Skipping import of cpp extensions: CUDA out of memory"), c(ruleWrapper, "Scheduler hit an exception")}, want: 1},
		{name: "a warning alone is the root",
			cands: []cand{c(ruleOOM, "Skipping import of cpp extensions: CUDA out of memory")}, want: 0},
	} {
		l := failureLedger{cands: tc.cands}
		if got := l.root(); got != tc.want {
			t.Errorf("%s: root %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestLedgerAdd: a full ledger keeps room for a line that outranks its
// root, and drops the rest.
func TestLedgerAdd(t *testing.T) {
	var l failureLedger
	for i := range maxCands {
		if !l.add(cand{rule: ruleWrapper, line: fmt.Sprint("wrapper ", i)}) {
			t.Fatalf("candidate %d dropped below the bound", i)
		}
	}
	if l.add(cand{rule: ruleRelay, line: "rank 1 died"}) {
		t.Error("a relay line was kept in a full ledger of wrappers")
	}
	if !l.add(cand{rule: ruleOOM, line: "torch.OutOfMemoryError"}) || len(l.cands) != maxCands || l.cands[l.root()].line != "torch.OutOfMemoryError" {
		t.Errorf("a specific line after a flood of wrappers: %d candidates, root %q", len(l.cands), l.cands[l.root()].line)
	}
	if !l.has("torch.OutOfMemoryError") || l.has("wrapper 15") {
		t.Error("has: want the specific line in place of the last wrapper")
	}
}

// TestLedgerEvidence: the root first (its quote before it), then, in log
// order, one line per other cause, then more wrappers, then the rest, as
// room allows, and the first exit line last.
func TestLedgerEvidence(t *testing.T) {
	l := failureLedger{
		cands: []cand{
			{rule: ruleWrapper, line: "W1"},
			{rule: ruleOOM, line: "OOM", quote: "x = torch.empty(n)"},
			{rule: ruleWrapper, line: "W2"},
			{rule: ruleOOM, line: "OOM again"},
			{rule: ruleNCCL, line: "NCCL"},
			{rule: ruleOOM, line: "OOM a third time"},
		},
		exits: []string{"exit 1", "result"},
	}
	want := []string{"x = torch.empty(n)", "OOM", "W1", "W2", "OOM again", "NCCL", "exit 1"}
	if got := l.evidence(l.root()); !slices.Equal(got, want) {
		t.Errorf("evidence %q\nwant     %q", got, want)
	}
	for range maxExits + 2 {
		l.addExit("more")
	}
	if len(l.exits) != maxExits {
		t.Errorf("%d exit lines kept, want %d", len(l.exits), maxExits)
	}
}

// TestLedgerReport: a ChangeFail is due when any part of what it reports
// changes, and only then.
func TestLedgerReport(t *testing.T) {
	var l failureLedger
	r := failReport{cause: CauseUnitFailed, phase: Weights}
	for i, tc := range []struct {
		change func(*failReport)
		want   bool
	}{
		{func(*failReport) {}, true},
		{func(*failReport) {}, false},
		{func(r *failReport) { r.root = "torch.OutOfMemoryError" }, true},
		{func(r *failReport) { r.fromLog = true }, true},
		{func(r *failReport) { r.cause = "gpu-oom" }, true},
		{func(r *failReport) { r.mode = "kdtree-verify=on" }, true},
		{func(r *failReport) { r.phase = GraphCapture }, true},
		{func(*failReport) {}, false},
	} {
		tc.change(&r)
		if got := l.report(r); got != tc.want {
			t.Errorf("step %d: report %v, want %v", i, got, tc.want)
		}
	}
}
