package remote

import (
	"testing"

	"github.com/bringup-dev/bringup/remote/startup"
)

func TestSteadyPhase(t *testing.T) {
	for _, tc := range []struct {
		p    startup.Phase
		want bool
	}{
		{startup.Serving, true},
		{startup.Stopped, true},
		{startup.Failed, true},
		{startup.Starting, false},
		{startup.Init, false},
		{startup.Weights, false}, // the weights estimate reads GPU memory
		{startup.KVCache, false},
		{startup.GraphCapture, false},
		{startup.HTTP, false},
		{startup.Warmup, false},
		{startup.Restarting, false},
		{startup.Stuck, false},
		{startup.Unknown, false},
	} {
		if got := SteadyPhase(tc.p); got != tc.want {
			t.Errorf("SteadyPhase(%s) = %v, want %v", tc.p, got, tc.want)
		}
	}
}
