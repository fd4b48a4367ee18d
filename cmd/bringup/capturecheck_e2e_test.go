package main

import (
	"context"
	"os"
	"os/exec"
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
// passes the check and serves. With the seed-shaped kernel on the host,
// the lint of the files it loads refuses validate even with the check
// skipped.
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

	// bringup lint HOST reads the files the host loads: the testbed's
	// stand-in kernel has no sync; the seed-shaped kernel put in its place
	// has validate's .item(), which the catalog here declares safe.
	code, out, errOut = w.bringup(ctx, "lint", "--config", cfg, "gpu1")
	if code != exitServing || !strings.HasPrefix(out, "gpu1:"+testbed.KernelPythonPath+" · 2 Python files · kernel kdtree-verify\n") {
		t.Errorf("lint gpu1 (stand-in kernel): exit %d\n%s%s", code, out, errOut)
	}
	w.sh(t, ctx, "gpu1", "rm "+testbed.KernelPythonPath+"/kdtree_verify.py && echo "+seedTarball(t)+" | base64 -d | tar -xzf - -C "+testbed.KernelPythonPath)
	code, out, errOut = w.bringup(ctx, "lint", "--config", cfg, "gpu1")
	t.Logf("lint gpu1 (seed kernel): exit %d\n%s%s", code, out, errOut)
	for _, want := range []string{
		"gpu1:" + testbed.KernelPythonPath + " · 5 Python files · kernel kdtree-verify\n",
		"kdtree_verify/marshal.py:13:31  pack  offsets.max().item()  [modes: validate, high]\n",
		"  validate   DISAGREE: declared capture-safe, but 2 host sync(s) reach it\n",
	} {
		if code != exitFailed || !strings.Contains(out, want) {
			t.Errorf("lint gpu1 (seed kernel): exit %d, want %d and %q", code, exitFailed, want)
		}
	}

	// The restart's preflight lints the same files: with the check
	// skipped, the lint alone refuses validate, before any restart.
	before = starts()
	begin = time.Now()
	code, out, errOut = w.bringup(ctx, "mode", "gpu1", "kdtree-verify=validate", "--restart", "--skip-check", "--yes", "--config", cfg)
	took = time.Since(begin)
	t.Logf("mode gpu1 kdtree-verify=validate --restart --skip-check (seed kernel): exit %d in %s\n%s%s", code, took.Round(time.Millisecond), out, errOut)
	if code != exitUsage {
		t.Fatalf("validate, check skipped: exit %d, want %d (refused by the lint)", code, exitUsage)
	}
	for _, want := range []string{
		"gpu1: lint of kdtree-verify=validate FOUND A HOST SYNC in ",
		"gpu1: capture check of kdtree-verify=validate skipped: skipped by --skip-check",
		"gpu1: refused by the capture-safety preflight: kdtree-verify=validate is declared capture-safe, but the lint says not: kdtree_verify/marshal.py:13 offsets.max().item() in pack",
		"(read from gpu1:" + testbed.KernelPythonPath + ")",
		"  refused by: lint\n",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the lint's refusal lacks %q", want)
		}
	}
	if after := starts(); after != before {
		t.Errorf("gpu1's unit changed although the lint refused:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// seedTarball is the lint's seed-shaped kernel tree as a base64 tar.gz.
func seedTarball(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("sh", "-c", "tar -C ../../kernels/capturelint/testdata/seed -czf - . | base64 -w0").Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
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
