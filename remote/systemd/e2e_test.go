package systemd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/testkit/tbssh"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// Hosts of the shared testbed, one per concern so subtests run in parallel.
const (
	hostDBus      = "gpu1" // root over the stream-local bus; deploy has NOPASSWD sudo
	hostNoSudo    = "gpu2" // deploy has no sudo; the systemctl path
	hostCrash     = "gpu3" // Restart=on-failure, crash loop
	hostNoForward = "gpu4" // sshd refuses stream-local forwarding
)

func TestE2E(t *testing.T) {
	tb := testbed.StartWith(t, testbed.Options{Hosts: 4, Host: func(i int) testbed.HostOptions {
		if i == 2 {
			return testbed.HostOptions{Restart: "on-failure", Env: map[string]string{"INFERSIM_FAIL": "crashloop"}}
		}
		return testbed.HostOptions{}
	}})
	t.Run("readbus", func(t *testing.T) { testReadBus(t, tb) }) // before the others change units
	t.Run("dbus", func(t *testing.T) { t.Parallel(); testDBus(t, tb) })
	t.Run("crashloop", func(t *testing.T) { t.Parallel(); testCrashLoop(t, tb) })
	t.Run("stdio-bridge", func(t *testing.T) { t.Parallel(); testStdioBridge(t, tb) })
	t.Run("systemctl-and-nonroot", func(t *testing.T) { t.Parallel(); testSystemctlNonRoot(t, tb) })
}

// connect returns a managed connection to an ssh_config alias of tb,
// stopped when t ends.
func connect(t *testing.T, tb *testbed.Testbed, alias string) *sshx.Conn {
	t.Helper()
	return tbssh.Connect(t, tb, alias)
}

// watchRun is one Watch running in the background for a test.
type watchRun struct {
	ch     chan event.Event
	done   chan error
	path   chan string
	events []event.Event
}

func startWatch(t *testing.T, d Dialer, o WatchOptions) *watchRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &watchRun{ch: make(chan event.Event, 4096), done: make(chan error, 1), path: make(chan string, 1)}
	o.OnPath = func(path string, why error) {
		t.Logf("%s: path %s (why: %v)", o.Host, path, why)
		w.path <- path
	}
	go func() {
		w.done <- Watch(ctx, d, o, func(e event.Event) bool {
			select {
			case w.ch <- e:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-w.done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("watch %s: %v", o.Host, err)
		}
	})
	return w
}

// until waits for a unit event that satisfies ok and returns it.
func (w *watchRun) until(t *testing.T, timeout time.Duration, what string, ok func(u *event.Unit) bool) event.Event {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case e := <-w.ch:
			w.events = append(w.events, e)
			if e.Kind != event.KindUnit || e.Unit == nil {
				t.Fatalf("unexpected event %+v", e)
			}
			t.Logf("%s %s/%s result=%s n=%d inv=%.8s reload=%v at %s (+%s)", e.Unit.Path, e.Unit.ActiveState, e.Unit.SubState,
				e.Unit.Result, e.Unit.NRestarts, e.Unit.InvocationID, e.Unit.NeedDaemonReload,
				e.Time.Format("15:04:05.000000"), e.Seen.Sub(e.Time).Round(time.Microsecond))
			if ok(e.Unit) {
				return e
			}
		case err := <-w.done:
			w.done <- err
			t.Fatalf("watch ended waiting for %s: %v", what, err)
		case <-deadline:
			t.Fatalf("no event with %s in %s", what, timeout)
		}
	}
}

// drain takes the events that are already waiting.
func (w *watchRun) drain(t *testing.T) {
	t.Helper()
	for {
		select {
		case e := <-w.ch:
			w.events = append(w.events, e)
		default:
			return
		}
	}
}

// state matches an ActiveState/SubState pair.
func state(active, sub string) func(*event.Unit) bool {
	return func(u *event.Unit) bool { return u.ActiveState == active && u.SubState == sub }
}

func run(t *testing.T, tb *testbed.Testbed, host, cmd string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := tb.Run(ctx, host, cmd)
	if err != nil {
		t.Fatalf("%s: %v", host, err)
	}
	return out
}

