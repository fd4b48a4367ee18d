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
	"github.com/bringup-dev/bringup/remote/startup"
)

// lateLogHost is a host whose unit fails before the journal line that
// explains it arrives (after lag; never when lag is 0), as when systemd's
// D-Bus signal beats the journal follow.
type lateLogHost struct{ lag, endLag time.Duration }

func (lateLogHost) Name() string { return "gpu1" }

func (h lateLogHost) Run(ctx context.Context, emit remote.Emit) error {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	unit := func(at time.Duration, active, sub, result string) event.Event {
		return event.Event{Host: "gpu1", Kind: event.KindUnit, Time: t0.Add(at),
			Unit: &event.Unit{Name: "sglang.service", ActiveState: active, SubState: sub, Result: result, InvocationID: "inv"}}
	}
	emit(unit(0, "active", "running", "success"))
	emit(unit(5*time.Second, "failed", "failed", "exit-code"))
	if h.lag > 0 {
		select {
		case <-time.After(h.lag):
		case <-ctx.Done():
			return ctx.Err()
		}
		emit(event.Event{Host: "gpu1", Kind: event.KindJournal, Time: t0.Add(5*time.Second - time.Millisecond),
			Journal: &event.Journal{InvocationID: "inv", Priority: 3, Message: "[2026-11-30 10:00:04] ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): address already in use"}})
		// systemd's record of the end, after the process's last line.
		select {
		case <-time.After(h.endLag):
		case <-ctx.Done():
			return ctx.Err()
		}
		emit(event.Event{Host: "gpu1", Kind: event.KindJournal, Time: t0.Add(5 * time.Second),
			Journal: &event.Journal{Unit: "sglang.service", InvocationID: "inv", Priority: 5, MessageID: "98e322203f7a4ed290d09fe03c09fe15",
				Message: "sglang.service: Main process exited, code=exited, status=1/FAILURE"}})
	}
	<-ctx.Done()
	return ctx.Err()
}

func (lateLogHost) Do(context.Context, remote.Action, remote.Emit) error { return nil }

func followLate(t *testing.T, lag, settle time.Duration) (*Follower, context.Context) {
	t.Helper()
	return followHost(t, lateLogHost{lag: lag}, settle)
}

func followHost(t *testing.T, h lateLogHost, settle time.Duration) (*Follower, context.Context) {
	t.Helper()
	f, err := New([]HostSpec{{Driver: h, Unit: "sglang.service", Engine: "sglang"}},
		Options{Kernels: kernels.DefaultCatalog(), Settle: settle, FirstLineWait: settle, RunningWait: settle})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	fl := Follow(ctx, f)
	t.Cleanup(func() {
		if err := fl.Stop(5 * time.Second); err != nil {
			t.Error(err)
		}
	})
	return fl, ctx
}

