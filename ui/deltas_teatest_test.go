package ui

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/rollout"
	"github.com/bringup-dev/bringup/remote/sim"
	"github.com/bringup-dev/bringup/remote/startup"
)

// runSeedFleetDeltas is runSeedFleet handing out only what changed, as
// console.Run runs a fleet (fleet.Fleet.HandDeltas).
func runSeedFleetDeltas(t *testing.T, speed float64) (*fleet.Fleet, sim.Clock, kernels.Catalog) {
	t.Helper()
	cat := kernels.DefaultCatalog()
	drivers, clock, err := sim.NewFleet("seed", sim.Options{Speed: speed, Kernels: cat})
	if err != nil {
		t.Fatal(err)
	}
	specs := make([]fleet.HostSpec, len(drivers))
	for i, d := range drivers {
		specs[i] = fleet.HostSpec{Driver: d, Unit: "sglang.service", Engine: "sglang"}
	}
	theFleet, err := fleet.New(specs, fleet.Options{Kernels: cat, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	theFleet.HandDeltas()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = theFleet.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return theFleet, clock, cat
}

// TestRolloutOverDeltas: the console over a fleet that hands out only
// the states of the hosts taken anew (as console.Run runs one) settles
// as over whole snapshots and drives a rollout host by host to done:
// gpu4 is touched only once gpu3 serves again, both end serving in on,
// and the hosts the console keeps are the fleet's.
func TestRolloutOverDeltas(t *testing.T) {
	// Not parallel: beside the other simulated consoles at rolloutSpeed
	// (a step's 2-minute timeout is 100 ms of real time), one more made
	// theirs time out on a loaded machine.
	p, tm := runConsoleOver(t, runSeedFleetDeltas)

	send(tm, "j", "j", "space", "j", "space", "R") // mark gpu3 and gpu4
	p.wait(t, tm, "the rollout dialog", func(frame string, _ *rolloutFacts) bool {
		return strings.Contains(frame, "hosts: gpu3, gpu4")
	})
	send(tm, "l", "l", "l", "enter") // no change → off → validate → on
	p.wait(t, tm, "the confirmation", func(frame string, _ *rolloutFacts) bool {
		return strings.Contains(frame, "Start the rollout?")
	})
	send(tm, "y")
	p.wait(t, tm, "the rollout done", func(frame string, f *rolloutFacts) bool {
		return f.state.Status == rollout.Done && strings.Contains(frame, "rollout · done · 2/2 serving")
	})
	send(tm, "esc")
	p.wait(t, tm, "the table with gpu3 and gpu4 on and serving", func(frame string, _ *rolloutFacts) bool {
		return strings.Contains(rowOf(frame, "gpu3"), "serving") && modeCell(frame, "gpu3", "on") &&
			strings.Contains(rowOf(frame, "gpu4"), "serving") && modeCell(frame, "gpu4", "on")
	})

	final := quit(t, tm)
	if i, j := slices.Index(final.changes, "gpu4 applying"), slices.Index(final.changes, "gpu3 serving"); i < 0 || j < 0 || i < j {
		t.Errorf("gpu4 was touched before gpu3 served: %q", final.changes)
	}
	if !final.ownHosts {
		t.Error("the console never took a batch of states alone")
	}
	for _, h := range final.hosts {
		if h.Startup.Phase != startup.Serving {
			t.Errorf("%s is %s in the console's snapshot, want serving", h.Name, h.Startup.Phase)
		}
	}
	if got := sumHosts(final.hosts); got.counts != final.table.sums.counts || got.busy != final.table.sums.busy {
		t.Errorf("the sums kept %+v, counted again %+v", final.table.sums, got)
	}
}
