package remote

import (
	"slices"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
)

// TestPreflightEngine checks which engine's flag the preflight asks for:
// the configured engine, else the one the host's logs showed, else the one
// ExecStart names.
func TestPreflightEngine(t *testing.T) {
	cat := kernels.DefaultCatalog()
	host := func(exec, logged string) HostState {
		return HostState{Name: "gpu1",
			UnitState: event.Unit{ExecStart: exec, Environment: []string{"KDTREE_MODE=validate"}},
			Startup:   startup.Startup{Engine: logged}}
	}
	tests := []struct {
		name    string
		h       HostState
		engine  string
		refused string // "" = passes
	}{
		{"wrapper script, logs showed vllm", host("/opt/serve.sh", "vllm"), "auto", "vllm starts with CUDA graphs on (no --enforce-eager"},
		{"wrapper script, logs showed vllm, eager", host("/opt/serve.sh --enforce-eager", "vllm"), "", ""},
		{"wrapper script, no logs yet", host("/opt/serve.sh", ""), "auto", "engine not recognised"},
		{"config beats the logs", host("/opt/serve.sh --disable-cuda-graph", "vllm"), "sglang", ""},
		{"ExecStart names the engine", host("/usr/local/bin/vllm serve /m", ""), "", "no --enforce-eager"},
		{"capture-safe mode passes", HostState{Name: "gpu1", UnitState: event.Unit{ExecStart: "/opt/serve.sh", Environment: []string{"KDTREE_MODE=on"}}}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pe := Preflight(tt.h, cat, tt.engine)
			switch {
			case tt.refused == "" && pe != nil:
				t.Fatalf("refused: %v", pe)
			case tt.refused != "" && (pe == nil || !strings.Contains(pe.Error(), tt.refused)):
				t.Fatalf("preflight = %v, want a refusal saying %q", pe, tt.refused)
			}
		})
	}
}

// TestPreflightUsesTheNewMode: the planner checks the restart as it will
// start, with the mode change applied the way its drop-in applies it.
func TestPreflightUsesTheNewMode(t *testing.T) {
	cat := kernels.DefaultCatalog()
	host := func(env []string, exec string) []HostState {
		return []HostState{{Name: "gpu1", UnitState: event.Unit{
			Environment: env, ExecStart: exec}}}
	}
	graphs := "/usr/local/bin/infersim --model /models/demo --port 30000"
	noGraphs := graphs + " --disable-cuda-graph"
	setValidate := []Action{{Kind: ActSetMode, Kernel: "kdtree-verify", Mode: "validate"}, {Kind: ActRestart}}
	setOn := []Action{{Kind: ActSetMode, Kernel: "kdtree-verify", Mode: "on"}, {Kind: ActRestart}}
	restart := []Action{{Kind: ActRestart}}
	for _, tc := range []struct {
		name    string
		env     []string
		exec    string
		actions []Action
		refused bool
	}{
		{"validate with graphs", []string{"KDTREE_MODE=on"}, graphs, setValidate, true},
		{"validate without graphs", []string{"KDTREE_MODE=on"}, noGraphs, setValidate, false},
		{"fixing validate to on", []string{"KDTREE_MODE=validate"}, graphs, setOn, false},
		{"restart under validate", []string{"KDTREE_MODE=validate"}, graphs, restart, true},
		{"restart under on", []string{"KDTREE_MODE=on"}, graphs, restart, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PreflightAll(host(tc.env, tc.exec), cat, tc.actions)
			if (len(got) > 0) != tc.refused {
				t.Fatalf("refused = %v, want %v", got, tc.refused)
			}
			if tc.refused && (got[0].Host != "gpu1" || got[0].Mode != "validate" || !slices.Contains(got[0].SafeModes, "on")) {
				t.Errorf("refusal = %+v", got[0])
			}
		})
	}
}
