package live

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"os"
	"path/filepath"

	"golang.org/x/crypto/ssh"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/startup"
	"github.com/bringup-dev/bringup/remote/testkit/e2e"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
	"github.com/bringup-dev/bringup/remote/unitname"
)

// fastEnv keeps a test host's startup to a few seconds while every phase shows.
var fastEnv = testbed.FastStartEnv

// liveFleet builds a fleet of live hosts over the testbed's hosts.
func liveFleet(t *testing.T, ctx context.Context, tb *testbed.Testbed) *fleet.Fleet {
	t.Helper()
	return liveFleetWith(t, ctx, tb, fleet.Options{})
}

// liveFleetWith is liveFleet with opts (its catalog is the default).
func liveFleetWith(t *testing.T, ctx context.Context, tb *testbed.Testbed, opts fleet.Options) *fleet.Fleet {
	t.Helper()
	var specs []fleet.HostSpec
	for _, h := range tb.Hosts() {
		cfg, err := sshx.Resolve(ctx, h.Name, sshx.ResolveOptions{ConfigFile: tb.SSHConfig()})
		if err != nil {
			t.Fatalf("resolve %s: %v", h.Name, err)
		}
		specs = append(specs, fleet.HostSpec{
			Driver: New(Options{Host: remote.Host{Name: h.Name, Unit: testbed.UnitName, Engine: "sglang"}, SSH: cfg, Tail: -1, Kernels: kernels.DefaultCatalog()}),
			Unit:   testbed.UnitName, Engine: "sglang",
		})
	}
	opts.Kernels = kernels.DefaultCatalog()
	f, err := fleet.New(specs, opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFleetOnTestbed watches three real hosts start: gpu1 and gpu2 run
// through the real phases to serving; gpu3, in validate mode, fails at
// graph capture with the capture cause. It then restarts gpu3 twenty
// times and reports how long a failure takes to show: the failed change's
// local receipt minus the host timestamp it carries (systemd's).
func TestFleetOnTestbed(t *testing.T) {
	tb := testbed.StartWith(t, testbed.Options{Hosts: 3, Host: func(i int) testbed.HostOptions {
		o := testbed.HostOptions{Env: fastEnv, KernelMode: "on"}
		if i == 2 {
			o.KernelMode = "validate"
		}
		return o
	}})
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	f := liveFleet(t, ctx, tb)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Run(runCtx) }()
	defer func() {
		stop()
		_ = <-done // Run's end after the stop
	}()

	// Wait until every host's unit state has been read, then start them.
	waitBatch(t, ctx, f, "unit state of every host", func(b remote.Batch) bool {
		for _, h := range b.Hosts {
			if h.UnitState.ActiveState == "" {
				return false
			}
		}
		return true
	}, nil)
	for _, h := range tb.Hosts() {
		if out, err := tb.Run(ctx, h.Name, "systemctl start sglang"); err != nil {
			t.Fatalf("start %s: %v: %s", h.Name, err, out)
		}
	}
	began := time.Now()
	phases := map[string][]startup.Phase{}
	var fail *remote.HostChange
	waitBatch(t, ctx, f, "gpu1, gpu2 serving and gpu3 failed", func(b remote.Batch) bool {
		st := map[string]startup.Phase{}
		for _, h := range b.Hosts {
			st[h.Name] = h.Startup.Phase
		}
		return st["gpu1"] == startup.Serving && st["gpu2"] == startup.Serving && st["gpu3"] == startup.Failed && unitFailed(b, "gpu3")
	}, func(c remote.HostChange) {
		switch c.Kind {
		case startup.ChangePhase:
			phases[c.Host] = append(phases[c.Host], c.Phase)
		case startup.ChangeFail:
			cc := c
			fail = &cc
		case startup.ChangeUnit, startup.ChangeStats: // the unit's state and the engine's stats are not part of the story
		}
	})
	t.Logf("gpu1, gpu2 serving and gpu3 failed %v after the start", time.Since(began).Round(time.Millisecond))
	for _, h := range []string{"gpu1", "gpu2"} {
		want := []startup.Phase{startup.Starting, startup.Init, startup.Weights, startup.KVCache, startup.GraphCapture, startup.HTTP, startup.Warmup, startup.Serving}
		if !isSubsequence(want, phases[h]) {
			t.Errorf("%s phases = %v, want them to run through %v", h, phases[h], want)
		}
	}
	if fail == nil || fail.Host != "gpu3" || fail.Diag == nil {
		t.Fatalf("no failure for gpu3: %+v", fail)
	}
	if fail.Diag.Cause != "graph-capture-host-sync" || fail.Diag.Phase != startup.GraphCapture || fail.Diag.KernelMode != "kdtree-verify=validate" {
		t.Errorf("diagnosis = %+v", fail.Diag)
	}

	// Failure latency over repeated runs of gpu3.
	var lat []time.Duration
	for i := 0; i < 20; i++ {
		runStart := time.Now()
		if out, err := tb.Run(ctx, "gpu3", "systemctl reset-failed sglang; systemctl start sglang"); err != nil {
			t.Fatalf("restart gpu3: %v: %s", err, out)
		}
		var got *remote.HostChange
		// The log says the run failed as SGLang gives up, a moment before
		// systemd does; the next start must wait for the unit to be failed
		// (a start of a unit still active does nothing).
		waitBatch(t, ctx, f, fmt.Sprintf("gpu3 failure #%d", i+1), func(b remote.Batch) bool { return got != nil && unitFailed(b, "gpu3") }, func(c remote.HostChange) {
			if c.Host == "gpu3" && c.Kind == startup.ChangeFail && got == nil {
				cc := c
				got = &cc
			}
		})
		lat = append(lat, got.Seen.Sub(got.Time))
		t.Logf("gpu3 failure #%d: %s in %s (%v after the start)", i+1, got.Diag.Cause, got.Diag.Phase, time.Since(runStart).Round(time.Millisecond))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	t.Logf("failure latency (seen - host time) over %d runs: p50 %v, p99 %v, max %v", len(lat), lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
	for _, l := range lat {
		if l < -time.Second || l > 10*time.Second {
			t.Errorf("implausible latency %v (clocks are shared on the testbed)", l)
		}
	}
}

// unitFailed reports whether host's unit is in systemd's failed state in b.
func unitFailed(b remote.Batch, host string) bool {
	for _, h := range b.Hosts {
		if h.Name == host {
			return h.UnitState.ActiveState == "failed"
		}
	}
	return false
}

func isSubsequence(want, got []startup.Phase) bool {
	i := 0
	for _, p := range got {
		if i < len(want) && p == want[i] {
			i++
		}
	}
	return i == len(want) && !slices.Contains(got, startup.Failed)
}

// waitBatch reads batches until cond holds, handing every change to each.
func waitBatch(t *testing.T, ctx context.Context, f *fleet.Fleet, what string, cond func(remote.Batch) bool, each func(remote.HostChange)) {
	t.Helper()
	var last remote.Batch
	for {
		select {
		case b, ok := <-f.Updates():
			if !ok {
				t.Fatalf("fleet stopped while waiting for %s", what)
			}
			for _, c := range b.Changes {
				if each != nil {
					each(c)
				}
			}
			last = b
			if cond(b) {
				return
			}
		case <-ctx.Done():
			var s []string
			for _, h := range last.Hosts {
				s = append(s, fmt.Sprintf("%s %s %s/%s conn=%s", h.Name, h.Startup.Phase, h.UnitState.ActiveState, h.UnitState.SubState, h.Conn.State))
			}
			t.Fatalf("timed out waiting for %s; hosts: %s", what, strings.Join(s, "; "))
		}
	}
}

// TestUnreachableHostKeepsLastState cuts one host's link: it shows as
// unknown with its last known state kept, while the other host goes on
// (a restart on it is followed to serving); restoring the link brings the
// cut host back to serving.
func TestUnreachableHostKeepsLastState(t *testing.T) {
	tb := testbed.StartWith(t, testbed.Options{Hosts: 2, Host: func(int) testbed.HostOptions {
		return testbed.HostOptions{Env: fastEnv, KernelMode: "on", Enable: true}
	}})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var specs []fleet.HostSpec
	for _, h := range tb.Hosts() {
		cfg, err := sshx.Resolve(ctx, h.Name, sshx.ResolveOptions{ConfigFile: tb.SSHConfig()})
		if err != nil {
			t.Fatal(err)
		}
		cfg.ServerAliveInterval, cfg.ServerAliveCountMax = time.Second, 2 // notice the cut in seconds
		specs = append(specs, fleet.HostSpec{Driver: New(Options{Host: remote.Host{Name: h.Name, Unit: testbed.UnitName}, SSH: cfg, Tail: 2000}),
			Unit: testbed.UnitName, Engine: "sglang"})
	}
	f, err := fleet.New(specs, fleet.Options{Kernels: kernels.DefaultCatalog()})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Run(runCtx) }()
	defer func() {
		stop()
		_ = <-done // Run's end after the stop
	}()
	phaseOf := func(b remote.Batch, host string) (remote.HostState, bool) {
		for _, h := range b.Hosts {
			if h.Name == host {
				return h, true
			}
		}
		return remote.HostState{}, false
	}
	waitBatch(t, ctx, f, "both serving", func(b remote.Batch) bool {
		h1, _ := phaseOf(b, "gpu1")
		h2, _ := phaseOf(b, "gpu2")
		return h1.Startup.Phase == startup.Serving && h2.Startup.Phase == startup.Serving
	}, nil)

	g2, _ := tb.Host("gpu2")
	ipLink := func(state string) {
		if out, err := exec.Command("ip", "link", "set", g2.Link, state).CombinedOutput(); err != nil {
			t.Fatalf("ip link set %s %s: %v: %s", g2.Link, state, err, out)
		}
	}
	ipLink("down")
	restored := false
	defer func() {
		if !restored {
			ipLink("up")
		}
	}()
	var last remote.HostState
	waitBatch(t, ctx, f, "gpu2 unknown", func(b remote.Batch) bool {
		last, _ = phaseOf(b, "gpu2")
		return last.Startup.Phase == startup.Unknown
	}, nil)
	if last.Startup.LastKnown != startup.Serving || last.UnitState.ActiveState != "active" {
		t.Errorf("gpu2 lost its last known state: %+v / %+v", last.Startup, last.UnitState)
	}
	if last.Conn.State == event.ConnUp {
		t.Errorf("gpu2 conn = %s", last.Conn.State)
	}

	// gpu1 goes on: a restart is followed to serving while gpu2 is away.
	if out, err := tb.Run(ctx, "gpu1", "systemctl restart sglang"); err != nil {
		t.Fatalf("restart gpu1: %v: %s", err, out)
	}
	sawRestart := false
	waitBatch(t, ctx, f, "gpu1 serving again", func(b remote.Batch) bool {
		h1, _ := phaseOf(b, "gpu1")
		h2, _ := phaseOf(b, "gpu2")
		if h2.Startup.Phase != startup.Unknown {
			t.Fatalf("gpu2 left unknown while cut: %s", h2.Startup.Phase)
		}
		return sawRestart && h1.Startup.Phase == startup.Serving
	}, func(c remote.HostChange) {
		if c.Host == "gpu1" && c.Kind == startup.ChangePhase && c.Phase == startup.Weights {
			sawRestart = true
		}
	})

	ipLink("up")
	restored = true
	waitBatch(t, ctx, f, "gpu2 back to serving", func(b remote.Batch) bool {
		h2, _ := phaseOf(b, "gpu2")
		return h2.Startup.Phase == startup.Serving && h2.Conn.State == event.ConnUp
	}, nil)
}

// TestFollowAcrossReboot reboots a followed test host: the fleet marks the
// reboot in the host's log (a "reboot" gap: a new boot ID), reconnects by
// itself, reads the unit's state again (not started after the boot), and
// follows the next start to serving, a new invocation.
func TestFollowAcrossReboot(t *testing.T) {
	tb := testbed.StartWith(t, testbed.Options{Hosts: 1, Host: func(int) testbed.HostOptions {
		return testbed.HostOptions{Env: fastEnv, KernelMode: "on"}
	}})
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	f := liveFleet(t, ctx, tb)
	fl := fleet.Follow(ctx, f)
	defer func() {
		if err := fl.Stop(10 * time.Second); err != nil {
			t.Error(err)
		}
	}()
	wait := func(what string, cond func(remote.HostState) bool, each func(remote.Batch)) remote.HostState {
		t.Helper()
		c, stop := context.WithTimeout(ctx, 2*time.Minute)
		defer stop()
		if err := fl.Until(c, 0, func(b remote.Batch) bool {
			if each != nil {
				each(b)
			}
			return len(b.Hosts) == 1 && cond(b.Hosts[0])
		}); err != nil {
			t.Fatalf("waiting for %s: %v (%s)", what, err, summary(fl.Last()))
		}
		return fl.Last()[0]
	}
	wait("the unit state", unitKnown, nil)
	if out, err := tb.Run(ctx, "gpu1", "systemctl start "+testbed.UnitName); err != nil {
		t.Fatalf("start: %v: %s", err, out)
	}
	first := wait("serving", serving, nil).Startup.InvocationID

	if err := tb.Reboot(ctx, "gpu1"); err != nil {
		t.Fatal(err)
	}
	var reboot *event.Gap
	back := wait("the host back, its unit not running", func(h remote.HostState) bool {
		return connected(h) && h.UnitState.ActiveState == "inactive"
	}, func(b remote.Batch) {
		for _, ev := range b.Events {
			if ev.Kind == event.KindGap && ev.Gap.Reason == "reboot" {
				reboot = ev.Gap
			}
		}
	})
	if out, err := tb.Run(ctx, "gpu1", "systemctl start "+testbed.UnitName); err != nil {
		t.Fatalf("start after the reboot: %v: %s", err, out)
	}
	again := wait("serving after the reboot", func(h remote.HostState) bool {
		return serving(h) && h.Startup.InvocationID != first
	}, func(b remote.Batch) {
		for _, ev := range b.Events {
			if ev.Kind == event.KindGap && ev.Gap.Reason == "reboot" {
				reboot = ev.Gap
			}
		}
	})
	if reboot == nil || !strings.Contains(reboot.Message, "host rebooted") {
		t.Errorf("no reboot marker in the host's log (unit %s/%s after the boot)", back.UnitState.ActiveState, back.UnitState.SubState)
	}
	t.Logf("invocation %.8s before the reboot, %.8s after; marker: %v", first, again.Startup.InvocationID, reboot)
}

// TestRunRefusesBadUnit: a unit name that is a glob (or otherwise not one
// unit) ends Run at once with unitname.ErrInvalid, before any dial: the
// fleet shows it as the host's error, and nothing retries it every few
// seconds as the unit watch used to.
func TestRunRefusesBadUnit(t *testing.T) {
	for _, unit := range []string{"sglang*", "sgl?ng.service", "sglang.servce"} {
		h := New(Options{Host: remote.Host{Name: "gpu1", Unit: unit}, NoGPU: true,
			SSH: sshx.Config{Alias: "gpu1", HostName: "127.0.0.1", Port: 1, User: "root"}})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		var emitted []event.Event
		err := h.Run(ctx, func(ev event.Event) bool { emitted = append(emitted, ev); return true })
		late := ctx.Err()
		cancel()
		if !errors.Is(err, unitname.ErrInvalid) || !strings.Contains(err.Error(), "gpu1") || !strings.Contains(err.Error(), unit) {
			t.Errorf("unit %q: Run = %v, want unitname.ErrInvalid naming the host and the unit", unit, err)
		}
		if late != nil || len(emitted) > 0 {
			t.Errorf("unit %q: Run went on (deadline: %v, %d events) instead of refusing at once", unit, late, len(emitted))
		}
	}
}

// runFleet runs f until the test ends (or ctx does).
func runFleet(t *testing.T, ctx context.Context, f *fleet.Fleet) {
	t.Helper()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		_ = <-done // Run's end after the stop
	})
}

