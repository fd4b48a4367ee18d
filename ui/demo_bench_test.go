package ui

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/fleet"
)

// storySource is the story's fleet as the console's source, except that
// the test hands the console the fleet's batches itself (demoStory's
// onBatch), so the console's own reader reads nothing.
type storySource struct {
	*fleet.Fleet
	none chan remote.Batch
}

func (s storySource) Updates() <-chan remote.Batch { return s.none }

// TestDemoBenchFlow: in the demo, once gpu3 serves in on, b asks first,
// y sends the smoke load through the fleet's door to the simulated host,
// the overlay counts its requests on the simulation's clock, and the
// result lands in gpu3's host view: its bench row, and the A/B line's
// bench against the seeded history's runs in off, about 4× (golden).
// Regenerate with: go test ./ui -run TestDemoBenchFlow -update
func TestDemoBenchFlow(t *testing.T) {
	s := newDemoStory(t)
	s.fix()
	now := s.clock.Now()
	m := New(storySource{Fleet: s.fleet, none: make(chan remote.Batch)}, Options{Title: "bringup demo · seed",
		Kernels: kernels.DefaultCatalog(), Now: func() time.Time { return now }, NoColor: true})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	m.Update(batchMsg(remote.Batch{Hosts: s.last}))
	// The console folds every batch from here on, as the program would
	// (the re-armed reader it asks for is the test's own loop).
	s.onBatch = func(b remote.Batch) { m.Update(batchMsg(b)) }
	press(m, "j", "j", "enter")
	if hs := m.hostState("gpu3"); hs == nil || hs.Bench != nil || hs.Throughput.BenchTPS != 0 {
		t.Fatalf("gpu3 before its bench: %+v", hs)
	}

	press(m, "b")
	if m.dialog == nil || m.dialog.action.Kind != remote.ActBench {
		t.Fatalf("b on gpu3's host view did not ask: %+v", m.dialog)
	}
	if out := render(m); !strings.Contains(out, "Bench gpu3: 64 requests, 8 at a time?") {
		t.Fatalf("the confirmation does not name gpu3's load:\n%s", out)
	}
	drive(t, m, press(m, "y"))
	if m.bench == nil || m.bench.ids["gpu3"] == 0 {
		t.Fatalf("y did not issue the bench through the fleet: %+v (status %q)", m.bench, m.status)
	}

	// The simulation's clock runs in quarter seconds: the load (64
	// requests of 64 tokens, 8 at a time, at on's 1 920 tok/s) takes
	// about 2.2 s of host time, and the overlay counts it meanwhile.
	count := regexp.MustCompile(`(\d+)/64 requests`)
	var seen []int
	s.until("gpu3's bench result", 250*time.Millisecond, func() bool {
		if m.bench != nil {
			if c := count.FindStringSubmatch(render(m)); c != nil {
				n, _ := strconv.Atoi(c[1])
				seen = append(seen, n)
			}
			return false
		}
		hs := m.hostState("gpu3")
		return hs.Bench != nil && hs.Throughput.BenchRatio > 0
	})
	partial := false
	for _, n := range seen {
		partial = partial || n > 0 && n < 64
	}
	if !partial {
		t.Errorf("the overlay never counted the load part way: %v", seen)
	}
	hs := m.hostState("gpu3")
	if b := hs.Bench; b.Requests != 64 || b.OK != 64 || b.Interrupted || b.OutputTPS < 1800 || b.OutputTPS > 1920 {
		t.Errorf("gpu3's bench: %+v", b)
	}
	if ab := hs.Throughput; ab.Base != "off" || ab.BaseBenchTPS < 460 || ab.BaseBenchTPS > 480 || ab.BenchRatio < 3.8 || ab.BenchRatio > 4.2 {
		t.Errorf("gpu3's bench against off: %+v", ab)
	}
	if !strings.Contains(m.status, "gpu3: bench ") || !strings.Contains(m.status, "64/64 ok") {
		t.Errorf("status %q, want the bench's result", m.status)
	}
	out := render(m)
	for _, want := range []string{"bench 1", "output tok/s", "kdtree-verify=on", " on vs 4"} {
		if !strings.Contains(out, want) {
			t.Errorf("gpu3's host view lacks %q:\n%s", want, out)
		}
	}

	// The host view after it, from the fleet's snapshot.
	final := s.last
	for _, size := range [][2]int{{80, 24}, {160, 48}} {
		t.Run(fmt.Sprintf("host-gpu3-%dx%d", size[0], size[1]), func(t *testing.T) {
			v := New(newFake(), Options{Title: "bringup demo · seed", Kernels: kernels.DefaultCatalog(),
				Now: func() time.Time { return now }, NoColor: true})
			v.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
			v.Update(batchMsg(remote.Batch{Hosts: final}))
			press(v, "j", "j", "enter")
			out := render(v)
			checkFits(t, out, size[0], size[1])
			if !strings.Contains(out, "bench") || !strings.Contains(out, "vs") {
				t.Errorf("the host view lacks the bench:\n%s", out)
			}
			golden.RequireEqual(t, []byte(out))
		})
	}
}
