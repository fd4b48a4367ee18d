package fleet

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/history/store"
	"github.com/bringup-dev/bringup/remote/startup"
)

// benchDriver answers ActBench as a live host does: counted progress, then
// the measurement on the last progress event; it blocks after half the
// requests until its action is cancelled when hold is set.
type benchDriver struct {
	scriptDriver
	hold bool
}

func (d *benchDriver) Do(ctx context.Context, a remote.Action, emit remote.Emit) error {
	if a.Kind != remote.ActBench {
		return d.scriptDriver.Do(ctx, a, emit)
	}
	sent := 0
	for sent < a.Requests {
		if d.hold && sent == a.Requests/2 {
			<-ctx.Done()
			break
		}
		sent++
		emit(event.Event{Host: d.name, Kind: event.KindAction, Action: &event.ActionResult{Stage: event.ActionProgress, Done: sent, Total: a.Requests}})
	}
	res := &event.Bench{Requests: sent, OK: sent, Concurrency: a.Concurrency, OutputTPS: 876, FirstError: "bad\x1b[31m", Interrupted: sent < a.Requests}
	emit(event.Event{Host: d.name, Kind: event.KindAction, Action: &event.ActionResult{Stage: event.ActionProgress, Done: sent, Total: a.Requests, Bench: res}})
	if res.Interrupted {
		return context.Cause(ctx)
	}
	return nil
}

// stopHalfway starts a bench of 8 on gpu1 that holds after 4, cancels it
// once 4 are counted and waits for it to fail; it returns its id, the
// events seen since the cancel and the last batch.
func stopHalfway(t *testing.T, f *Fleet, d *benchDriver) (int, []event.Event, remote.Batch) {
	t.Helper()
	d.hold = true
	id, err := f.Do("gpu1", remote.Action{Kind: remote.ActBench, Requests: 8, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	collect(t, f, func(all []event.Event, _ remote.Batch) bool {
		for _, ev := range all {
			if a := ev.Action; a != nil && a.ID == id && a.Done == 4 {
				return true
			}
		}
		return false
	})
	if err := f.Cancel("gpu1", id); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	all, last := collect(t, f, func(_ []event.Event, last remote.Batch) bool {
		a := last.Hosts[0].Action
		return a != nil && a.ID == id && a.Stage == event.ActionFailed
	})
	return id, all, last
}

// TestFleetBenchAction: a bench goes through Do even in read-only mode
// (it changes nothing), its result lands on the host's state
// (sanitised), and Cancel ends a running one with ErrCancelled after it
// reported what it measured.
func TestFleetBenchAction(t *testing.T) {
	d := &benchDriver{scriptDriver: scriptDriver{name: "gpu1"}}
	f, _, _ := startFleet(t, Options{ReadOnly: true, Flush: 5 * time.Millisecond}, d)
	collect(t, f, func([]event.Event, remote.Batch) bool { return true }) // running
	if _, err := f.Do("gpu1", remote.Action{Kind: remote.ActRestart}); !errors.Is(err, remote.ErrReadOnly) {
		t.Fatalf("restart in read-only: %v", err)
	}
	id, err := f.Do("gpu1", remote.Action{Kind: remote.ActBench, Requests: 8, Concurrency: 2})
	if err != nil {
		t.Fatalf("bench in read-only: %v", err)
	}
	_, last := collect(t, f, func(all []event.Event, last remote.Batch) bool {
		return len(last.Hosts) == 1 && last.Hosts[0].Action != nil && last.Hosts[0].Action.Stage == event.ActionDone
	})
	b := last.Hosts[0].Bench
	if b == nil || b.Action != id || b.Requests != 8 || b.OutputTPS != 876 || b.Interrupted {
		t.Fatalf("bench on the host's state = %+v", b)
	}
	if strings.ContainsRune(b.FirstError, 0x1b) {
		t.Errorf("the driver's text reached the state raw: %q", b.FirstError)
	}

	id, all, last := stopHalfway(t, f, d)
	if a := last.Hosts[0].Action; !strings.Contains(a.Err, remote.ErrCancelled.Error()) {
		t.Errorf("cancelled bench ended with %q", a.Err)
	}
	if b := last.Hosts[0].Bench; b == nil || b.Action != id || !b.Interrupted || b.Requests != 4 {
		t.Errorf("the stopped bench's result = %+v", b)
	}
	for _, ev := range all {
		if a := ev.Action; a != nil && a.ID == id && a.Done > 8 {
			t.Errorf("more than N requests reported: %+v", a)
		}
	}
	if err := f.Cancel("gpu1", id); !errors.Is(err, remote.ErrNoSuchAction) {
		t.Errorf("cancel of an ended action: %v", err)
	}
}

// TestFleetBenchInHistory: a complete bench on a serving run is stored
// in the history with the run's modes, and the host's comparison carries
// its output rate at once (before the writer stored it); a stopped one
// is not stored.
func TestFleetBenchInHistory(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	evs := append(sglangStart("inv-1", t0), sglangFinish("inv-1", t0)...)
	d := &benchDriver{scriptDriver: scriptDriver{name: "gpu1", events: evs}}
	st := store.NewMemoryStore(nil)
	f, _, _ := startFleet(t, Options{Kernels: kernels.DefaultCatalog(), Clock: &setClock{t: t0.Add(time.Hour)}, Flush: time.Millisecond}.
		WithHistory(store.NewSink(st)), d)
	collect(t, f, func(_ []event.Event, b remote.Batch) bool {
		return len(b.Hosts) == 1 && b.Hosts[0].Startup.Phase == startup.Serving
	})
	if _, err := f.Do("gpu1", remote.Action{Kind: remote.ActBench, Requests: 8, Concurrency: 2}); err != nil {
		t.Fatal(err)
	}
	_, last := collect(t, f, func(_ []event.Event, b remote.Batch) bool {
		return len(b.Hosts) == 1 && b.Hosts[0].Action != nil && b.Hosts[0].Action.Stage == event.ActionDone
	})
	if ab := last.Hosts[0].Throughput; ab.BenchTPS != 876 {
		t.Errorf("comparison after the bench: %+v", ab)
	}
	deadline := time.Now().Add(5 * time.Second)
	var benches []history.Record
	for time.Now().Before(deadline) {
		benches = benches[:0]
		for _, r := range st.Throughput("gpu1", "sglang.service") {
			if r.Kind == history.KindBench {
				benches = append(benches, r)
			}
		}
		if len(benches) > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(benches) != 1 || benches[0].Bench == nil || benches[0].Bench.OutputTPS != 876 || benches[0].Bench.Requests != 8 ||
		benches[0].InvocationID != "inv-1" || benches[0].Engine != "sglang" {
		t.Fatalf("bench records = %+v", benches)
	}
	stopHalfway(t, f, d)
	time.Sleep(50 * time.Millisecond)          // the writer's turn
	if n := f.HistoryStats().Written; n != 2 { // the startup and the first bench
		t.Errorf("history records written = %d, want 2 (the stopped bench is not one)", n)
	}
}
