package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestWatchReplayEndsWhereTheRecordingDoes: a recording that ends with a
// host still starting (a watch cut by its --timeout, a console quit)
// once kept `watch --replay` waiting for ever; it ends at the
// recording's end, exit 2, with the outcome "ended" and each host as the
// recording left it.
func TestWatchReplayEndsWhereTheRecordingDoes(t *testing.T) {
	t.Parallel()                 // it waits out the replay's end grace (2 s, twice), not the CPU
	rec := writeTinyRecording(t) // gpu1 active/running, no serving line: unsettled
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut syncBuffer
	start := time.Now()
	code := run(ctx, testEnv(&out, &errOut), []string{"watch", "--replay", rec, "--json", "--speed", "100"})
	took := time.Since(start)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var sum struct {
		Outcome string `json:"outcome"`
		Exit    int    `json:"exit"`
		Err     string `json:"err"`
		Hosts   []struct {
			Host, Outcome, Phase string
		} `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("last line %q: %v (stderr %q)", lines[len(lines)-1], err, errOut.String())
	}
	if code != exitTimeout || sum.Outcome != "ended" || sum.Exit != exitTimeout || !strings.Contains(sum.Err, "recording ended") {
		t.Errorf("exit %d, summary %+v after %s; want exit %d, outcome ended", code, sum, took, exitTimeout)
	}
	if len(sum.Hosts) != 1 || sum.Hosts[0].Host != "gpu1" || sum.Hosts[0].Outcome != "unsettled" {
		t.Errorf("hosts %+v, want gpu1 unsettled", sum.Hosts)
	}
	if took > 20*time.Second {
		t.Errorf("took %s: the replay did not end at the recording's end", took)
	}

	// The text form says why it ended.
	var text, textErr syncBuffer
	if code := run(ctx, testEnv(&text, &textErr), []string{"watch", "--replay", rec, "--speed", "100"}); code != exitTimeout ||
		!strings.HasSuffix(text.String(), " the recording ended before every host settled\n") {
		t.Errorf("text: exit %d, out %q", code, text.String())
	}
}
