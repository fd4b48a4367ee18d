package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
)

// hangDriver's restarts (and redeploys) never end on their own: like a
// systemd job hung in ExecStartPre, or a bus that dropped its answer, they
// return only when their ctx ends. Other actions end at once. It records
// when each action began and ended, in the bubble's time.
type hangDriver struct {
	scriptDriver // its name, Run and lock
	// bytes, when set, is what a redeploy says it sends (ExpectBytes).
	bytes int64
	// deaf, when set, is what a hung action waits for instead of its ctx:
	// a driver that does not honour cancellation.
	deaf chan struct{}

	log  []string
	busy int // actions inside Do now
	peak int // most actions inside Do at once
}

func (d *hangDriver) note(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.log = append(d.log, fmt.Sprintf(format, args...))
}

func (d *hangDriver) Do(ctx context.Context, a remote.Action, emit remote.Emit) error {
	d.mu.Lock()
	d.busy++
	d.peak = max(d.peak, d.busy)
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.busy--
		d.mu.Unlock()
	}()
	d.note("begin %s", a.Kind)
	defer d.note("end %s", a.Kind)
	switch a.Kind {
	case remote.ActRestart, remote.ActRedeploy:
		if a.Kind == remote.ActRedeploy && d.bytes > 0 {
			remote.ExpectBytes(ctx, d.bytes)
		}
		if d.deaf != nil {
			<-d.deaf
			return errors.New("gave up at last")
		}
		<-ctx.Done()
		return fmt.Errorf("%s: %s sglang.service: waiting for the job: %w", d.name, a.Kind, ctx.Err())
	case remote.ActSetMode:
		time.Sleep(2 * time.Second) // a daemon-reload that takes a while
	case remote.ActStop, remote.ActResetFailed, remote.ActUndoMode, remote.ActBench, remote.ActDaemonReload: // end at once
	}
	return nil
}

func (d *hangDriver) calls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.log...)
}

// hungFleet runs a fleet over d in the test's bubble, and returns once
// Run has started.
func hungFleet(t *testing.T, d *hangDriver) (*hangDriver, *Fleet) {
	t.Helper()
	f, _, _ := startFleet(t, Options{}, d)
	synctest.Wait()
	return d, f
}

// outcome is one action's ending as the fleet reported it.
type outcome struct {
	stage      event.ActionStage
	err        string
	start, end time.Time // zero start: it never started
}

// outcomes reads batches until every id in ids has ended (or a long wait
// in the bubble's time passes) and returns how each ended.
func outcomes(t *testing.T, f *Fleet, ids ...int) map[int]outcome {
	t.Helper()
	got := map[int]outcome{}
	ended := func() bool {
		for _, id := range ids {
			if s := got[id].stage; s != event.ActionDone && s != event.ActionFailed {
				return false
			}
		}
		return true
	}
	deadline := time.After(10 * time.Minute)
	for !ended() {
		select {
		case b, ok := <-f.Updates():
			if !ok {
				t.Fatal("updates closed")
			}
			for _, ev := range b.Events {
				if ev.Kind != event.KindAction {
					continue
				}
				o := got[ev.Action.ID]
				switch ev.Action.Stage {
				case event.ActionStarted:
					o.start = ev.Time
				case event.ActionDone, event.ActionFailed:
					o.stage, o.err, o.end = ev.Action.Stage, ev.Action.Err, ev.Time
				case event.ActionProgress: // no part of how it ended
				}
				got[ev.Action.ID] = o
			}
		case <-deadline:
			t.Fatalf("actions %v not all ended after 10 min: %+v", ids, got)
		}
	}
	return got
}

func do(t *testing.T, f *Fleet, host string, a remote.Action) int {
	t.Helper()
	id, err := f.Do(host, a)
	if err != nil {
		t.Fatalf("%s on %s: %v", a, host, err)
	}
	return id
}

// TestActionDeadlineEndsAHungRestart: a restart whose systemd job never
// answers ends as failed after its 30 s, with the message that says what
// to check, and the mode change queued behind it runs then.
func TestActionDeadlineEndsAHungRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, f := hungFleet(t, &hangDriver{scriptDriver: scriptDriver{name: "gpu1"}})
		restart := do(t, f, "gpu1", remote.Action{Kind: remote.ActRestart})
		mode := do(t, f, "gpu1", remote.Action{Kind: remote.ActSetMode, Kernel: "k", Mode: "on"})
		got := outcomes(t, f, restart, mode)
		r := got[restart]
		if r.stage != event.ActionFailed {
			t.Fatalf("restart %s, want failed", r.stage)
		}
		for _, want := range []string{"restart on gpu1: no answer from systemd after 30 s", "systemctl list-jobs",
			"systemctl status sglang.service", "D-Bus", "waiting for the job: context canceled"} {
			if !strings.Contains(r.err, want) {
				t.Errorf("restart error %q lacks %q", r.err, want)
			}
		}
		if took := r.end.Sub(r.start); took != DefaultSystemdDeadline {
			t.Errorf("restart ended %v after its start, want its deadline %v", took, DefaultSystemdDeadline)
		}
		m := got[mode]
		if m.stage != event.ActionDone || m.start.Before(r.end) {
			t.Errorf("mode change %+v, want done, started after the restart ended at %v", m, r.end)
		}
	})
}

