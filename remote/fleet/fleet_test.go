package fleet

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/history/store"
	"github.com/bringup-dev/bringup/remote/startup"
)

// scriptDriver emits a fixed list of events, then waits for ctx.
type scriptDriver struct {
	name   string
	events []event.Event
	mu     sync.Mutex
	did    []remote.Action
	err    error
}

func (d *scriptDriver) Name() string { return d.name }

func (d *scriptDriver) Run(ctx context.Context, emit remote.Emit) error {
	for _, ev := range d.events {
		ev.Host = d.name
		if !emit(ev) {
			return nil
		}
	}
	<-ctx.Done()
	return nil
}

func (d *scriptDriver) Do(ctx context.Context, a remote.Action, emit remote.Emit) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.did = append(d.did, a)
	return d.err
}

func startFleet(t *testing.T, opts Options, drivers ...remote.Driver) (*Fleet, context.CancelFunc, chan error) {
	t.Helper()
	specs := make([]HostSpec, len(drivers))
	for i, d := range drivers {
		specs[i] = HostSpec{Driver: d, Unit: "sglang.service"}
	}
	f, err := New(specs, opts)
	if err != nil {
		t.Fatal(err)
	}
	cancel, done := runFleet(t, f)
	return f, cancel, done
}

// runFleet runs f until the test ends (or cancel).
func runFleet(t *testing.T, f *Fleet) (context.CancelFunc, chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case _ = <-done: // only that it stops matters here
		case <-time.After(5 * time.Second):
			t.Error("fleet did not stop")
		}
	})
	return cancel, done
}

// collect reads batches until cond holds or the deadline passes.
func collect(t *testing.T, f *Fleet, cond func(all []event.Event, last remote.Batch) bool) ([]event.Event, remote.Batch) {
	t.Helper()
	var all []event.Event
	deadline := time.After(5 * time.Second)
	for {
		select {
		case b, ok := <-f.Updates():
			if !ok {
				t.Fatal("updates closed")
			}
			all = append(all, b.Events...)
			if cond(all, b) {
				return all, b
			}
		case <-deadline:
			t.Fatalf("condition not met; got %d events", len(all))
		}
	}
}

func TestFleetSanitisesAndSnapshots(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	d := &scriptDriver{name: "gpu1", events: []event.Event{
		{Kind: event.KindUnit, Time: t0, Unit: &event.Unit{Name: "sglang.service", ActiveState: "active", SubState: "running",
			Environment: []string{"KDTREE_MODE=validate"}}},
		{Kind: event.KindJournal, Time: t0, Journal: &event.Journal{Message: "evil \x1b[2J\x1b]0;title\x07 line"}},
		{Kind: event.KindConn, Time: t0, Conn: &event.Conn{State: event.ConnUp}},
	}}
	f, _, _ := startFleet(t, Options{Kernels: kernels.DefaultCatalog(), Flush: 5 * time.Millisecond}, d)
	all, last := collect(t, f, func(all []event.Event, last remote.Batch) bool {
		return len(all) == 3 && len(last.Hosts) == 1 && last.Hosts[0].Conn.State == event.ConnUp
	})
	msg := all[1].Journal.Message
	if strings.ContainsRune(msg, 0x1b) || strings.ContainsRune(msg, 0x07) {
		t.Fatalf("control bytes survived: %q", msg)
	}
	if want := "evil ␛[2J␛]0;title␇ line"; msg != want {
		t.Fatalf("message = %q, want %q", msg, want)
	}
	h := last.Hosts[0]
	if h.UnitState.ActiveState != "active" || len(h.Modes) != 1 || h.Modes[0].Mode != "validate" || h.Modes[0].CaptureSafe {
		t.Fatalf("host state = %+v", h)
	}
	if all[0].Seen.IsZero() {
		t.Fatal("seen not stamped")
	}
}

