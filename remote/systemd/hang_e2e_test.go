package systemd

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// hungStart makes every start of the unit hang: ExecStartPre sleeps for
// ever and no start timeout ends it, so systemd's restart job never
// finishes and no result ever comes.
const hungStart = "[Service]\nExecStartPre=/bin/sleep infinity\nTimeoutStartSec=infinity\n"

// cutDialer is a host connection whose bus channels the test can cut,
// the way a dropped link or a restarted dbus-daemon cuts them.
type cutDialer struct {
	Dialer
	mu    sync.Mutex
	conns []net.Conn
}

func (d *cutDialer) DialUnix(ctx context.Context, path string) (net.Conn, error) {
	c, err := d.Dialer.DialUnix(ctx, path)
	if err == nil {
		d.mu.Lock()
		d.conns = append(d.conns, c)
		d.mu.Unlock()
	}
	return c, err
}

// cut closes every bus channel opened so far and says how many.
func (d *cutDialer) cut() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		c.Close()
	}
	n := len(d.conns)
	d.conns = nil
	return n
}

// TestE2EJobNeverAnswers: a restart job that never finishes (hung in
// ExecStartPre) ends when its ctx does, over D-Bus and through sudo
// systemctl, leaving no waiting systemctl behind on the host; a bus cut
// mid-job ends the wait at once (ErrBusLost) instead of at the deadline;
// and a stop afterwards goes through (it replaces the hung job). No
// goroutine is left behind here either.
func TestE2EJobNeverAnswers(t *testing.T) {
	tb := testbed.StartWith(t, testbed.Options{Hosts: 1})
	h := "gpu1"
	dropIn(t, tb, h, hungStart)
	run(t, tb, h, "systemctl daemon-reload")
	conn := connect(t, tb, h)
	c := NewController(conn, h)
	unit := testbed.UnitName
	// Nothing an ended wait started may stay behind: each part ends
	// with no more goroutines than before it. The count is taken once
	// the connection has run a command and settled (its own goroutines
	// start as it is first used).
	if _, err := c.UID(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	run(t, tb, h, "true")
	time.Sleep(500 * time.Millisecond)
	base := runtime.NumGoroutine()
	noneLeft := func(t *testing.T) {
		n := runtime.NumGoroutine()
		for end := time.Now().Add(3 * time.Second); n > base && time.Now().Before(end); n = runtime.NumGoroutine() {
			time.Sleep(50 * time.Millisecond)
		}
		if n > base {
			buf := make([]byte, 1<<20)
			t.Errorf("%d goroutines, %d before: left behind:\n%s", n, base, buf[:runtime.Stack(buf, true)])
		}
	}
	hungJob := func(t *testing.T) string {
		t.Helper()
		jobs := run(t, tb, h, "systemctl list-jobs --no-legend --no-pager")
		if !strings.Contains(jobs, unit) {
			t.Fatalf("no job of %s on the host: %q", unit, jobs)
		}
		return jobs
	}
	// A stop replaces the hung job; the unit, stopped mid-start, is then
	// failed, which a reset-failed clears.
	stop := func(t *testing.T, c *Controller) {
		t.Helper()
		if o, err := c.Stop(ctxT(t, 20*time.Second), unit); o != OutcomeDone || err != nil {
			t.Fatalf("stop after the hung restart: %q, %v", o, err)
		}
		if err := c.ResetFailed(ctxT(t, 20*time.Second), unit); err != nil {
			t.Fatalf("reset-failed after the stop: %v", err)
		}
		if st := showValue(t, tb, h, "ActiveState"); st != "inactive" {
			t.Errorf("after the stop and reset-failed: ActiveState %s, want inactive", st)
		}
		if jobs := run(t, tb, h, "systemctl list-jobs --no-legend --no-pager"); strings.Contains(jobs, unit) {
			t.Errorf("a job of %s is left after the stop: %q", unit, jobs)
		}
	}

	t.Run("deadline over dbus", func(t *testing.T) {
		const deadline = 3 * time.Second
		start := time.Now()
		o, err := c.Restart(ctxT(t, deadline), unit)
		took := time.Since(start)
		if o != OutcomeNone || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "restart sglang.service: waiting for job") {
			t.Fatalf("restart of a hung unit: %q, %v; want the ctx's deadline while waiting for the job", o, err)
		}
		if took < deadline || took > deadline+2*time.Second {
			t.Errorf("restart returned after %v, want its deadline %v", took, deadline)
		}
		t.Logf("hung restart ended after %v: %v; the host's jobs: %s", took.Round(time.Millisecond), err, hungJob(t))
		stop(t, c)
	})
	noneLeft(t)

	t.Run("bus cut mid-job", func(t *testing.T) {
		cd := &cutDialer{Dialer: conn}
		c := NewController(cd, h)
		type result struct {
			o   Outcome
			err error
		}
		done := make(chan result, 1)
		go func() {
			o, err := c.Restart(ctxT(t, 30*time.Second), unit)
			done <- result{o, err}
		}()
		// The job is queued once the host lists it; then only its result
		// is awaited.
		for end := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if strings.Contains(run(t, tb, h, "systemctl list-jobs --no-legend --no-pager"), unit) {
				break
			}
			if time.Now().After(end) {
				t.Fatal("the restart's job never showed on the host")
			}
		}
		time.Sleep(300 * time.Millisecond)
		cutAt := time.Now()
		if n := cd.cut(); n == 0 {
			t.Fatal("no bus channel to cut: the restart did not go over D-Bus")
		}
		var r result
		select {
		case r = <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("the restart still waits 5 s after its bus connection was cut")
		}
		if !errors.Is(r.err, ErrBusLost) || !strings.Contains(r.err.Error(), "systemctl list-jobs") {
			t.Fatalf("restart after a bus cut: %q, %v; want ErrBusLost with what to check", r.o, r.err)
		}
		t.Logf("restart ended %v after the cut: %v", time.Since(cutAt).Round(time.Millisecond), r.err)
		hungJob(t)
		stop(t, NewController(conn, h))
	})
	noneLeft(t)

	t.Run("deadline through sudo", func(t *testing.T) {
		dep := connect(t, tb, h+"-deploy")
		c := NewController(dep, h)
		const deadline = 3 * time.Second
		start := time.Now()
		o, err := c.Restart(ctxT(t, deadline), unit)
		took := time.Since(start)
		if o != OutcomeNone || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("restart of a hung unit as deploy: %q, %v; want the ctx's deadline", o, err)
		}
		if took < deadline || took > deadline+2*time.Second {
			t.Errorf("restart as deploy returned after %v, want its deadline %v", took, deadline)
		}
		hungJob(t)
		// Nothing is left waiting for the job on the host.
		var left string
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
			left = strings.TrimSpace(run(t, tb, h, "pgrep -a -f '^(sudo -n )?systemctl --no-ask-password restart' || true"))
			if left == "" {
				break
			}
		}
		if left != "" {
			t.Errorf("still waiting on the host after the deadline: %s", left)
		}
		stop(t, c)
	})
	noneLeft(t)
}