// showValue reads one property with systemctl on host.
func showValue(t *testing.T, tb *testbed.Testbed, host, prop string) string {
	t.Helper()
	return strings.TrimSpace(run(t, tb, host, "systemctl show -p "+prop+" --value "+testbed.UnitName))
}

// dropIn writes a runtime drop-in for the unit; the caller reloads.
func dropIn(t *testing.T, tb *testbed.Testbed, host, body string) {
	t.Helper()
	run(t, tb, host, fmt.Sprintf("mkdir -p /run/systemd/system/%[1]s.d && printf '%%s' %[2]s > /run/systemd/system/%[1]s.d/50-test.conf",
		testbed.UnitName, sshx.ShellQuote(body)))
}

// fastFail makes infersim reach graph capture (where KDTREE_MODE=validate
// kills it) within about a second.
const fastFail = "[Service]\nEnvironment=KDTREE_MODE=validate INFERSIM_BOOT_SECONDS=0.1 INFERSIM_HTTP_SECONDS=0.1 " +
	"INFERSIM_WEIGHTS_SECONDS=0.2 INFERSIM_INIT_SECONDS=0.1 INFERSIM_CAPTURE_SECONDS=0.2\n"

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func testDBus(t *testing.T, tb *testbed.Testbed) {
	h := hostDBus
	conn := connect(t, tb, h)
	w := startWatch(t, conn, WatchOptions{Host: h, Unit: testbed.UnitName, Reconcile: time.Second})
	if p := <-w.path; p != PathDBus {
		t.Fatalf("path %q, want dbus", p)
	}
	first := w.until(t, 10*time.Second, "first event", func(*event.Unit) bool { return true })
	if first.Unit.ActiveState != "inactive" || first.Unit.Path != PathDBus || first.Unit.ExecStart == "" || len(first.Unit.Environment) == 0 {
		t.Fatalf("first event %+v", *first.Unit)
	}
	run(t, tb, h, "systemctl start "+testbed.UnitName)
	up := w.until(t, 10*time.Second, "active/running", state("active", "running"))
	if up.Unit.InvocationID == "" || up.Unit.InvocationID == first.Unit.InvocationID || up.Unit.MainPID == 0 || up.Unit.ExecMainStart.IsZero() {
		t.Errorf("running event lacks a new invocation: %+v", *up.Unit)
	}
	if want := showValue(t, tb, h, "InvocationID"); up.Unit.InvocationID != want {
		t.Errorf("InvocationID %s, systemctl says %s", up.Unit.InvocationID, want)
	}

	c := NewController(conn, h)
	ctx := ctxT(t, 2*time.Minute)
	if o, err := c.Restart(ctx, testbed.UnitName); o != OutcomeDone || err != nil {
		t.Fatalf("restart as root: %q, %v", o, err)
	}
	again := w.until(t, 10*time.Second, "a new invocation", func(u *event.Unit) bool {
		return u.ActiveState == "active" && u.InvocationID != up.Unit.InvocationID
	})
	if o, err := c.Stop(ctx, testbed.UnitName); o != OutcomeDone || err != nil {
		t.Fatalf("stop as root: %q, %v", o, err)
	}
	w.until(t, 10*time.Second, "inactive after stop", func(u *event.Unit) bool {
		return u.ActiveState == "inactive" && u.InvocationID == again.Unit.InvocationID
	})

	// A drop-in plus daemon-reload: the Reloading signal makes the
	// watch re-read, so the new environment shows without waiting.
	dropIn(t, tb, h, fastFail)
	if err := c.DaemonReload(ctx); err != nil {
		t.Fatalf("daemon-reload: %v", err)
	}
	env, err := c.ReadEnvironment(ctx, testbed.UnitName)
	if err != nil || !slices.Contains(env, "KDTREE_MODE=validate") {
		t.Fatalf("read environment: %q, %v", env, err)
	}
	w.until(t, 10*time.Second, "validate in Environment", func(u *event.Unit) bool {
		return slices.Contains(u.Environment, "KDTREE_MODE=validate") && len(u.DropInPaths) == 1
	})

	var lat []time.Duration
	for i := range 8 {
		if o, err := c.Start(ctx, testbed.UnitName); o != OutcomeDone || err != nil {
			t.Fatalf("start %d: %q, %v", i, o, err)
		}
		f := w.until(t, 30*time.Second, "failed", func(u *event.Unit) bool { return u.ActiveState == "failed" })
		if f.Unit.Result != "exit-code" {
			t.Errorf("run %d: Result %q, want exit-code", i, f.Unit.Result)
		}
		lat = append(lat, f.Seen.Sub(f.Time))
		if err := c.ResetFailed(ctx, testbed.UnitName); err != nil {
			t.Fatalf("reset-failed: %v", err)
		}
		w.until(t, 10*time.Second, "inactive after reset-failed", func(u *event.Unit) bool { return u.ActiveState == "inactive" })
	}
	logLatency(t, "dbus failed signal", lat)
	t.Run("deploy", func(t *testing.T) { testDeploy(t, tb, h) })
}

