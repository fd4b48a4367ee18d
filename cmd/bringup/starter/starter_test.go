package starter

import (
	"errors"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/cmd/bringup/config"
	"github.com/bringup-dev/bringup/remote/systemd"
)

// TestHost: the unit init writes for a host, from what it found.
func TestHost(t *testing.T) {
	sg := systemd.InferenceUnit{Name: "sglang.service", Engine: "sglang", ActiveState: "inactive", Port: 30000, ExecStart: "python3 -m sglang.launch_server --port 30000"}
	vl := systemd.InferenceUnit{Name: "vllm-70b.service", Engine: "vllm", ActiveState: "active", Port: 8000, ExecStart: "vllm serve m"}
	bad := systemd.InferenceUnit{Name: "x*.service", Engine: "sglang", ActiveState: "active", Port: 1}
	for _, tc := range []struct {
		name      string
		found     []systemd.InferenceUnit
		err       error
		want      config.StarterHost
		note      []string // what the note must hold
		lineStart string
	}{
		{name: "one", found: []systemd.InferenceUnit{sg}, want: config.StarterHost{Unit: "sglang.service", Engine: "sglang", Port: 30000},
			note: []string{"sglang.service (inactive): python3 -m sglang.launch_server"}, lineStart: "sglang.service (sglang, port 30000, inactive)"},
		{name: "the running one wins", found: []systemd.InferenceUnit{sg, vl}, want: config.StarterHost{Unit: "vllm-70b.service", Engine: "vllm", Port: 8000},
			note: []string{"also found: sglang.service (sglang, inactive)"}, lineStart: "vllm-70b.service (vllm, port 8000, active); also sglang.service"},
		{name: "an invalid name is left out", found: []systemd.InferenceUnit{bad}, note: []string{"found no service running sglang or vllm"}, lineStart: "no sglang or vllm unit found"},
		{name: "none", note: []string{"set unit: and engine: by hand"}, lineStart: "no sglang or vllm unit found"},
		{name: "unreachable", err: errors.New("gpu9: dial tcp 10.0.0.9:22: connect: connection refused \x1b]0;x\x07"),
			note: []string{"not reached by bringup init: gpu9: dial tcp", "connection refused"}, lineStart: "not reached: gpu9: dial tcp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, found := Host("gpu9", tc.found, tc.err)
			line := found.Text()
			note := h.Note
			h.Note, tc.want.Name = "", "gpu9"
			if h != tc.want {
				t.Errorf("host %+v, want %+v", h, tc.want)
			}
			for _, n := range tc.note {
				if !strings.Contains(note, n) {
					t.Errorf("note %q lacks %q", note, n)
				}
			}
			if !strings.HasPrefix(line, tc.lineStart) {
				t.Errorf("line %q, want it to start %q", line, tc.lineStart)
			}
			if strings.ContainsAny(note+line, "\x1b\x07") {
				t.Errorf("remote text reached the output raw: %q %q", note, line)
			}
		})
	}
}
