package capturecheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
)

// readCheck reads what capture_check.py printed on a real GPU
// (kernels/capturecheck/testdata: an NVIDIA H100 80GB HBM3, driver
// 580.159.04, torch 2.11.0+cu130, 2026-12-06; capture-summary.txt has the
// exit statuses and times).
func readCheck(t *testing.T, mode string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "kernels", "capturecheck", "testdata", "capture-"+mode+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestJudge(t *testing.T) {
	k, _ := kernels.DefaultCatalog().Kernel("kdtree-verify")
	failedValidate, passedOn := readCheck(t, "validate"), readCheck(t, "on")
	tests := []struct {
		name          string
		r             Result
		safe, skipped bool
		detail        string
	}{
		{"pass", Result{Output: passedOn, Took: 6 * time.Second}, true, false, "capture-check: PASS mode=on captured in 0.01s"},
		{"host sync in capture", Result{Output: failedValidate, Exit: 1, Took: 7 * time.Second}, false, false, "graph-capture-host-sync: torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing"},
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

// readGPUText reads a real PyTorch failure text (remote/startup/testdata/gpu:
// an NVIDIA H100 80GB HBM3, torch 2.11.0+cu130).
func readGPUText(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "startup", "testdata", "gpu", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestJudgeOutOfMemory: a check that died of PyTorch's "CUDA out of
// memory" (what capture_check.py prints, exit 1, when a serving engine
// holds the GPU's memory: in the warm-up, or in the capture) could not
// run: it counts neither way, and says why with PyTorch's line. Any other
// failure still refuses.
func TestJudgeOutOfMemory(t *testing.T) {
	k, _ := kernels.DefaultCatalog().Kernel("kdtree-verify")
	for _, name := range []string{"oom.txt", "capture_oom.txt"} {
		t.Run(name, func(t *testing.T) {
			ev := Judge(k, "on", Result{Output: readGPUText(t, name), Exit: 1, Took: 3 * time.Second})
			if ev.Safe || !ev.Skipped || ev.Took != 3*time.Second ||
				!strings.HasPrefix(ev.Detail, "the check could not run: the GPU ran out of memory (an engine serving on it holds its memory") ||
				!strings.Contains(ev.Detail, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate") {
				t.Errorf("Judge = %+v", ev)
			}
			hosts := []remote.HostState{{Name: "gpu1", UnitState: event.Unit{ExecStart: "/usr/local/bin/infersim --port 30000", Environment: []string{"KDTREE_MODE=on"}}}}
			if refused := remote.PreflightAllWith(hosts, kernels.DefaultCatalog(), nil, remote.SafetyEvidence{{Host: "gpu1", Kernel: "kdtree-verify"}: {ev}}); len(refused) != 0 {
				t.Errorf("a check out of GPU memory refused the restart: %v", refused[0])
			}
		})
	}
	// A host sync in the capture still refuses.
	ev := Judge(k, "validate", Result{Output: readCheck(t, "validate"), Exit: 1})
	if ev.Skipped || ev.Safe {
		t.Errorf("a host sync judged as %+v", ev)
	}
}
