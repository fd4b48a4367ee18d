package fleet

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
	"github.com/bringup-dev/bringup/remote/startup/corpus"
)

func TestSteadyHostWaitsForTheUnitState(t *testing.T) {
	h := remote.HostState{Startup: startup.Startup{Phase: startup.Stopped}}
	if steadyHost(h) {
		t.Error("a host whose unit state is not known yet is steady")
	}
	h.UnitState.ActiveState = "inactive"
	if !steadyHost(h) {
		t.Error("a stopped unit is not steady")
	}
	h.Startup.Phase = startup.Weights
	if steadyHost(h) {
		t.Error("a host loading weights is steady")
	}
}

// pacedDriver is a feedDriver that records the paces it is given.
type pacedDriver struct {
	feedDriver
	mu    sync.Mutex
	paces []remote.Pace
}

func (d *pacedDriver) SetPace(p remote.Pace) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.paces = append(d.paces, p)
}

func (d *pacedDriver) got() []remote.Pace {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]remote.Pace(nil), d.paces...)
}

// waitPaces waits until d has been given want, in order, and nothing else.
func waitPaces(t *testing.T, d *pacedDriver, want ...remote.Pace) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := d.got()
		if len(got) == len(want) {
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%s: paces %+v, want %+v", d.name, got, want)
				}
			}
			return
		}
		if len(got) > len(want) || time.Now().After(deadline) {
			t.Fatalf("%s: paces %+v, want %+v", d.name, got, want)
		}
		time.Sleep(time.Millisecond)
	}
}

// The fleet tells a driver when its host becomes steady (serving) and
// when it starts again, and which host's view is open, each change once.
func TestFleetPacesDrivers(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	clock := &setClock{t: t0}
	a := &pacedDriver{feedDriver: feedDriver{name: "gpu1", feed: make(chan event.Event)}}
	b := &pacedDriver{feedDriver: feedDriver{name: "gpu2", feed: make(chan event.Event)}}
	f, _, _ := startFleet(t, Options{Kernels: kernels.DefaultCatalog(), Clock: clock, Flush: 2 * time.Millisecond}, a, b)

	feed(t, &a.feedDriver, sglangStart("inv-1", t0))
	collect(t, f, func(_ []event.Event, bt remote.Batch) bool { return bt.Hosts[0].Startup.Phase == startup.Weights })
	waitPaces(t, a) // starting: nothing to tell
	clock.set(t0.Add(170 * time.Second))
	feed(t, &a.feedDriver, sglangFinish("inv-1", t0))
	collect(t, f, func(_ []event.Event, bt remote.Batch) bool { return bt.Hosts[0].Startup.Phase == startup.Serving })
	steady := remote.Pace{Steady: true}
	waitPaces(t, a, steady)

	f.View("gpu1")
	waitPaces(t, a, steady, remote.Pace{Steady: true, Viewed: true})
	f.View("gpu1") // no change, no call
	f.View("gpu2")
	waitPaces(t, a, steady, remote.Pace{Steady: true, Viewed: true}, steady)
	waitPaces(t, b, remote.Pace{Viewed: true})
	f.View("")
	waitPaces(t, b, remote.Pace{Viewed: true}, remote.Pace{})

	// A restart: the host starts again and is sampled hard again.
	restart := t0.Add(time.Hour)
	clock.set(restart)
	feed(t, &a.feedDriver, []event.Event{{Kind: event.KindUnit, Time: restart, Unit: &event.Unit{Name: "sglang.service",
		ActiveState: "activating", SubState: "start", InvocationID: "inv-2"}}})
	collect(t, f, func(_ []event.Event, bt remote.Batch) bool { return bt.Hosts[0].Startup.InvocationID == "inv-2" })
	waitPaces(t, a, steady, remote.Pace{Steady: true, Viewed: true}, steady, remote.Pace{})
}

// A host quiet in its weights phase for longer than its limit is still
// found stuck with the check every stuckEvery flushes, without any event.
func TestFleetFindsStuckOnItsOwn(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	clock := &setClock{t: t0.Add(11 * time.Second)}
	d := &feedDriver{name: "gpu1", feed: make(chan event.Event)}
	f, _, _ := startFleet(t, Options{Kernels: kernels.DefaultCatalog(), Clock: clock, Flush: 2 * time.Millisecond}, d)
	feed(t, d, sglangStart("inv-1", t0))
	collect(t, f, func(_ []event.Event, bt remote.Batch) bool { return bt.Hosts[0].Startup.Phase == startup.Weights })
	clock.set(t0.Add(10*time.Second + startup.DefaultStuckAfter()[startup.Weights] + time.Second))
	_, last := collect(t, f, func(_ []event.Event, bt remote.Batch) bool { return len(bt.Changes) > 0 })
	if c := last.Changes[0]; c.Kind != startup.ChangePhase || c.Phase != startup.Stuck {
		t.Fatalf("change %+v, want the host stuck", c)
	}
}

