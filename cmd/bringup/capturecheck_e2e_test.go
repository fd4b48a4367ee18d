package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// TestCaptureCheckOnTestbed: on a real host the kernel's capture check
// (infersim's stand-in, printing what the reference check printed on an
// H100) runs over SSH before any restart. The catalog declares validate
// capture-safe, as the kernel's author believed: only the check can tell.
// `mode gpu1 kdtree-verify=validate --restart` is refused by it, naming
// PyTorch's line, and the unit is not started again (its invocation,
// start time and restart count unchanged; no drop-in written); `on`
// passes the check and serves.
func TestCaptureCheckOnTestbed(t *testing.T) {
	tb := testbed.StartWith(t, testbed.Options{Hosts: 1})
	cfg := checkedConfig(t, filepath.Join(tb.Inventory(), "config.yaml"))
	w := &actWorld{tb: tb, cfg: cfg}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	w.sh(t, ctx, "gpu1", "systemctl start sglang")
	code, out, errOut := w.bringup(ctx, "watch", "--timeout", "90s", "--config", cfg, "gpu1")
	if code != exitServing {
		t.Fatalf("watch gpu1 (kernel off): exit %d\n%s%s", code, out, errOut)
	}
	starts := func() string {
		return w.sh(t, ctx, "gpu1", "systemctl show -p InvocationID,ExecMainStartTimestamp,NRestarts sglang; ls /etc/systemd/system/sglang.service.d /run/systemd/system/sglang.service.d 2>&1; true")
	}
	before := starts()

	begin := time.Now()
	code, out, errOut = w.bringup(ctx, "mode", "gpu1", "kdtree-verify=validate", "--restart", "--yes", "--config", cfg)
	took := time.Since(begin)
	t.Logf("mode gpu1 kdtree-verify=validate --restart: exit %d in %s\n%s%s", code, took.Round(time.Millisecond), out, errOut)
	if code != exitUsage {
		t.Fatalf("validate: exit %d, want %d (refused)", code, exitUsage)
	}
	for _, want := range []string{
		"gpu1: capture check of kdtree-verify=validate FAILED in ",
		"graph-capture-host-sync: torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing",
		"gpu1: refused by the capture-safety preflight: kdtree-verify=validate is declared capture-safe, but the check (",
		"  refused by: check; the check ran ",
		"capture-safe modes of kdtree-verify: on, off",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the refusal lacks %q", want)
		}
	}
	if took > 15*time.Second {
		t.Errorf("the refusal took %s, want under 15 s", took)
	}
	if after := starts(); after != before {
		t.Errorf("gpu1's unit changed although the check refused:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	code, out, errOut = w.bringup(ctx, "mode", "gpu1", "kdtree-verify=on", "--restart", "--yes", "--timeout", "2m", "--config", cfg)
	t.Logf("mode gpu1 kdtree-verify=on --restart: exit %d\n%s%s", code, out, errOut)
	if code != exitServing || !strings.Contains(errOut, "gpu1: capture check of kdtree-verify=on passed in ") || !strings.Contains(out, "serving (invocation") {
		t.Fatalf("on: exit %d, want %d, the check passed and serving", code, exitServing)
	}
	if after := starts(); after == before {
		t.Errorf("gpu1's unit did not start again under on:\n%s", after)
	}
}

// checkedConfig is the testbed's config with the stand-in check command
// and validate declared capture-safe, written beside it.
func checkedConfig(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	ks, _ := cfg["kernels"].([]any)
	if len(ks) != 1 {
		t.Fatalf("kernels in %s: %v", path, cfg["kernels"])
	}
	k := ks[0].(map[string]any)
	k["check"] = testbed.StandInCheck
	for _, m := range k["modes"].([]any) {
		if m := m.(map[string]any); m["name"] == "validate" {
			m["capture_safe"] = true
		}
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(filepath.Dir(path), "checked.yaml")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
