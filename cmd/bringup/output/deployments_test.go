package output

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/deployment"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
)

// TestDeploymentsJSON: status names each node's deployment on its line,
// and the summary gives each deployment's verdict: node 1 failed first
// (NCCL), by its journal corrected for node 0's clock 3 s behind, and
// is blamed; the pair inferred from the command lines, a declared one
// beside it.
func TestDeploymentsJSON(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	line := "python3 -m sglang.launch_server --model-path /models/K2 --tp 16 --dist-init-addr 10.0.0.1:5000 --nnodes 2 --node-rank "
	failed := func(name, rank, cause string, at time.Time, off time.Duration) remote.HostState {
		return remote.HostState{Name: name, UnitState: event.Unit{ExecStart: line + rank}, Clock: event.Clock{Offset: off},
			Startup: startup.Startup{Phase: startup.Failed, Diag: &startup.Diagnosis{Cause: cause, Summary: cause + " summary", Time: at}}}
	}
	hosts := []remote.HostState{
		// node 0's clock is 3 s behind: its stamp looks earlier than node 1's
		failed("gpu1", "0", "dist-init-failed", t0.Add(-time.Second), -3*time.Second),
		failed("gpu2", "1", "nccl-error", t0, 0),
		{Name: "gpu3", Startup: startup.Startup{Phase: startup.Serving}},
		{Name: "gpu4", Startup: startup.Startup{Phase: startup.Serving}},
		{Name: "solo", Startup: startup.Startup{Phase: startup.Serving}},
	}
	var b bytes.Buffer
	StatusJSON(&b, hosts, []deployment.Declared{{Name: "kimi-b", Hosts: []string{"gpu3", "gpu4"}}}, "failed", 1)
	lines := checkLines(t, b.String())
	got := map[string]string{}
	var sum Line
	for _, raw := range lines {
		var l Line
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatal(err)
		}
		if l.Kind == "status" {
			got[l.Host] = l.Deployment
		}
		if l.Kind == "summary" {
			sum = l
		}
	}
	want := map[string]string{"gpu1": "10.0.0.1:5000", "gpu2": "10.0.0.1:5000", "gpu3": "kimi-b", "gpu4": "kimi-b", "solo": ""}
	for h, d := range want {
		if got[h] != d {
			t.Errorf("%s: deployment %q, want %q", h, got[h], d)
		}
	}
	js, _ := json.Marshal(sum.Deployments)
	wantJS := `[{"deployment":"kimi-b","outcome":"serving","phase":"serving","nodes":["gpu3","gpu4"]},` +
		`{"deployment":"10.0.0.1:5000","outcome":"failed","phase":"failed","nodes":["gpu1","gpu2"],"blamed":"gpu2","blamed_rank":1,"cause":"nccl-error","summary":"nccl-error summary"}]`
	if string(js) != wantJS {
		t.Errorf("summary deployments\n%s\nwant\n%s", js, wantJS)
	}
	// A fleet with no deployment says nothing of them.
	b.Reset()
	StatusJSON(&b, hosts[4:], nil, "serving", 0)
	if strings.Contains(b.String(), "deployment") {
		t.Errorf("no deployment, yet: %s", b.String())
	}
}
