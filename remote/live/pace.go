package live

import (
	"sync"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/gpu"
	"github.com/bringup-dev/bringup/remote/probe"
)

// steadyGPUFactor is how many times slower the GPU sampler runs on a
// steady host nobody has open: every 30 s at the default 1 s. The table's
// GPU MEM sparkline still moves, and memory creeping up on a serving host
// is still seen; the host view samples at full rate again.
const steadyGPUFactor = 30

// gpuInterval is the GPU sampling interval at pace p, base being the
// configured one (0 = gpu.DefaultInterval): base while the host starts
// (the weights estimate and the sparkline follow the memory climbing) or
// while its view is open, steadyGPUFactor×base otherwise.
func gpuInterval(p remote.Pace, base time.Duration) time.Duration {
	if base <= 0 {
		base = gpu.DefaultInterval
	}
	if p.Steady && !p.Viewed {
		return base * steadyGPUFactor
	}
	return base
}

// probeRelaxed says whether the probe may run at its relaxed interval at
// pace p: the host is steady and its view is not open (the view shows
// each probe's answer and latency).
func probeRelaxed(p remote.Pace) bool { return p.Steady && !p.Viewed }

// pacer holds a host's Pace and wakes its samplers when it changes. It
// never blocks: SetPace is called from the fleet's loop and the console.
type pacer struct {
	mu   sync.Mutex
	pace remote.Pace
	// gpuWake and probeWake hold one wake-up each (buffered 1): a sampler
	// that has not looked yet reads the latest pace when it does.
	gpuWake, probeWake chan struct{}
}

func newPacer() *pacer {
	return &pacer{gpuWake: make(chan struct{}, 1), probeWake: make(chan struct{}, 1)}
}

func (p *pacer) get() remote.Pace {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pace
}

func (p *pacer) set(v remote.Pace) {
	p.mu.Lock()
	changed := p.pace != v
	p.pace = v
	p.mu.Unlock()
	if !changed {
		return
	}
	for _, c := range []chan struct{}{p.gpuWake, p.probeWake} {
		select {
		case c <- struct{}{}:
		default: // a wake-up is already waiting
		}
	}
}

// gpuPacing is the GPU sampler's pacing at base interval.
func (p *pacer) gpuPacing(base time.Duration) gpu.Pacing {
	return gpu.Pacing{Interval: func() time.Duration { return gpuInterval(p.get(), base) }, Changed: p.gpuWake}
}

// probePacing is the probe's pacing.
func (p *pacer) probePacing() probe.Pacing {
	return probe.Pacing{Relaxed: func() bool { return probeRelaxed(p.get()) }, Changed: p.probeWake}
}

// SetPace samples hard while the host starts or its view is open, and
// slowly otherwise (see gpuInterval and probe.RunPaced). It never blocks.
func (h *Host) SetPace(p remote.Pace) { h.pace.set(p) }

// A live host adjusts its samplers to the fleet's pace.
var _ remote.Pacer = (*Host)(nil)