func TestFleetReadOnlyRefusesEveryAction(t *testing.T) {
	d := &scriptDriver{name: "gpu1"}
	f, _, _ := startFleet(t, Options{ReadOnly: true}, d)
	for _, k := range remote.AllActionKinds {
		_, err := f.Do("gpu1", remote.Action{Kind: k, Kernel: "kdtree-verify", Mode: "on"})
		if !errors.Is(err, remote.ErrReadOnly) {
			t.Errorf("%s: err = %v, want ErrReadOnly", k, err)
		}
	}
	if len(d.did) != 0 {
		t.Fatalf("driver saw actions: %v", d.did)
	}
}

func TestFleetDoReportsOutcome(t *testing.T) {
	ok := &scriptDriver{name: "gpu1"}
	bad := &scriptDriver{name: "gpu2", err: errors.New("unit not found")}
	f, _, _ := startFleet(t, Options{Flush: 5 * time.Millisecond}, ok, bad)
	// Wait for the first batch so the fleet is running.
	collect(t, f, func([]event.Event, remote.Batch) bool { return true })
	if _, err := f.Do("gpu1", remote.Action{Kind: remote.ActRestart}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Do("gpu2", remote.Action{Kind: remote.ActRestart}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Do("gpu9", remote.Action{Kind: remote.ActRestart}); err == nil || !strings.Contains(err.Error(), "gpu9") {
		t.Fatalf("unknown host: err = %v", err)
	}
	all, _ := collect(t, f, func(all []event.Event, _ remote.Batch) bool {
		n := 0
		for _, ev := range all {
			if ev.Kind == event.KindAction && ev.Action.Stage != event.ActionStarted {
				n++
			}
		}
		return n == 2
	})
	got := map[string]event.ActionStage{}
	for _, ev := range all {
		if ev.Kind == event.KindAction && ev.Action.Stage != event.ActionStarted {
			got[ev.Host] = ev.Action.Stage
			if ev.Host == "gpu2" && ev.Action.Err != "unit not found" {
				t.Errorf("gpu2 err = %q", ev.Action.Err)
			}
		}
	}
	if got["gpu1"] != event.ActionDone || got["gpu2"] != event.ActionFailed {
		t.Fatalf("outcomes = %v", got)
	}
}

func TestFleetDropsOnlyJournalLinesWhenConsumerIsSlow(t *testing.T) {
	var evs []event.Event
	for i := 0; i < 500; i++ {
		evs = append(evs, event.Event{Kind: event.KindJournal, Journal: &event.Journal{Message: "line"}})
	}
	evs = append(evs, event.Event{Kind: event.KindUnit, Unit: &event.Unit{ActiveState: "failed", SubState: "failed"}})
	d := &scriptDriver{name: "gpu1", events: evs}
	f, _, _ := startFleet(t, Options{Flush: time.Millisecond, MaxPendingLines: 100}, d)
	time.Sleep(100 * time.Millisecond) // let the fleet pile up while nobody reads
	all, last := collect(t, f, func(all []event.Event, last remote.Batch) bool {
		return len(last.Hosts) == 1 && last.Hosts[0].UnitState.ActiveState == "failed"
	})
	var units, lines int
	for _, ev := range all {
		switch ev.Kind {
		case event.KindUnit:
			units++
		case event.KindJournal:
			lines++
		default: // the test counts unit states and journal lines only
		}
	}
	if units != 1 {
		t.Fatalf("unit events = %d, want 1 (must never drop)", units)
	}
	if lines+last.Hosts[0].Dropped != 500 {
		t.Fatalf("lines %d + dropped %d != 500", lines, last.Hosts[0].Dropped)
	}
	if last.Hosts[0].Dropped == 0 {
		t.Fatal("expected drops with a slow consumer")
	}
}

// TestFleetPendingTextWithinBudget: a slow consumer's pending batch holds
// at most a PendingShare of the log budget in journal text, however long
// the lines; the oldest lines go and are counted, state changes stay.
func TestFleetPendingTextWithinBudget(t *testing.T) {
	const budget = 1 << 20 // 128 KiB of it for pending lines
	long := strings.Repeat("x", 4<<10)
	var evs []event.Event
	for range 200 { // 800 KiB of text
		evs = append(evs, event.Event{Kind: event.KindJournal, Journal: &event.Journal{Message: long}})
	}
	evs = append(evs, event.Event{Kind: event.KindUnit, Unit: &event.Unit{ActiveState: "failed", SubState: "failed"}})
	d := &scriptDriver{name: "gpu1", events: evs}
	f, _, _ := startFleet(t, Options{Flush: time.Millisecond, LogBudget: budget}, d)
	if got := f.LogBudget(); got != budget-budget/remote.PendingShare {
		t.Errorf("LogBudget() = %d, want %d for the consumer", got, budget-budget/remote.PendingShare)
	}
	time.Sleep(time.Second) // let the fleet pile up while nobody reads
	first := <-f.Updates()
	text := 0
	for _, ev := range first.Events {
		if ev.Kind == event.KindJournal {
			text += len(ev.Journal.Message)
		}
	}
	if text > budget/remote.PendingShare || first.Dropped == 0 {
		t.Errorf("after a stall: %d bytes of text in the batch (%d dropped), want at most %d", text, first.Dropped, budget/remote.PendingShare)
	}
	all, last := collect(t, f, func(all []event.Event, last remote.Batch) bool {
		return len(last.Hosts) == 1 && last.Hosts[0].UnitState.ActiveState == "failed"
	})
	lines := 0
	for _, ev := range append(first.Events, all...) {
		if ev.Kind == event.KindJournal {
			lines++
		}
	}
	if lines+last.Hosts[0].Dropped != 200 {
		t.Errorf("lines %d + dropped %d, want 200", lines, last.Hosts[0].Dropped)
	}
}

func TestNewFleetRejectsDuplicateHosts(t *testing.T) {
	_, err := New([]HostSpec{{Driver: &scriptDriver{name: "a"}}, {Driver: &scriptDriver{name: "a"}}}, Options{})
	if err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Fatalf("err = %v", err)
	}
}

// slowDriver records the order actions ran in; the first one is slow.
type slowDriver struct {
	scriptDriver
}

func (d *slowDriver) Do(ctx context.Context, a remote.Action, emit remote.Emit) error {
	if a.Kind == remote.ActSetMode {
		time.Sleep(50 * time.Millisecond)
	}
	return d.scriptDriver.Do(ctx, a, emit)
}

func TestFleetRunsOneHostsActionsInOrder(t *testing.T) {
	d := &slowDriver{scriptDriver{name: "gpu1"}}
	f, _, _ := startFleet(t, Options{Flush: 5 * time.Millisecond}, d)
	collect(t, f, func([]event.Event, remote.Batch) bool { return true })
	if _, err := f.Do("gpu1", remote.Action{Kind: remote.ActSetMode, Kernel: "k", Mode: "on"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Do("gpu1", remote.Action{Kind: remote.ActRestart}); err != nil {
		t.Fatal(err)
	}
	collect(t, f, func(all []event.Event, _ remote.Batch) bool {
		n := 0
		for _, ev := range all {
			if ev.Kind == event.KindAction && ev.Action.Stage == event.ActionDone {
				n++
			}
		}
		return n == 2
	})
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.did) != 2 || d.did[0].Kind != remote.ActSetMode || d.did[1].Kind != remote.ActRestart {
		t.Fatalf("order = %v, want mode then restart", d.did)
	}
}

// feedDriver emits what the test sends on feed, so a test can pace a
// host's story (wait for the fleet between startups).
type feedDriver struct {
	name string
	feed chan event.Event
}

func (d *feedDriver) Name() string { return d.name }

func (d *feedDriver) Run(ctx context.Context, emit remote.Emit) error {
	for {
		select {
		case ev := <-d.feed:
			ev.Host = d.name
			if !emit(ev) {
				return nil
			}
		case <-ctx.Done():
			return nil
		}
	}
}

func (d *feedDriver) Do(context.Context, remote.Action, remote.Emit) error { return nil }

// setClock is a host-time clock the test sets.
type setClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *setClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *setClock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// gpuAt is a sample of 8 GPUs each using mib.
func gpuAt(at time.Time, mib int) event.Event {
	devs := make([]event.GPUDevice, 8)
	for i := range devs {
		devs[i] = event.GPUDevice{Index: i, MemUsedMiB: mib, MemTotalMiB: 81559}
	}
	return event.Event{Kind: event.KindGPU, Time: at, GPU: &event.GPU{Devices: devs}}
}

// sglangStart is an SGLang startup of invocation inv from start, up to and
// including the weights phase beginning at start+10s.
func sglangStart(inv string, start time.Time) []event.Event {
	unit := func(at time.Time, active, sub string) event.Event {
		return event.Event{Kind: event.KindUnit, Time: at, Unit: &event.Unit{Name: "sglang.service",
			ActiveState: active, SubState: sub, InvocationID: inv, Environment: []string{"KDTREE_MODE=on"}}}
	}
	return []event.Event{
		unit(start, "activating", "start"),
		unit(start.Add(time.Second), "active", "running"),
		journalAt(inv, start.Add(2*time.Second), "[2026-11-30 10:00:02] server_args=ServerArgs(model_path='m', tp_size=8)"),
		journalAt(inv, start.Add(10*time.Second), "[2026-11-30 10:00:10 TP0] Load weight begin. avail mem=78.50 GB"),
		gpuAt(start.Add(11*time.Second), 600),
	}
}

// sglangFinish takes the startup of sglangStart from weights (ending at
// start+100s with 40000 MiB per GPU) to serving: at the ready line
// (start+160s) before any probe has answered, else at the probe (+170s).
func sglangFinish(inv string, start time.Time) []event.Event {
	at := func(s int) time.Time { return start.Add(time.Duration(s) * time.Second) }
	return []event.Event{
		gpuAt(at(99), 40000),
		journalAt(inv, at(100), "[2026-11-30 10:01:40 TP0] Load weight end. type=X, dtype=torch.bfloat16, avail mem=40.00 GB"),
		gpuAt(at(105), 76000), // KV cache: far above what the weights took
		journalAt(inv, at(120), "[2026-11-30 10:02:00 TP0] Capture cuda graph begin. This can take up to several minutes."),
		journalAt(inv, at(150), "[2026-11-30 10:02:30] max_total_num_tokens=104273, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4097, context_len=40960"),
		journalAt(inv, at(160), "[2026-11-30 10:02:40] The server is fired up and ready to roll!"),
		{Kind: event.KindProbe, Time: at(170), Probe: &event.Probe{Path: "/health", Status: 200, OK: true}},
	}
}

func journalAt(inv string, at time.Time, msg string) event.Event {
	return event.Event{Kind: event.KindJournal, Time: at, Journal: &event.Journal{Unit: "sglang.service",
		InvocationID: inv, Priority: 6, Message: msg}}
}

func feed(t *testing.T, d *feedDriver, evs []event.Event) {
	t.Helper()
	for _, ev := range evs {
		select {
		case d.feed <- ev:
		case <-time.After(5 * time.Second):
			t.Fatal("fleet does not take events")
		}
	}
}

func TestFleetHistoryRecordsAndEstimates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bringup", "history.jsonl")
	hs, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	clock := &setClock{t: t0}
	d := &feedDriver{name: "gpu1", feed: make(chan event.Event)}
	f, _, _ := startFleet(t, Options{Kernels: kernels.DefaultCatalog(), Clock: clock, Flush: 2 * time.Millisecond,
		History: store.NewSink(hs)}, d)

	for i, inv := range []string{"inv-1", "inv-2"} {
		start := t0.Add(time.Duration(i) * time.Hour)
		clock.set(start)
		feed(t, d, sglangStart(inv, start))
		feed(t, d, sglangFinish(inv, start))
		collect(t, f, func(_ []event.Event, b remote.Batch) bool {
			return len(b.Hosts) == 1 && b.Hosts[0].Startup.Phase == startup.Serving && b.Hosts[0].Startup.InvocationID == inv
		})
		// The writer is asynchronous: wait for it (no batch says so).
		for deadline := time.Now().Add(5 * time.Second); f.HistoryStats().Written != i+1; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("record %d not written: %+v", i+1, f.HistoryStats())
			}
		}
	}
	again, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	recs := again.Records("sglang.service", map[string]string{"kdtree-verify": "on"})
	if len(recs) != 2 || again.Skipped() != 0 {
		t.Fatalf("file holds %d records (%d skipped)", len(recs), again.Skipped())
	}
	r := recs[1]
	if r.Host != "gpu1" || r.InvocationID != "inv-2" || r.Total != 170*time.Second || r.WeightMemMiB != 40000 || r.Engine != "sglang" {
		t.Fatalf("record = %+v", r)
	}

	// The third startup: an ETA from the two runs, and memory progress
	// while the weights phase is quiet.
	start := t0.Add(2 * time.Hour)
	clock.set(start.Add(40 * time.Second))
	feed(t, d, sglangStart("inv-3", start))
	feed(t, d, []event.Event{gpuAt(start.Add(39*time.Second), 20000)})
	_, last := collect(t, f, func(_ []event.Event, b remote.Batch) bool {
		h := b.Hosts
		// Wait for the new run's sample: until it lands, the newest sample
		// is the previous run's.
		return len(h) == 1 && h[0].Startup.InvocationID == "inv-3" &&
			h[0].Startup.Phase == startup.Weights && h[0].MemProgress.Known() &&
			len(h[0].GPU) > 0 && h[0].GPU[len(h[0].GPU)-1].Devices[0].MemUsedMiB == 20000
	})
	h := last.Hosts[0]
	if h.Expected.Runs != 2 || h.Expected.OtherHosts || h.Expected.Phase[startup.Weights] != 90*time.Second {
		t.Fatalf("expected = %+v", h.Expected)
	}
	// Weights began at +10s and take 90s; then kv-cache 20s, capture 30s,
	// http 10s, warmup 10s (the first run served at its ready line and
	// has no warmup span; the second waited 10s for the probe): serving
	// at +170s.
	if want := start.Add(170 * time.Second); !h.ETA.Equal(want) {
		t.Fatalf("ETA = %v, want %v", h.ETA, want)
	}
	if p := h.MemProgress; p.Done != 8*20000/1024 || p.Total != 8*40000/1024 || p.Label != "GiB est." {
		t.Fatalf("mem progress = %+v", p)
	}
	// A shard line gives a real count: the estimate goes.
	feed(t, d, []event.Event{journalAt("inv-3", start.Add(41*time.Second),
		"Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.17s/it]")})
	_, last = collect(t, f, func(_ []event.Event, b remote.Batch) bool {
		return len(b.Hosts) == 1 && b.Hosts[0].Startup.Progress.Known()
	})
	if last.Hosts[0].MemProgress.Known() {
		t.Fatalf("mem progress with a log count: %+v", last.Hosts[0].MemProgress)
	}
}

