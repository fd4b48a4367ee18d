package sim

import (
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/gpu"
	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/sim/sglang"
	"github.com/bringup-dev/bringup/remote/startup"
)

// HistoryRuns is how many earlier startups the demo gives each host: enough
// for the medians to mean something, few enough to make quickly.
const HistoryRuns = 4

// historyLimit bounds the virtual time one earlier startup may take to
// serve; the scenarios' hosts serve in about twelve minutes.
const historyLimit = time.Hour

// historyStride is the virtual time between steps of an earlier startup:
// the fleet folds a running simulation about as often (its flush at the
// default speed), so stuck checks see the same gaps.
const historyStride = time.Second

// History is the startup history of the scenario's hosts from before the
// demo: for each host, runs earlier successful startups, each with the
// steady decode rate it then served at, the k-th newest
// starting k days before `before` (at the host's StartAfter), so all of
// them served long before it. Each is the host as it normally runs: its
// scripted failure (a crash loop) left out and every kernel mode that is
// not capture-safe (validate) replaced by the kernel's first safe mode, so
// a host in validate has history only for the mode it usually serves in.
// Its phase lengths vary by a few per cent from run to run, the way real
// startups do.
//
// Nothing here is written by hand: each run is the simulated host itself
// (the same journal lines, unit changes, probes and GPU samples it sends
// the fleet) stepped offline on a manual clock, folded by the phase engine
// (startup.Tracker) as the fleet folds a live host, and recorded the way
// the fleet records a startup that reaches serving. opts gives the catalog
// and unit; its clock, speed and Seen are not used.
func History(scenario string, runs int, before time.Time, opts Options) ([]history.Record, error) {
	specs, err := Scenario(scenario)
	if err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	var out []history.Record
	for _, spec := range specs {
		usual := usualSpec(spec, opts.Kernels)
		// A host that ran other modes before (gpu3 in off) was benched
		// then: its A/B line compares a bench of the new mode with them.
		benched := spec.Earlier != nil
		for k := 1; k <= runs; k++ {
			rs, err := earlierRun(usual, k, before.Add(-time.Duration(k)*24*time.Hour+spec.StartAfter), benched, opts)
			if err != nil {
				return nil, fmt.Errorf("scenario %s history: %w", scenario, err)
			}
			out = append(out, rs...)
		}
	}
	return out, nil
}

// usualSpec is spec as the host runs on a normal day: no scripted failure
// and no automatic restarts, no kernel mode that fails graph capture, and
// started at once.
func usualSpec(spec HostSpec, cat kernels.Catalog) HostSpec {
	s := spec
	s.Failure, s.Restart, s.StartAfter = sglang.FailNone, false, 0
	s.Modes = map[string]string{}
	if spec.Earlier != nil {
		maps.Copy(s.Modes, spec.Earlier)
		return s
	}
	for name, mode := range spec.Modes {
		if k, ok := cat.Kernel(name); ok {
			if m, known := k.Mode(mode); known && !m.CaptureSafe {
				if safe := k.SafeModes(); len(safe) > 0 {
					mode = safe[0]
				}
			}
		}
		s.Modes[name] = mode
	}
	return s
}

// jitter varies the phase lengths of the k-th earlier run of spec by a
// few per cent, from a seed of the host's name and k.
func jitter(spec HostSpec, k int) HostSpec {
	f := fnv.New64a()
	f.Write([]byte(spec.Name))
	rng := rand.New(rand.NewPCG(f.Sum64(), uint64(k)))
	vary := func(d *time.Duration, frac float64) {
		*d = time.Duration(float64(*d) * (1 + frac*(2*rng.Float64()-1)))
	}
	p := &spec.Params
	vary(&p.Init, 0.05)
	vary(&p.Weights, 0.03)
	vary(&p.KV, 0.05)
	vary(&p.Capture, 0.06)
	return spec
}

