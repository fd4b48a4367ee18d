package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// hostStories splits watch --json output into each host's lines, without
// the local receipt time (the one field a replay may not reproduce), and
// only those of the given kinds (none: all).
func hostStories(t *testing.T, out string, kinds ...string) map[string][]string {
	t.Helper()
	stories := map[string][]string{}
	for _, l := range watchLines(t, out) {
		if len(kinds) > 0 && !slices.Contains(kinds, l.Kind) {
			continue
		}
		// A stuck spell is the clock ticking past a quiet stretch, which
		// a replay at another speed may catch or not: it is no event.
		if l.Phase == "stuck" || l.From == "stuck" {
			continue
		}
		// The summary's time is the wall clock's, and its exit is
		// compared on its own.
		if l.Kind == "summary" {
			continue
		}
		l.Latency = nil
		b, _ := json.Marshal(l)
		stories[l.Host] = append(stories[l.Host], string(b))
	}
	return stories
}

// sameStories fails t unless replay shows every host as the recording did
// (in lines of the given kinds; none: all).
func sameStories(t *testing.T, recorded, replayed string, kinds ...string) {
	t.Helper()
	want, got := hostStories(t, recorded, kinds...), hostStories(t, replayed, kinds...)
	if len(want) == 0 {
		t.Fatal("nothing recorded")
	}
	for h, w := range want {
		if g := got[h]; strings.Join(g, "\n") != strings.Join(w, "\n") {
			t.Errorf("%s: replay shows\n%s\nrecorded run showed\n%s", h, strings.Join(g, "\n"), strings.Join(w, "\n"))
		}
	}
	if len(got) != len(want) {
		t.Errorf("replay shows hosts %d, recorded %d", len(got), len(want))
	}
}

// TestWatchReplaysRecordedDemo records `watch --demo` and watches the
// recording: same lines for every host, same exit code, at any speed.
func TestWatchReplaysRecordedDemo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seed.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errOut syncBuffer
	code := run(ctx, testEnv(&out, &errOut), []string{"watch", "--demo", "--json", "--speed", "1200", "--record", path})
	if code != exitFailed {
		t.Fatalf("watch --demo exit %d, want %d: %s", code, exitFailed, errOut.String())
	}
	if !strings.Contains(errOut.String(), "bringup: recorded ") || !strings.Contains(errOut.String(), "bringup replay "+path) {
		t.Errorf("no word of the recording on stderr: %q", errOut.String())
	}
	var rout, rerr syncBuffer
	code = run(ctx, testEnv(&rout, &rerr), []string{"watch", "--replay", path, "--json", "--speed", "1200"})
	if code != exitFailed {
		t.Fatalf("watch --replay exit %d, want %d: %s", code, exitFailed, rerr.String())
	}
	sameStories(t, out.String(), rout.String())
}

func TestReplayUsageErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"format":"bringup-record/1","started":"2026-11-30T03:00:00Z","speed":1,"hosts":[{"name":"gpu1","unit":"u"}],"kernels":{}}`+"\n{oops\n{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"replay"}, "want one recording file"},
		{[]string{"replay", filepath.Join(dir, "missing.jsonl")}, "missing.jsonl: no such file"},
		{[]string{"replay", bad}, bad + ":2: bad entry: invalid character 'o'"},
		{[]string{"replay", "--speed", "-1", bad}, "--speed -1: must be greater than 0"},
		{[]string{"watch", "--replay", bad}, bad + ":2: bad entry"},
		{[]string{"watch", "--replay", bad, "--demo"}, "--demo or --replay, not both"},
		{[]string{"watch", "--replay", bad, "gpu1"}, "take no host names"},
		{[]string{"demo", "--record", filepath.Join(dir, "no", "dir", "r.jsonl")}, "--record: record: open " + filepath.Join(dir, "no", "dir", "r.jsonl")},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errOut syncBuffer
			code := run(context.Background(), testEnv(&out, &errOut), c.args)
			if code != exitUsage || !strings.Contains(errOut.String(), c.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut.String(), exitUsage, c.want)
			}
		})
	}
}
