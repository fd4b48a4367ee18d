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
	"github.com/bringup-dev/bringup/remote/history/store"
	"github.com/bringup-dev/bringup/remote/sim"
	"github.com/bringup-dev/bringup/remote/startup"
)

// demoAfterFix runs the demo's seed fleet, with the demo's history, on a
// manual clock through the story: gpu3 fails capture in validate, is
// switched to on and restarted, and serves; it returns the hosts once
// gpu3's decode rate is steady and compared with its earlier runs in off.
func demoAfterFix(t *testing.T) ([]remote.HostState, time.Time) {
	t.Helper()
	t0 := time.Date(2026, 11, 30, 1, 50, 30, 0, time.UTC)
	cat := kernels.DefaultCatalog()
	past, err := sim.History("seed", sim.HistoryRuns, t0, sim.Options{Kernels: cat})
	if err != nil {
		t.Fatal(err)
	}
	clock := sim.NewManualClock(t0)
	hosts, _, err := sim.NewHosts("seed", sim.Options{Clock: clock, Kernels: cat, Seen: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	specs := make([]remote.HostSpec, len(hosts))
	stepped := make([]sim.Stepped, len(hosts))
	for i, h := range hosts {
		stepped[i] = sim.NewStepped(h)
		specs[i] = remote.HostSpec{Driver: stepped[i], Unit: h.Unit(), Engine: h.Engine()}
	}
	fleet, err := remote.NewFleet(specs, remote.Options{Kernels: cat, Clock: clock, Flush: time.Millisecond,
		History: store.NewSink(store.NewMemoryStore(past))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fleet.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("fleet: %v", err)
		}
	})
	deadline := time.After(2 * time.Minute) // a hang, not a speed target
	var last []remote.HostState
	wait := func(what string, until func(remote.Batch) bool) {
		t.Helper()
		for {
			select {
			case b := <-fleet.Updates():
				if len(b.Hosts) > 0 {
					last = b.Hosts
				}
				if until(b) {
					return
				}
			case <-deadline:
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	step := func(at time.Time) {
		for _, s := range stepped {
			s.To <- at
		}
		up := map[string]bool{}
		wait("the hosts at "+at.Format(time.TimeOnly), func(b remote.Batch) bool {
			for _, ev := range b.Events {
				if ev.Kind == event.KindConn && ev.Time.Equal(at) {
					up[ev.Host] = true
				}
			}
			return len(up) == len(stepped)
		})
	}
	byName := func(name string) remote.HostState {
		for _, h := range last {
			if h.Name == name {
				return h
			}
		}
		t.Fatalf("no host %s", name)
		return remote.HostState{}
	}
	until := func(what string, ok func() bool) {
		t.Helper()
		for now := clock.Now(); len(last) == 0 || !ok(); now = clock.Advance(5 * time.Second) {
			if now.Sub(t0) > 2*time.Hour {
				t.Fatalf("no %s within two hours", what)
			}
			step(now)
		}
	}
	until("gpu3 failure", func() bool { return byName("gpu3").Startup.Phase == startup.Failed })
	for _, a := range []remote.Action{{Kind: remote.ActSetMode, Kernel: "kdtree-verify", Mode: "on"}, {Kind: remote.ActRestart}} {
		id, err := fleet.Do("gpu3", a)
		if err != nil {
			t.Fatal(err)
		}
		wait(a.String(), func(b remote.Batch) bool {
			for _, ev := range b.Events {
				if ev.Action != nil && ev.Host == "gpu3" && ev.Action.ID == id && ev.Action.Stage == event.ActionDone {
					return true
				}
			}
			return false
		})
	}
	until("gpu3 serving, its rate compared", func() bool {
		h := byName("gpu3")
		return h.Startup.Phase == startup.Serving && h.Throughput.Live && h.Throughput.Compared() &&
			byName("gpu1").Startup.Phase == startup.Serving && byName("gpu4").Startup.Phase == startup.Serving
	})
	return last, clock.Now()
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
