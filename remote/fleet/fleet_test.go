package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
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
	for _, k := range remote.AllActionKinds() {
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

// TestFleetKeepsTheMeasuredClock: a host's clock measurement lands in
// its state and stays there through later connection changes, until the
// next measurement replaces it.
func TestFleetKeepsTheMeasuredClock(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	behind := event.Clock{Offset: -3 * time.Second, RTT: 20 * time.Millisecond}
	again := event.Clock{Offset: -2900 * time.Millisecond, RTT: 10 * time.Millisecond}
	d := &scriptDriver{name: "gpu1", events: []event.Event{
		{Kind: event.KindConn, Time: t0, Conn: &event.Conn{State: event.ConnUp}},
		{Kind: event.KindClock, Time: t0, Clock: &behind},
		{Kind: event.KindConn, Time: t0.Add(time.Second), Conn: &event.Conn{State: event.ConnDown}},
		{Kind: event.KindConn, Time: t0.Add(2 * time.Second), Conn: &event.Conn{State: event.ConnUp}},
		{Kind: event.KindUnit, Time: t0.Add(2 * time.Second), Unit: &event.Unit{Name: "sglang.service", ActiveState: "active", SubState: "running"}},
	}}
	f, _, _ := startFleet(t, Options{Kernels: kernels.DefaultCatalog(), Flush: 5 * time.Millisecond}, d)
	var got remote.HostState
	collect(t, f, func(_ []event.Event, b remote.Batch) bool {
		got = b.Hosts[0]
		return got.UnitState.ActiveState == "active"
	})
	if got.Clock != behind {
		t.Fatalf("clock %+v after a reconnect, want the measured %+v", got.Clock, behind)
	}
	d2 := &scriptDriver{name: "gpu2", events: []event.Event{
		{Kind: event.KindClock, Time: t0, Clock: &behind},
		{Kind: event.KindClock, Time: t0.Add(time.Minute), Clock: &again},
	}}
	f2, _, _ := startFleet(t, Options{Kernels: kernels.DefaultCatalog(), Flush: 5 * time.Millisecond}, d2)
	collect(t, f2, func(_ []event.Event, b remote.Batch) bool {
		got = b.Hosts[0]
		return got.Clock == again
	})
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