// blockedSink refuses to finish a Record until released.
type blockedSink struct {
	release chan struct{}
	got     atomic.Int64
}

func (s *blockedSink) Expect(string, string, map[string]string) (history.Expectation, bool) {
	return history.Expectation{}, false
}

func (s *blockedSink) Record(history.Record) error {
	<-s.release
	s.got.Add(1)
	return nil
}

func TestFleetHistoryNeverBlocksTheFold(t *testing.T) {
	const runs = 40
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	var evs []event.Event
	for i := range runs {
		inv := fmt.Sprintf("inv-%d", i)
		start := t0.Add(time.Duration(i) * time.Hour)
		evs = append(append(evs, sglangStart(inv, start)...), sglangFinish(inv, start)...)
	}
	sink := &blockedSink{release: make(chan struct{})}
	d := &scriptDriver{name: "gpu1", events: evs}
	clock := &setClock{t: t0.Add(runs * time.Hour)}
	f, cancel, done := startFleet(t, Options{Kernels: kernels.DefaultCatalog(), Clock: clock, Flush: time.Millisecond, History: sink}, d)
	released := false
	t.Cleanup(func() {
		if !released {
			close(sink.release)
		}
	})
	last := fmt.Sprintf("inv-%d", runs-1)
	collect(t, f, func(_ []event.Event, b remote.Batch) bool {
		return len(b.Hosts) == 1 && b.Hosts[0].Startup.InvocationID == last && b.Hosts[0].Startup.Phase == startup.Serving
	})
	st := f.HistoryStats()
	if st.Dropped == 0 || st.Written != 0 {
		t.Fatalf("with the sink blocked: %+v", st)
	}
	close(sink.release)
	released = true
	cancel()
	err := <-done
	done <- err // for startFleet's cleanup
	st = f.HistoryStats()
	if st.Written+st.Dropped != runs || int(sink.got.Load()) != st.Written {
		t.Fatalf("after Run: %+v, sink got %d, want written+dropped = %d", st, sink.got.Load(), runs)
	}
	t.Logf("history with a blocked sink: %d written, %d dropped of %d", st.Written, st.Dropped, runs)
}

