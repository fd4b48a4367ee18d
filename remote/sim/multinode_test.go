package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/deployment"
	"github.com/bringup-dev/bringup/remote/startup"
)

// TestMultinodeScenario: the demo's two-node deployments are found from
// the units' command lines; in the failing one node 1 (gpu4) dies in
// NCCL init and node 0 (gpu3) loses it at the store. gpu3's clock is 3 s
// behind, so by the journals' stamps it looks first; the offset its
// connection reports puts the blame on gpu4.
func TestMultinodeScenario(t *testing.T) {
	_, wait := scenarioFleet(t, "multinode", 50)
	settled := func(h remote.HostState) bool { return h.Startup.Phase == startup.Failed && !h.Provisional }
	b := wait("both nodes of gpu3:5000 failed and settled", func(b remote.Batch) bool {
		n := 0
		for _, h := range b.Hosts {
			if (h.Name == "gpu3" || h.Name == "gpu4") && settled(h) && h.Startup.Diag != nil {
				n++
			}
		}
		return n == 2
	})
	states := map[string]remote.HostState{}
	for _, h := range b.Hosts {
		states[h.Name] = h
	}
	if got := states["gpu3"].Clock.Offset; got != -3*time.Second {
		t.Errorf("gpu3's clock offset %v, want -3s", got)
	}
	if c := states["gpu3"].Startup.Diag.Cause; c != "dist-init-failed" {
		t.Errorf("gpu3's cause %q, want dist-init-failed (the store timed out)", c)
	}
	deps := deployment.FromStates(nil, b.Hosts)
	var names []string
	for _, d := range deps {
		names = append(names, d.Name+"="+strings.Join(d.Hosts(), ","))
	}
	if got := strings.Join(names, " "); got != "gpu1:5000=gpu1,gpu2 gpu3:5000=gpu3,gpu4" {
		t.Fatalf("deployments %s", got)
	}
	v := deployment.Judge(deps[1], states, deployment.Offsets(states))
	if v.Outcome != deployment.OutcomeFailed || v.First != 1 || v.Diag == nil || v.Diag.Cause != "nccl-error" {
		t.Errorf("verdict %s, node %d first (%v); want failed, node 1 with nccl-error", v.Outcome, v.First, v.Diag)
	}
	if v.Nodes[0].Blame != "peer lost (node 1 failed first)" {
		t.Errorf("node 0's blame %q", v.Nodes[0].Blame)
	}
	// Without the offsets the stamps alone blame the wrong node: the
	// scenario shows the correction at work.
	if raw := deployment.Judge(deps[1], states, nil); raw.First != 0 {
		t.Errorf("by the raw stamps node %d is first, want 0 (gpu3's clock is behind)", raw.First)
	}
}
