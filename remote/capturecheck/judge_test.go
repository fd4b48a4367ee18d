package capturecheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
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