func TestFleetDoesNotRecordAStartupSeenMidway(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	// Attached during kv-cache: no weights span, so no measurement.
	evs := sglangFinish("inv-1", t0)[1:]
	evs = append([]event.Event{{Kind: event.KindUnit, Time: t0.Add(100 * time.Second), Unit: &event.Unit{Name: "sglang.service",
		ActiveState: "active", SubState: "running", InvocationID: "inv-1"}}}, evs...)
	sink := &blockedSink{release: make(chan struct{})}
	close(sink.release)
	d := &scriptDriver{name: "gpu1", events: evs}
	f, _, _ := startFleet(t, Options{Kernels: kernels.DefaultCatalog(), Clock: &setClock{t: t0.Add(200 * time.Second)},
		Flush: time.Millisecond, History: sink}, d)
	collect(t, f, func(_ []event.Event, b remote.Batch) bool {
		return len(b.Hosts) == 1 && b.Hosts[0].Startup.Phase == startup.Serving
	})
	if st := f.HistoryStats(); st.Written+st.Dropped != 0 {
		t.Fatalf("recorded a partial startup: %+v", st)
	}
}

// stoppableDriver is a driver whose connection may be stopped on a
// permanent failure; Retry counts the calls and says whether it was.
type stoppableDriver struct {
	scriptDriver
	stopped bool
	retries int
}

