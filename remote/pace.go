package remote

import "github.com/bringup-dev/bringup/remote/startup"

// Pace is what the fleet tells a host's driver about how closely the host
// is being looked at, so that the driver samples hard only while that is
// worth it: a serving fleet of hundreds of hosts is otherwise kept busy by
// its own once-a-second samplers (measured: the GPU stream and the probe
// were a third of a quiet 64-host console's CPU).
type Pace struct {
	// Steady says the host is not starting: the phase engine has it
	// serving, stopped or failed (SteadyPhase). While it starts, the GPU
	// memory climb feeds the weights estimate and the table's sparkline,
	// and readiness should be seen soon after it happens.
	Steady bool
	// Viewed says its host view is open in the console, which shows every
	// sample as it comes.
	Viewed bool
}

// Pacer is a driver that adjusts its sampling to the host's Pace.
// SetPace is called from the fleet's fold loop and from the console's
// Update: it must not block or do IO (a live host stores it and wakes its
// samplers).
type Pacer interface {
	SetPace(Pace)
}

// SteadyPhase reports whether a host in phase p is steady for its Pace:
// serving, stopped or failed. Every other phase is a startup under way
// (stuck and restarting included: a person is likely watching those), or
// unknown (the connection is down and nothing is sampled anyway).
func SteadyPhase(p startup.Phase) bool {
	switch p {
	case startup.Serving, startup.Stopped, startup.Failed:
		return true
	case startup.Starting, startup.Init, startup.Weights, startup.KVCache, startup.GraphCapture,
		startup.HTTP, startup.Warmup, startup.Restarting, startup.Stuck, startup.Unknown:
	}
	return false
}

// steadyHost is SteadyPhase of h once its unit's state has been read: the
// phase a host starts with (stopped) says nothing yet.
func steadyHost(h HostState) bool {
	return h.UnitState.ActiveState != "" && SteadyPhase(h.Startup.Phase)
}

// View tells the fleet which host's view the console shows ("" for none):
// its driver samples at full rate while it is open. It never blocks, so
// the console may call it from Update.
func (f *Fleet) View(host string) {
	f.paceMu.Lock()
	defer f.paceMu.Unlock()
	for i := range f.specs {
		p := f.paces[i]
		p.Viewed = host != "" && f.specs[i].Driver.Name() == host
		f.setPaceLocked(i, p)
	}
}

// setSteady records host i's steadiness, from the fold loop.
func (f *Fleet) setSteady(i int, steady bool) {
	f.paceMu.Lock()
	defer f.paceMu.Unlock()
	p := f.paces[i]
	p.Steady = steady
	f.setPaceLocked(i, p)
}

// setPaceLocked hands host i's driver p if it changed. Under paceMu, so
// that a driver sees its paces in the order they were decided.
func (f *Fleet) setPaceLocked(i int, p Pace) {
	if f.paces[i] == p {
		return
	}
	f.paces[i] = p
	if d, ok := f.specs[i].Driver.(Pacer); ok {
		d.SetPace(p)
	}
}
