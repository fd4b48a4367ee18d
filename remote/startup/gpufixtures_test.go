package startup_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/logfile"
	"github.com/bringup-dev/bringup/remote/startup"
)

// TestGPUFixturesExplain runs each real GPU text of testdata (made on an
// H200 with torch 2.11 + CUDA 13: the repro scripts' whole output) through
// Explain as `bringup explain <file>` does: every one must be a failure
// with the right cause, phase and root line, and every text there must be
// in the table.
func TestGPUFixturesExplain(t *testing.T) {
	want := map[string]struct {
		cause string
		phase startup.Phase
		root  string
	}{
		"oom.txt":                {"gpu-oom", startup.Starting, "torch.OutOfMemoryError: CUDA out of memory."},
		"graph-capture-cpu.txt":  {"graph-capture-host-sync", startup.GraphCapture, "Cannot copy between CPU and CUDA tensors during CUDA graph capture"},
		"graph-capture-item.txt": {"graph-capture-host-sync", startup.GraphCapture, "operation not permitted when stream is capturing"},
	}
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no GPU texts in testdata (%v)", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			w, ok := want[name]
			if !ok {
				t.Fatalf("%s has no expectation here", name)
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			wantFailure(t, string(b), name, "auto", w.cause, w.phase, w.root)
		})
	}
}

// wantFailure explains text (a log as a file holds it) and checks that it
// failed with cause in phase, its first evidence line holding root.
func wantFailure(t *testing.T, text, name, engine, cause string, phase startup.Phase, root string) {
	t.Helper()
	lg, err := logfile.Read(strings.NewReader(text), name, logfile.Options{Year: 2026})
	if err != nil {
		t.Fatal(err)
	}
	x := startup.Explain(lg.Events, startup.Options{Engine: engine, Kernels: kernels.DefaultCatalog()})
	d := x.Startup.Diag
	if x.Outcome != startup.OutcomeFailed || d == nil {
		t.Fatalf("outcome %s, want failed", x.Outcome)
	}
	if d.Cause != cause || d.Phase != phase {
		t.Errorf("cause %s in %s, want %s in %s", d.Cause, d.Phase, cause, phase)
	}
	if len(d.Evidence) == 0 || !strings.Contains(d.Evidence[0], root) {
		t.Errorf("evidence %q, want the first holding %q", d.Evidence, root)
	}
}
