package remote

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"bringup/kernels"
	"bringup/remote/event"
)

// scriptDriver emits a fixed list of events, then waits for ctx.
type scriptDriver struct {
	name   string
	events []event.Event
	mu     sync.Mutex
	did    []Action
	err    error
}

func (d *scriptDriver) Name() string { return d.name }

func (d *scriptDriver) Run(ctx context.Context, emit Emit) error {
	for _, ev := range d.events {
		ev.Host = d.name
		if !emit(ev) {
			return nil
		}
	}
	<-ctx.Done()
	return nil
}

func (d *scriptDriver) Do(ctx context.Context, a Action, emit Emit) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.did = append(d.did, a)
	return d.err
}

func startFleet(t *testing.T, opts Options, drivers ...Driver) (*Fleet, context.CancelFunc, chan error) {
	t.Helper()
	specs := make([]HostSpec, len(drivers))
	for i, d := range drivers {
		specs[i] = HostSpec{Driver: d, Unit: "sglang.service"}
	}
	f, err := NewFleet(specs, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("fleet did not stop")
		}
	})
	return f, cancel, done
}

// collect reads batches until cond holds or the deadline passes.
func collect(t *testing.T, f *Fleet, cond func(all []event.Event, last Batch) bool) ([]event.Event, Batch) {
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
	all, last := collect(t, f, func(all []event.Event, last Batch) bool {
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
	for _, k := range AllActionKinds {
		_, err := f.Do("gpu1", Action{Kind: k, Kernel: "kdtree-verify", Mode: "on"})
		if !errors.Is(err, ErrReadOnly) {
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
	collect(t, f, func([]event.Event, Batch) bool { return true })
	if _, err := f.Do("gpu1", Action{Kind: ActRestart}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Do("gpu2", Action{Kind: ActRestart}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Do("gpu9", Action{Kind: ActRestart}); err == nil || !strings.Contains(err.Error(), "gpu9") {
		t.Fatalf("unknown host: err = %v", err)
	}
	all, _ := collect(t, f, func(all []event.Event, _ Batch) bool {
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
	all, last := collect(t, f, func(all []event.Event, last Batch) bool {
		return len(last.Hosts) == 1 && last.Hosts[0].UnitState.ActiveState == "failed"
	})
	var units, lines int
	for _, ev := range all {
		switch ev.Kind {
		case event.KindUnit:
			units++
		case event.KindJournal:
			lines++
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

func TestNewFleetRejectsDuplicateHosts(t *testing.T) {
	_, err := NewFleet([]HostSpec{{Driver: &scriptDriver{name: "a"}}, {Driver: &scriptDriver{name: "a"}}}, Options{})
	if err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Fatalf("err = %v", err)
	}
}

// slowDriver records the order actions ran in; the first one is slow.
type slowDriver struct {
	scriptDriver
}

func (d *slowDriver) Do(ctx context.Context, a Action, emit Emit) error {
	if a.Kind == ActSetMode {
		time.Sleep(50 * time.Millisecond)
	}
	return d.scriptDriver.Do(ctx, a, emit)
}

func TestFleetRunsOneHostsActionsInOrder(t *testing.T) {
	d := &slowDriver{scriptDriver{name: "gpu1"}}
	f, _, _ := startFleet(t, Options{Flush: 5 * time.Millisecond}, d)
	collect(t, f, func([]event.Event, Batch) bool { return true })
	if _, err := f.Do("gpu1", Action{Kind: ActSetMode, Kernel: "k", Mode: "on"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Do("gpu1", Action{Kind: ActRestart}); err != nil {
		t.Fatal(err)
	}
	collect(t, f, func(all []event.Event, _ Batch) bool {
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
	if len(d.did) != 2 || d.did[0].Kind != ActSetMode || d.did[1].Kind != ActRestart {
		t.Fatalf("order = %v, want mode then restart", d.did)
	}
}
