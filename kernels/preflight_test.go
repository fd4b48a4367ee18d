package kernels

import (
	"slices"
	"strings"
	"testing"
)

func TestPreflight(t *testing.T) {
	k := DefaultCatalog().Kernels[0]
	const sgl = "/usr/bin/python3 -m sglang.launch_server --model-path /m --tp 8"
	const vll = "/usr/local/bin/vllm serve /m --tensor-parallel-size 8"
	const show = "{ path=/usr/local/bin/infersim ; argv[]=/usr/local/bin/infersim --model-path /models/demo --port 30000 --tp 8 %s; ignore_errors=no ; start_time=[n/a] ; stop_time=[n/a] ; pid=0 ; code=(null) ; status=0/0 }"
	tests := []struct {
		name, mode, exec, engine string
		ok, graphs               bool
		gotEngine                string
		reason                   string
	}{
		{"sglang validate with graphs refused", "validate", sgl, "auto", false, true, "sglang", "kdtree-verify=validate is not capture-safe and sglang starts with CUDA graphs on (no --disable-cuda-graph in ExecStart)"},
		{"sglang validate without graphs passes", "validate", sgl + " --disable-cuda-graph", "", true, false, "sglang", ""},
		{"sglang on with graphs passes", "on", sgl, "", true, true, "sglang", ""},
		{"off always passes", "off", sgl, "", true, true, "sglang", ""},
		{"vllm validate refused", "validate", vll, "", false, true, "vllm", "no --enforce-eager in ExecStart"},
		{"vllm eager passes", "validate", vll + " --enforce-eager", "", true, false, "vllm", ""},
		{"vllm flag does not help sglang", "validate", sgl + " --enforce-eager", "", false, true, "sglang", "--disable-cuda-graph"},
		{"vllm entrypoint", "validate", "python -m vllm.entrypoints.openai.api_server --model m", "", false, true, "vllm", "vllm starts"},
		{"explicit engine wins", "validate", "/opt/run.sh --enforce-eager", "vllm", true, false, "vllm", ""},
		{"unknown engine, graphs assumed", "validate", "/opt/run.sh", "", false, true, "", "engine not recognised"},
		{"unknown engine with either flag", "validate", "/opt/run.sh --disable-cuda-graph", "", true, false, "", ""},
		{"flag=false is not the flag", "validate", sgl + " --disable-cuda-graph=false", "", false, true, "sglang", ""},
		{"flag=true is the flag", "validate", sgl + " --disable-cuda-graph=true", "", true, false, "sglang", ""},
		{"a flag-like value is not the flag", "validate", sgl + " --served-model-name --disable-cuda-graph-x", "", false, true, "sglang", ""},
		{"systemctl show form, graphs on", "validate", strings.Replace(show, "%s", "", 1), "", false, true, "sglang", ""},
		{"systemctl show form, graphs off", "validate", strings.Replace(show, "%s", "--disable-cuda-graph ", 1), "", true, false, "sglang", ""},
		{"infersim standing in for vllm", "validate", "/usr/local/bin/infersim --engine vllm serve /m --port 30000", "auto", false, true, "vllm", "no --enforce-eager"},
		{"infersim --engine=vllm, eager", "validate", "/usr/local/bin/infersim --engine=vllm serve /m --enforce-eager", "", true, false, "vllm", ""},
		{"infersim with an engine it lacks", "validate", "/usr/local/bin/infersim --engine trt serve /m", "", false, true, "", "engine not recognised"},
		{"unknown mode refused", "turbo", sgl, "", false, false, "", `no mode "turbo"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Preflight(k, tt.mode, tt.exec, tt.engine)
			if r.OK != tt.ok || (tt.mode != "turbo" && (r.GraphsOn != tt.graphs || r.Engine != tt.gotEngine)) {
				t.Fatalf("Preflight = %+v, want ok %v graphs %v engine %q", r, tt.ok, tt.graphs, tt.gotEngine)
			}
			if r.OK != (r.Reason == "") {
				t.Errorf("OK %v with reason %q", r.OK, r.Reason)
			}
			if !strings.Contains(r.Reason, tt.reason) {
				t.Errorf("reason %q does not say %q", r.Reason, tt.reason)
			}
			if !slices.Equal(r.SafeModes, []string{"on", "off"}) {
				t.Errorf("SafeModes = %q", r.SafeModes)
			}
		})
	}
}

func TestOverrideConfirmed(t *testing.T) {
	for _, tt := range []struct {
		typed string
		hosts int
		want  bool
	}{{"3", 3, true}, {" 3\n", 3, true}, {"y", 3, false}, {"2", 3, false}, {"0", 0, false}, {"", 1, false}} {
		if got := OverrideConfirmed(tt.typed, tt.hosts); got != tt.want {
			t.Errorf("OverrideConfirmed(%q, %d) = %v", tt.typed, tt.hosts, got)
		}
	}
}

func TestCompareModes(t *testing.T) {
	c := DefaultCatalog()
	st := c.CompareModes([]string{"KDTREE_MODE=on"}, []string{"KDTREE_MODE=validate", "PATH=/bin"})
	if len(st) != 1 || st[0].OnDisk.Mode != "on" || !st[0].HasRunning || st[0].Running.Mode != "validate" || !st[0].RestartPending {
		t.Errorf("pending: %+v", st)
	}
	st = c.CompareModes([]string{"KDTREE_MODE=on"}, []string{"KDTREE_MODE=on"})
	if st[0].RestartPending {
		t.Errorf("same mode reported pending: %+v", st)
	}
	st = c.CompareModes([]string{"KDTREE_MODE=validate"}, nil)
	if st[0].HasRunning || st[0].RestartPending || st[0].OnDisk.Mode != "validate" {
		t.Errorf("not running: %+v", st)
	}
}
