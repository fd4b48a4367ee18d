package remote

import (
	"strings"
	"testing"

	"bringup/kernels"
	"bringup/remote/event"
	"bringup/remote/startup"
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
