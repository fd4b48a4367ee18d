package live

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestTableFirst: a host waits for the fleet's last state, at most the
// wait it is given; a nil gate and an empty fleet hold no one; a host
// counted twice is counted once; a cancelled wait says so.
func TestTableFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		waited := func(g *TableFirst, limit time.Duration) (time.Duration, bool) {
			start := time.Now()
			ok := g.wait(ctx, limit)
			return time.Since(start), ok
		}

		g := NewTableFirst(3)
		g.arrived()
		g.arrived()
		if d, ok := waited(g, 5*time.Second); d != 5*time.Second || !ok {
			t.Errorf("two of three in: waited %s (ok %v), want the whole 5s", d, ok)
		}
		go func() {
			time.Sleep(2 * time.Second)
			g.arrived()
			g.arrived() // a fourth call changes nothing
		}()
		if d, ok := waited(g, 5*time.Second); d != 2*time.Second || !ok {
			t.Errorf("the last in after 2s: waited %s (ok %v), want 2s", d, ok)
		}
		if d, _ := waited(g, 5*time.Second); d != 0 {
			t.Errorf("all in: waited %s, want nothing", d)
		}

		var none *TableFirst
		none.arrived()
		if d, ok := waited(none, 5*time.Second); d != 0 || !ok {
			t.Errorf("nil gate: waited %s (ok %v), want nothing", d, ok)
		}
		if d, ok := waited(NewTableFirst(0), 5*time.Second); d != 0 || !ok {
			t.Errorf("no hosts: waited %s (ok %v), want nothing", d, ok)
		}

		cctx, cancel := context.WithCancel(ctx)
		go func() {
			time.Sleep(time.Second)
			cancel()
		}()
		if NewTableFirst(2).wait(cctx, 5*time.Second) {
			t.Error("a cancelled wait reported true")
		}
	})
}
