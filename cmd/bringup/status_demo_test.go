package main

import (
	"context"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/cmd/bringup/output"
)

// TestStatusDemo: status --demo takes its one look at the simulated fleet,
// with no config and no hosts, in the same v1 lines as over real hosts;
// host names with --demo are a usage error.
func TestStatusDemo(t *testing.T) {
	t.Parallel() // its look waits on the simulated hosts' first states
	var out, errOut syncBuffer
	code := run(context.Background(), testEnv(&out, &errOut), []string{"status", "--demo", "--json"})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if code == exitUsage || len(lines) != 5 {
		t.Fatalf("status --demo --json: exit %d, %d lines, want 4 hosts and a summary\n%s\nstderr:\n%s", code, len(lines), out.String(), errOut.String())
	}
	for i, l := range lines {
		if err := output.ValidateLine([]byte(l)); err != nil {
			t.Errorf("line %d: %v\n%s", i+1, err, l)
		}
	}
	for _, h := range []string{"gpu1", "gpu2", "gpu3", "gpu4"} {
		if !strings.Contains(out.String(), `"host":"`+h+`"`) {
			t.Errorf("no line for %s:\n%s", h, out.String())
		}
	}
	if !strings.Contains(lines[4], `"kind":"summary","command":"status"`) {
		t.Errorf("last line is not status's summary: %s", lines[4])
	}
	out, errOut = syncBuffer{}, syncBuffer{}
	if code := run(context.Background(), testEnv(&out, &errOut), []string{"status", "--demo", "gpu1"}); code != exitUsage || !strings.Contains(errOut.String(), "--demo takes no host names") {
		t.Errorf("status --demo gpu1: exit %d, stderr %q", code, errOut.String())
	}
}