// logLatency logs p50 and p99 and checks a generous sanity bound (the
// issue's target, 250 ms, is a logged figure, not an assertion).
func logLatency(t *testing.T, what string, lat []time.Duration) {
	t.Helper()
	s := slices.Clone(lat)
	slices.Sort(s)
	p := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	t.Logf("%s latency (seen - host StateChangeTimestamp) over %d runs: p50 %s p99 %s max %s",
		what, len(s), p(0.5), p(0.99), s[len(s)-1])
	if s[len(s)-1] > 5*time.Second {
		t.Errorf("%s latency %s: over 5 s", what, s[len(s)-1])
	}
}

func testCrashLoop(t *testing.T, tb *testbed.Testbed) {
	h := hostCrash
	conn := connect(t, tb, h)
	c := NewController(conn, h)
	ctx := ctxT(t, 3*time.Minute)
	// A start limit the loop reaches quickly (the testbed turns it off).
	dropIn(t, tb, h, "[Unit]\nStartLimitIntervalSec=60\nStartLimitBurst=4\n[Service]\nRestartSec=200ms\n"+
		"Environment=INFERSIM_BOOT_SECONDS=0.1 INFERSIM_INIT_SECONDS=0.2\n")
	if err := c.DaemonReload(ctx); err != nil {
		t.Fatalf("daemon-reload: %v", err)
	}
	w := startWatch(t, conn, WatchOptions{Host: h, Unit: testbed.UnitName, Reconcile: time.Second})
	w.until(t, 10*time.Second, "first event", func(*event.Unit) bool { return true })
	if o, err := c.Start(ctx, testbed.UnitName); o != OutcomeDone || err != nil {
		t.Fatalf("start: %q, %v", o, err)
	}
	// systemd 252 keeps Result=exit-code when a restart loop reaches the
	// start limit ("Start request repeated too quickly"): the unit just
	// stays failed, with NRestarts at the burst.
	w.until(t, 60*time.Second, "failed at the start limit", func(u *event.Unit) bool {
		return u.ActiveState == "failed" && u.NRestarts >= 4
	})
	time.Sleep(time.Second) // no restart follows
	w.drain(t)
	var ns []int
	invs := map[string]bool{}
	var lat []time.Duration
	for _, e := range w.events {
		if n := e.Unit.NRestarts; len(ns) == 0 || ns[len(ns)-1] != n {
			ns = append(ns, n)
		}
		if e.Unit.InvocationID != "" {
			invs[e.Unit.InvocationID] = true
		}
		if e.Unit.SubState == "auto-restart" || e.Unit.ActiveState == "failed" {
			lat = append(lat, e.Seen.Sub(e.Time))
		}
	}
	last := w.events[len(w.events)-1].Unit
	want, _ := strconv.Atoi(showValue(t, tb, h, "NRestarts"))
	if last.NRestarts != want || want != 4 || last.ActiveState != showValue(t, tb, h, "ActiveState") {
		t.Errorf("last event %s n=%d; systemctl says %s n=%d", last.ActiveState, last.NRestarts, showValue(t, tb, h, "ActiveState"), want)
	}
	for i := 1; i < len(ns); i++ {
		if ns[i] != ns[i-1]+1 {
			t.Errorf("NRestarts went %v: a restart was not observed", ns)
		}
	}
	// The initial start and every restart but the refused last one.
	if len(invs) != want {
		t.Errorf("%d invocations for %d restarts", len(invs), want)
	}
	logLatency(t, "dbus failed/auto-restart signal", lat)

	o, err := c.Start(ctx, testbed.UnitName)
	var je *JobError
	if !errors.As(err, &je) {
		t.Fatalf("start while start-limit-hit: %q, %v; want a job error", o, err)
	}
	if !errors.Is(err, ErrJobFailed) || o != OutcomeFailed {
		t.Errorf("start at the start limit: %q, %v; want failed", o, err)
	}
	if err := c.ResetFailed(ctx, testbed.UnitName); err != nil {
		t.Fatalf("reset-failed: %v", err)
	}
	if o, err := c.Start(ctx, testbed.UnitName); o != OutcomeDone || err != nil {
		t.Fatalf("start after reset-failed: %q, %v", o, err)
	}
	w.until(t, 10*time.Second, "running again", func(u *event.Unit) bool {
		return u.ActiveState == "active" && !invs[u.InvocationID]
	})
	if o, err := c.Stop(ctx, testbed.UnitName); o != OutcomeDone || err != nil {
		t.Fatalf("stop: %q, %v", o, err)
	}
	stopped := w.until(t, 10*time.Second, "stopped", func(u *event.Unit) bool { return u.ActiveState == "inactive" || u.ActiveState == "failed" })
	if got, want := stopped.Unit.NRestarts, showValue(t, tb, h, "NRestarts"); strconv.Itoa(got) != want {
		t.Errorf("last event NRestarts %d, systemctl says %s", got, want)
	}
}

