package testbed

import (
	"context"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/testkit/e2e"
)

// Start boots n hosts with default options for the test t and removes
// them when t ends. See StartWith.
func Start(t testing.TB, n int) *Testbed {
	t.Helper()
	return StartWith(t, Options{Hosts: n})
}

// StartWith boots a testbed for t and registers its Down as a cleanup.
// It is an end-to-end test: without BRINGUP_E2E=1 it skips t (see package
// e2e); with it, not being root, or any other problem, fails t. The inventory goes to a
// temporary directory of t; progress goes to t.Logf.
func StartWith(t testing.TB, o Options) *Testbed {
	t.Helper()
	e2e.Require(t, e2e.Root())
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
