// Package sim provides simulated GPU hosts: remote.Drivers that produce
// the events a real host would (systemd unit changes, journal lines in the
// real SGLang or vLLM format, readiness probes, GPU samples) on an
// injected clock with a speed factor, and accept the same actions.
// `bringup demo` and the fast UI tests run on them.
package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/history/store"
	"github.com/bringup-dev/bringup/remote/sim/sglang"
)

// DefaultSpeed is the speed at which the seed scenario's gpu3 failure
// (at about 631 virtual seconds) shows after about 35 real seconds.
const DefaultSpeed = 18

// DefaultScenario is the scenario an empty name selects.
const DefaultScenario = "seed"

// Options configure a simulated fleet.
type Options struct {
	// Speed is how many virtual seconds pass per real second when Clock
	// is nil; zero means DefaultSpeed.
	Speed float64
	// Clock is the hosts' clock; nil means a ScaledClock at Speed.
	Clock Clock
	// Kernels is the catalog whose modes the hosts accept; a zero catalog
	// means kernels.DefaultCatalog.
	Kernels kernels.Catalog
	// Unit is the unit every host runs; empty means each engine's own
	// (sglang.service, vllm.service).
	Unit string
	// Seen is the real clock stamped on events as Event.Seen; nil means
	// time.Now.
	Seen func() time.Time
	// Tick is the longest real time Run sleeps between steps; zero means
	// 50 ms.
	Tick time.Duration
}

func (o Options) withDefaults() Options {
	if o.Speed <= 0 {
		o.Speed = DefaultSpeed
	}
	if o.Seen == nil {
		o.Seen = time.Now
	}
	if o.Clock == nil {
		o.Clock = NewScaledClock(o.Speed, o.Seen)
	}
	if len(o.Kernels.Kernels) == 0 {
		o.Kernels = kernels.DefaultCatalog()
	}
	if o.Tick <= 0 {
		o.Tick = 50 * time.Millisecond
	}
	return o
}

// Scenarios lists the known scenario names.
func Scenarios() []string { return []string{"seed", "all-ok", "crashloop", "mixed", "multinode"} }

// Scenario returns the host specs of the named scenario ("" is "seed"):
//   - seed: gpu1..gpu4 start SGLang with weight loads of 8-9 minutes and
//     graph captures of 85-105 s, serving after 11-12 minutes; gpu3 runs
//     KDTREE_MODE=validate and dies as graph capture begins, at ~631 s;
//     its earlier runs (History) were in off, at a quarter of on's rate.
//   - all-ok: the same with gpu3 in mode on; all four serve.
//   - crashloop: as all-ok, but gpu3's unit (Restart=on-failure) fails
//     in NCCL init seconds after every start.
//   - mixed: gpu1 and gpu2 as in seed; gpu3 and gpu4 run vLLM
//     (vllm.service, `vllm serve`, port 8000) on the same timelines: gpu3
//     in mode on serves, gpu4 runs KDTREE_MODE=validate and dies as graph
//     capture begins, at ~593 s, the way vLLM reports it.
//   - multinode: two SGLang deployments of two nodes each (--nnodes 2,
//     --dist-init-addr gpu1:5000 and gpu3:5000), started together. gpu1
//     and gpu2 serve as all-ok's do. Node 1 of the other, gpu4, fails in
//     NCCL init ~33 s in; node 0, gpu3, waits for it at the rendezvous
//     store until its socket times out two seconds later. gpu3's clock is
//     3 s behind, so by the journals' own stamps gpu3 looks first: the
//     measured offset puts the blame back on gpu4.
func Scenario(name string) ([]HostSpec, error) {
	if name == "" {
		name = DefaultScenario
	}
	if !slices.Contains(Scenarios(), name) {
		return nil, fmt.Errorf("unknown scenario %q (known: %s)", name, strings.Join(Scenarios(), ", "))
	}
	host := func(n int, after, weights, capture time.Duration, mode string) HostSpec {
		p := sglang.Defaults()
		p.Init, p.KV = 45*time.Second, 30*time.Second
		p.Weights, p.Capture = weights, capture
		return HostSpec{Name: fmt.Sprintf("gpu%d", n), StartAfter: after, Params: p,
			Modes: map[string]string{"kdtree-verify": mode}}
	}
	specs := []HostSpec{
		host(1, 0, 8*time.Minute+10*time.Second, 85*time.Second, "on"),
		host(2, 4*time.Second, 8*time.Minute+40*time.Second, 95*time.Second, "on"),
		// Capture begins 7 + 84.6 + 538 ≈ 630 s after the fleet starts.
		host(3, 7*time.Second, 8*time.Minute+58*time.Second, 90*time.Second, "validate"),
		host(4, 2*time.Second, 8*time.Minute+25*time.Second, 105*time.Second, "on"),
	}
	// gpu3 served in off before it tried the new kernel: its history is
	// the old rate the new mode is measured against.
	if name == DefaultScenario {
		specs[2].Earlier = map[string]string{"kdtree-verify": "off"}
	}
	if name == "multinode" {
		return multinode(specs), nil
	}
	switch name {
	case "all-ok":
		specs[2].Modes["kdtree-verify"] = "on"
	case "crashloop":
		specs[2].Modes["kdtree-verify"] = "on"
		specs[2].Failure, specs[2].Restart = sglang.FailCrashLoop, true
	case "mixed":
		specs[2].Modes["kdtree-verify"] = "on"
		specs[3].Modes["kdtree-verify"] = "validate"
		for i := 2; i < 4; i++ {
			specs[i].Engine, specs[i].Params.Port = kernels.EngineVLLM, vllmPort
		}
	}
	return specs, nil
}

