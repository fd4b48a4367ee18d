package ui

import (
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/remote/rollout"
)

// TestLaneRate: the rollout row's word on a serving host's decode rate,
// for each of what may be known.
func TestLaneRate(t *testing.T) {
	off, on := map[string]string{"kdtree-verify": "off"}, map[string]string{"kdtree-verify": "on"}
	for _, tc := range []struct {
		name string
		l    rollout.Lane
		want string
	}{
		{"faster", rollout.Lane{Before: rollout.Rate{Modes: off, TPS: 480}, After: rollout.Rate{Modes: on, TPS: 1920}}, "4.0× decode 1 920 vs 480"},
		{"slower", rollout.Lane{Before: rollout.Rate{Modes: on, TPS: 500}, After: rollout.Rate{Modes: on, TPS: 350}, Slower: true}, "⚠ −30 % decode 350 vs 500"},
		{"no run before", rollout.Lane{After: rollout.Rate{Modes: on, TPS: 1920}}, "decode 1 920 tok/s"},
		{"not steady yet", rollout.Lane{Before: rollout.Rate{Modes: off, TPS: 480}}, "decode … (480 before)"},
	} {
		if got := laneRate(tc.l); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	// The done view's block says the same at length, the slower one first
	// with its drop.
	v := &rolloutView{styles: newStyles(true, true)}
	block := strings.Join(v.ratesBlock([]rollout.Lane{
		{Host: "gpu1", Stage: rollout.StageServing, Before: rollout.Rate{Modes: on, TPS: 500}, After: rollout.Rate{Modes: on, TPS: 350}, Slower: true},
		{Host: "gpu2", Stage: rollout.StageServing},
	}, 160), "\n")
	if !strings.Contains(block, "gpu1 ⚠ 30 % slower: decode 350 tok/s with kdtree-verify=on vs 500 tok/s with kdtree-verify=on (0.7×, from 1 run)") ||
		strings.Contains(block, "gpu2") {
		t.Errorf("rates block:\n%s", block)
	}
}
