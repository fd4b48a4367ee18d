package vlogs_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/live"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/startup"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
	"github.com/bringup-dev/bringup/remote/vlogs"
)

// fastEnv keeps a test host's startup to a few seconds while every phase shows.
var fastEnv = testbed.FastStartEnv

// TestE2EStoreOpensSSHOnDemand follows three test hosts through the
// testbed's VictoriaLogs (gpu3 in kdtree-verify=validate) with SSH opened
// only on demand (live.OnDemand, idle time 3 s): no host has an SSH
// connection while the store alone follows them, but gpu3 once its run
// fails, for its unit's Environment — the failure's diagnosis then names
// the mode — and that connection closes after the idle time. Opening
// gpu1's host view (Fleet.View) opens gpu1's connection: GPU samples and
// probe answers arrive and its MODE is read; closing the view stops the
// probe and closes the connection after the idle time, and a new run of
// gpu1 then serves without probes, on its unit and ready line.
func TestE2EStoreOpensSSHOnDemand(t *testing.T) {
	tb := testbed.StartWith(t, testbed.Options{Hosts: 3, LogStore: true, Host: func(i int) testbed.HostOptions {
		o := testbed.HostOptions{Env: fastEnv, KernelMode: "on"}
		if i == 2 {
			o.KernelMode = "validate"
		}
		return o
	}})
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	const idle = 3 * time.Second

	// sshSessions counts the established connections to each host's
	// sshd, read in the hosts' own network namespaces (not over SSH).
	sshSessions := func() map[string]int {
		t.Helper()
		s, err := tb.SSHSessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	src, err := vlogs.New(vlogs.Options{URL: tb.LogStoreURL(), Unit: testbed.UnitName})
	if err != nil {
		t.Fatal(err)
	}
	cat := kernels.DefaultCatalog()
	var specs []fleet.HostSpec
	for _, h := range tb.Hosts() {
		cfg, err := sshx.Resolve(ctx, h.Name, sshx.ResolveOptions{ConfigFile: tb.SSHConfig()})
		if err != nil {
			t.Fatalf("resolve %s: %v", h.Name, err)
		}
		o := live.Options{Host: remote.Host{Name: h.Name, Unit: testbed.UnitName, Engine: "sglang"}, SSH: cfg, Kernels: cat,
			GPUInterval: 500 * time.Millisecond, ProbeInterval: 500 * time.Millisecond}
		specs = append(specs, fleet.HostSpec{Driver: src.Host(h.Name, live.NewOnDemand(o, idle)), Unit: testbed.UnitName, Engine: "sglang"})
	}
	f, err := fleet.New(specs, fleet.Options{Kernels: cat})
	if err != nil {
		t.Fatal(err)
	}

	// The fleet's latest state of each host, and gpu3's failure reports.
	var mu sync.Mutex
	hosts := map[string]remote.HostState{}
	var fails []*startup.Diagnosis
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Run(runCtx) }()
	var reader sync.WaitGroup
	reader.Go(func() {
		for b := range f.Updates() {
			mu.Lock()
			for _, h := range b.Hosts {
				hosts[h.Name] = h
			}
			for _, c := range b.Changes {
				if c.Host == "gpu3" && c.Kind == startup.ChangeFail {
					fails = append(fails, c.Diag)
				}
			}
			mu.Unlock()
		}
	})
	stopped := false
	halt := func() {
		if !stopped {
			stopped = true
			stop()
			_ = <-done
			reader.Wait()
		}
	}
	defer halt()
	state := func(name string) remote.HostState {
		mu.Lock()
		defer mu.Unlock()
		return hosts[name]
	}
	waitFor := func(what string, within time.Duration, cond func() bool) time.Duration {
		t.Helper()
		began := time.Now()
		for !cond() {
			if time.Since(began) > within || ctx.Err() != nil {
				var s []string
				for _, h := range tb.Hosts() {
					st := state(h.Name)
					s = append(s, fmt.Sprintf("%s %s modes=%v gpu=%d probe=%+v", h.Name, st.Startup.Phase, st.Modes, len(st.GPU), st.Probe))
				}
				t.Fatalf("after %v: not yet %s; ssh %v; hosts: %s", within, what, sshSessions(), strings.Join(s, "; "))
			}
			time.Sleep(100 * time.Millisecond)
		}
		return time.Since(began)
	}

	time.Sleep(2 * time.Second) // the tail is up before the units start
	for _, h := range tb.Hosts() {
		if out, err := tb.Run(ctx, h.Name, "systemctl start sglang"); err != nil {
			t.Fatalf("start %s: %v: %s", h.Name, err, out)
		}
	}
	// The test's own connections, which started the units, are closed
	// (given a moment to reach the hosts): from here on only the
	// console's would show.
	time.Sleep(time.Second)
	var sawFreeOfSSH bool
	waitFor("gpu1, gpu2 serving and gpu3 failed", 2*time.Minute, func() bool {
		if s := sshSessions(); s["gpu1"] > 0 || s["gpu2"] > 0 {
			t.Fatalf("an SSH connection to a host nobody looks at or acts on: %v", s)
		} else if len(s) == 0 {
			sawFreeOfSSH = true
		}
		return state("gpu1").Startup.Phase == startup.Serving && state("gpu2").Startup.Phase == startup.Serving &&
			state("gpu3").Startup.Phase == startup.Failed
	})
	if !sawFreeOfSSH {
		t.Error("never saw the fleet followed with no SSH connection at all")
	}
	// gpu3's failure: the store's journal has no Environment; read over
	// SSH on demand, it names the mode.
	tookMode := waitFor("gpu3's diagnosis naming the kernel mode", 30*time.Second, func() bool {
		d := state("gpu3").Startup.Diag
		return d != nil && d.KernelMode == "kdtree-verify=validate"
	})
	d := state("gpu3").Startup.Diag
	if d.Cause != "graph-capture-host-sync" || d.Fix == nil || d.Fix.Mode != "on" || !strings.Contains(d.Summary, "kdtree-verify=validate") {
		t.Errorf("gpu3 diagnosis %+v", d)
	}
	mu.Lock()
	last := fails[len(fails)-1]
	mu.Unlock()
	if last.KernelMode != "kdtree-verify=validate" {
		t.Errorf("the last failure report of gpu3 names %q, want the mode", last.KernelMode)
	}
	if m := state("gpu3").Modes; len(m) != 1 || m[0].Mode != "validate" {
		t.Errorf("gpu3 MODE %+v, want validate", m)
	}
	if p := state("gpu3").UnitState.Path; p != vlogs.PathJournal {
		t.Errorf("gpu3's state path %q, want the journal's (the SSH reading adds properties only)", p)
	}
	closed3 := waitFor("gpu3's connection closed after the idle time", idle+15*time.Second, func() bool { return sshSessions()["gpu3"] == 0 })
	if s := state("gpu1"); len(s.GPU) != 0 || s.Probe.Status != 0 || len(s.Modes) != 0 {
		t.Fatalf("gpu1 has GPU samples, a probe or modes before its view opened: %+v", s)
	}

	// gpu1's view opens: its connection, GPU samples, probe answers and
	// its kernel mode.
	opened := time.Now()
	f.View("gpu1")
	tookGPU := waitFor("GPU samples, a probe answer and the mode of gpu1", 30*time.Second, func() bool {
		s := state("gpu1")
		return len(s.GPU) >= 3 && s.Probe.OK && s.Probe.Status == 200 && len(s.Modes) == 1 && s.Modes[0].Mode == "on"
	})
	if s := sshSessions(); s["gpu1"] != 1 || s["gpu2"] != 0 {
		t.Errorf("SSH connections with gpu1's view open: %v, want one to gpu1", s)
	}
	if s := state("gpu1"); s.Startup.Phase != startup.Serving || s.UnitState.Path != vlogs.PathJournal || len(s.GPU[len(s.GPU)-1].Devices) == 0 {
		t.Errorf("gpu1 with its view open: phase %s, state path %q, last sample %+v", s.Startup.Phase, s.UnitState.Path, s.GPU[len(s.GPU)-1])
	}
	samples := len(state("gpu1").GPU)
	time.Sleep(2 * time.Second)
	if n := len(state("gpu1").GPU); n <= samples {
		t.Errorf("no more GPU samples in 2 s with the view open (%d then %d)", samples, n)
	}

	// The view closes: the samplers stop, the connection stays for the
	// idle time, then closes.
	f.View("")
	closedAt := time.Now()
	time.Sleep(idle / 3)
	if s := sshSessions(); s["gpu1"] != 1 {
		t.Errorf("gpu1's connection gone %v after its view closed, before the idle time %v: %v", idle/3, idle, s)
	}
	samples = len(state("gpu1").GPU)
	closed1 := waitFor("gpu1's connection closed after the idle time", idle+15*time.Second, func() bool { return sshSessions()["gpu1"] == 0 })
	closed1 += idle / 3
	if n := len(state("gpu1").GPU); n > samples+1 {
		t.Errorf("GPU samples went on after the view closed: %d then %d", samples, n)
	}
	if s := sshSessions(); len(s) != 0 {
		t.Errorf("SSH connections left: %v", s)
	}
	if p := state("gpu1").Probe; !p.Stopped {
		t.Errorf("gpu1's probe after its view closed: %+v, want stopped", p)
	}
	// A new run of gpu1 with its view closed serves on its unit and ready
	// line from the store, as before any probe was seen.
	before := state("gpu1").Startup.StartedAt
	if out, err := tb.Run(ctx, "gpu1", "systemctl restart sglang"); err != nil {
		t.Fatalf("restart gpu1: %v: %s", err, out)
	}
	waitFor("gpu1's new run serving with its view closed", time.Minute, func() bool {
		s := state("gpu1")
		return s.Startup.StartedAt.After(before) && s.Startup.Phase == startup.Serving
	})
	halt()
	if s := sshSessions(); len(s) != 0 {
		t.Errorf("SSH connections after the fleet stopped: %v", s)
	}
	t.Logf("gpu3's mode named %v after its failure; its connection closed %v later (idle %v); gpu1's view: samples, probe and mode after %v, connection closed %v after the view (opened %v in all)",
		tookMode.Round(10*time.Millisecond), closed3.Round(10*time.Millisecond), idle, tookGPU.Round(10*time.Millisecond),
		closed1.Round(10*time.Millisecond), closedAt.Sub(opened).Round(10*time.Millisecond))
}