func (d *stoppableDriver) Retry() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.retries++
	return d.stopped
}

// TestFleetReconnect: a stopped connection is asked to dial again, even
// in read-only mode (nothing changes on the host); one that is not
// stopped, a driver that cannot reconnect and an unknown host are refused
// with a reason.
func TestFleetReconnect(t *testing.T) {
	stopped := &stoppableDriver{scriptDriver: scriptDriver{name: "gpu1"}, stopped: true}
	up := &stoppableDriver{scriptDriver: scriptDriver{name: "gpu2"}}
	sim := &scriptDriver{name: "gpu3"}
	f, _, _ := startFleet(t, Options{ReadOnly: true}, stopped, up, sim)
	if err := f.Reconnect("gpu1"); err != nil || stopped.retries != 1 {
		t.Fatalf("gpu1: err %v, %d retries; want nil, 1", err, stopped.retries)
	}
	if err := f.Reconnect("gpu2"); !errors.Is(err, remote.ErrNotStopped) || up.retries != 1 {
		t.Fatalf("gpu2: err %v, %d retries; want ErrNotStopped, 1", err, up.retries)
	}
	if err := f.Reconnect("gpu3"); err == nil || !strings.Contains(err.Error(), "cannot be restarted") {
		t.Fatalf("gpu3: err %v, want that it cannot be restarted", err)
	}
	if err := f.Reconnect("nosuch"); err == nil || !strings.Contains(err.Error(), `unknown host "nosuch"`) {
		t.Fatalf("nosuch: err %v, want unknown host", err)
	}
}