// TestStopPreemptsAHungRestart: a stop issued while a restart hangs does
// not wait for the restart's deadline: it cancels the restart and runs at
// once; a reset-failed cancels a restart still queued behind a mode change
// (which keeps its turn).
func TestStopPreemptsAHungRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, f := hungFleet(t, &hangDriver{scriptDriver: scriptDriver{name: "gpu1"}})
		restart := do(t, f, "gpu1", remote.Action{Kind: remote.ActRestart})
		time.Sleep(time.Second)
		stop := do(t, f, "gpu1", remote.Action{Kind: remote.ActStop})
		got := outcomes(t, f, restart, stop)
		r, s := got[restart], got[stop]
		if r.stage != event.ActionFailed || !strings.Contains(r.err, fmt.Sprintf("cancelled: stop (#%d)", stop)) ||
			!strings.Contains(r.err, "waiting for the job: context canceled") {
			t.Errorf("restart %+v, want failed, cancelled by the stop, with where it was", r)
		}
		if s.stage != event.ActionDone {
			t.Errorf("stop %+v, want done", s)
		}
		if took := s.end.Sub(r.start); took >= DefaultSystemdDeadline || took > 2*time.Second {
			t.Errorf("stop done %v after the restart began, want at once (before the restart's deadline)", took)
		}

		// Queued, not started: mode (2 s), restart, reset-failed.
		mode := do(t, f, "gpu1", remote.Action{Kind: remote.ActSetMode, Kernel: "k", Mode: "on"})
		restart2 := do(t, f, "gpu1", remote.Action{Kind: remote.ActRestart})
		reset := do(t, f, "gpu1", remote.Action{Kind: remote.ActResetFailed})
		got = outcomes(t, f, mode, restart2, reset)
		if r := got[restart2]; r.stage != event.ActionFailed || !r.start.IsZero() ||
			!strings.Contains(r.err, fmt.Sprintf("cancelled: reset-failed (#%d)", reset)) {
			t.Errorf("queued restart %+v, want failed before it started, cancelled by the reset-failed", r)
		}
		if m, x := got[mode], got[reset]; m.stage != event.ActionDone || x.stage != event.ActionDone || x.start.Before(m.end) {
			t.Errorf("mode %+v, reset-failed %+v: want both done, the reset-failed after the mode change (in order)", m, x)
		}
		want := []string{"begin restart", "end restart", "begin stop", "end stop", "begin mode", "end mode", "begin reset-failed", "end reset-failed"}
		if calls := d.calls(); strings.Join(calls, ",") != strings.Join(want, ",") {
			t.Errorf("driver calls %v, want %v", calls, want)
		}
	})
}

// TestDoBeforeRunRefusesAndLeavesNoQueue: Do before Run is refused with
// ErrNotRunning and leaves nothing behind, so the host's first action
// once the fleet runs goes through; after Run returns, Do refuses again.
func TestDoBeforeRunRefusesAndLeavesNoQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &hangDriver{scriptDriver: scriptDriver{name: "gpu1"}}
		f, err := New([]HostSpec{{Driver: d, Unit: "sglang.service"}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Do("gpu1", remote.Action{Kind: remote.ActStop}); err == nil || !errors.Is(err, remote.ErrNotRunning) || !strings.Contains(err.Error(), "stop on gpu1") {
			t.Errorf("Do before Run: err = %v, want ErrNotRunning naming the action and host", err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- f.Run(ctx) }()
		synctest.Wait() // Run has started
		stop := do(t, f, "gpu1", remote.Action{Kind: remote.ActStop})
		if o := outcomes(t, f, stop)[stop]; o.stage != event.ActionDone {
			t.Fatalf("stop after Run started: %+v, want done", o)
		}
		cancel()
		_ = <-done
		if _, err := f.Do("gpu1", remote.Action{Kind: remote.ActStop}); !errors.Is(err, remote.ErrNotRunning) {
			t.Fatalf("Do after Run returned: err = %v, want ErrNotRunning", err)
		}
	})
}

// TestFollowAcceptsActionsAtOnce: Follow returns once the fleet takes
// actions, so a Do right after it is not refused.
func TestFollowAcceptsActionsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, err := New([]HostSpec{{Driver: &hangDriver{scriptDriver: scriptDriver{name: "gpu1"}}, Unit: "sglang.service"}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		fl := Follow(t.Context(), f)
		defer func() { _ = fl.Stop(0) }()
		id := do(t, f, "gpu1", remote.Action{Kind: remote.ActStop})
		if o := outcomes(t, f, id)[id]; o.stage != event.ActionDone {
			t.Fatalf("stop right after Follow: %+v, want done", o)
		}
	})
}