func TestUrgentEventAndFlushDue(t *testing.T) {
	for _, tc := range []struct {
		k                event.Kind
		changed, relaxed bool
		want             bool
	}{
		{event.KindJournal, false, false, true},
		{event.KindUnit, false, false, true},
		{event.KindConn, false, false, true},
		{event.KindAction, false, false, true},
		{event.KindGap, false, false, true},
		{event.KindGPU, false, false, false},
		{event.KindProbe, false, false, false},
		{event.KindProbe, true, false, true}, // the answer that makes the host serve
		{event.KindGPU, true, false, true},
		// A steady host nobody views: its access-log lines wait, a line
		// that changes its startup does not, nor does any state change.
		{event.KindJournal, false, true, false},
		{event.KindJournal, true, true, true},
		{event.KindUnit, false, true, true},
		{event.KindConn, false, true, true},
		{event.KindAction, false, true, true},
		{event.KindGap, false, true, true},
		{event.KindProbe, false, true, false},
	} {
		if got := urgentEvent(tc.k, tc.changed, tc.relaxed); got != tc.want {
			t.Errorf("urgentEvent(%s, changed %v, relaxed %v) = %v, want %v", tc.k, tc.changed, tc.relaxed, got, tc.want)
		}
	}
	// Samples wait for the first whole second at least one flush after
	// the first of them came (the grid the stuck check and the hosts'
	// timers fall on).
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	const flush, wait = 50 * time.Millisecond, time.Second
	for _, tc := range []struct {
		name      string
		urgent    bool
		lazySince time.Time
		now       time.Time
		want      bool
	}{
		{"urgent", true, time.Time{}, t0, true},
		{"urgent and samples", true, t0, t0, true},
		{"samples came on the second: wait for the next", false, t0, t0.Add(999 * time.Millisecond), false},
		{"samples came on the second: the next one", false, t0, t0.Add(wait), true},
		{"samples came mid-second: the next second", false, t0.Add(400 * time.Millisecond), t0.Add(wait), true},
		{"samples came just before a second: not that one", false, t0.Add(980 * time.Millisecond), t0.Add(wait), false},
		{"samples came just before a second: the one after", false, t0.Add(980 * time.Millisecond), t0.Add(2 * wait), true},
	} {
		if got := flushDue(tc.urgent, tc.lazySince, tc.now, flush, wait); got != tc.want {
			t.Errorf("%s: flushDue = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A GPU sample alone waits for company until the grid's next instant
// (lazyDue: a grid every stuckEvery flushes); a journal line goes out at
// the next flush and takes the waiting sample with it.
func TestFleetSamplesWaitLinesDoNot(t *testing.T) {
	const flush = 10 * time.Millisecond
	lazy := stuckEvery * flush
	d := &feedDriver{name: "gpu1", feed: make(chan event.Event)}
	f, _, _ := startFleet(t, Options{Kernels: kernels.DefaultCatalog(), Flush: flush}, d)
	collect(t, f, func(_ []event.Event, bt remote.Batch) bool { return len(bt.Hosts) == 1 }) // the first snapshot
	now := time.Now()
	fed := time.Now()
	feed(t, d, []event.Event{gpuAt(now, 100)})
	collect(t, f, func(_ []event.Event, bt remote.Batch) bool { return len(bt.Hosts[0].GPU) == 1 })
	if out, due := time.Now(), lazyDue(fed, flush, lazy); out.Before(due) {
		t.Errorf("a lone GPU sample went out after %v, want it to wait for the grid's next instant, %v after it came", out.Sub(fed), due.Sub(fed))
	}
	feed(t, d, []event.Event{gpuAt(now, 200)})
	fed = time.Now()
	feed(t, d, []event.Event{{Kind: event.KindJournal, Time: now, Journal: &event.Journal{Unit: "sglang.service", Message: "hello"}}})
	_, last := collect(t, f, func(evs []event.Event, _ remote.Batch) bool { return len(evs) > 0 })
	if el := time.Since(fed); el >= lazy {
		t.Errorf("a journal line went out after %v, not at the next flush", el)
	}
	if len(last.Hosts[0].GPU) != 2 {
		t.Errorf("the line's batch holds %d GPU samples, want the waiting one too", len(last.Hosts[0].GPU))
	}
}

// A failure whose cause only the unit's state gives is provisional; once
// Settle has passed it settles in a snapshot of its own, no event coming,
// now that the fold skips its per-host look on most flushes (this shows
// it settles, not on which flush: the stuck check looks too).
func TestFleetProvisionalSettlesWithoutEvents(t *testing.T) {
	t0 := time.Now()
	d := &feedDriver{name: "gpu1", feed: make(chan event.Event)}
	f, _, _ := startFleet(t, Options{Kernels: kernels.DefaultCatalog(), Flush: 2 * time.Millisecond, Settle: 100 * time.Millisecond}, d)
	unit := func(at time.Time, active, sub, result string) event.Event {
		return event.Event{Kind: event.KindUnit, Time: at, Unit: &event.Unit{Name: "sglang.service",
			ActiveState: active, SubState: sub, Result: result, InvocationID: "inv-1"}}
	}
	// A line of the run heard first: a failure before the host's first
	// line waits startup.FirstLineExtra longer (TestFleetFirstLineWait).
	line := event.Event{Kind: event.KindJournal, Time: t0, Journal: &event.Journal{Message: "Loading weights", InvocationID: "inv-1"}}
	feed(t, d, []event.Event{unit(t0, "activating", "start", ""), line, unit(t0.Add(time.Second), "failed", "failed", "exit-code")})
	collect(t, f, func(_ []event.Event, bt remote.Batch) bool {
		return bt.Hosts[0].Startup.Phase == startup.Failed && bt.Hosts[0].Provisional
	})
	collect(t, f, func(_ []event.Event, bt remote.Batch) bool {
		return bt.Hosts[0].Startup.Phase == startup.Failed && !bt.Hosts[0].Provisional
	})
}

// A failure the unit's state gave before any journal line of the host
// (its follow held until the fleet's table is full) stays provisional
// past Settle, and its log, arriving then, settles it on the log's cause.
func TestFleetFirstLineWait(t *testing.T) {
	t0 := time.Now()
	d := &feedDriver{name: "gpu1", feed: make(chan event.Event)}
	f, _, _ := startFleet(t, Options{Kernels: kernels.DefaultCatalog(), Flush: 2 * time.Millisecond, Settle: 100 * time.Millisecond}, d)
	unit := event.Event{Kind: event.KindUnit, Time: t0, Unit: &event.Unit{Name: "sglang.service",
		ActiveState: "failed", SubState: "failed", Result: "exit-code", InvocationID: "inv-1"}}
	feed(t, d, []event.Event{unit})
	var seen time.Time
	collect(t, f, func(_ []event.Event, bt remote.Batch) bool {
		seen = time.Now()
		return bt.Hosts[0].Startup.Phase == startup.Failed && bt.Hosts[0].Provisional
	})
	time.Sleep(300 * time.Millisecond) // three Settle waits: still provisional
	// The run's log, a real one (the corpus's), as its follow delivers it.
	l, err := corpus.Read(filepath.Join(corpus.Dir(), "vllm-31273-v013-h20-oom-first-shard.log"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []event.Event
	for _, m := range strings.Split(strings.TrimRight(l.Body, "\n"), "\n") {
		lines = append(lines, event.Event{Kind: event.KindJournal, Time: t0, Journal: &event.Journal{Message: m, InvocationID: "inv-1"}})
	}
	feed(t, d, lines)
	collect(t, f, func(_ []event.Event, bt remote.Batch) bool {
		h := bt.Hosts[0]
		if h.Startup.Phase != startup.Failed || h.Provisional {
			return false
		}
		if h.Startup.Diag == nil || h.Startup.Diag.Cause != l.Cause {
			t.Errorf("settled %.0f ms after the failure on %+v, before its log came", float64(time.Since(seen).Milliseconds()), h.Startup.Diag)
		}
		return true
	})
}

// The fleet returns its free memory to the system once every host has
// turned steady, on that transition: not while one host still starts,
// not again while the fleet stays quiet (no timer), and again after a
// host starts and serves once more.
func TestFleetFreesMemoryWhenEveryHostTurnsSteady(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	clock := &setClock{t: t0}
	a := &feedDriver{name: "gpu1", feed: make(chan event.Event)}
	b := &feedDriver{name: "gpu2", feed: make(chan event.Event)}
	f, err := New([]HostSpec{{Driver: a, Unit: "sglang.service"}, {Driver: b, Unit: "sglang.service"}},
		Options{Kernels: kernels.DefaultCatalog(), Clock: clock, Flush: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var freed atomic.Int32
	f.freeMemory = func() { freed.Add(1) }
	runFleet(t, f)
	serving := func(i int) func([]event.Event, remote.Batch) bool {
		return func(_ []event.Event, bt remote.Batch) bool { return bt.Hosts[i].Startup.Phase == startup.Serving }
	}
	// quiet lets the fold run many flushes (and a stuck check) with a
	// probe now and then, and says how many frees there were.
	quiet := func(d *feedDriver) int32 {
		for range 3 {
			feed(t, d, []event.Event{{Kind: event.KindProbe, Time: clock.Now(), Probe: &event.Probe{OK: true, Status: 200, Path: "/health"}}})
			time.Sleep(stuckEvery * 2 * time.Millisecond)
		}
		return freed.Load()
	}

	feed(t, a, sglangStart("inv-1", t0))
	clock.set(t0.Add(170 * time.Second))
	feed(t, a, sglangFinish("inv-1", t0))
	collect(t, f, serving(0))
	if n := quiet(a); n != 0 {
		t.Fatalf("freed %d times with gpu2's state unknown, want none", n)
	}
	feed(t, b, sglangStart("inv-b", t0))
	feed(t, b, sglangFinish("inv-b", t0))
	collect(t, f, serving(1))
	waitFor(t, func() bool { return freed.Load() == 1 }, "a free once both hosts serve")
	if n := quiet(b); n != 1 {
		t.Fatalf("freed %d times over a quiet fleet, want 1: the free follows the transition, not the clock", n)
	}

	restart := t0.Add(time.Hour)
	clock.set(restart)
	feed(t, a, []event.Event{{Kind: event.KindUnit, Time: restart, Unit: &event.Unit{Name: "sglang.service",
		ActiveState: "activating", SubState: "start", InvocationID: "inv-2"}}})
	collect(t, f, func(_ []event.Event, bt remote.Batch) bool { return bt.Hosts[0].Startup.InvocationID == "inv-2" })
	if n := quiet(a); n != 1 {
		t.Fatalf("freed %d times while gpu1 starts again, want still 1", n)
	}
	feed(t, a, sglangStart("inv-2", restart))
	clock.set(restart.Add(170 * time.Second))
	feed(t, a, sglangFinish("inv-2", restart))
	collect(t, f, func(_ []event.Event, bt remote.Batch) bool {
		return bt.Hosts[0].Startup.InvocationID == "inv-2" && bt.Hosts[0].Startup.Phase == startup.Serving
	})
	waitFor(t, func() bool { return freed.Load() == 2 }, "a second free once gpu1 serves again")
}

// waitFor waits up to 5 s for cond.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestFlushWait(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	const flush, wait = 50 * time.Millisecond, time.Second
	for _, tc := range []struct {
		name      string
		urgent    bool
		lazySince time.Time
		now       time.Time
		want      time.Duration
	}{
		{"urgent: the next flush", true, time.Time{}, t0, flush},
		{"urgent with samples waiting", true, t0, t0, flush},
		{"a sample just came on the second: the next second", false, t0, t0, wait},
		{"a sample waited 700 ms: the rest", false, t0, t0.Add(700 * time.Millisecond), 300 * time.Millisecond},
		{"a sample came mid-second: the next second", false, t0.Add(300 * time.Millisecond), t0.Add(300 * time.Millisecond), 700 * time.Millisecond},
		{"a sample came just before a second: the one after", false, t0.Add(980 * time.Millisecond), t0.Add(980 * time.Millisecond), wait + 20*time.Millisecond},
		{"the wait is almost over: still one flush", false, t0, t0.Add(990 * time.Millisecond), flush},
		{"the wait is over: one flush", false, t0, t0.Add(3 * time.Second), flush},
		{"nothing waiting", false, time.Time{}, t0, flush},
	} {
		if got := flushWait(tc.urgent, tc.lazySince, tc.now, flush, wait); got != tc.want {
			t.Errorf("%s: flushWait = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A failure stays provisional while its run's journal lines still come,
// however long they take, and settles once they have been quiet for
// Settle: a long log caught up after the unit's state was read (a
// follow starts once the fleet's states are in) must be read to its end
// before the cause is final. Virtual time (synctest): exact.
func TestFleetFailureSettlesWhenItsLinesStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const settle = 100 * time.Millisecond
		d := &feedDriver{name: "gpu1", feed: make(chan event.Event)}
		f, err := New([]HostSpec{{Driver: d, Unit: "sglang.service"}},
			Options{Kernels: kernels.DefaultCatalog(), Flush: 2 * time.Millisecond, Settle: settle})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go func() { _ = f.Run(ctx) }()
		t0 := time.Now()
		unit := func(active, sub, result string) event.Event {
			return event.Event{Kind: event.KindUnit, Time: time.Now(), Unit: &event.Unit{Name: "sglang.service",
				ActiveState: active, SubState: sub, Result: result, InvocationID: "inv-1"}}
		}
		d.feed <- unit("activating", "start", "")
		d.feed <- unit("failed", "failed", "exit-code")
		var lastLine atomic.Int64 // UnixNano of the last line fed
		go func() {
			// The run's log, a line every 60 ms for 600 ms: each within
			// Settle of the one before.
			for i := range 10 {
				time.Sleep(60 * time.Millisecond)
				now := time.Now()
				lastLine.Store(now.UnixNano())
				d.feed <- event.Event{Kind: event.KindJournal, Time: now, Journal: &event.Journal{Unit: "sglang.service",
					InvocationID: "inv-1", Message: fmt.Sprintf("loading shard %d", i)}}
			}
		}()
		for b := range f.Updates() {
			h := b.Hosts[0]
			if h.Startup.Phase != startup.Failed || h.Provisional {
				continue
			}
			last := time.Unix(0, lastLine.Load())
			if settled := time.Since(t0); time.Now().Before(last.Add(settle)) || settled < 600*time.Millisecond+settle {
				t.Errorf("settled %s after the failure, while lines still came (the last at %s)", settled, last.Sub(t0))
			}
			return
		}
	})
}

// A failed run replayed from the journal's backlog, its own end
// included, is not a settled failure until the unit's state names it:
// the backlog may hold earlier runs before the current one, and a reader
// that stops at the first settled failure would report an earlier run's
// cause (seen in TestCorpusOnTestbed: a host's previous log's evidence).
func TestBacklogFailureWaitsForTheUnitToNameIt(t *testing.T) {
	d := &feedDriver{name: "gpu1", feed: make(chan event.Event)}
	f, _, _ := startFleet(t, Options{Kernels: kernels.DefaultCatalog(), Flush: 2 * time.Millisecond, Settle: time.Hour}, d)
	t0 := time.Now().Add(-time.Minute)
	line := func(at time.Time, pid int, msg string) event.Event {
		return event.Event{Kind: event.KindJournal, Time: at, Journal: &event.Journal{Unit: "sglang.service",
			InvocationID: "inv-old", PID: pid, Priority: 6, Message: msg}}
	}
	feed(t, d, []event.Event{
		line(t0, 7, "[2025-01-24 09:39:31 TP0] Capture cuda graph begin. This can take up to several minutes."),
		line(t0.Add(time.Second), 7, "torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing"),
		line(t0.Add(2*time.Second), 1, "sglang.service: Main process exited, code=exited, status=1/FAILURE"),
		line(t0.Add(2*time.Second), 1, "sglang.service: Failed with result 'exit-code'."),
	})
	_, b := collect(t, f, func(evs []event.Event, _ remote.Batch) bool { return len(evs) >= 4 })
	if h := b.Hosts[0]; h.Startup.Phase != startup.Failed || !h.Provisional || h.Settled() {
		t.Fatalf("backlog alone: phase %s, provisional %v: want a failure not yet settled", h.Startup.Phase, h.Provisional)
	}
	feed(t, d, []event.Event{{Kind: event.KindUnit, Time: t0.Add(3 * time.Second), Unit: &event.Unit{Name: "sglang.service",
		ActiveState: "failed", SubState: "failed", Result: "exit-code", InvocationID: "inv-old"}}})
	collect(t, f, func(_ []event.Event, b remote.Batch) bool {
		h := b.Hosts[0]
		return h.UnitState.InvocationID == "inv-old" && h.Settled()
	})
}
