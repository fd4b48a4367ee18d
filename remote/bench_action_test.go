package remote

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
)

// benchDriver answers ActBench as a live host does: counted progress, then
// the measurement on the last progress event; it blocks after half the
// requests until its action is cancelled when hold is set.
type benchDriver struct {
	scriptDriver
	hold bool
}

func (d *benchDriver) Do(ctx context.Context, a Action, emit Emit) error {
	if a.Kind != ActBench {
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

// TestFleetBenchAction: a bench goes through Do even in read-only mode
// (it changes nothing), its result lands on the host's state
// (sanitised), and Cancel ends a running one with ErrCancelled after it
// reported what it measured.
func TestFleetBenchAction(t *testing.T) {
	d := &benchDriver{scriptDriver: scriptDriver{name: "gpu1"}}
	f, _, _ := startFleet(t, Options{ReadOnly: true, Flush: 5 * time.Millisecond}, d)
	collect(t, f, func([]event.Event, Batch) bool { return true }) // running
	if _, err := f.Do("gpu1", Action{Kind: ActRestart}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("restart in read-only: %v", err)
	}
	id, err := f.Do("gpu1", Action{Kind: ActBench, Requests: 8, Concurrency: 2})
	if err != nil {
		t.Fatalf("bench in read-only: %v", err)
	}
	_, last := collect(t, f, func(all []event.Event, last Batch) bool {
		return len(last.Hosts) == 1 && last.Hosts[0].Action != nil && last.Hosts[0].Action.Stage == event.ActionDone
	})
	b := last.Hosts[0].Bench
	if b == nil || b.Action != id || b.Requests != 8 || b.OutputTPS != 876 || b.Interrupted {
		t.Fatalf("bench on the host's state = %+v", b)
	}
	if strings.ContainsRune(b.FirstError, 0x1b) {
		t.Errorf("the driver's text reached the state raw: %q", b.FirstError)
	}

	d.hold = true
	id, err = f.Do("gpu1", Action{Kind: ActBench, Requests: 8, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	collect(t, f, func(all []event.Event, _ Batch) bool {
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
	all, last := collect(t, f, func(_ []event.Event, last Batch) bool {
		a := last.Hosts[0].Action
		return a != nil && a.ID == id && a.Stage == event.ActionFailed
	})
	if a := last.Hosts[0].Action; !strings.Contains(a.Err, ErrCancelled.Error()) {
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
	if err := f.Cancel("gpu1", id); !errors.Is(err, ErrNoSuchAction) {
		t.Errorf("cancel of an ended action: %v", err)
	}
}