// TestProvisionalFailureSettlesOnTheLog: a failure the unit's state
// announces first is provisional until the journal line naming its cause
// arrives; Watch ends on the cause, not on "unit-failed".
func TestProvisionalFailureSettlesOnTheLog(t *testing.T) {
	fl, ctx := followLate(t, 300*time.Millisecond, 10*time.Second)
	began := time.Now()
	sawProvisional := false
	hosts, err := fl.Watch(ctx, func(b remote.Batch) {
		for _, h := range b.Hosts {
			if h.Provisional {
				sawProvisional = true
				if h.Startup.Phase != startup.Failed || h.Settled() {
					t.Errorf("provisional host: phase %s, settled %v", h.Startup.Phase, h.Settled())
				}
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !sawProvisional {
		t.Error("the unit-state failure was never provisional")
	}
	if d := hosts[0].Startup.Diag; d == nil || d.Cause != "port-in-use" || hosts[0].Provisional {
		t.Fatalf("settled on %+v (provisional %v), want port-in-use", d, hosts[0].Provisional)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("settled after %v: the journal's record of the end should settle it, not the 10 s wait", took)
	}
}

// TestProvisionalUntilTheLogEnds: a failure whose cause a specific line
// names stays provisional until the journal shows the process's end, so
// the traceback lines between (which may place it in another phase) are
// read first.
func TestProvisionalUntilTheLogEnds(t *testing.T) {
	fl, ctx := followHost(t, lateLogHost{lag: 100 * time.Millisecond, endLag: 400 * time.Millisecond}, 10*time.Second)
	namedButOpen := false
	hosts, err := fl.Watch(ctx, func(b remote.Batch) {
		for _, h := range b.Hosts {
			if d := h.Startup.Diag; d != nil && d.Cause == "port-in-use" && !h.Startup.LogEnded {
				namedButOpen = true
				if !h.Provisional {
					t.Errorf("cause named but the log not ended: not provisional")
				}
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !namedButOpen {
		t.Error("never saw the named cause before the log's end")
	}
	if !hosts[0].Startup.LogEnded || hosts[0].Provisional {
		t.Errorf("settled with log ended %v, provisional %v", hosts[0].Startup.LogEnded, hosts[0].Provisional)
	}
}

// TestProvisionalFailureExpires: when no journal line comes, the failure
// settles on the unit's state after Options.Settle, not before.
func TestProvisionalFailureExpires(t *testing.T) {
	const settle = 400 * time.Millisecond
	fl, ctx := followLate(t, 0, settle)
	var firstFail time.Time
	hosts, err := fl.Watch(ctx, func(b remote.Batch) {
		for _, h := range b.Hosts {
			if h.Startup.Phase == startup.Failed && firstFail.IsZero() {
				firstFail = time.Now()
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(firstFail); waited < settle*3/4 {
		t.Errorf("settled %v after the failure, want about %v", waited, settle)
	}
	if d := hosts[0].Startup.Diag; d == nil || d.Cause != startup.CauseUnitFailed || hosts[0].Provisional {
		t.Fatalf("settled on %+v, want unit-failed", d)
	}
}

// TestAwaitUnits: the states of the named hosts once known; silence past
// the wait is an error naming the silent host.
func TestAwaitUnits(t *testing.T) {
	fl, ctx := followLate(t, 0, time.Second)
	states, err := fl.AwaitUnits(ctx, []string{"gpu1"}, 10*time.Second)
	if err != nil || states["gpu1"].UnitState.ActiveState == "" {
		t.Fatalf("states %+v, err %v", states, err)
	}

	quiet, err := New([]HostSpec{{Driver: silentHost{}, Unit: "u"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	qf := Follow(ctx, quiet)
	defer func() { _ = qf.Stop(0) }() // the test is about AwaitUnits and Until
	_, err = qf.AwaitUnits(ctx, []string{"gpu9"}, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "no unit state after 300ms from gpu9 (connecting)") {
		t.Fatalf("err = %v", err)
	}
	// A host down says why, as status does: its dial error.
	down, err := New([]HostSpec{{Driver: downHost{}, Unit: "u"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	df := Follow(ctx, down)
	defer func() { _ = df.Stop(0) }()
	_, err = df.AwaitUnits(ctx, []string{"gpu8"}, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "no unit state after 300ms from gpu8 (down: dial tcp 10.0.0.8:22: connect: connection refused)") {
		t.Fatalf("err = %v, want the dial error", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := qf.Until(cancelled, 0, func(remote.Batch) bool { return false }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Until on a cancelled context: %v", err)
	}
}

// downHost cannot connect: its connection is down, retrying.
type downHost struct{}

func (downHost) Name() string { return "gpu8" }
func (downHost) Run(ctx context.Context, emit remote.Emit) error {
	emit(event.Event{Host: "gpu8", Kind: event.KindConn, Time: time.Now(),
		Conn: &event.Conn{State: event.ConnDown, Err: "dial tcp 10.0.0.8:22: connect: connection refused"}})
	<-ctx.Done()
	return ctx.Err()
}
func (downHost) Do(context.Context, remote.Action, remote.Emit) error { return nil }

// silentHost connects and says nothing.
type silentHost struct{}

func (silentHost) Name() string { return "gpu9" }
func (silentHost) Run(ctx context.Context, _ remote.Emit) error {
	<-ctx.Done()
	return ctx.Err()
}
func (silentHost) Do(context.Context, remote.Action, remote.Emit) error { return nil }