// TestDeafDriverDoesNotHoldTheQueue: a driver that does not return once
// its action is cancelled holds the host's queue for the grace only; the
// fleet still waits for it before Run returns.
func TestDeafDriverDoesNotHoldTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &hangDriver{scriptDriver: scriptDriver{name: "gpu1"}, deaf: make(chan struct{})}
		f, err := New([]HostSpec{{Driver: d, Unit: "sglang.service"}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- f.Run(ctx) }()
		synctest.Wait()
		restart := do(t, f, "gpu1", remote.Action{Kind: remote.ActRestart})
		mode := do(t, f, "gpu1", remote.Action{Kind: remote.ActSetMode, Kernel: "k", Mode: "on"})
		got := outcomes(t, f, restart, mode)
		if r := got[restart]; r.stage != event.ActionFailed ||
			!strings.Contains(r.err, "no answer from systemd after 30 s") || !strings.Contains(r.err, "the driver had not returned 5 s after its cancel") {
			t.Errorf("restart %+v, want failed at its deadline, the driver not returned", r)
		}
		if m := got[mode]; m.stage != event.ActionDone || m.start.Sub(got[restart].start) != DefaultSystemdDeadline+DefaultActionGrace {
			t.Errorf("mode %+v, want done, its start %v after the restart's (deadline and grace)", m, DefaultSystemdDeadline+DefaultActionGrace)
		}
		// A stop preempting a deaf restart waits for the grace only.
		restart = do(t, f, "gpu1", remote.Action{Kind: remote.ActRestart})
		stop := do(t, f, "gpu1", remote.Action{Kind: remote.ActStop})
		got = outcomes(t, f, restart, stop)
		if s := got[stop]; s.stage != event.ActionDone || s.start.Sub(got[restart].start) != DefaultActionGrace {
			t.Errorf("stop %+v, want done, its start %v after the restart's (the grace)", s, DefaultActionGrace)
		}
		d.mu.Lock()
		peak := d.peak
		d.mu.Unlock()
		if peak != 3 {
			t.Errorf("at most %d actions in the driver at once, want 3 (both deaf restarts and the stop that went ahead)", peak)
		}
		cancel()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Run returned (%v) while a driver's Do was still running", err)
		default:
		}
		close(d.deaf)
		_ = <-done
	})
}

// TestRedeployDeadlineScalesWithBytes: a redeploy's deadline is its base
// plus the bytes it sends at the slowest rate allowed.
func TestRedeployDeadlineScalesWithBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, f := hungFleet(t, &hangDriver{scriptDriver: scriptDriver{name: "gpu1"}, bytes: 60 << 20})
		id := do(t, f, "gpu1", remote.Action{Kind: remote.ActRedeploy, Kernel: "kdtree-verify"})
		o := outcomes(t, f, id)[id]
		want := DefaultRedeployDeadline + 60*time.Second
		if o.stage != event.ActionFailed || o.end.Sub(o.start) != want {
			t.Fatalf("redeploy %+v after %v, want failed after %v", o, o.end.Sub(o.start), want)
		}
		if !strings.Contains(o.err, "redeploy kdtree-verify on gpu1: not finished after 3m0s (60.0 MiB to send)") {
			t.Errorf("redeploy error %q", o.err)
		}
	})
}

// TestDeadlineOfEachKind: each kind's deadline is the one its spec
// names, and a daemon-reload past it points at the reload.
func TestDeadlineOfEachKind(t *testing.T) {
	d := Deadlines{Systemd: time.Second, Redeploy: 2 * time.Second, Bench: 3 * time.Second}
	for _, tc := range []struct {
		kind remote.ActionKind
		want time.Duration
	}{
		{remote.ActRestart, time.Second}, {remote.ActDaemonReload, time.Second}, {remote.ActSetMode, time.Second},
		{remote.ActRedeploy, 2 * time.Second}, {remote.ActBench, 3 * time.Second}, {"nope", time.Second},
	} {
		if got := d.For(tc.kind); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.kind, got, tc.want)
		}
	}
	if preempts(remote.ActDaemonReload) || !preempts(remote.ActStop) {
		t.Error("daemon-reload preempts, or stop does not")
	}
	e := &DeadlineError{Host: "gpu1", Action: remote.Action{Kind: remote.ActDaemonReload}, After: time.Second, Grace: time.Second}
	if msg := e.Error(); !strings.Contains(msg, "daemon-reload on gpu1: no answer from systemd after 1 s") || !strings.Contains(msg, "a daemon-reload still running") {
		t.Errorf("%s", msg)
	}
}
