package live

import (
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote"
)

func TestGPUInterval(t *testing.T) {
	for _, tc := range []struct {
		name string
		pace remote.Pace
		base time.Duration
		want time.Duration
	}{
		{"starting", remote.Pace{}, 0, time.Second},
		{"starting, viewed", remote.Pace{Viewed: true}, 0, time.Second},
		{"steady", remote.Pace{Steady: true}, 0, 30 * time.Second},
		{"steady, viewed", remote.Pace{Steady: true, Viewed: true}, 0, time.Second},
		{"steady, configured 2 s", remote.Pace{Steady: true}, 2 * time.Second, time.Minute},
		{"starting, configured 2 s", remote.Pace{}, 2 * time.Second, 2 * time.Second},
	} {
		if got := gpuInterval(tc.pace, tc.base); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestProbeRelaxed(t *testing.T) {
	for _, tc := range []struct {
		pace remote.Pace
		want bool
	}{
		{remote.Pace{}, false},
		{remote.Pace{Viewed: true}, false},
		{remote.Pace{Steady: true}, true},
		{remote.Pace{Steady: true, Viewed: true}, false},
	} {
		if got := probeRelaxed(tc.pace); got != tc.want {
			t.Errorf("probeRelaxed(%+v) = %v, want %v", tc.pace, got, tc.want)
		}
	}
}

// The pacer wakes both samplers once per change, never blocks when they
// have not looked yet, and they read the latest pace.
func TestPacerWakes(t *testing.T) {
	h := New(Options{Host: remote.Host{Name: "gpu1"}})
	woke := func(c chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	h.SetPace(remote.Pace{}) // as it was: no wake-up
	if woke(h.pace.gpuWake) || woke(h.pace.probeWake) {
		t.Fatal("a pace that did not change woke a sampler")
	}
	h.SetPace(remote.Pace{Steady: true})
	h.SetPace(remote.Pace{Steady: true, Viewed: true}) // nobody has looked yet
	if !woke(h.pace.gpuWake) || !woke(h.pace.probeWake) {
		t.Fatal("a change did not wake both samplers")
	}
	if woke(h.pace.gpuWake) || woke(h.pace.probeWake) {
		t.Error("two changes left two wake-ups: one is enough")
	}
	if iv := h.pace.gpuPacing(0).Interval(); iv != time.Second {
		t.Errorf("GPU interval %v after the view opened, want 1 s", iv)
	}
	if h.pace.probePacing().Relaxed() {
		t.Error("the probe is relaxed while the view is open")
	}
}
