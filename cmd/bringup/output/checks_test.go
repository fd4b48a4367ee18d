package output

import (
	"bytes"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
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
