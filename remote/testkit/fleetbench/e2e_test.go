package fleetbench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/testkit/e2e"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// TestFleetbenchOnTestbed runs the whole bench, small: two hosts, a short
// quiet and a short catch-up. Every figure must be there and plausible,
// and nothing of the hosts left.
func TestFleetbenchOnTestbed(t *testing.T) {
	e2e.Require(t, e2e.Root(), e2e.Command("ssh"))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	const lines = 20000
	s, err := Run(ctx, Options{Hosts: 2, Quiet: 5 * time.Second, CatchupLines: lines, CatchupRuns: 2, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("summary: %+v", *s)
	if s.FullTable.BringupS <= 0 || s.FullTable.RawS <= 0 {
		t.Errorf("full table %+v", s.FullTable)
	}
	l := s.Latency
	// Every host prints dozens of startup lines; both sides see all of
	// them but those written before a reader attached (none: the units
	// start after).
	if l.Lines < 2*20 || l.RawOnly > 0 || l.FleetOnly > 2 {
		t.Errorf("latency: %d lines matched, %d raw only, %d fleet only", l.Lines, l.RawOnly, l.FleetOnly)
	}
	for what, d := range map[string]Dist{"raw": l.Raw, "fleet": l.Fleet} {
		if d.P50ms < 0 || d.P99ms < d.P50ms || d.MaxMs < d.P99ms || d.MaxMs > 30_000 {
			t.Errorf("%s latency implausible: %+v", what, d)
		}
	}
	if st := s.Steady; st.WindowS < 5 || st.BringupCPUPct <= 0 || st.BringupRSSMiB < st.BaseRSSMiB || st.RawRSSMiB <= 0 {
		t.Errorf("steady state %+v", st)
	}
	c := s.Catchup
	if len(c.Runs) != 2 {
		t.Fatalf("catch-up runs %+v", c.Runs)
	}
	for _, p := range c.Runs {
		if p.BringupLines != lines || p.Dropped != 0 || p.RawLines < lines {
			t.Errorf("catch-up: bringup %d lines (%d dropped), raw %d lines; want %d", p.BringupLines, p.Dropped, p.RawLines, lines)
		}
	}
	if !s.Cleanup.Down || len(s.Cleanup.Left) > 0 || !s.Cleanup.InventoryRemoved {
		t.Errorf("cleanup %+v", s.Cleanup)
	}
	if _, err := os.Stat(s.Inventory); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("inventory %s still there (%v)", s.Inventory, err)
	}
}

// TestFleetbenchStoreOnTestbed runs the bench with the store path beside
// the SSH path, small: two hosts, the catch-up cut short. The store's
// figures must be there, every line the SSH fleet showed must come
// through the store, later by about the tail's offset, and the store
// must be gone with the hosts.
func TestFleetbenchStoreOnTestbed(t *testing.T) {
	e2e.Require(t, e2e.Root(), e2e.Command("ssh"))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	s, err := Run(ctx, Options{Hosts: 2, Source: SourceVictoriaLogs, Quiet: 5 * time.Second, CatchupLines: 2000, CatchupRuns: 1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	st := s.Store
	if st == nil {
		t.Fatalf("no store figures: %+v", *s)
	}
	t.Logf("store: %+v", *st)
	if st.ServingTable.SSHS <= 0 || st.ServingTable.StoreS <= 0 {
		t.Errorf("serving table %+v", st.ServingTable)
	}
	l := st.Latency
	if l.Lines < 2*20 || l.Missing > 0 || l.StoreOnly > 0 || l.AddedVsSSH.N != l.Lines {
		t.Errorf("store latency: %d lines, %d missing, %d store only, %d against the ssh fleet", l.Lines, l.Missing, l.StoreOnly, l.AddedVsSSH.N)
	}
	// The tail reads vlogs.DefaultOffset (2 s) behind now: every line
	// comes that much after the SSH fleet's, and not minutes after.
	if l.AddedVsSSH.P50ms < 1000 || l.AddedVsSSH.MaxMs > 30_000 || l.ServingS <= 0 {
		t.Errorf("store latency implausible: %+v", l)
	}
	if ss := st.Steady; ss.WindowS < 5 || ss.StoreCPUPct <= 0 || ss.StoreRSSMiB <= 0 || ss.VLRSSMiB <= 0 || ss.SSHCPUPct != s.Steady.BringupCPUPct {
		t.Errorf("store steady state %+v", ss)
	}
	if !s.Cleanup.Down || len(s.Cleanup.Left) > 0 || !s.Cleanup.InventoryRemoved {
		t.Errorf("cleanup %+v", s.Cleanup)
	}
}

// TestFleetbenchCleansUpOnCancel is Ctrl-C in the middle of the bench,
// as the units start: Run returns the context's error, and the hosts,
// their namespaces and the inventory are gone all the same.
func TestFleetbenchCleansUpOnCancel(t *testing.T) {
	e2e.Require(t, e2e.Root(), e2e.Command("ssh"))
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	var once sync.Once
	logf := func(format string, args ...any) {
		t.Logf(format, args...)
		if strings.HasPrefix(format, "fleetbench: latency: starting") {
			once.Do(func() { time.AfterFunc(2*time.Second, cancel) })
		}
	}
	s, err := Run(ctx, Options{Hosts: 2, Quiet: time.Minute, Logf: logf})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel: %v, want context.Canceled", err)
	}
	if s == nil || !s.Cleanup.Down || len(s.Cleanup.Left) > 0 || !s.Cleanup.InventoryRemoved {
		t.Fatalf("after cancel, cleanup %+v", s)
	}
	if _, err := os.Stat(s.Inventory); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("inventory %s still there after cancel (%v)", s.Inventory, err)
	}
	all, err := testbed.Leftovers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range all {
		if strings.Contains(l, filepath.Base(s.Inventory)) { // the run id names everything it made
			t.Errorf("after cancel, still there: %s", l)
		}
	}
}
