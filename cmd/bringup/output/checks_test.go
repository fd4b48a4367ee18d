package output

import (
	"bytes"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/capturecheck"
)

func TestChecksAndRefusal(t *testing.T) {
	wants := []remote.CheckWant{{Host: "gpu1", Kernel: "kdtree-verify", Mode: "validate"}, {Host: "gpu2", Kernel: "kdtree-verify", Mode: "on"}, {Host: "gpu3", Kernel: "kdtree-verify", Mode: "on"}}
	failed := kernels.Evidence{Source: kernels.SourceCheck, Took: 7040 * time.Millisecond, Detail: "graph-capture-host-sync: torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing"}
	ev := remote.SafetyEvidence{
		{Host: "gpu1", Kernel: "kdtree-verify"}: {failed},
		{Host: "gpu2", Kernel: "kdtree-verify"}: {{Source: kernels.SourceCheck, Safe: true, Took: 600 * time.Millisecond, Detail: "capture-check: PASS mode=on"}},
		{Host: "gpu3", Kernel: "kdtree-verify"}: {{Source: kernels.SourceCheck, Skipped: true, Detail: "skipped by --skip-check"}},
	}
	var b bytes.Buffer
	Checks(&b, wants, ev)
	want := "  gpu1: capture check of kdtree-verify=validate FAILED in 7s: graph-capture-host-sync: torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing\n" +
		"  gpu2: capture check of kdtree-verify=on passed in 600ms: capture-check: PASS mode=on\n" +
		"  gpu3: capture check of kdtree-verify=on skipped: skipped by --skip-check\n"
	if b.String() != want {
		t.Errorf("Checks:\n%s\nwant\n%s", b.String(), want)
	}
	refused := []*remote.PreflightError{{Host: "gpu1", Kernel: "kdtree-verify", Mode: "validate", Reason: "kdtree-verify=validate is declared capture-safe, but the check (7s) says not: …",
		SafeModes: []string{"on", "off"}, RefusedBy: []kernels.SafetySource{kernels.SourceCheck}, Evidence: []kernels.Evidence{failed}}}
	b.Reset()
	Preflight(&b, refused, 1)
	for _, line := range []string{"gpu1: refused by the capture-safety preflight: kdtree-verify=validate is declared capture-safe", "  refused by: check; the check ran 7s\n", "capture-safe modes of kdtree-verify: on, off"} {
		if !bytes.Contains(b.Bytes(), []byte(line)) {
			t.Errorf("Preflight lacks %q:\n%s", line, b.String())
		}
	}
	if got := RefusedBy(refused); got != " (by check)" {
		t.Errorf("RefusedBy = %q", got)
	}
}

// TestChecksLint: the lint's lines beside the checks': clean, the sync it
// found (file:line, the call, the function), or why it did not run.
func TestChecksLint(t *testing.T) {
	wants := []remote.CheckWant{{Host: "gpu1", Kernel: "kdtree-verify", Mode: "validate"}, {Host: "gpu2", Kernel: "kdtree-verify", Mode: "on"}, {Host: "gpu3", Kernel: "kdtree-verify", Mode: "on"}}
	ev := remote.SafetyEvidence{
		{Host: "gpu1", Kernel: "kdtree-verify"}: {{Source: kernels.SourceLint, Took: 41 * time.Millisecond, Detail: "kdtree_verify/marshal.py:13 offsets.max().item() in pack (and 1 more) (read from gpu1:/opt/kdtree/site)"}},
		{Host: "gpu2", Kernel: "kdtree-verify"}: {{Source: kernels.SourceLint, Safe: true, Took: 800 * time.Microsecond, Detail: "no host sync found in 2 Python file(s) of gpu2:/opt/kdtree/site"}},
		{Host: "gpu3", Kernel: "kdtree-verify"}: {{Source: kernels.SourceLint, Skipped: true, Detail: "the lint could not run: gpu3: no PYTHONPATH entry with a sitecustomize.py, and kernel kdtree-verify no remote_dir"}},
	}
	var b bytes.Buffer
	Checks(&b, wants, ev)
	want := "  gpu1: lint of kdtree-verify=validate FOUND A HOST SYNC in 41ms: kdtree_verify/marshal.py:13 offsets.max().item() in pack (and 1 more) (read from gpu1:/opt/kdtree/site)\n" +
		"  gpu2: lint of kdtree-verify=on clean in 1ms: no host sync found in 2 Python file(s) of gpu2:/opt/kdtree/site\n" +
		"  gpu3: lint of kdtree-verify=on did not run: gpu3: no PYTHONPATH entry with a sitecustomize.py, and kernel kdtree-verify no remote_dir\n"
	if b.String() != want {
		t.Errorf("Checks:\n%s\nwant\n%s", b.String(), want)
	}
	refused := []*remote.PreflightError{{Host: "gpu1", Kernel: "kdtree-verify", Mode: "validate", Reason: "kdtree-verify=validate is declared capture-safe, but the lint says not: kdtree_verify/marshal.py:13 offsets.max().item() in pack",
		SafeModes: []string{"on", "off"}, RefusedBy: []kernels.SafetySource{kernels.SourceLint}, Evidence: ev[remote.HostKernel{Host: "gpu1", Kernel: "kdtree-verify"}]}}
	b.Reset()
	Preflight(&b, refused, 1)
	if !bytes.Contains(b.Bytes(), []byte("  refused by: lint\n")) || !bytes.Contains(b.Bytes(), []byte("the lint says not: kdtree_verify/marshal.py:13 offsets.max().item() in pack")) {
		t.Errorf("Preflight:\n%s", b.String())
	}
}

// TestChecksCouldNotRun: a check that could not run (out of GPU memory on
// a serving host) says so, apart from one a person skipped.
func TestChecksCouldNotRun(t *testing.T) {
	wants := []remote.CheckWant{{Host: "gpu1", Kernel: "kdtree-verify", Mode: "on"}}
	ev := remote.SafetyEvidence{{Host: "gpu1", Kernel: "kdtree-verify"}: {{Source: kernels.SourceCheck, Skipped: true, Took: 2100 * time.Millisecond,
		Detail: capturecheck.CannotRun + "the GPU ran out of memory (…): gpu-oom: …"}}}
	var b bytes.Buffer
	Checks(&b, wants, ev)
	if want := "  gpu1: capture check of kdtree-verify=on could not run (2.1s): the GPU ran out of memory (…): gpu-oom: …\n"; b.String() != want {
		t.Errorf("Checks:\n%s\nwant\n%s", b.String(), want)
	}
}
