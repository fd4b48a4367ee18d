package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/deployment"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/fleet"
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

// orderReport records the actions' outcomes in order as "host kind stage".
type orderReport struct{ got []string }

func (r *orderReport) Refused(host string, a remote.Action, err error) {
	r.got = append(r.got, host+" "+string(a.Kind)+" refused")
}
func (r *orderReport) Action(ev event.Event) {
	r.got = append(r.got, ev.Host+" "+ev.Action.Name+" "+string(ev.Action.Stage))
}
func (r *orderReport) Change(remote.HostChange, time.Time) {}
func (r *orderReport) Ended(remote.HostState)              {}

// TestMultinodeRestartInRankOrder: a restart of the serving deployment
// stops both nodes, then starts node 0 and, once it is started, node 1;
// both are followed until the head serves.
func TestMultinodeRestartInRankOrder(t *testing.T) {
	cat := kernels.DefaultCatalog()
	hosts, clock, err := NewHosts("multinode", Options{Speed: 300, Kernels: cat, Tick: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	specs := make([]fleet.HostSpec, len(hosts))
	for i, h := range hosts {
		specs[i] = fleet.HostSpec{Driver: h, Unit: h.Unit(), Engine: h.Engine()}
	}
	f, err := fleet.New(specs, fleet.Options{Kernels: cat, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fl := fleet.Follow(ctx, f)
	defer func() { _ = fl.Stop(0) }()
	pair := []string{"gpu1", "gpu2"}
	states, err := fl.AwaitUnits(ctx, pair, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	list := []remote.HostState{states["gpu1"], states["gpu2"]}
	steps, err := deployment.Steps(deployment.FromStates(nil, list), pair, []remote.Action{{Kind: remote.ActRestart}})
	if err != nil {
		t.Fatal(err)
	}
	var rep orderReport
	done := fl.ApplySteps(ctx, pair, steps, states, &rep)
	for _, d := range done {
		if !d.Finished || d.Failed {
			t.Errorf("%s: finished %v failed %v in %s; want finished", d.Host, d.Finished, d.Failed, d.Phase)
		}
	}
	at := func(line string) int {
		for i, l := range rep.got {
			if l == line {
				return i
			}
		}
		t.Fatalf("no %q in %q", line, rep.got)
		return -1
	}
	if !(at("gpu1 stop done") < at("gpu1 restart started") && at("gpu2 stop done") < at("gpu1 restart started") &&
		at("gpu1 restart done") < at("gpu2 restart started")) {
		t.Errorf("order %q: want both stopped, then gpu1 started, then gpu2", rep.got)
	}
}
