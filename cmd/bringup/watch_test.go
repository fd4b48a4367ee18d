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
// a JSON object fails t.
func watchLines(t *testing.T, out string) []output.WatchLine {
	t.Helper()
	var lines []output.WatchLine
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l output.WatchLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("watch line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	return lines
}

// watchStory is what watch --json said of each host: its phases in order
// and its failure.
type watchStory struct {
	phases map[string][]string
	failed map[string]output.WatchLine
}

func readWatch(t *testing.T, out string) watchStory {
	t.Helper()
	s := watchStory{phases: map[string][]string{}, failed: map[string]output.WatchLine{}}
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
	var failed *output.WatchLine
	for _, l := range watchLines(t, out.String()) {
		for _, f := range []struct{ name, v string }{{"time", l.Time}, {"seen", l.Seen}, {"host", l.Host}, {"kind", l.Kind}, {"phase", l.Phase}} {
			if f.v == "" {
				t.Fatalf("line %+v lacks %s", l, f.name)
			}
		}
		if _, err := time.Parse(time.RFC3339Nano, l.Time); err != nil || !strings.Contains(l.Time, ".") {
			t.Fatalf("time %q is not RFC 3339 with sub-seconds: %v", l.Time, err)
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