// TestSnapshotReusesQuietHosts: a host with no event since the last
// snapshot is handed out as it was, without being looked at or copied
// again (only the stale list is taken anew); an event, a tick change or a
// clock-dependent field (an ETA) takes it anew. Each row folds some
// events and says which hosts the next snapshot takes anew.
func TestSnapshotReusesQuietHosts(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	names := []string{"gpu1", "gpu2", "gpu3"}
	specs := make([]HostSpec, len(names))
	for i, n := range names {
		specs[i] = HostSpec{Driver: &scriptDriver{name: n}, Unit: "sglang.service"}
	}
	f, err := New(specs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	hosts := make([]*hostFold, len(names))
	snaps := &snapshots{}
	for i, n := range names {
		hosts[i] = &hostFold{tracker: startup.NewTracker(startup.Options{}), state: remote.HostState{Name: n}}
		snaps.mark(i, hosts[i])
	}
	probe := func(host string, status int) event.Event {
		return event.Event{Host: host, Kind: event.KindProbe, Time: now, Probe: &event.Probe{OK: status == 200, Status: status}}
	}
	starting := event.Event{Host: "gpu2", Kind: event.KindUnit, Time: now,
		Unit: &event.Unit{Name: "sglang.service", ActiveState: "activating", SubState: "start", ExecMainStart: now}}
	var pending batch
	var last []remote.HostState
	for _, tc := range []struct {
		name   string
		before func() // what happens to the fold first
		events []event.Event
		taken  []int
	}{
		{name: "the first snapshot takes every host", taken: []int{0, 1, 2}},
		{name: "nothing happened: nobody is taken anew"},
		{name: "an event for gpu1 takes only gpu1", events: []event.Event{probe("gpu1", 200)}, taken: []int{0},
			// not through apply: must not show in gpu2's snapshot
			before: func() { hosts[1].state.Probe = event.Probe{Status: 599} }},
		{name: "two events for gpu3, then gpu1: each taken once", events: []event.Event{probe("gpu3", 503), probe("gpu1", 503), probe("gpu3", 200)}, taken: []int{2, 0}},
		{name: "gpu2 starting with an expectation has an ETA", events: []event.Event{starting}, taken: []int{1},
			before: func() {
				hosts[1].expect = history.Expectation{Runs: 3, Total: 10 * time.Minute}
				hosts[1].state.Probe = event.Probe{} // its event would show the one set behind apply's back
			}},
		{name: "its ETA moves with the clock: taken anew without events", taken: []int{1}},
	} {
		if tc.before != nil {
			tc.before()
		}
		for _, ev := range tc.events {
			f.apply(hosts, snaps, &pending, ev)
		}
		now = now.Add(time.Minute)
		out, taken := snaps.take(hosts, now, now, time.Second)
		if !slices.Equal(taken, tc.taken) {
			t.Errorf("%s: took %v anew, want %v", tc.name, taken, tc.taken)
		}
		for i, h := range hosts {
			if !slices.Contains(taken, i) && last != nil && !reflect.DeepEqual(out[i], last[i]) {
				t.Errorf("%s: %s changed without being taken anew", tc.name, h.state.Name)
			}
			if slices.Contains(taken, i) && out[i].Probe != h.state.Probe {
				t.Errorf("%s: %s's probe %+v, want %+v", tc.name, h.state.Name, out[i].Probe, h.state.Probe)
			}
		}
		if out[1].Probe.Status == 599 {
			t.Errorf("%s: gpu2 shows a probe that never went through apply", tc.name)
		}
		last = out
	}
	if last[1].ETA.IsZero() || !hosts[1].timed {
		t.Errorf("gpu2 starting with an expectation: ETA %v, timed %v", last[1].ETA, hosts[1].timed)
	}
}

// TestGPUAppendNeverWritesOverASnapshot: snapshots share the GPU
// history's array, so appending keeps the last keep samples in order and
// never changes a sample a slice taken earlier holds.
func TestGPUAppendNeverWritesOverASnapshot(t *testing.T) {
	const keep = 4
	sample := func(n int) event.GPU { return event.GPU{Devices: []event.GPUDevice{{MemUsedMiB: n}}} }
	var gs []event.GPU
	var taken [][]event.GPU
	var want [][]int
	for n := 1; n <= 5*keep; n++ {
		gs = gpuAppend(gs, sample(n), keep)
		var w []int
		for m := max(1, n-keep+1); m <= n; m++ {
			w = append(w, m)
		}
		taken, want = append(taken, gs[:len(gs):len(gs)]), append(want, w)
	}
	for k, s := range taken {
		got := make([]int, len(s))
		for i, g := range s {
			got[i] = g.Devices[0].MemUsedMiB
		}
		if !slices.Equal(got, want[k]) {
			t.Errorf("after sample %d the history held %v, want %v (written over later?)", k+1, got, want[k])
		}
	}
}

// TestFleetUnknownCarriesTheConnError: a host that cannot be reached
// turns unknown with its connection's error on the change (sanitised like
// all remote text), so that watch can say why, as status does; its other
// changes carry none.
func TestFleetUnknownCarriesTheConnError(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	refused := "dial 127.0.0.1: connect 127.0.0.1:1: dial tcp 127.0.0.1:1: connect: connection refused"
	d := &scriptDriver{name: "gpu1", events: []event.Event{
		{Kind: event.KindConn, Time: t0, Conn: &event.Conn{State: event.ConnUp}},
		{Kind: event.KindUnit, Time: t0, Unit: &event.Unit{Name: "sglang.service", ActiveState: "active", SubState: "running"}},
		{Kind: event.KindConn, Time: t0.Add(time.Second), Conn: &event.Conn{State: event.ConnUnreachable, Err: refused + "\x1b]0;x\x07"}},
	}}
	f, _, _ := startFleet(t, Options{Kernels: kernels.DefaultCatalog(), Flush: 5 * time.Millisecond}, d)
	var changes []remote.HostChange
	collect(t, f, func(_ []event.Event, b remote.Batch) bool {
		changes = append(changes, b.Changes...)
		return len(b.Hosts) == 1 && b.Hosts[0].Startup.Phase == startup.Unknown
	})
	var unknown []remote.HostChange
	for _, c := range changes {
		if c.Phase == startup.Unknown {
			unknown = append(unknown, c)
		} else if c.ConnErr != "" {
			t.Errorf("a change to %s carries a connection error %q", c.Phase, c.ConnErr)
		}
	}
	if len(unknown) != 1 || unknown[0].ConnErr != refused+"␛]0;x␇" {
		t.Fatalf("changes to unknown %+v, want one with the sanitised error", unknown)
	}
}

// streamDriver emits a journal line and a probe answer (its status
// counting up) every period until ctx ends.
type streamDriver struct {
	name   string
	period time.Duration
}

func (d *streamDriver) Name() string { return d.name }

func (d *streamDriver) Run(ctx context.Context, emit remote.Emit) error {
	t := time.NewTicker(d.period)
	defer t.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			line := event.Event{Host: d.name, Kind: event.KindJournal, Time: now, Seen: now,
				Journal: &event.Journal{Message: fmt.Sprintf("line %d", n)}}
			pr := event.Event{Host: d.name, Kind: event.KindProbe, Time: now, Seen: now,
				Probe: &event.Probe{Path: "/health", Status: 200 + n%100}}
			if !emit(line) || !emit(pr) {
				return nil
			}
		}
	}
}

