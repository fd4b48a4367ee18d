package live

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/remote"
)

// TestResolveAllKeepsOrderAndFirstError resolves more targets than there
// are workers through a real ssh_config: each gets its own answer, in
// the order given, and of two bad names the first is the one reported.
func TestResolveAllKeepsOrderAndFirstError(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ssh_config")
	var b strings.Builder
	const n = 3*resolveWorkers + 1
	for i := range n {
		fmt.Fprintf(&b, "Host h%d\n  HostName 10.0.0.%d\n  Port %d\n  User u%d\n", i, i+1, 2200+i, i)
	}
	if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	targets := make([]Target, n)
	for i := range targets {
		targets[i] = Target{Host: remote.Host{Name: fmt.Sprintf("h%d", i)}, SSH: SSHTarget{Host: fmt.Sprintf("h%d", i)}}
	}
	configs, err := resolveAll(context.Background(), targets, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range configs {
		if want := fmt.Sprintf("10.0.0.%d", i+1); c.HostName != want || c.Port != 2200+i || c.User != fmt.Sprintf("u%d", i) {
			t.Errorf("target %d: %s@%s:%d, want u%d@%s:%d", i, c.User, c.HostName, c.Port, i, want, 2200+i)
		}
	}

	targets[5].Name, targets[5].SSH.Host = "bad5", "-bad5"
	targets[n-1].Name, targets[n-1].SSH.Host = "badlast", "-badlast"
	_, err = resolveAll(context.Background(), targets, cfg)
	if err == nil || !strings.HasPrefix(err.Error(), "bad5: ") {
		t.Fatalf("error %v, want the first bad target's (bad5)", err)
	}
}