func testStdioBridge(t *testing.T, tb *testbed.Testbed) {
	h := hostNoForward
	run(t, tb, h, "printf 'AllowStreamLocalForwarding no\\n' > /etc/ssh/sshd_config.d/50-test.conf && systemctl reload ssh")
	conn := connect(t, tb, h)
	if _, err := conn.DialUnix(ctxT(t, 10*time.Second), SystemBusSocket); err == nil {
		t.Fatal("stream-local forwarding still allowed")
	} else {
		t.Logf("stream-local refused: %v", err)
	}
	for _, forced := range []string{"", PathStdioBridge} {
		t.Run("path="+forced, func(t *testing.T) {
			w := startWatch(t, conn, WatchOptions{Host: h, Unit: testbed.UnitName, Path: forced})
			if p := <-w.path; p != PathStdioBridge {
				t.Fatalf("path %q, want stdio-bridge", p)
			}
			first := w.until(t, 10*time.Second, "first event", func(*event.Unit) bool { return true })
			if first.Unit.Path != PathStdioBridge || first.Unit.ExecStart == "" {
				t.Fatalf("first event %+v", *first.Unit)
			}
			c := NewController(conn, h)
			ctx := ctxT(t, time.Minute)
			if o, err := c.Restart(ctx, testbed.UnitName); o != OutcomeDone || err != nil {
				t.Fatalf("restart over the bridge: %q, %v", o, err)
			}
			up := w.until(t, 10*time.Second, "active/running", state("active", "running"))
			if up.Unit.InvocationID == first.Unit.InvocationID {
				t.Errorf("no new invocation: %+v", *up.Unit)
			}
			if o, err := c.Stop(ctx, testbed.UnitName); o != OutcomeDone || err != nil {
				t.Fatalf("stop: %q, %v", o, err)
			}
			w.until(t, 10*time.Second, "inactive", state("inactive", "dead"))
			var lat []time.Duration
			for i, e := range w.events {
				if i > 0 && e.Unit.ActiveState != w.events[i-1].Unit.ActiveState && !e.Time.Equal(e.Seen) {
					lat = append(lat, e.Seen.Sub(e.Time))
				}
			}
			logLatency(t, "stdio-bridge state-change signal", lat)
		})
	}
}

