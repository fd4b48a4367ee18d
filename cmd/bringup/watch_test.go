package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote/startup"
)

// watchLines decodes watch --json output, a line each; a line that is not
// a v1 line (output.ValidateLine) fails t.
func watchLines(t *testing.T, out string) []output.Line {
	t.Helper()
	var lines []output.Line
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if err := output.ValidateLine(sc.Bytes()); err != nil {
			t.Errorf("watch line %q: %v", sc.Text(), err)
		}
		var l output.Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("watch line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	return lines
}

// statusLines decodes status --json output: every line v1, a status line
// per host by name, then the summary line with exit code.
func statusLines(t *testing.T, out string, code int) map[string]output.Line {
	t.Helper()
	lines := watchLines(t, out)
	if len(lines) == 0 || lines[len(lines)-1].Kind != "summary" || lines[len(lines)-1].Command != "status" ||
		lines[len(lines)-1].Exit == nil || *lines[len(lines)-1].Exit != code {
		t.Fatalf("status --json does not end in its summary line with exit %d:\n%s", code, out)
	}
	hosts := map[string]output.Line{}
	for _, l := range lines[:len(lines)-1] {
		if l.Kind != "status" {
			t.Errorf("status --json printed a %s line: %+v", l.Kind, l)
		}
		hosts[l.Host] = l
	}
	return hosts
}

// watchSummary is the last of lines, which must be watch's summary.
func watchSummary(t *testing.T, lines []output.Line) output.Line {
	t.Helper()
	if len(lines) == 0 || lines[len(lines)-1].Kind != "summary" || lines[len(lines)-1].Command != "watch" || lines[len(lines)-1].Exit == nil {
		t.Fatalf("watch --json does not end in its summary line: %+v", lines)
	}
	return lines[len(lines)-1]
}

// watchStory is what watch --json said of each host: its phases in order
// and its failure.
type watchStory struct {
	phases map[string][]string
	failed map[string]output.Line
}

func readWatch(t *testing.T, out string) watchStory {
	t.Helper()
	s := watchStory{phases: map[string][]string{}, failed: map[string]output.Line{}}
	for _, l := range watchLines(t, out) {
		switch l.Kind {
		case "phase":
			s.phases[l.Host] = append(s.phases[l.Host], l.Phase)
		case "failed":
			s.failed[l.Host] = l
		}
	}
	return s
}

// TestWatchDemoJSON runs `bringup watch --demo --json --speed 800` in
// process and checks the seed story as the issue states it.
func TestWatchDemoJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := run(ctx, env{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }},
		[]string{"watch", "--demo", "--json", "--speed", "800"})
	if code != exitFailed {
		t.Fatalf("exit code = %d, want %d (stderr %q)", code, exitFailed, errOut.String())
	}
	phases := map[string][]string{}
	var failed *output.Line
	all := watchLines(t, out.String())
	if sum := watchSummary(t, all); *sum.Exit != exitFailed || sum.Outcome != "failed" || len(sum.Hosts) != 4 {
		t.Errorf("summary %+v, want exit %d, failed, 4 hosts", sum, exitFailed)
	}
	for _, l := range all[:len(all)-1] {
		for _, f := range []struct{ name, v string }{{"time", l.Time}, {"host", l.Host}, {"kind", l.Kind}} {
			if f.v == "" {
				t.Fatalf("line %+v lacks %s", l, f.name)
			}
		}
		if l.Kind != "host-key" && (l.Phase == "" || l.Latency == nil) {
			t.Fatalf("line %+v lacks its phase or latency", l)
		}
		if _, err := time.Parse(time.RFC3339, l.Time); err != nil || strings.Contains(l.Time, ".") || !strings.HasSuffix(l.Time, "Z") {
			t.Fatalf("time %q is not RFC 3339 in UTC to the second: %v", l.Time, err)
		}
		switch l.Kind {
		case "phase":
			// At ×200 a scheduling hiccup of a second is minutes of host
			// time, which the fleet's clock may call stuck before the
			// simulated host catches up: no part of the seed story.
			if p := phases[l.Host]; l.Phase != "stuck" && (len(p) == 0 || p[len(p)-1] != l.Phase) {
				phases[l.Host] = append(p, l.Phase)
			}
		case "failed":
			if l.Host != "gpu3" {
				t.Fatalf("unexpected failure on %s: %+v", l.Host, l)
			}
			failed = &l
		}
	}
	want := []string{"starting", "init", "weights", "kv-cache", "graph-capture", "failed"}
	if got := phases["gpu3"]; !slices.Equal(got, want) {
		t.Errorf("gpu3 phases = %v, want %v", got, want)
	}
	if failed == nil {
		t.Fatal("no failed event for gpu3")
	}
	if failed.Cause != "graph-capture-host-sync" || failed.FailedIn != string(startup.GraphCapture) {
		t.Errorf("failed = cause %q in %q", failed.Cause, failed.FailedIn)
	}
	if !strings.Contains(failed.Hint, "kdtree-verify") || !strings.Contains(failed.Summary, "validate") {
		t.Errorf("hint/summary do not name the kernel mode: %q / %q", failed.Hint, failed.Summary)
	}
	if len(failed.Evidence) == 0 || !strings.Contains(failed.Evidence[0], "operation not permitted when stream is capturing") {
		t.Errorf("evidence = %q", failed.Evidence)
	}
	for _, h := range []string{"gpu1", "gpu2", "gpu4"} {
		p := phases[h]
		if len(p) == 0 || p[len(p)-1] != "serving" {
			t.Errorf("%s phases = %v, want to end serving", h, p)
		}
		if i := slices.Index(p, "graph-capture"); i < 0 || i > slices.Index(p, "serving") {
			t.Errorf("%s phases out of order: %v", h, p)
		}
	}
}

