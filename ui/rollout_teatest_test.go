package ui

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/rollout"
	"github.com/bringup-dev/bringup/remote/sim"
	"github.com/bringup-dev/bringup/remote/startup"
)

// rolloutSpeed is the simulated fleet's speed in these tests: a startup of
// ~11 virtual minutes takes about half a real second, and the shortest
// state the tests wait for (a lane starting) lasts that long, well above
// the 20 ms the probe polls at.
const rolloutSpeed = 1200

// rolloutProbe is a probe that also publishes the rollout's lanes and each
// host's kdtree-verify mode and invocation, and keeps every lane's stage
// changes in the order the console saw them (read from the final model,
// after the program ended).
type rolloutProbe struct {
	*probe
	ro atomic.Pointer[rolloutFacts]

	// changes are "HOST STAGE" in the order Update saw them; owned by
	// Update.
	changes []string
	last    map[string]rollout.Stage
}

type rolloutFacts struct {
	state rollout.State // zero before R
	lanes map[string]rollout.Lane
	mode  map[string]string // kdtree-verify's mode on disk
	inv   map[string]string // the current invocation id
}

func (p *rolloutProbe) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := p.probe.Update(msg)
	f := &rolloutFacts{lanes: map[string]rollout.Lane{}, mode: map[string]string{}, inv: map[string]string{}}
	for _, h := range p.hosts {
		f.inv[h.Name] = h.Startup.InvocationID
		for _, md := range h.Modes {
			if md.Kernel == "kdtree-verify" {
				f.mode[h.Name] = md.Mode
			}
		}
	}
	if ro := p.rollout; ro != nil {
		f.state = ro.r.State()
		for _, l := range ro.r.Lanes() {
			f.lanes[l.Host] = l
			if p.last[l.Host] != l.Stage {
				p.last[l.Host] = l.Stage
				p.changes = append(p.changes, l.Host+" "+string(l.Stage))
			}
		}
	}
	p.ro.Store(f)
	return p, cmd
}

// wait waits for cond on the published facts and the frame without its
// styles, failing with the last frame.
func (p *rolloutProbe) wait(t *testing.T, tm *teatest.TestModel, what string, cond func(frame string, f *rolloutFacts) bool) {
	t.Helper()
	met := false
	defer func() { // teatest.WaitFor fails the test on its own, without the frame
		if !met {
			t.Logf("waiting for %s; last frame:\n%s", what, p.frame())
		}
	}()
	p.waitUntil(t, tm, what, func(pf *probeFacts) bool {
		f := p.ro.Load()
		return f != nil && cond(ansi.Strip(pf.frame), f)
	})
	met = true
}

// frame is the last frame published, without its styles.
func (p *rolloutProbe) frame() string {
	if f := p.facts.Load(); f != nil {
		return ansi.Strip(f.frame)
	}
	return ""
}

// send presses keys in order.
func send(tm *teatest.TestModel, keys ...string) {
	for _, k := range keys {
		tm.Send(keyMsg(k))
	}
}

// runSeedFleet runs the simulated seed fleet (gpu1..gpu4; gpu3 in
// validate dies at graph capture) at speed through the real fleet and
// tracker until the test ends, and returns it with its clock and catalog.
func runSeedFleet(t *testing.T, speed float64) (*fleet.Fleet, sim.Clock, kernels.Catalog) {
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
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = theFleet.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return theFleet, clock, cat
}

// runDemoFleet is runSeedFleet as `bringup demo` runs it: with the
// simulated history of earlier runs (gpu3's in off among them).
func runDemoFleet(t *testing.T, speed float64) (*fleet.Fleet, sim.Clock, kernels.Catalog) {
	t.Helper()
	theFleet, clock, err := sim.DemoFleet("seed", speed, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = theFleet.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return theFleet, clock, theFleet.Kernels()
}

// runSeedConsole runs the real console over the simulated seed fleet at
// rolloutSpeed, and waits for the fleet to settle: gpu3 failed, the others
// serving.
func runSeedConsole(t *testing.T) (*rolloutProbe, *teatest.TestModel) {
	t.Helper()
	return runConsoleOver(t, runSeedFleet)
}

// runConsoleOver is runSeedConsole over the fleet run gives.
func runConsoleOver(t *testing.T, run func(*testing.T, float64) (*fleet.Fleet, sim.Clock, kernels.Catalog)) (*rolloutProbe, *teatest.TestModel) {
	t.Helper()
	theFleet, clock, cat := run(t, rolloutSpeed)
	p := &rolloutProbe{probe: &probe{Model: New(theFleet, Options{Title: "bringup demo · seed", Kernels: cat, Now: clock.Now})},
		last: map[string]rollout.Stage{}}
	tm := teatest.NewTestModel(t, p, teatest.WithInitialTermSize(140, 40),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii)))
	p.wait(t, tm, "the seed fleet to settle", func(_ string, f *rolloutFacts) bool {
		ph := p.facts.Load().phase
		return ph["gpu1"] == startup.Serving && ph["gpu2"] == startup.Serving && ph["gpu3"] == startup.Failed &&
			ph["gpu4"] == startup.Serving && f.mode["gpu1"] == "on" && f.mode["gpu2"] == "on"
	})
	return p, tm
}

