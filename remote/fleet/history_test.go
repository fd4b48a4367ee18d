package fleet

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/history/store"
	"github.com/bringup-dev/bringup/remote/startup"
)

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
	f, _, _ := startFleet(t, Options{Kernels: kernels.DefaultCatalog(), Clock: clock, Flush: 2 * time.Millisecond}.WithHistory(store.NewSink(hs)), d)

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
	f, cancel, done := startFleet(t, Options{Kernels: kernels.DefaultCatalog(), Clock: clock, Flush: time.Millisecond, Observers: []Observer{History(sink)}, Records: sink}, d)
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
		Flush: time.Millisecond, Observers: []Observer{History(sink)}, Records: sink}, d)
	collect(t, f, func(_ []event.Event, b remote.Batch) bool {
		return len(b.Hosts) == 1 && b.Hosts[0].Startup.Phase == startup.Serving
	})
	if st := f.HistoryStats(); st.Written+st.Dropped != 0 {
		t.Fatalf("recorded a partial startup: %+v", st)
	}
}