func TestWatchTimeoutExitsTwo(t *testing.T) {
	var out bytes.Buffer
	code := run(context.Background(), env{stdout: &out, stderr: &out, getenv: func(string) string { return "" }},
		[]string{"watch", "--demo", "--speed", "1", "--timeout", "300ms"})
	if code != exitTimeout {
		t.Fatalf("exit = %d, want %d; output %q", code, exitTimeout, out.String())
	}
	if !strings.Contains(out.String(), "timeout after 300ms") {
		t.Fatalf("output lacks the timeout line: %q", out.String())
	}
	// Under --json the summary line says it, and every line is v1.
	var js bytes.Buffer
	code = run(context.Background(), env{stdout: &js, stderr: &out, getenv: func(string) string { return "" }},
		[]string{"watch", "--demo", "--json", "--speed", "1", "--timeout", "300ms"})
	sum := watchSummary(t, watchLines(t, js.String()))
	if code != exitTimeout || *sum.Exit != exitTimeout || sum.Outcome != "timeout" || sum.Err != "timeout after 300ms" || len(sum.Hosts) == 0 {
		t.Errorf("exit %d, summary %+v", code, sum)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"nope"},
		{"watch"},
		{"watch", "--demo", "--scenario", "bogus"},
		{"demo", "--speed", "0"},
		{"version", "extra"},
	} {
		var out bytes.Buffer
		code := run(context.Background(), env{stdout: &out, stderr: &out, getenv: func(string) string { return "" }}, args)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d; output %q", args, code, exitUsage, out.String())
		}
		if out.Len() == 0 {
			t.Errorf("%v: no message", args)
		}
	}
	var out bytes.Buffer
	if code := run(context.Background(), env{stdout: &out, stderr: &out, getenv: func(string) string { return "" }}, []string{"watch", "--demo", "--scenario", "bogus"}); code != exitUsage || !strings.Contains(out.String(), "seed, all-ok, crashloop") {
		t.Errorf("unknown scenario message = %q", out.String())
	}
}

// TestWatchCrashLoop: in the demo's crashloop scenario gpu3's unit
// (Restart=on-failure) fails in NCCL init after every start. watch counts
// its first failed run a failure although systemd restarts the unit, and
// ends (it waited for ever before); --allow-restarts 2 lets two failed
// runs pass and fails on the third. Every line carries its run.
func TestWatchCrashLoop(t *testing.T) {
	for _, tt := range []struct {
		allow string
		runs  []int // gpu3's failed lines' runs
	}{
		{"0", []int{1}},
		{"2", []int{1, 2, 3}},
	} {
		t.Run("allow-"+tt.allow, func(t *testing.T) {
			var out, errOut bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			code := run(ctx, env{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }},
				[]string{"watch", "--demo", "--scenario", "crashloop", "--json", "--speed", "800", "--allow-restarts", tt.allow})
			if code != exitFailed {
				t.Fatalf("exit %d, want %d (stderr %q)", code, exitFailed, errOut.String())
			}
			lines := watchLines(t, out.String())
			sum := watchSummary(t, lines)
			var gpu3 string
			for _, h := range sum.Hosts {
				if h.Host == "gpu3" {
					gpu3 = h.Outcome
				} else if h.Outcome != "serving" {
					t.Errorf("%s: %s, want serving", h.Host, h.Outcome)
				}
			}
			if sum.Outcome != "failed" || gpu3 != "failed" {
				t.Errorf("summary %s, gpu3 %s; want failed", sum.Outcome, gpu3)
			}
			var failedRuns []int
			for _, l := range lines[:len(lines)-1] {
				if l.Kind != "host-key" && l.Run < 1 {
					t.Errorf("line without its run: %+v", l)
				}
				if l.Kind == "failed" && l.Host == "gpu3" && !slices.Contains(failedRuns, l.Run) {
					if l.Cause != "nccl-error" {
						t.Errorf("gpu3 run %d failed of %q, want nccl-error", l.Run, l.Cause)
					}
					failedRuns = append(failedRuns, l.Run)
				}
			}
			// The watch ends once the other hosts serve: gpu3 may have
			// failed more runs by then, but never fewer.
			if len(failedRuns) < len(tt.runs) || !slices.Equal(failedRuns[:len(tt.runs)], tt.runs) {
				t.Errorf("gpu3 failed runs %v, want %v first", failedRuns, tt.runs)
			}
		})
	}
}
