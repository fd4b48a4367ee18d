package ui

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/live"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/startup"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// benchProbe is a probe that also publishes the host's latest bench (the
// fleet's HostState.Bench) and the most requests a bench counted.
type benchProbe struct {
	*probe
	bench atomic.Pointer[remote.BenchRun]
	most  atomic.Int64
}

func (p *benchProbe) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := p.probe.Update(msg)
	for _, h := range p.hosts {
		if h.Bench != nil {
			b := *h.Bench
			p.bench.Store(&b)
		}
		if a := h.Action; a != nil && a.Done > int(p.most.Load()) {
			p.most.Store(int64(a.Done))
		}
	}
	return p, cmd
}

// overlayCount reads "N/64 requests" off the bench overlay.
var overlayCount = regexp.MustCompile(`(\d+)/64 requests`)

// TestBenchKeyOnTestbed drives the console's b on a real serving host:
// the fleet's door runs the load over the host's SSH connection (the
// UI does no IO), the overlay counts the requests, the result lands in
// the host view; a second b is stopped with ctrl+c part way, and its
// partial result is kept with fewer than 64 requests sent.
func TestBenchKeyOnTestbed(t *testing.T) {
	tb := testbed.StartWith(t, testbed.Options{Hosts: 1, Host: func(int) testbed.HostOptions {
		return testbed.HostOptions{KernelMode: "off"} // 480 tok/s: a 64-request load takes seconds, time to stop one
	}})
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	h := tb.Hosts()[0]
	cfg, err := sshx.Resolve(ctx, h.Name, sshx.ResolveOptions{ConfigFile: tb.SSHConfig()})
	if err != nil {
		t.Fatal(err)
	}
	cat := kernels.DefaultCatalog()
	theFleet, err := fleet.New([]fleet.HostSpec{{
		Driver: live.New(live.Options{Host: remote.Host{Name: h.Name, Unit: testbed.UnitName, Engine: "sglang"}, SSH: cfg, Tail: -1, Kernels: cat}),
		Unit:   testbed.UnitName, Engine: "sglang",
	}}, fleet.Options{Kernels: cat, ReadOnly: true}) // a bench changes nothing: read-only lets it
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = theFleet.Run(runCtx) }()
	defer func() { stop(); <-done }()
	if out, err := tb.Run(ctx, h.Name, "systemctl start "+testbed.UnitName); err != nil {
		t.Fatalf("start: %v\n%s", err, out)
	}

	p := &benchProbe{probe: &probe{Model: New(theFleet, Options{Kernels: cat, NoColor: true})}}
	tm := teatest.NewTestModel(t, p, teatest.WithInitialTermSize(200, 50),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii)))
	wait := func(what string, cond func(f *probeFacts) bool) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			if f := p.facts.Load(); f != nil && cond(f) {
				return
			}
			if time.Now().After(deadline) {
				f := p.facts.Load()
				frame := ""
				if f != nil {
					frame = f.frame
				}
				t.Fatalf("timed out waiting for %s; last frame:\n%s", what, frame)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	wait("gpu1 serving", func(f *probeFacts) bool { return f.phase[h.Name] == startup.Serving })
	send(tm, "b")
	wait("the confirmation", func(f *probeFacts) bool { return strings.Contains(f.frame, h.Name+": 64 requests, 8 at a time?") })
	send(tm, "y")
	wait("the overlay counting", func(f *probeFacts) bool { return overlayCount.MatchString(f.frame) })
	wait("the bench done", func(f *probeFacts) bool {
		a, ok := f.action[h.Name]
		return ok && a.Name == "bench 64×8" && a.Stage == event.ActionDone && !strings.Contains(f.frame, "esc/ctrl+c")
	})
	first := p.bench.Load()
	if first == nil || first.Requests != 64 || first.OK != 64 || first.Errors != 0 || first.Interrupted || first.OutputTPS <= 0 || first.TTFTP50 <= 0 ||
		first.Modes["kdtree-verify"] != "off" {
		t.Fatalf("first bench = %+v", first)
	}
	t.Logf("b on %s: %s", h.Name, first.Summary())
	send(tm, "enter")
	wait("the host view's bench row", func(f *probeFacts) bool {
		return strings.Contains(f.frame, "  bench "+strconv.Itoa(int(first.OutputTPS+0.5))+" output tok/s") &&
			strings.Contains(f.frame, "64/64 ok, 8 at a time · kdtree-verify=off") && strings.Contains(f.frame, "bench 64×8 result:")
	})

	// Stop the second part way: ctrl+c stops the load, not the console.
	send(tm, "b", "y")
	wait("the second bench under way", func(f *probeFacts) bool {
		m := overlayCount.FindStringSubmatch(f.frame)
		return len(m) == 2 && m[1] != "0"
	})
	send(tm, "ctrl+c")
	wait("the second bench stopped", func(f *probeFacts) bool {
		a := f.action[h.Name]
		b := p.bench.Load()
		return a.Stage == event.ActionFailed && b != nil && b.Action != first.Action
	})
	second := p.bench.Load()
	if !second.Interrupted || second.Requests >= 64 || second.Requests == 0 {
		t.Errorf("stopped bench = %+v, want part of 64", second)
	}
	if n := p.most.Load(); n > 64 {
		t.Errorf("a bench counted %d requests, more than 64", n)
	}
	if f := p.facts.Load(); !strings.Contains(f.action[h.Name].Err, "cancelled") {
		t.Errorf("stopped bench ended with %q", f.action[h.Name].Err)
	}
	t.Logf("stopped: %s", second.Summary())
	send(tm, "q")
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
}