// multinode makes the all-ok hosts two two-node deployments, one of
// which fails (see Scenario).
func multinode(specs []HostSpec) []HostSpec {
	for i := range specs {
		specs[i].Modes["kdtree-verify"] = "on"
		p := &specs[i].Params
		p.NNodes, p.NodeRank = 2, i%2
		p.DistInitAddr = fmt.Sprintf("%s:5000", specs[i-i%2].Name)
	}
	// The failing pair starts together, as a deployment's restart does.
	specs[2].StartAfter, specs[3].StartAfter = 2*time.Second, 2*time.Second
	specs[3].Failure = sglang.FailCrashLoop
	// Init begins 18 s in, node 1 dies 22.5 s in: the store times out
	// 6.5 s after init began, 2 s after the peer's death.
	specs[2].Failure = sglang.FailPeerLost
	specs[2].Params.PeerWait = 6500 * time.Millisecond
	specs[2].ClockOffset = -3 * time.Second
	return specs
}

// Groups are the scenario's groups of hosts, as a config's groups: two
// racks of two (mixed: by engine), so that the demo shows the table's
// group rows and the palette takes a group's name.
func Groups(scenario string) map[string][]string {
	if scenario == "mixed" {
		return map[string][]string{"sglang": {"gpu1", "gpu2"}, "vllm": {"gpu3", "gpu4"}}
	}
	return map[string][]string{"rack-a": {"gpu1", "gpu2"}, "rack-b": {"gpu3", "gpu4"}}
}

// NewHosts builds the simulated hosts of a scenario on one clock, which
// it returns (opts.Clock, or the scaled clock it made).
func NewHosts(scenario string, opts Options) ([]*Host, Clock, error) {
	specs, err := Scenario(scenario)
	if err != nil {
		return nil, nil, err
	}
	opts = opts.withDefaults()
	if err := opts.Kernels.Validate(); err != nil {
		return nil, nil, fmt.Errorf("simulated fleet: %w", err)
	}
	hosts := make([]*Host, len(specs))
	for i, s := range specs {
		if hosts[i], err = NewHost(s, opts); err != nil {
			return nil, nil, fmt.Errorf("scenario %s: %w", scenario, err)
		}
	}
	return hosts, opts.Clock, nil
}

// NewFleet builds the scenario's hosts as drivers for fleet.Fleet.
func NewFleet(scenario string, opts Options) ([]remote.Driver, Clock, error) {
	hosts, clock, err := NewHosts(scenario, opts)
	if err != nil {
		return nil, nil, err
	}
	drivers := make([]remote.Driver, len(hosts))
	for i, h := range hosts {
		drivers[i] = h
	}
	return drivers, clock, nil
}

// DemoFleet builds a fleet over scenario's hosts at speed and returns it
// with the simulation's clock (host time). Its startup history is the
// hosts' earlier runs (History), in memory: the demo shows ETAs and
// leaves the user's real history alone. wrap, if not nil, may wrap the
// drivers (a recording) before the fleet is built.
func DemoFleet(scenario string, speed float64, readOnly bool, wrap func([]fleet.HostSpec, fleet.Options) error) (*fleet.Fleet, Clock, error) {
	if speed <= 0 {
		return nil, nil, fmt.Errorf("speed %v: must be greater than 0", speed)
	}
	cat := kernels.DefaultCatalog()
	hosts, clock, err := NewHosts(scenario, Options{Speed: speed, Kernels: cat})
	if err != nil {
		return nil, nil, fmt.Errorf("scenario: %w", err)
	}
	specs := make([]fleet.HostSpec, len(hosts))
	for i, h := range hosts {
		specs[i] = fleet.HostSpec{Driver: h, Unit: h.Unit(), Engine: h.Engine()}
	}
	past, err := History(scenario, HistoryRuns, clock.Now(), Options{Kernels: cat})
	if err != nil {
		return nil, nil, err
	}
	opts := fleet.Options{Kernels: cat, ReadOnly: readOnly, Clock: clock,
		Observers: []fleet.Observer{fleet.KernelCheck()}}.WithHistory(store.NewSink(store.NewMemoryStore(past)))
	if wrap != nil {
		if err := wrap(specs, opts); err != nil {
			return nil, nil, err
		}
	}
	f, err := fleet.New(specs, opts)
	return f, clock, err
}
