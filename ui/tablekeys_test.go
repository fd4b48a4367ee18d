package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/startup"
)

// sizedFleet is n hosts h01..; those in failed are failed, every third of
// the rest serving, the others loading weights (ETA i minutes away).
func sizedFleet(n int, failed ...int) remote.Batch {
	var b remote.Batch
	for i := 1; i <= n; i++ {
		h := remote.HostState{Name: fmt.Sprintf("h%02d", i), Unit: "sglang.service"}
		switch {
		case contains(failed, i):
			h.Startup.Phase = startup.Failed
		case i%3 == 0:
			h.Startup.Phase = startup.Serving
		default:
			h.Startup.Phase = startup.Weights
			h.ETA = now.Add(time.Duration(n-i) * time.Minute)
		}
		b.Hosts = append(b.Hosts, h)
	}
	return b
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// TestTableAtFleetSize: g/G, page keys, next/previous failed host with
// wrap-around, the sort orders (kept across batches, the cursor staying on
// its host), and mark-all.
func TestTableAtFleetSize(t *testing.T) {
	src := newFake()
	m := New(src, Options{Title: "bringup", Kernels: kernels.DefaultCatalog(), Now: func() time.Time { return now }, NoColor: true})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 24})
	m.Update(batchMsg(sizedFleet(60, 7, 31, 52)))
	cur := func() string { return m.table.cursorHost() }
	step := func(k, want string) {
		t.Helper()
		press(m, k)
		if got := cur(); got != want {
			t.Errorf("after %s: cursor on %s, want %s", k, got, want)
		}
	}
	page := m.table.pageRows()
	if page < 10 || page > 21 {
		t.Fatalf("page of %d rows at 24 lines", page)
	}
	step("G", "h60")
	step("g", "h01")
	step("pgdown", fmt.Sprintf("h%02d", 1+page))
	step("pgup", "h01")
	step("pgup", "h01") // stays at the top
	step("end", "h60")
	step("pgdown", "h60") // stays at the bottom
	step("n", "h07")      // wraps to the first failed host
	step("n", "h31")
	step("n", "h52")
	step("N", "h31")
	step("home", "h01")
	step("N", "h52") // wraps backwards

	// Sort failed first: the failed hosts lead, in config order, and the
	// cursor stays on h52.
	press(m, "s")
	if m.table.sort != sortFailed || cur() != "h52" || !strings.Contains(m.status, "failed first") {
		t.Errorf("sort %v, cursor %s, status %q", m.table.sort, cur(), m.status)
	}
	if got := strings.Join(m.table.shown()[:5], " "); got != "h07 h31 h52 h01 h02" {
		t.Errorf("failed first: %s", got)
	}
	m.Update(batchMsg(sizedFleet(60, 7, 31, 52, 2))) // h02 fails too: the order follows
	if got := strings.Join(m.table.shown()[:5], " "); got != "h02 h07 h31 h52 h01" || cur() != "h52" {
		t.Errorf("after a batch: %s, cursor %s", got, cur())
	}
	press(m, "s") // by phase: failed, then the least advanced
	if got := m.table.shown(); got[4] != "h01" || got[len(got)-1] != "h60" {
		t.Errorf("by phase: %v", got)
	}
	press(m, "s") // by ETA: failed, then the soonest (the highest numbers here), hosts with no ETA last
	if got := m.table.shown(); got[4] != "h59" || got[len(got)-1] != "h60" {
		t.Errorf("by ETA: %v", got)
	}
	press(m, "s")
	if m.table.sort != sortConfig || m.table.shown()[0] != "h01" {
		t.Errorf("back to config order: %v %v", m.table.sort, m.table.shown()[:3])
	}

	press(m, "A")
	if len(m.table.marked) != 60 {
		t.Errorf("mark all: %d marked", len(m.table.marked))
	}
	press(m, "A")
	if len(m.table.marked) != 0 {
		t.Errorf("mark all again clears: %d marked", len(m.table.marked))
	}
	// Under a filter, mark-all takes only the hosts shown.
	m.table.filter = hostFilter{}
	press(m, append([]string{"/"}, append(typed("phase:failed"), "enter")...)...)
	press(m, "A")
	if len(m.table.marked) != 4 {
		t.Errorf("mark all under phase:failed: %d marked (%v)", len(m.table.marked), m.table.marked)
	}
}

// TestNextFailedWithNone says so rather than moving.
func TestNextFailedWithNone(t *testing.T) {
	src := newFake()
	m := New(src, Options{Kernels: kernels.DefaultCatalog(), Now: func() time.Time { return now }, NoColor: true})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 24})
	m.Update(batchMsg(sizedFleet(5)))
	press(m, "j", "n")
	if m.table.cursorHost() != "h02" || !strings.Contains(m.status, "no failed host") {
		t.Errorf("cursor %s, status %q", m.table.cursorHost(), m.status)
	}
}