// steadyLimit bounds the virtual time an earlier run serves before its
// decode rate is steady.
const steadyLimit = 10 * time.Minute

// earlierRun plays the k-th earlier startup of spec from start until the
// phase engine sees it serving, and on until its decode rate is steady, and
// returns its records: the startup, then the throughput, as the fleet
// records them; with benched, then the result of a default smoke load
// (the console's b) run on it once steady.
func earlierRun(spec HostSpec, k int, start time.Time, benched bool, opts Options) ([]history.Record, error) {
	spec = jitter(spec, k)
	clock := NewManualClock(start)
	h, err := NewHost(spec, Options{Clock: clock, Kernels: opts.Kernels, Unit: opts.Unit, Seen: clock.Now})
	if err != nil {
		return nil, err
	}
	// Numbered apart from the invocations the live host will make, so the
	// earlier runs have their own seeds, PIDs and invocation IDs.
	h.nInv = 100 * k

	tr := startup.NewTracker(startup.Options{Engine: h.Engine(), Kernels: opts.Kernels})
	var (
		modes     map[string]string
		last      *event.GPU
		weightMem int
		served    time.Time
	)
	// follow does what the fleet does with a change: note the memory per
	// GPU once weights have loaded, and the moment the startup serves.
	follow := func(cs []startup.Change) {
		for _, c := range cs {
			if c.Kind != startup.ChangePhase {
				continue
			}
			if weightMem == 0 && c.Phase.Rank() > startup.Weights.Rank() && last != nil {
				weightMem = gpu.MemPerGPU(*last)
			}
			if c.Phase == startup.Serving && served.IsZero() {
				served = c.Time
			}
		}
	}
	// The fleet hears first that the host is reachable, as Run says.
	follow(tr.Apply(h.stamp(event.Event{Kind: event.KindConn, Time: start, Conn: &event.Conn{State: event.ConnUp}})))
	step := func(now time.Time) {
		for _, ev := range h.Step(now) {
			switch {
			case ev.Unit != nil:
				modes = kernels.ModeMap(opts.Kernels.ModesIn(ev.Unit.Environment))
			case ev.GPU != nil:
				g := *ev.GPU
				last = &g
			}
			follow(tr.Apply(ev))
		}
		follow(tr.Tick(now))
	}
	for now := start; served.IsZero(); now = clock.Advance(historyStride) {
		if now.Sub(start) > historyLimit {
			return nil, fmt.Errorf("%s: earlier run %d did not serve within %v (phase %s)", spec.Name, k, historyLimit, tr.State().Phase)
		}
		step(now)
	}
	st := tr.State()
	if weightMem == 0 && last != nil {
		weightMem = gpu.MemPerGPU(*last)
	}
	run := history.Record{Time: served, Host: h.Name(), Unit: h.Unit(), Engine: st.Engine, Modes: modes,
		InvocationID: st.InvocationID, Spans: st.Spans, Total: served.Sub(st.StartedAt), WeightMemMiB: weightMem}
	// Serving on, as the fleet sees it, until the decode rate is steady.
	for now := clock.Now(); ; now = clock.Advance(historyStride) {
		if now.Sub(served) > steadyLimit {
			return nil, fmt.Errorf("%s: earlier run %d printed no steady decode rate within %v of serving", spec.Name, k, steadyLimit)
		}
		step(now)
		s := tr.State()
		if s.Stats == nil {
			continue
		}
		if tps, ok := history.Steady(s.Stats.Decode); ok {
			at, mm := s.Stats.Latest.Time, kernels.ModeMap(s.Modes)
			out := []history.Record{run, history.Throughput(at, h.Name(), h.Unit(), s.Engine, mm, s.InvocationID, tps)}
			if benched {
				b := wholeBench(h.Name(), h.inv.script.Params, 1)
				out = append(out, history.BenchRecord(at.Add(b.Duration), h.Name(), h.Unit(), s.Engine, mm, s.InvocationID, b))
			}
			return out, nil
		}
	}
}
