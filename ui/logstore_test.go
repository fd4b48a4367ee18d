package ui

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"bringup/kernels"
	"bringup/remote"
	"bringup/remote/event"
	"bringup/remote/startup"
)

// heldBytes recounts what s's rings hold, to check the running total.
func heldBytes(s *logStore) int {
	n := 0
	for _, r := range s.rings {
		for seq := r.first(); seq < r.total; seq++ {
			n += len(r.at(seq).Text)
		}
		n += cap(r.buf) * lineSlot
	}
	return n
}

// TestRingDropOldestKeepsNumbers: a budget trim takes the oldest lines,
// leaves one marker line in their place that counts them all, and keeps
// the sequence numbers of the lines left (a scrolled view stays put).
func TestRingDropOldestKeepsNumbers(t *testing.T) {
	r := newRing(1000)
	for i := range 300 {
		r.push(logLine{Time: base.Add(time.Duration(i) * time.Second), Text: fmt.Sprintf("line %d", i)})
	}
	before := r.bytes()
	freed := r.dropOldest(100)
	if r.at(150).Text != "line 150" || r.total != 300 || r.n != 201 {
		t.Fatalf("after dropping 100: total %d, n %d, line 150 is %q", r.total, r.n, r.at(150).Text)
	}
	m := r.at(r.first())
	if m.Kind != lineGap || m.Text != "… 100 older lines dropped to stay within the memory budget" || r.first() != 99 {
		t.Fatalf("marker %+v at %d", m, r.first())
	}
	if freed != before-r.bytes() || freed <= 0 {
		t.Fatalf("freed %d, bytes %d → %d", freed, before, r.bytes())
	}
	r.dropOldest(150) // the marker is replaced, the count goes on
	if m := r.at(r.first()); m.Text != "… 250 older lines dropped to stay within the memory budget" || r.at(299).Text != "line 299" || r.n != 51 {
		t.Fatalf("second marker %q, n %d", m.Text, r.n)
	}
	if cap(r.buf) > 4*minSlots {
		t.Errorf("the buffer did not shrink with the lines: %d slots for %d lines", cap(r.buf), r.n)
	}
}

// TestLogBudgetIdleHostsFirst: over budget, the idle (serving) host loses
// its oldest lines first and says so in its log; the host that is
// starting keeps every line.
func TestLogBudgetIdleHostsFirst(t *testing.T) {
	src := newFake()
	m := New(src, Options{Kernels: kernels.DefaultCatalog(), Now: func() time.Time { return now }, NoColor: true, LogBudget: 1 << 20})
	hosts := []remote.HostState{
		{Name: "idle", Startup: startup.Startup{Phase: startup.Serving}},
		{Name: "busy", Startup: startup.Startup{Phase: startup.Weights}},
	}
	text := strings.Repeat("x", 1000)
	for batch := range 20 {
		b := remote.Batch{Hosts: hosts}
		for i := range 40 { // 40 KiB a host a batch: 1.6 MiB in all
			at := base.Add(time.Duration(batch*40+i) * time.Millisecond)
			for _, h := range []string{"idle", "busy"} {
				b.Events = append(b.Events, event.Event{Host: h, Kind: event.KindJournal, Time: at, Journal: &event.Journal{Message: text}})
			}
		}
		m.Update(batchMsg(b))
	}
	if m.logs.held > 1<<20 || m.logs.held != heldBytes(&m.logs) {
		t.Fatalf("held %d bytes (recount %d), budget %d", m.logs.held, heldBytes(&m.logs), 1<<20)
	}
	idle, busy := m.ring("idle"), m.ring("busy")
	if busy.n != 800 || busy.budgetDropped != 0 {
		t.Errorf("the starting host lost lines: %d held, %d dropped", busy.n, busy.budgetDropped)
	}
	marker := idle.at(idle.first())
	if idle.budgetDropped == 0 || marker.Text != fmt.Sprintf("… %d older lines dropped to stay within the memory budget", idle.budgetDropped) {
		t.Fatalf("idle host: %d dropped, first line %q", idle.budgetDropped, marker.Text)
	}
	// Once the busy host settles, it is idle too and pays its share.
	hosts[1].Startup.Phase = startup.Serving
	b := remote.Batch{Hosts: hosts}
	for i := range 200 {
		b.Events = append(b.Events, event.Event{Host: "idle", Kind: event.KindJournal, Time: now.Add(time.Duration(i)), Journal: &event.Journal{Message: text}})
	}
	m.Update(batchMsg(b))
	if busy.budgetDropped == 0 || m.logs.held > 1<<20 {
		t.Errorf("after settling: busy dropped %d, held %d", busy.budgetDropped, m.logs.held)
	}
	press(m, "j", "enter", "g") // busy's host view, scrolled to its oldest line
	if out := render(m); !strings.Contains(out, "older lines dropped to stay within the memory budget") {
		t.Errorf("the host view does not show the marker:\n%s", out)
	}
}

// TestLogBudget256Hosts feeds the console 256 hosts' worth of long lines
// (16 KiB each, about twice the default budget) and measures what it
// holds: the running total stays within the budget and the Go heap the
// console keeps (all of it: rings, snapshot) under 200 MiB.
func TestLogBudget256Hosts(t *testing.T) {
	const hosts, lineLen, perHost = 256, 16 << 10, 60
	budget := remote.DefaultLogBudget - remote.DefaultLogBudget/remote.PendingShare
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heap0 := ms.HeapAlloc

	m := New(newFake(), Options{Kernels: kernels.DefaultCatalog(), Now: func() time.Time { return now }, NoColor: true})
	if m.logs.budget != budget {
		t.Fatalf("default budget %d, want %d", m.logs.budget, budget)
	}
	states := make([]remote.HostState, hosts)
	for i := range states {
		states[i] = remote.HostState{Name: fmt.Sprintf("gpu%03d", i), Startup: startup.Startup{Phase: startup.Serving}}
	}
	fill := strings.Repeat("w", lineLen-16)
	fed := 0
	for round := range perHost {
		b := remote.Batch{Hosts: states}
		for i := range hosts {
			msg := fmt.Sprintf("%06d %s", round*hosts+i, fill) // a string of its own, as from a host
			fed += len(msg)
			b.Events = append(b.Events, event.Event{Host: states[i].Name, Kind: event.KindJournal,
				Time: base.Add(time.Duration(round) * time.Second), Journal: &event.Journal{Message: msg}})
		}
		m.Update(batchMsg(b))
		if m.logs.held > budget {
			t.Fatalf("round %d: held %d bytes, budget %d", round, m.logs.held, budget)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	kept := int64(ms.HeapAlloc) - int64(heap0)
	t.Logf("fed %d MiB to %d hosts; held %d MiB (budget %d MiB); heap kept %d MiB", fed>>20, hosts, m.logs.held>>20, budget>>20, kept>>20)
	if m.logs.held != heldBytes(&m.logs) {
		t.Errorf("running total %d, recount %d", m.logs.held, heldBytes(&m.logs))
	}
	if kept > 200<<20 {
		t.Errorf("the console keeps %d MiB of heap for 256 hosts, want at most 200 MiB", kept>>20)
	}
	dropped := 0
	for _, r := range m.logs.rings {
		dropped += r.budgetDropped
	}
	if dropped == 0 {
		t.Errorf("nothing was dropped: the test did not reach the budget")
	}
	runtime.KeepAlive(m)
}
