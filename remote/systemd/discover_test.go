package systemd

import (
	"os"
	"testing"

	"github.com/bringup-dev/bringup/kernels"
)

// TestParseDiscover reads DiscoverCommand's real output, captured from
// systemd 252 (Debian 12) on two bringup test hosts on 2026-12-01 as a
// login without sudo: 103 services each (ssh, journald, dbus, …; ten
// listed unit files that are not-found), and one inference unit: a
// never-started SGLang unit on one, a running vLLM one on the other.
func TestParseDiscover(t *testing.T) {
	for _, tc := range []struct {
		file string
		want InferenceUnit
	}{
		{"testdata/discover-sglang-host.txt", InferenceUnit{Name: "sglang.service", Engine: kernels.EngineSGLang, ActiveState: "inactive", Port: 30000,
			ExecStart: "/usr/local/bin/infersim --model-path /models/demo --port 30000 --tp 8"}},
		{"testdata/discover-vllm-host.txt", InferenceUnit{Name: "vllm.service", Engine: kernels.EngineVLLM, ActiveState: "active", Port: 30000,
			ExecStart: "/usr/local/bin/infersim --engine vllm serve /models/demo --port 30000 --tensor-parallel-size 8"}},
	} {
		out, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		got := ParseDiscover(out)
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: %+v, want [%+v]", tc.file, got, tc.want)
		}
	}
}

// TestListenPort: --port as one word or two, else the engine's default.
func TestListenPort(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		engine string
		want   int
	}{
		{[]string{"python3", "-m", "sglang.launch_server", "--port", "30001"}, kernels.EngineSGLang, 30001},
		{[]string{"vllm", "serve", "m", "--port=8081"}, kernels.EngineVLLM, 8081},
		{[]string{"vllm", "serve", "m"}, kernels.EngineVLLM, 8000},
		{[]string{"python3", "-m", "sglang.launch_server", "--port", "x"}, kernels.EngineSGLang, 30000},
	} {
		if got := listenPort(tc.args, tc.engine); got != tc.want {
			t.Errorf("listenPort(%q) = %d, want %d", tc.args, got, tc.want)
		}
	}
}
