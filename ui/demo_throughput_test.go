package ui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/history/store"
	"github.com/bringup-dev/bringup/remote/sim"
	"github.com/bringup-dev/bringup/remote/startup"
)

// demoStory is the demo's seed fleet, with the demo's history, on a
// manual clock whose stepped hosts the test moves: the fleet folds
// everything up to each step before the test goes on.
type demoStory struct {
	t       *testing.T
	fleet   *fleet.Fleet
	clock   *sim.ManualClock
	t0      time.Time
	stepped []sim.Stepped
	last    []remote.HostState
	// onBatch, when set, sees every batch the fleet hands out (a console
	// fed by the story).
	onBatch  func(remote.Batch)
	deadline <-chan time.Time
}

// newDemoStory starts the seed fleet; it stops with the test.
func newDemoStory(t *testing.T) *demoStory {
	t.Helper()
	return newScenarioStory(t, "seed")
}

// newScenarioStory starts the fleet of the demo's scenario; it stops with
// the test.
func newScenarioStory(t *testing.T, scenario string) *demoStory {
	t.Helper()
	t0 := time.Date(2026, 11, 30, 1, 50, 30, 0, time.UTC)
	cat := kernels.DefaultCatalog()
	past, err := sim.History(scenario, sim.HistoryRuns, t0, sim.Options{Kernels: cat})
	if err != nil {
		t.Fatal(err)
	}
	clock := sim.NewManualClock(t0)
	hosts, _, err := sim.NewHosts(scenario, sim.Options{Clock: clock, Kernels: cat, Seen: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	s := &demoStory{t: t, clock: clock, t0: t0, deadline: time.After(2 * time.Minute)} // a hang, not a speed target
	specs := make([]fleet.HostSpec, len(hosts))
	s.stepped = make([]sim.Stepped, len(hosts))
	for i, h := range hosts {
		s.stepped[i] = sim.NewStepped(h)
		specs[i] = fleet.HostSpec{Driver: s.stepped[i], Unit: h.Unit(), Engine: h.Engine()}
	}
	s.fleet, err = fleet.New(specs, fleet.Options{Kernels: cat, Clock: clock, Flush: time.Millisecond,
		Observers: []fleet.Observer{fleet.KernelCheck()}}.WithHistory(store.NewSink(store.NewMemoryStore(past))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.fleet.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		for range s.fleet.Updates() { // the fleet blocks on a batch nobody reads
		}
		if err := <-done; err != nil {
			t.Errorf("fleet: %v", err)
		}
	})
	return s
}

// wait reads the fleet's batches until one satisfies until.
func (s *demoStory) wait(what string, until func(remote.Batch) bool) {
	s.t.Helper()
	for {
		select {
		case b := <-s.fleet.Updates():
			if len(b.Hosts) > 0 {
				s.last = b.Hosts
			}
			if s.onBatch != nil {
				s.onBatch(b)
			}
			if until(b) {
				return
			}
		case <-s.deadline:
			s.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// step moves every host to at and waits until the fleet has folded it.
func (s *demoStory) step(at time.Time) {
	s.t.Helper()
	for _, h := range s.stepped {
		h.To <- at
	}
	up := map[string]bool{}
	s.wait("the hosts at "+at.Format(time.TimeOnly), func(b remote.Batch) bool {
		for _, ev := range b.Events {
			if ev.Kind == event.KindConn && ev.Time.Equal(at) {
				up[ev.Host] = true
			}
		}
		return len(up) == len(s.stepped)
	})
}

// host is name's state in the latest snapshot.
func (s *demoStory) host(name string) remote.HostState {
	s.t.Helper()
	for _, h := range s.last {
		if h.Name == name {
			return h
		}
	}
	s.t.Fatalf("no host %s", name)
	return remote.HostState{}
}

// until steps the hosts in strides until ok holds.
func (s *demoStory) until(what string, stride time.Duration, ok func() bool) {
	s.t.Helper()
	for now := s.clock.Now(); len(s.last) == 0 || !ok(); now = s.clock.Advance(stride) {
		if now.Sub(s.t0) > 2*time.Hour {
			s.t.Fatalf("no %s within two hours", what)
		}
		s.step(now)
	}
}

// do issues a on host through the fleet and waits until it is done.
func (s *demoStory) do(host string, a remote.Action) {
	s.t.Helper()
	id, err := s.fleet.Do(host, a)
	if err != nil {
		s.t.Fatal(err)
	}
	s.wait(a.String(), func(b remote.Batch) bool {
		for _, ev := range b.Events {
			if ev.Action != nil && ev.Host == host && ev.Action.ID == id && ev.Action.Stage == event.ActionDone {
				return true
			}
		}
		return false
	})
}

// fix plays the story: gpu3 fails capture in validate, is switched to on
// and restarted, and serves, until its decode rate is steady and compared
// with its earlier runs in off.
func (s *demoStory) fix() {
	s.t.Helper()
	s.until("gpu3 failure", 5*time.Second, func() bool { return s.host("gpu3").Startup.Phase == startup.Failed })
	s.do("gpu3", remote.Action{Kind: remote.ActSetMode, Kernel: "kdtree-verify", Mode: "on"})
	s.do("gpu3", remote.Action{Kind: remote.ActRestart})
	s.until("gpu3 serving, its rate compared", 5*time.Second, func() bool {
		h := s.host("gpu3")
		return h.Startup.Phase == startup.Serving && h.Throughput.Live && h.Throughput.Compared() &&
			s.host("gpu1").Startup.Phase == startup.Serving && s.host("gpu4").Startup.Phase == startup.Serving
	})
}

// demoAfterFix runs the demo's story (demoStory.fix) and returns the
// hosts once gpu3's decode rate is steady and compared with its earlier
// runs in off.
func demoAfterFix(t *testing.T) ([]remote.HostState, time.Time) {
	t.Helper()
	s := newDemoStory(t)
	s.fix()
	return s.last, s.clock.Now()
}

// TestDemoThroughputGolden: after the fix, the demo's table has the TOK/S
// column and gpu3's host view says how much faster on is than its runs in
// off. Regenerate with: go test ./ui -run TestDemoThroughputGolden -update
func TestDemoThroughputGolden(t *testing.T) {
	hosts, now := demoAfterFix(t)
	var gpu3 remote.HostState
	for _, h := range hosts {
		if h.Name == "gpu3" {
			gpu3 = h
		}
	}
	if ab := gpu3.Throughput; ab.Base != "off" || ab.Ratio < 3.8 || ab.Ratio > 4.2 || ab.BaseRuns != sim.HistoryRuns {
		t.Fatalf("gpu3 against off: %+v", ab)
	}
	for _, size := range [][2]int{{80, 24}, {160, 48}} {
		for _, sc := range []struct {
			name string
			keys []string
		}{{"table", nil}, {"host-gpu3", []string{"j", "j", "enter"}}} {
			t.Run(fmt.Sprintf("%s-%dx%d", sc.name, size[0], size[1]), func(t *testing.T) {
				m := New(newFake(), Options{Title: "bringup demo · seed", Kernels: kernels.DefaultCatalog(),
					Now: func() time.Time { return now }, NoColor: true})
				m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
				m.Update(batchMsg(remote.Batch{Hosts: hosts}))
				press(m, sc.keys...)
				out := render(m)
				checkFits(t, out, size[0], size[1])
				if sc.name == "host-gpu3" && !strings.Contains(out, "with kdtree-verify=on") {
					t.Errorf("gpu3's host view lacks the comparison:\n%s", out)
				}
				if sc.name == "table" && !strings.Contains(out, "TOK/S") {
					t.Errorf("the table lacks TOK/S:\n%s", out)
				}
				golden.RequireEqual(t, []byte(out))
			})
		}
	}
}
