package ui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

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

// feedSteps runs cmd and feeds what it says to m, then the commands m
// answers with, until none is left; commands that wait (a status line's
// expiry) are left.
func feedSteps(m *Model, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	got := make(chan tea.Msg, 1)
	go func() { got <- cmd() }()
	var msg tea.Msg
	select {
	case msg = <-got:
	case <-time.After(200 * time.Millisecond):
		return
	}
	if b, ok := msg.(tea.BatchMsg); ok {
		for _, c := range b {
			feedSteps(m, c)
		}
		return
	}
	if msg == nil {
		return
	}
	if _, ok := msg.(stepIssued); !ok {
		return
	}
	_, next := m.Update(msg)
	feedSteps(m, next)
}

// TestDeploymentRestartFromTheConsole: r on a deployment's row asks once
// for the whole deployment, saying how it goes, then stops both nodes and
// starts node 0 and, once started, node 1.
func TestDeploymentRestartFromTheConsole(t *testing.T) {
	t.Parallel() // a simulated fleet of its own, paced by its clock: waiting, not computing
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	src := newFake()
	m := New(src, Options{Title: "t", Kernels: kernels.DefaultCatalog(), Now: func() time.Time { return t0 }, NoColor: true})
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 30})
	hosts := deploymentFleet(t0)
	m.Update(batchMsg(remote.Batch{Hosts: hosts}))
	press(m, "r")
	if out := render(m); !strings.Contains(out, "172.16.5.82:20000") || !strings.Contains(out, "as a whole: stop gpu0, stop gpu1; then restart gpu0; then restart gpu1") {
		t.Fatalf("the confirmation does not say how the deployment restarts:\n%s", out)
	}
	feedSteps(m, press(m, "y"))
	calls := func() string {
		var out []string
		for _, c := range src.calls {
			out = append(out, c.host+":"+string(c.a.Kind))
		}
		return strings.Join(out, " ")
	}
	if got := calls(); got != "gpu0:stop gpu1:stop" && got != "gpu1:stop gpu0:stop" {
		t.Fatalf("first issued %q, want both nodes stopped", got)
	}
	end := func(id int) {
		c := src.calls[id-1]
		_, cmd := m.Update(batchMsg(remote.Batch{Hosts: hosts, Events: []event.Event{{Host: c.host, Kind: event.KindAction, Time: t0,
			Action: &event.ActionResult{ID: id, Name: string(c.a.Kind), Stage: event.ActionDone}}}}))
		feedSteps(m, cmd)
	}
	end(1)
	if n := len(src.calls); n != 2 {
		t.Fatalf("one node stopped: %q issued, want nothing more", calls())
	}
	end(2)
	if got := calls(); !strings.HasSuffix(got, " gpu0:restart") {
		t.Fatalf("both stopped: issued %q, want node 0's restart next", got)
	}
	end(3)
	if got := calls(); !strings.HasSuffix(got, " gpu0:restart gpu1:restart") {
		t.Fatalf("node 0 started: issued %q, want node 1's restart next", got)
	}
	end(4)
	if len(m.plans.list) != 0 {
		t.Errorf("%d plans left after every step ended", len(m.plans.list))
	}
}