func (d *streamDriver) Do(context.Context, remote.Action, remote.Emit) error { return nil }

// TestBatchStaysOfferedWhileLinesArrive: a consumer that comes back for
// the next batch while lines keep arriving gets the batch sealed at the
// last flush at once, not one flush later (lines arriving withdrew it
// each time, which on a loaded machine kept 256 hosts' lines from the
// console for seconds). Virtual time (synctest): the wait is exact.
func TestBatchStaysOfferedWhileLinesArrive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const flush = 50 * time.Millisecond
		f, err := New([]HostSpec{{Driver: &streamDriver{name: "gpu1", period: time.Millisecond}, Unit: "sglang.service"}},
			Options{Flush: flush})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- f.Run(ctx) }()
		<-f.Updates()
		seen := 0
		for range 5 {
			time.Sleep(flush + 23*time.Millisecond) // away from any flush
			start := time.Now()
			b := <-f.Updates()
			if waited := time.Since(start); waited != 0 {
				t.Errorf("waited %s for a batch sealed before the consumer came", waited)
			}
			last := 0
			for _, ev := range b.Events {
				if ev.Kind == event.KindJournal {
					seen++
				}
				if ev.Kind == event.KindProbe {
					last = ev.Probe.Status
				}
			}
			// The snapshot includes the batch's events, and nothing after.
			if got := b.Hosts[0].Probe.Status; last != 0 && got != last {
				t.Errorf("the batch's last probe answered %d, its snapshot says %d", last, got)
			}
		}
		if seen == 0 {
			t.Error("no line came through")
		}
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	})
}
