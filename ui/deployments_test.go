package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/deployment"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
)

// Two nodes of a multi-node SGLang whose command lines name one
// rendezvous (the lines of https://github.com/sgl-project/sglang/pull/550),
// and a host serving alone.
func deploymentFleet(t0 time.Time) []remote.HostState {
	line := "python3 -m sglang.launch_server --model-path meta-llama/Meta-Llama-3-70B-Instruct --tp 16 --nccl-init-addr 172.16.5.82:20000 --nnodes 2 --node-rank "
	nccl := &startup.Diagnosis{Cause: "nccl-error", Summary: "NCCL failed", Time: t0}
	peer := &startup.Diagnosis{Cause: "peer-crashed", Summary: "a peer worker closed its connection", Time: t0.Add(time.Second)}
	return []remote.HostState{
		{Name: "gpu0", UnitState: event.Unit{ExecStart: line + "0"}, Startup: startup.Startup{Phase: startup.Failed, Diag: peer}},
		{Name: "gpu1", UnitState: event.Unit{ExecStart: line + "1"}, Startup: startup.Startup{Phase: startup.Failed, Diag: nccl}},
		{Name: "solo", Startup: startup.Startup{Phase: startup.Serving}},
	}
}

// TestDeploymentRow: the first deployment found groups the table by
// deployment: one row for the pair, with its verdict and the node that
// failed first blamed; the host serving alone stays a plain row.
func TestDeploymentRow(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	tm := newTableModel(DefaultKeyMap(), kernels.DefaultCatalog(), nil, 20)
	tm.styles = NewStyles(true, true)
	tm.setHosts(deploymentFleet(t0))
	if g := tm.grouping(); g == nil || g.by != byDeployment {
		t.Fatalf("grouping %v, want by deployment", g)
	}
	view := tm.View(200, 20, t0, nil)
	lines := strings.Split(view, "\n")
	if len(lines) != 3 {
		t.Fatalf("view has %d lines, want header, the deployment, solo:\n%s", len(lines), view)
	}
	for _, want := range []string{"▸ 172.16.5.82:20000", "2 nodes", "failed · node 0 gpu0 peer lost · node 1 gpu1 failed first: nccl-error (NCCL failed)"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("deployment row %q lacks %q", lines[1], want)
		}
	}
	if !strings.Contains(lines[2], "solo") {
		t.Errorf("last row %q, want the host serving alone", lines[2])
	}
	// t cycles away from the grouping and a new batch does not force it
	// back.
	tm.cycleGrouping()
	tm.setHosts(deploymentFleet(t0))
	if g := tm.grouping(); g != nil {
		t.Errorf("grouping %q after t: a person's choice must stay", g.by)
	}
}

// TestDeclaredDeploymentRow: the config's deployment names the row and
// orders its nodes; a starting deployment shows its slowest phase.
func TestDeclaredDeploymentRow(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	tm := newTableModel(DefaultKeyMap(), kernels.DefaultCatalog(), nil, 20)
	tm.styles = NewStyles(true, true)
	tm.declared = []deployment.Declared{{Name: "kimi", Hosts: []string{"b", "a"}}}
	tm.setHosts([]remote.HostState{
		{Name: "a", Startup: startup.Startup{Phase: startup.GraphCapture}},
		{Name: "b", Startup: startup.Startup{Phase: startup.Weights}},
	})
	row := strings.Split(tm.View(200, 20, t0, nil), "\n")[1]
	if want := "kimi  2 nodes    starting weights · node 0 b weights · node 1 a graph-capture"; !strings.Contains(row, want) {
		t.Errorf("row %q lacks %q", row, want)
	}
}
