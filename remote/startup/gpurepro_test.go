package startup_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/remote/startup"
)

// TestGPUReproTexts explains what each repro of testdata/gpu/make printed
// on a real GPU (testdata/gpu/MANIFEST.txt: the card, driver and library
// versions; run_all.sh made them), kept exactly: the failures one GPU can
// show, each to its cause, phase and the line a person would quote.
// Repros that ran outside a service have no phase of their own: a capture
// OOM is also read after an SGLang capture-begin line, as a unit's journal
// would hold it.
func TestGPUReproTexts(t *testing.T) {
	// SGLang's capture-begin line as a real log printed it (corpus
	// sglang-1479-capture-time-prefix.log).
	const capture = "[2025-01-24 09:39:31 TP0] Capture cuda graph begin. This can take up to several minutes."
	tests := []struct {
		file   string
		before []string
		cause  string
		phase  startup.Phase
		root   string
	}{
		{"capture_item.txt", nil, "graph-capture-host-sync", startup.GraphCapture, "operation not permitted when stream is capturing"},
		{"capture_nonzero.txt", nil, "graph-capture-host-sync", startup.GraphCapture, "operation not permitted when stream is capturing"},
		{"capture_sync.txt", nil, "graph-capture-host-sync", startup.GraphCapture, "operation not permitted when stream is capturing"},
		{"capture_unjoined.txt", nil, "graph-capture-unjoined-work", startup.GraphCapture, "capturing stream has unjoined work"},
		{"capture_oom.txt", []string{capture}, "graph-capture-oom", startup.GraphCapture, "torch.OutOfMemoryError: CUDA out of memory"},
		{"capture_oom.txt", nil, "gpu-oom", startup.Starting, "torch.OutOfMemoryError: CUDA out of memory"},
		{"oom.txt", nil, "gpu-oom", startup.Starting, "torch.OutOfMemoryError: CUDA out of memory"},
		{"device_assert.txt", nil, "device-assert", startup.Starting, "indexSelectSmallIndex"},
		{"illegal_access.txt", nil, "illegal-memory-access", startup.Starting, "an illegal memory access was encountered"},
		{"nccl_duplicate_gpu.txt", nil, "nccl-error", startup.Init, "DistBackendError: NCCL error"},
		{"tcpstore_timeout.txt", nil, "dist-init-failed", startup.Init, "DistStoreError: Timed out after 16 seconds waiting for clients"},
		{"safetensors_header.txt", nil, "checkpoint-corrupt", startup.Weights, "SafetensorError: Error while deserializing header: header too large"},
		{"safetensors_truncated.txt", nil, "checkpoint-corrupt", startup.Weights, "incomplete metadata"},
		{"spawn_no_main_guard.txt", nil, "spawn-main-guard", startup.Starting, "An attempt has been made to start a new process"},
		{"triton_compile_error.txt", nil, "jit-build", startup.Starting, "triton.compiler.errors.CompilationError"},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.file] = true
		t.Run(tt.file+strings.Repeat("+", len(tt.before)), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "gpu", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			wantFailure(t, strings.Join(append(tt.before, string(b)), "\n"), tt.file, "sglang", tt.cause, tt.phase, tt.root)
		})
	}
	files, err := filepath.Glob(filepath.Join("testdata", "gpu", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if n := filepath.Base(f); n != "MANIFEST.txt" && !seen[n] {
			t.Errorf("%s has no expectation here", n)
		}
	}
}
