package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/remote/record"
)

// TestEveryCommandRefusesASpeedNoClockCanRun: each command with --speed
// refuses NaN, Inf, 1e308 and 100000 at once, naming the flag (they hung
// a replay, sent the demo to the year 1734, or passed the 10000 bound).
func TestEveryCommandRefusesASpeedNoClockCanRun(t *testing.T) {
	rec := writeTinyRecording(t)
	for _, cmd := range [][]string{
		{"demo"}, {"watch", "--demo"}, {"watch", "--replay", rec}, {"replay", rec},
		{"bench", "--demo"}, {"rollout", "--demo", "--yes"}, {"restart", "--demo", "gpu1", "--yes"},
	} {
		for _, speed := range []string{"NaN", "Inf", "1e308", "100000", "-1"} {
			args := append(append([]string{}, cmd...), "--speed", speed)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				var out, errOut syncBuffer
				code := run(ctx, testEnv(&out, &errOut), args)
				if code != exitUsage || !strings.Contains(errOut.String(), "--speed "+speed+": ") {
					t.Errorf("exit %d, stderr %q; want %d naming --speed %s", code, errOut.String(), exitUsage, speed)
				}
			})
		}
	}
}

// TestSpeedBoundIsTheReplays: the flag's bound is the one the replay's
// `>` key stops at.
func TestSpeedBoundIsTheReplays(t *testing.T) {
	if cli.MaxSpeed != record.MaxSpeed {
		t.Errorf("cli.MaxSpeed %v, record.MaxSpeed %v", cli.MaxSpeed, record.MaxSpeed)
	}
}

// writeTinyRecording writes a valid recording of one host and one event.
func writeTinyRecording(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny.jsonl")
	text := `{"format":"bringup-record/1","started":"2026-11-30T03:00:00Z","speed":1,"hosts":[{"name":"gpu1","unit":"u.service"}],"kernels":{}}` + "\n" +
		`{"at":"2026-11-30T03:00:01Z","host":"gpu1","kind":"unit","time":"2026-11-30T03:00:01Z","unit":{"name":"u.service","active_state":"active","sub_state":"running","n_restarts":0}}` + "\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
