package fleet

import (
	"github.com/bringup-dev/bringup/remote"
)

// viewed says whether host i's view is open in the console (Fleet.View).
func (f *Fleet) viewed(i int) bool {
	f.paceMu.Lock()
	defer f.paceMu.Unlock()
	return f.paces[i].Viewed
}

// paceSteady tells each driver whose host became steady, or stopped
// being so, among the hosts taken anew (indices into hosts and states),
// and returns how many hosts are steady now, given steady before.
func (f *Fleet) paceSteady(hosts []*hostFold, states []remote.HostState, taken []int, steady int) int {
	for _, i := range taken {
		if st := steadyHost(states[i]); st != hosts[i].steady {
			hosts[i].steady = st
			if st {
				steady++
			} else {
				steady--
			}
			f.setSteady(i, st)
		}
	}
	return steady
}

// freeOnSteady returns the heap's free memory to the system, once, when
// every host has turned steady (from the fold loop, on that transition):
// the start's garbage (handshakes, catch-up reads, the first D-Bus
// reads) is otherwise kept resident for good, since a quiet fleet
// allocates too little for the collector to run and the runtime returns
// only what it scavenges slowly (measured at 256 hosts: 234-257 MiB
// resident after a quiet minute, 152-158 MiB after this). It runs on its
// own goroutine, which Run waits for: a forced collection of the live
// heap takes tens of milliseconds the fold loop should not stall for;
// one already under way is not doubled.
func (f *Fleet) freeOnSteady() {
	if !f.freeing.CompareAndSwap(false, true) {
		return
	}
	f.bg.Add(1)
	go func() {
		defer f.bg.Done()
		defer f.freeing.Store(false)
		f.freeMemory()
	}()
}

// steadyHost is whether h's phase is Steady once its unit's state has
// been read: the phase a host starts with (stopped) says nothing yet.
func steadyHost(h remote.HostState) bool {
	return h.UnitState.ActiveState != "" && h.Startup.Phase.Steady()
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
func (f *Fleet) setPaceLocked(i int, p remote.Pace) {
	if f.paces[i] == p {
		return
	}
	f.paces[i] = p
	if d, ok := f.specs[i].Driver.(remote.Pacer); ok {
		d.SetPace(p)
	}
}
