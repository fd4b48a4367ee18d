package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/output"
)

// journalShort renders the records of the named invocations of the real
// test-host journal remote/vlogs/testdata/tail-two-hosts.jsonl (infersim
// under systemd 255: PID 1's lines about sglang.service and the unit's
// own), run after run in the order given, as `journalctl -o short` prints
// them. The texts are the records' own; only the prefix is journalctl's
// rendering of their fields.
func journalShort(t *testing.T, invocations ...string) string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "remote", "vlogs", "testdata", "tail-two-hosts.jsonl"))
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
		inv := r["INVOCATION_ID"] + r["_SYSTEMD_INVOCATION_ID"]
		if !slices.Contains(invocations, inv) {
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

// TestExplainSeveralRuns: `journalctl -u sglang -o short` over a unit
// systemd started more than once, made of real runs of the test hosts: a
// run that failed in graph capture then one that served is SERVED (exit
// 0) with the failed run listed above; a served run then a failed one is
// FAILED (exit 1). Each run gets its block; --json's summary carries the
// run number and the runs.
func TestExplainSeveralRuns(t *testing.T) {
	const (
		failed     = "a49f0ee7cd9d40b99d511539dc7ec373" // gpu2: fails in graph capture
		failed2    = "0f3043caf06b4c989e697aa5a4b3bcbc" // gpu2: fails in graph capture, restart scheduled
		served     = "edb0deba0c3e48698d1147267f76625f" // gpu1: serves, then is stopped
		servedLast = "26274eccb68d401cadc5c5bfb781a959" // gpu1: serves
	)
	for _, tt := range []struct {
		name string
		text string
		code int
		want []string
	}{
		{"failed-then-served", journalShort(t, failed, servedLast), explainServed, []string{
			"2 runs of the unit (systemd started it again); the verdict is run 2's",
			"  run 1   2026-12-01 22:31:33  failed in graph-capture after 9s [graph-capture-host-sync]",
			"  run 2   2026-12-01 22:32:11  served",
			"run 1 · started 2026-12-01 22:31:33\n",
			"FAILED in graph-capture: ",
			"run 2 · started 2026-12-01 22:32:11\n",
			"SERVED: the engine said it is ready\n",
		}},
		{"served-then-failed", journalShort(t, served, failed2), explainFailed, []string{
			"the verdict is run 2's",
			"  run 1   2026-12-01 22:31:33  served after 37s",
			"SERVED, then stopped\n",
			"FAILED in graph-capture: ",
			"  evidence:\n    line 109: torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing", // where it is in the paste
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runExplainArgs(t, tt.text, "-")
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.code, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Index(out, "run 1 ·") > strings.Index(out, "run 2 ·") {
				t.Errorf("run 2's block before run 1's:\n%s", out)
			}
			code, out, _ = runExplainArgs(t, tt.text, "--json", "-")
			if code != tt.code {
				t.Fatalf("--json: exit %d, want %d", code, tt.code)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			for _, l := range lines {
				if err := output.ValidateLine([]byte(l)); err != nil {
					t.Errorf("%v: %s", err, l)
				}
			}
			var sum output.Line
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
				t.Fatal(err)
			}
			if sum.Run != 2 || len(sum.Runs) != 2 || sum.Runs[0].Run != 1 || sum.Runs[1].Run != 2 {
				t.Errorf("summary's run %d, runs %+v; want run 2 of 2", sum.Run, sum.Runs)
			}
			if tt.code == explainFailed && (sum.Cause != "graph-capture-host-sync" || sum.Runs[1].Cause != sum.Cause) {
				t.Errorf("summary's cause %q, last run's %q", sum.Cause, sum.Runs[1].Cause)
			}
			if tt.code == explainServed && (sum.Cause != "" || sum.Runs[0].Cause != "graph-capture-host-sync") {
				t.Errorf("summary's cause %q (want none), run 1's %q", sum.Cause, sum.Runs[0].Cause)
			}
		})
	}
}
