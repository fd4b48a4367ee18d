package testbed

import (
	"context"
	"os"
	"testing"
	"time"
)

// EnvE2E set to 1 makes Start fail rather than skip: CI sets it, so that a
// testbed that cannot come up is a failure, never a silent skip.
const EnvE2E = "BRINGUP_E2E"

// Start boots n hosts with default options for the test t and removes
// them when t ends. See StartWith.
func Start(t testing.TB, n int) *Testbed {
	t.Helper()
	return StartWith(t, Options{Hosts: n})
}

// StartWith boots a testbed for t and registers its Down as a cleanup.
// Without root it skips, and in -short mode too, unless BRINGUP_E2E=1: then
// it fails. Any other problem fails the test. The inventory goes to a
// temporary directory of t; progress goes to t.Logf.
func StartWith(t testing.TB, o Options) *Testbed {
	t.Helper()
	skipUnlessE2E(t)
	if o.InventoryDir == "" {
		o.InventoryDir = t.TempDir()
	}
	if o.Logf == nil {
		o.Logf = t.Logf
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	tb, err := Up(ctx, o)
	if err != nil {
		t.Fatalf("testbed up: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, h := range tb.Hosts() {
				t.Logf("console of %s (last lines):\n%s", h.Name, tail(h.Console, 30))
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := tb.Down(ctx); err != nil {
			t.Errorf("testbed down: %v", err)
		}
	})
	return tb
}

// skipUnlessE2E skips t where the testbed cannot or should not run, except
// under BRINGUP_E2E=1, where it fails t instead.
func skipUnlessE2E(t testing.TB) {
	t.Helper()
	e2e := os.Getenv(EnvE2E) == "1"
	switch {
	case os.Geteuid() != 0 && e2e:
		t.Fatalf("testbed: %s=1 but not root: the testbed needs root", EnvE2E)
	case os.Geteuid() != 0:
		t.Skipf("testbed: needs root (set %s=1 to make this a failure)", EnvE2E)
	case testing.Short() && !e2e:
		t.Skip("testbed: skipped in -short mode")
	}
}