func testSystemctlNonRoot(t *testing.T, tb *testbed.Testbed) {
	h := hostNoSudo
	root := connect(t, tb, h)
	t.Run("systemctl", func(t *testing.T) {
		w := startWatch(t, root, WatchOptions{Host: h, Unit: testbed.UnitName, Path: PathSystemctl, Poll: 200 * time.Millisecond})
		if p := <-w.path; p != PathSystemctl {
			t.Fatalf("path %q", p)
		}
		first := w.until(t, 10*time.Second, "first event", func(*event.Unit) bool { return true })
		if first.Unit.Path != PathSystemctl || first.Unit.ExecStart == "" || len(first.Unit.Environment) == 0 {
			t.Fatalf("first event %+v", *first.Unit)
		}
		run(t, tb, h, "systemctl start "+testbed.UnitName)
		up := w.until(t, 10*time.Second, "active/running", state("active", "running"))
		if up.Unit.InvocationID == "" || up.Unit.MainPID == 0 || up.Time.IsZero() {
			t.Errorf("running event %+v", *up.Unit)
		}
		// The bus reads the same state.
		bus := startWatch(t, root, WatchOptions{Host: h, Unit: testbed.UnitName, Path: PathDBus})
		b := bus.until(t, 10*time.Second, "bus first event", func(*event.Unit) bool { return true })
		bu, pu := *b.Unit, *up.Unit
		bu.Path, pu.Path = "", ""
		if !sameUnit(bu, pu) {
			t.Errorf("bus and systemctl disagree:\nbus       %+v\nsystemctl %+v", bu, pu)
		}
		if !b.Time.Equal(up.Time) {
			t.Errorf("state change time: bus %s, systemctl %s", b.Time, up.Time)
		}
		run(t, tb, h, "systemctl stop "+testbed.UnitName)
		w.until(t, 10*time.Second, "inactive", state("inactive", "dead"))
	})
	t.Run("deploy", func(t *testing.T) { testDeploy(t, tb, h) })
}

// testDeploy checks the non-root login of host: it reads over D-Bus (EXTERNAL
// with its own uid) and acts through sudo -n, which works with NOPASSWD
// (gpu1) and fails at once, clearly, without sudo (gpu2).
func testDeploy(t *testing.T, tb *testbed.Testbed, host string) {
	conn := connect(t, tb, host+"-deploy")
	c := NewController(conn, host)
	ctx := ctxT(t, time.Minute)
	if uid, err := c.UID(ctx); err != nil || uid == 0 {
		t.Fatalf("deploy uid %d, %v", uid, err)
	}
	env, err := c.ReadEnvironment(ctx, testbed.UnitName)
	if err != nil || !slices.ContainsFunc(env, func(s string) bool { return strings.HasPrefix(s, "KDTREE_MODE=") }) {
		t.Errorf("%s: deploy reads environment: %q, %v", host, env, err)
	}
	w := startWatch(t, conn, WatchOptions{Host: host, Unit: testbed.UnitName})
	if p := <-w.path; p != PathDBus {
		t.Errorf("deploy watch path %q, want dbus", p)
	}
	first := w.until(t, 10*time.Second, "deploy first event", func(*event.Unit) bool { return true })
	if first.Unit.ExecStart == "" || first.Unit.ActiveState == "" {
		t.Errorf("deploy reads %+v", *first.Unit)
	}
	start := time.Now()
	o, err := c.Restart(ctx, testbed.UnitName)
	took := time.Since(start)
	if host == hostDBus {
		if o != OutcomeDone || err != nil {
			t.Fatalf("%s: restart as deploy with NOPASSWD sudo: %q, %v", host, o, err)
		}
		w.until(t, 10*time.Second, "a new invocation", func(u *event.Unit) bool {
			return u.ActiveState == "active" && u.InvocationID != first.Unit.InvocationID
		})
		if _, err := c.Stop(ctx, testbed.UnitName); err != nil {
			t.Errorf("%s: stop as deploy: %v", host, err)
		}
		return
	}
	want := "sudo needs a password on gpu2: actions need the NOPASSWD sudoers rule that `bringup doctor gpu2` prints (or a root login)"
	if !errors.Is(err, ErrSudoPassword) || err.Error() != want || o != OutcomeNone {
		t.Errorf("%s: restart as deploy without sudo: %q, %v; want %q", host, o, err, want)
	}
	if took > 2*time.Second {
		t.Errorf("%s: refusal took %s, want < 2 s", host, took)
	}
}