// TestHostKeysAndAuthOnTestbed runs three live hosts over two test hosts,
// resolved by Resolve as the console resolves them:
//   - gpu1 under StrictHostKeyChecking accept-new with an empty
//     known_hosts: the key learned is announced in the host's log (a
//     GapHostKey note naming the file and line) and written there;
//   - gpu2 with StrictHostKeyChecking no and UserKnownHostsFile
//     /dev/null: every connection event carries both risks, for the
//     console's header;
//   - gpu2-agent authenticating only through ssh-agent, which holds no key
//     at first: the connection stops on the auth failure (no retry loop),
//     and once the key is in the agent, Retry brings it up and the unit
//     watch, which had nothing to watch, resumes.
func TestHostKeysAndAuthOnTestbed(t *testing.T) {
	tb := testbed.Start(t, 2)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	kh := filepath.Join(dir, "known_hosts")
	base, err := os.ReadFile(tb.SSHConfig())
	if err != nil {
		t.Fatal(err)
	}
	g2, _ := tb.Host("gpu2")
	// First values win in ssh_config: these blocks come before the testbed's.
	conf := fmt.Sprintf("Host gpu1\n  UserKnownHostsFile %s\n  StrictHostKeyChecking accept-new\n"+
		"Host gpu2\n  UserKnownHostsFile /dev/null\n  StrictHostKeyChecking no\n"+
		"Host gpu2-agent\n  HostName %s\n  User root\n  IdentityFile %s\n  IdentitiesOnly no\n"+
		"  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n",
		kh, g2.Addr, filepath.Join(dir, "no-such-key"), filepath.Join(tb.Inventory(), "known_hosts")) + string(base)
	cfgFile := filepath.Join(dir, "ssh_config")
	if err := os.WriteFile(cfgFile, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	// An ssh-agent that holds nothing yet; dials read SSH_AUTH_SOCK each time.
	sock := filepath.Join(dir, "agent.sock")
	startSSHAgent(t, sock)
	t.Setenv("SSH_AUTH_SOCK", sock)

	var targets []Target
	for _, n := range []string{"gpu1", "gpu2", "gpu2-agent"} {
		targets = append(targets, Target{Host: remote.Host{Name: n, Unit: testbed.UnitName, Engine: "sglang"}, SSH: SSHTarget{Host: n}})
	}
	opts, closeKeys, err := Resolve(ctx, targets, cfgFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeKeys()
	if opts[0].Dial.JumpLimit == nil || opts[0].Dial.JumpLimit != opts[2].Dial.JumpLimit {
		t.Error("the hosts do not share one jump limit")
	}
	for i := range opts {
		opts[i].Tail, opts[i].NoGPU = -1, true
	}
	specs := Specs(opts, fleet.Options{Kernels: kernels.DefaultCatalog()})
	f, err := fleet.New(specs, fleet.Options{Kernels: kernels.DefaultCatalog()})
	if err != nil {
		t.Fatal(err)
	}
	runFleet(t, ctx, f)

	var notes []event.Event
	connecting := 0
	state := map[string]remote.HostState{}
	watch := func(what string, cond func() bool) {
		t.Helper()
		waitBatch(t, ctx, f, what, func(b remote.Batch) bool {
			for _, ev := range b.Events {
				switch {
				case ev.Kind == event.KindGap && ev.Gap != nil && ev.Gap.Reason == event.GapHostKey:
					notes = append(notes, ev)
				case ev.Host == "gpu2-agent" && ev.Kind == event.KindConn && ev.Conn.State == event.ConnConnecting:
					connecting++
				}
			}
			for _, h := range b.Hosts {
				state[h.Name] = h
			}
			return cond()
		}, nil)
	}
	watch("gpu1 and gpu2 up with their unit state, gpu2-agent stopped", func() bool {
		return state["gpu1"].UnitState.ActiveState != "" && state["gpu2"].UnitState.ActiveState != "" &&
			state["gpu2-agent"].Conn.State == event.ConnUnreachable
	})

	// gpu1: the learned key, announced and written.
	g1Pub, err := tb.HostKey("gpu1")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("learned new host key for gpu1: ssh-ed25519 %s, added to %s:1", ssh.FingerprintSHA256(g1Pub), kh)
	var gpu1Notes []string
	for _, n := range notes {
		if n.Host == "gpu1" {
			gpu1Notes = append(gpu1Notes, n.Gap.Message)
		}
	}
	if len(gpu1Notes) != 1 || gpu1Notes[0] != want {
		t.Errorf("gpu1 notes %q, want [%q]", gpu1Notes, want)
	}
	if b, _ := os.ReadFile(kh); !strings.Contains(string(b), strings.TrimSpace(string(ssh.MarshalAuthorizedKey(g1Pub)))) {
		t.Errorf("known_hosts %q lacks gpu1's key", b)
	}
	// gpu2: the risks, on the host state the console reads.
	if r := state["gpu2"].Conn.HostKeyRisk; r != event.RiskStrictNo|event.RiskKnownHostsNull {
		t.Errorf("gpu2 host key risk %v (%d), want both", r, r)
	}
	if r := state["gpu1"].Conn.HostKeyRisk; r != 0 {
		t.Errorf("gpu1 host key risk %v, want none", r)
	}

	// gpu2-agent: stopped on the auth failure, and not retrying.
	if e := state["gpu2-agent"].Conn.Err; !strings.Contains(e, "authentication to gpu2-agent") || !strings.Contains(e, "not retried automatically") {
		t.Errorf("gpu2-agent state says %q", e)
	}
	before := connecting
	time.Sleep(3 * time.Second) // the backoff would have dialled again by now
	watch("a batch", func() bool { return true })
	if connecting != before {
		t.Errorf("gpu2-agent dialled %d more times after an auth failure", connecting-before)
	}
	// The person loads the key into the agent and retries.
	if out, err := exec.Command("ssh-add", filepath.Join(tb.Inventory(), "id_ed25519")).CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v: %s", err, out)
	}
	// Through the fleet's door, as the console's ctrl+r does.
	if err := f.Reconnect("gpu2-agent"); err != nil {
		t.Fatalf("Reconnect gpu2-agent: %v", err)
	}
	watch("gpu2-agent up with its unit state", func() bool {
		return state["gpu2-agent"].Conn.State == event.ConnUp && state["gpu2-agent"].UnitState.ActiveState != ""
	})
}

// startSSHAgent runs OpenSSH's ssh-agent on sock, holding no key, until
// the test ends.
func startSSHAgent(t *testing.T, sock string) {
	t.Helper()
	e2e.Require(t, e2e.Command("ssh-agent"), e2e.Command("ssh-add"))
	cmd := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := cmd.Start(); err != nil {
		t.Fatalf("ssh-agent: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait() // killed: the status says nothing
	})
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ssh-agent did not create %s", sock)
		}
	}
}
