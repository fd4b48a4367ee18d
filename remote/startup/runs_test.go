package startup_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/logfile"
	"github.com/bringup-dev/bringup/remote/startup"
)

// Invocations of sglang.service in the journal of two real test hosts
// (remote/vlogs/testdata/tail-two-hosts.jsonl: infersim under systemd 255,
// PID 1's lines about the unit and the unit's own, as VictoriaLogs
// returned them).
const (
	gpu2Failed  = "a49f0ee7cd9d40b99d511539dc7ec373" // fails in graph capture, no restart scheduled
	gpu2Failed2 = "0f3043caf06b4c989e697aa5a4b3bcbc" // fails in graph capture, then "Scheduled restart job" and "Stopped"
	gpu1Served  = "edb0deba0c3e48698d1147267f76625f" // serves, then is stopped
	gpu1Served2 = "26274eccb68d401cadc5c5bfb781a959" // serves (the log ends there)
)

// shortJournal renders the records of the named invocations, in the
// order given and each run's lines in the journal's order, as
// `journalctl -o short` prints them: `Dec 01 22:31:33 gpu2 infersim[51]: …`.
// The texts are the records' own; only the prefix is journalctl's
// rendering of their fields. keep, when set, picks the records kept (a
// grep of the paste).
func shortJournal(t *testing.T, keep func(ident string) bool, invocations ...string) string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "vlogs", "testdata", "tail-two-hosts.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byRun := map[string][]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r map[string]string
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		inv := r["INVOCATION_ID"]
		if inv == "" {
			inv = r["_SYSTEMD_INVOCATION_ID"]
		}
		if !slices.Contains(invocations, inv) || keep != nil && !keep(r["SYSLOG_IDENTIFIER"]) {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, r["_time"])
		if err != nil {
			t.Fatal(err)
		}
		byRun[inv] = append(byRun[inv], at.Format("Jan 02 15:04:05")+" "+r["_HOSTNAME"]+" "+r["SYSLOG_IDENTIFIER"]+"["+r["_PID"]+"]: "+r["_msg"])
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, inv := range invocations {
		if len(byRun[inv]) == 0 {
			t.Fatalf("no records of invocation %s", inv)
		}
		out = append(out, byRun[inv]...)
	}
	return strings.Join(out, "\n") + "\n"
}

func explainText(t *testing.T, text string) startup.Explanation {
	t.Helper()
	x := startup.NewExplainer(startup.Options{Engine: "auto", Kernels: kernels.DefaultCatalog()}, false)
	if _, err := logfile.Scan(strings.NewReader(text), "paste", logfile.Options{Year: 2026}, func(ev event.Event) error {
		x.Add(ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return x.Finish()
}

// TestExplainRuns: `journalctl -u sglang -o short` over a unit that ran
// more than once is read run by run, and its verdict is the last run's.
// The pastes are made of real runs of the test hosts: a failed run then
// a served one, a served (then stopped) run then a failed one, and the
// failed-then-served paste grepped down to the engine's own lines, where
// only the new PID tells the second run from the first.
func TestExplainRuns(t *testing.T) {
	engineOnly := func(ident string) bool { return ident != "systemd" }
	tests := []struct {
		name    string
		text    string
		outcome startup.Outcome
		runs    []startup.Phase // each run's end, in order
		cause   string          // the first failed run's cause
	}{
		{"failed-then-served", shortJournal(t, nil, gpu2Failed, gpu1Served2), startup.OutcomeServed, []startup.Phase{startup.Failed, startup.Serving}, "graph-capture-host-sync"},
		{"served-then-failed", shortJournal(t, nil, gpu1Served, gpu2Failed2), startup.OutcomeFailed, []startup.Phase{startup.Serving, startup.Failed}, "graph-capture-host-sync"},
		{"failed-then-served-engine-lines-only", shortJournal(t, engineOnly, gpu2Failed, gpu1Served2), startup.OutcomeServed, []startup.Phase{startup.Failed, startup.Serving}, "graph-capture-host-sync"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := explainText(t, tt.text)
			if x.Outcome != tt.outcome {
				t.Fatalf("outcome %s (phase %s, diag %+v), want %s", x.Outcome, x.Startup.Phase, x.Startup.Diag, tt.outcome)
			}
			runs := x.Startup.Runs
			var ends []startup.Phase
			for _, r := range runs {
				ends = append(ends, r.Outcome)
			}
			if !slices.Equal(ends, tt.runs) || x.Startup.Run != len(tt.runs) {
				t.Fatalf("runs end in %v (run %d), want %v", ends, x.Startup.Run, tt.runs)
			}
			for i, r := range runs {
				if r.N != i+1 || r.Start.IsZero() {
					t.Errorf("run %d: number %d, start %s", i+1, r.N, r.Start)
				}
				if r.Outcome == startup.Failed && (r.Diag == nil || r.Diag.Cause != tt.cause || r.Reached != startup.GraphCapture) {
					t.Errorf("run %d failed with %+v, reached %s; want %s in graph-capture", r.N, r.Diag, r.Reached, tt.cause)
				}
				if r.Outcome == startup.Serving && r.Diag != nil {
					t.Errorf("served run %d has a diagnosis %+v", r.N, r.Diag)
				}
			}
		})
	}
}
