package capturecheck

import (
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
)

// failedValidate is what capture_check.py prints when validate's .item()
// runs inside torch.cuda.graph: the traceback, PyTorch's text, the verdict.
const failedValidate = `Traceback (most recent call last):
  File "/opt/kdtree/site/capture_check.py", line 118, in main
    out = forward(*static)
  File "/opt/kdtree/site/kdtree_verify/__init__.py", line 20, in forward
    packed = marshal.pack(idx)
  File "/opt/kdtree/site/kdtree_verify/marshal.py", line 13, in pack
    depth = packed.max().item()
RuntimeError: CUDA error: operation not permitted when stream is capturing
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
capture-check: FAIL mode=validate graph capture failed after 3.1s: RuntimeError: CUDA error: operation not permitted when stream is capturing
`

func TestJudge(t *testing.T) {
	k, _ := kernels.DefaultCatalog().Kernel("kdtree-verify")
	tests := []struct {
		name          string
		r             Result
		safe, skipped bool
		detail        string
	}{
		{"pass", Result{Output: "capture-check: PASS mode=on captured in 0.05s\n", Took: 4 * time.Second}, true, false, "capture-check: PASS mode=on captured in 0.05s"},
		{"host sync in capture", Result{Output: failedValidate, Exit: 1}, false, false, "graph-capture-host-sync: RuntimeError: CUDA error: operation not permitted when stream is capturing"},
		{"cannot run", Result{Output: "capture-check: ERROR mode=on no CUDA device\n", Exit: 2}, false, true, "the check could not run: capture-check: ERROR mode=on no CUDA device"},
		{"timed out", Result{Output: "warming up\n", TimedOut: true, Took: 30 * time.Second}, false, false, "the check did not finish in 30s (last line: warming up)"},
		{"unknown failure", Result{Output: "capture-check: FAIL mode=on replay differs from the reference: max error 0.5\n", Exit: 1}, false, false, "the check exited 1: capture-check: FAIL mode=on replay differs from the reference: max error 0.5"},
		{"escape sequences are made harmless", Result{Output: "\x1b]0;owned\x07bad\n", Exit: 1}, false, false, "the check exited 1: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := Judge(k, "validate", tt.r)
			if ev.Source != kernels.SourceCheck || ev.Safe != tt.safe || ev.Skipped != tt.skipped || !strings.HasPrefix(ev.Detail, tt.detail) || strings.Contains(ev.Detail, "\x1b") {
				t.Errorf("Judge = %+v", ev)
			}
		})
	}
}
