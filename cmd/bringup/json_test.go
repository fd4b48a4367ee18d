package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/output"
)

// TestActionsJSON runs the changing commands with --json over the
// simulated fleet and checks every line they print against the v1 schema:
// the last is a summary whose exit is the command's, and the text for
// people went to stderr.
func TestActionsJSON(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		yes     bool // answer y at the prompt (a terminal); else no terminal
		code    int
		outcome string
		kinds   []string // kinds that must be among the lines
	}{
		{"restart", []string{"gpu1", "--yes"}, false, exitServing, "done", []string{"plan", "action", "phase", "ended", "summary"}},
		{"mode", []string{"gpu1", "kdtree-verify=validate", "--yes"}, false, exitServing, "done", []string{"plan", "action", "summary"}},
		{"reset-failed", []string{"gpu2"}, true, exitServing, "done", []string{"plan", "action", "summary"}},
		{"stop", []string{"gpu4", "--yes"}, false, exitServing, "done", []string{"plan", "action", "summary"}},
		{"daemon-reload", []string{"gpu1", "gpu2", "--yes"}, false, exitServing, "done", []string{"plan", "action", "summary"}},
		{"restart", []string{"gpu1"}, false, exitUsage, "refused", []string{"plan", "summary"}},
		{"mode", []string{"gpu3", "kdtree-verify=validate", "--restart", "--yes"}, false, exitUsage, "refused", []string{"summary"}},
		{"restart", []string{"gpu1", "--yes", "--timeout", "2s", "--speed", "1"}, false, exitTimeout, "timeout", []string{"timeout", "summary"}},
	} {
		t.Run(strings.Join(append([]string{tc.name}, tc.args...), " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var in *strings.Reader
			if tc.yes {
				in = strings.NewReader("y\n")
			}
			args := append([]string{"--demo", "--json", "--speed", "2000"}, tc.args...)
			code, out, errOut := runAct(t, ctx, tc.name, in, args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, errOut)
			}
			kinds := map[string]bool{}
			var last map[string]any
			sc := bufio.NewScanner(strings.NewReader(out))
			n := 0
			for sc.Scan() {
				n++
				if err := output.ValidateLine(sc.Bytes()); err != nil {
					t.Errorf("line %d: %v\n%s", n, err, sc.Text())
				}
				last = nil
				if err := json.Unmarshal(sc.Bytes(), &last); err == nil {
					kinds[fmt.Sprint(last["kind"])] = true
				}
			}
			for _, k := range tc.kinds {
				if !kinds[k] {
					t.Errorf("no %s line; stdout:\n%s", k, out)
				}
			}
			if last == nil || last["kind"] != "summary" || last["exit"] != float64(tc.code) || last["outcome"] != tc.outcome {
				t.Errorf("last line %v, want a summary with exit %d and outcome %s", last, tc.code, tc.outcome)
			}
			if !strings.Contains(errOut, "This will change") && tc.outcome != "refused" {
				t.Errorf("the plan's text is not on stderr:\n%s", errOut)
			}
		})
	}
}