// quit ends the program and returns the final model.
func quit(t *testing.T, tm *teatest.TestModel) *rolloutProbe {
	t.Helper()
	tm.Send(keyMsg("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
	return tm.FinalModel(t).(*rolloutProbe)
}

// doneActions are the names of the actions done on host, in order.
func doneActions(m *Model, host string) []string {
	var out []string
	for _, a := range m.remoteCommands.entries {
		if a.host == host && a.res.Stage == event.ActionDone {
			out = append(out, a.res.Name)
		}
	}
	return out
}

// modeCell reports whether the rendered table row of host shows mode in
// the mode column (a bare word: no "!" for not capture-safe, no "↻" for
// a pending restart).
func modeCell(frame, host, mode string) bool {
	return slices.Contains(strings.Fields(rowOf(frame, host)), mode)
}

// TestRolloutHaltsOnSimulatedFleet drives a rollout to validate over gpu1
// and gpu2 of the simulated seed fleet with keys only: gpu1 goes into
// validate, restarts and dies at graph capture; the rollout halts on it
// with the diagnosis and leaves gpu2 alone; b rolls gpu1 back to on, and
// it serves again.
func TestRolloutHaltsOnSimulatedFleet(t *testing.T) {
	t.Parallel() // a simulated fleet of its own, paced by its clock: waiting, not computing
	p, tm := runSeedConsole(t)
	gpu2Inv := p.ro.Load().inv["gpu2"]

	send(tm, "space", "j", "space", "R") // mark gpu1 and gpu2
	p.wait(t, tm, "the rollout dialog", func(frame string, _ *rolloutFacts) bool {
		return strings.Contains(frame, "Rollout to 2 hosts") && strings.Contains(frame, "hosts: gpu1, gpu2")
	})
	send(tm, "l", "l") // no change → off → validate
	p.wait(t, tm, "mode validate in the form", func(frame string, _ *rolloutFacts) bool {
		return strings.Contains(frame, "set kdtree-verify=validate")
	})
	send(tm, "enter")
	p.wait(t, tm, "the preflight refusal", func(frame string, _ *rolloutFacts) bool {
		return strings.Contains(frame, "Rollout to 2 hosts: preflight refused") && strings.Contains(frame, "type 2 (the number of hosts)")
	})
	send(tm, "2", "enter")

	p.wait(t, tm, "the lanes", func(frame string, f *rolloutFacts) bool {
		return f.state.Status == rollout.Running && strings.Contains(frame, "HOST") && strings.Contains(frame, "STAGE") &&
			strings.Contains(rowOf(frame, "gpu2"), "pending") && rowOf(frame, "gpu1") != ""
	})
	p.wait(t, tm, "the halt on gpu1", func(frame string, f *rolloutFacts) bool {
		return f.state.Status == rollout.Halted && strings.Contains(frame, "halted on gpu1")
	})
	f := p.ro.Load()
	frame := p.frame()
	if d := f.state.Diag; f.state.Host != "gpu1" || d == nil || d.Phase != startup.GraphCapture || d.KernelMode != "kdtree-verify=validate" {
		t.Errorf("halt %+v, want gpu1 failed in graph capture in kdtree-verify=validate", f.state)
	}
	for _, want := range []string{"✗ gpu1: graph capture failed", "hint: ", "[b] roll gpu1 back to kdtree-verify=on"} {
		if !strings.Contains(frame, want) {
			t.Errorf("halted view lacks %q:\n%s", want, frame)
		}
	}
	if l := f.lanes["gpu1"]; l.Stage != rollout.StageFailed || l.PrevMode != "on" {
		t.Errorf("gpu1 lane %+v, want failed, previously on", l)
	}
	if !strings.Contains(rowOf(frame, "gpu1"), "failed") || !strings.Contains(rowOf(frame, "gpu2"), "untouched") {
		t.Errorf("lanes after the halt:\n%s", frame)
	}
	if f.lanes["gpu2"].Stage != rollout.StageUntouched || f.mode["gpu2"] != "on" || f.inv["gpu2"] != gpu2Inv ||
		p.facts.Load().phase["gpu2"] != startup.Serving {
		t.Errorf("gpu2 touched: lane %+v, mode %q, invocation %q (was %q)", f.lanes["gpu2"], f.mode["gpu2"], f.inv["gpu2"], gpu2Inv)
	}
	if f.mode["gpu1"] != "validate" {
		t.Errorf("gpu1 mode %q after the halt, want validate", f.mode["gpu1"])
	}

	send(tm, "b")
	p.wait(t, tm, "the rollback confirmation", func(frame string, _ *rolloutFacts) bool {
		return strings.Contains(frame, "Roll gpu1 back to kdtree-verify=on?")
	})
	send(tm, "y")
	p.wait(t, tm, "gpu1 rolled back and serving", func(_ string, f *rolloutFacts) bool {
		return f.lanes["gpu1"].Stage == rollout.StageRolledBack && f.mode["gpu1"] == "on" &&
			p.facts.Load().phase["gpu1"] == startup.Serving
	})
	send(tm, "esc")
	p.wait(t, tm, "the table with gpu1 on and serving", func(frame string, _ *rolloutFacts) bool {
		return strings.Contains(rowOf(frame, "gpu1"), "serving") && modeCell(frame, "gpu1", "on") &&
			strings.Contains(rowOf(frame, "gpu2"), "serving") && modeCell(frame, "gpu2", "on")
	})

	final := quit(t, tm)
	if got, want := doneActions(final.Model, "gpu1"), []string{"mode kdtree-verify=validate", "restart (preflight overridden)", "undo mode kdtree-verify", "restart"}; !slices.Equal(got, want) {
		t.Errorf("gpu1 actions done %q, want %q", got, want)
	}
	if got := doneActions(final.Model, "gpu2"); len(got) != 0 {
		t.Errorf("gpu2 actions done %q, want none", got)
	}
	if st := final.rollout.r.State(); st.Status != rollout.Halted || st.Host != "gpu1" {
		t.Errorf("final rollout state %+v", st)
	}
}

// TestRolloutHostByHostOnSimulatedFleet rolls kdtree-verify=on (capture
// safe: no preflight) out to gpu3, which failed in validate, and gpu4 of
// the simulated seed fleet: gpu4 is touched only once gpu3 serves again,
// and the rollout ends done with both serving in mode on.
func TestRolloutHostByHostOnSimulatedFleet(t *testing.T) {
	t.Parallel() // a simulated fleet of its own, paced by its clock: waiting, not computing
	p, tm := runSeedConsole(t)

	send(tm, "j", "j", "space", "j", "space", "R") // mark gpu3 and gpu4
	p.wait(t, tm, "the rollout dialog", func(frame string, _ *rolloutFacts) bool {
		return strings.Contains(frame, "hosts: gpu3, gpu4")
	})
	send(tm, "l", "l", "l", "enter") // no change → off → validate → on
	p.wait(t, tm, "the confirmation", func(frame string, _ *rolloutFacts) bool {
		return strings.Contains(frame, "Start the rollout?") &&
			strings.Contains(frame, "set kdtree-verify=on, then restart, on gpu3, gpu4 one at a time")
	})
	send(tm, "y")
	p.wait(t, tm, "gpu3 restarting while gpu4 waits", func(frame string, f *rolloutFacts) bool {
		return f.state.Status == rollout.Running && f.lanes["gpu3"].Stage == rollout.StageStarting &&
			strings.Contains(rowOf(frame, "gpu3"), "starting") && strings.Contains(rowOf(frame, "gpu4"), "pending")
	})
	p.wait(t, tm, "the rollout done", func(frame string, f *rolloutFacts) bool {
		return f.state.Status == rollout.Done && strings.Contains(frame, "rollout · done · 2/2 serving")
	})
	send(tm, "esc")
	p.wait(t, tm, "the table with gpu3 and gpu4 on and serving", func(frame string, f *rolloutFacts) bool {
		return strings.Contains(rowOf(frame, "gpu3"), "serving") && modeCell(frame, "gpu3", "on") &&
			strings.Contains(rowOf(frame, "gpu4"), "serving") && modeCell(frame, "gpu4", "on")
	})

	final := quit(t, tm)
	// The console's order of lane stages: gpu4 leaves pending only after
	// gpu3 serves.
	at := func(change string) int {
		i := slices.Index(final.changes, change)
		if i < 0 {
			t.Fatalf("no %q among the lane changes %q", change, final.changes)
		}
		return i
	}
	if at("gpu4 applying") < at("gpu3 serving") || at("gpu4 restarting") < at("gpu3 serving") {
		t.Errorf("gpu4 was touched before gpu3 served: %q", final.changes)
	}
	// The hosts' own clock says the same: gpu4's new run started after
	// gpu3's began serving.
	var gpu3Serving, gpu4Started time.Time
	for _, h := range final.hosts {
		switch h.Name {
		case "gpu3":
			if sp := h.Startup.Spans; len(sp) > 0 && sp[len(sp)-1].Phase == startup.Serving {
				gpu3Serving = sp[len(sp)-1].Start
			}
		case "gpu4":
			gpu4Started = h.Startup.StartedAt
		}
	}
	if gpu3Serving.IsZero() || !gpu4Started.After(gpu3Serving) {
		t.Errorf("gpu4's run started at %s, gpu3 served from %s: want gpu4 after", gpu4Started, gpu3Serving)
	}
	for _, h := range []string{"gpu3", "gpu4"} {
		if got, want := doneActions(final.Model, h), []string{"mode kdtree-verify=on", "restart"}; !slices.Equal(got, want) {
			t.Errorf("%s actions done %q, want %q", h, got, want)
		}
	}
	for _, h := range []string{"gpu1", "gpu2"} {
		if got := doneActions(final.Model, h); len(got) != 0 {
			t.Errorf("%s actions done %q, want none (not in the rollout)", h, got)
		}
	}
}

// TestRolloutRatesOnSimulatedFleet rolls kdtree-verify=on out to gpu3
// (failed in validate; the demo's history holds its earlier runs in off)
// and gpu4 (serving in on) as `bringup demo` runs them: once the new runs
// decode steadily, the done rollout's view compares each host's rate with
// its previous run, gpu3's about 4× (the stand-in's on against off),
// gpu4's about 1×, in the summary and in gpu3's row.
func TestRolloutRatesOnSimulatedFleet(t *testing.T) {
	t.Parallel() // a simulated fleet of its own, paced by its clock: waiting, not computing
	p, tm := runConsoleOver(t, runDemoFleet)
	send(tm, "j", "j", "space", "j", "space", "R", "l", "l", "l", "enter")
	p.wait(t, tm, "the confirmation", func(frame string, _ *rolloutFacts) bool {
		return strings.Contains(frame, "set kdtree-verify=on, then restart, on gpu3, gpu4 one at a time")
	})
	send(tm, "y")
	p.wait(t, tm, "the rollout done", func(frame string, f *rolloutFacts) bool {
		return f.state.Status == rollout.Done && strings.Contains(frame, "rollout · done · 2/2 serving")
	})
	gpu3 := regexp.MustCompile(`gpu3 +decode [\d ]+ tok/s with kdtree-verify=on vs [\d ]+ tok/s with off \([3-5]\.\d×, from 1 run\)`)
	gpu4 := regexp.MustCompile(`gpu4 +decode [\d ]+ tok/s with kdtree-verify=on vs [\d ]+ tok/s with kdtree-verify=on \((0\.9|1\.0|1\.1)×, from 1 run\)`)
	p.wait(t, tm, "each host's rate after against before", func(frame string, _ *rolloutFacts) bool {
		return strings.Contains(frame, "decode after the rollout vs each host's run before") && gpu3.MatchString(frame) && gpu4.MatchString(frame) &&
			regexp.MustCompile(`[3-5]\.\d× decode [\d ]+ vs [\d ]+`).MatchString(rowOf(frame, "gpu3"))
	})
	final := quit(t, tm)
	for _, l := range final.rollout.r.Lanes() {
		if r, ok := l.Ratio(); !ok || l.Host == "gpu3" && (r < 3 || r > 5.5) || l.Host == "gpu4" && (r < 0.8 || r > 1.25) {
			t.Errorf("%s: ratio %v %v (before %+v, after %+v)", l.Host, r, ok, l.Before, l.After)
		}
	}
}
