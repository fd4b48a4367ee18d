package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/action"
	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/kernels/bundle"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// TestActionsOnTestbed runs the changing commands against three real
// hosts, one testbed for all (the subtests run in order and build on each
// other's state):
//   - gpu1 starts in validate mode with CUDA graphs on (the seed story);
//   - gpu2 crash-loops under Restart=on-failure (reset-failed);
//   - gpu3 runs with --disable-cuda-graph (the preflight lets validate by).
func TestActionsOnTestbed(t *testing.T) {
	tb := testbed.StartWith(t, testbed.Options{Hosts: 3, Host: func(i int) testbed.HostOptions {
		switch i {
		case 0:
			return testbed.HostOptions{KernelMode: "validate"}
		case 1:
			return testbed.HostOptions{KernelMode: "on", Restart: "on-failure", Env: map[string]string{"INFERSIM_FAIL": "crashloop"}}
		}
		return testbed.HostOptions{KernelMode: "on", Args: []string{"--disable-cuda-graph"}}
	}})
	w := &actWorld{tb: tb, cfg: filepath.Join(tb.Inventory(), "config.yaml")}
	// Read-only first: it must find the hosts untouched, and leave them so.
	t.Run("ReadOnlyRefusesEveryCommand", w.readOnly)
	t.Run("SeedStory", w.seedStory)
	t.Run("PreflightRefusesValidateWithGraphs", w.preflight)
	t.Run("RedeployChangedFile", w.redeploy)
	t.Run("ResetFailedAfterStartLimit", w.resetFailed)
}

// actWorld is the state the subtests share.
type actWorld struct {
	tb  *testbed.Testbed
	cfg string
}

// bringup runs one command and returns its exit code and output.
func (w *actWorld) bringup(ctx context.Context, args ...string) (int, string, string) {
	var out, errOut syncBuffer
	code := run(ctx, testEnv(&out, &errOut), args)
	return code, out.String(), errOut.String()
}

func (w *actWorld) sh(t *testing.T, ctx context.Context, host, cmd string) string {
	t.Helper()
	out, err := w.tb.Run(ctx, host, cmd)
	if err != nil {
		t.Fatalf("%s: %s: %v\n%s", host, cmd, err, out)
	}
	return strings.TrimSpace(out)
}

// fingerprint is what a changing command could touch on a host: the
// unit's drop-ins, its invocation and environment, the kernel's files.
func (w *actWorld) fingerprint(t *testing.T, ctx context.Context, host string) string {
	t.Helper()
	return w.sh(t, ctx, host, "ls -la --time-style=full-iso /etc/systemd/system/sglang.service.d /run/systemd/system/sglang.service.d 2>&1;"+
		" systemctl show -p InvocationID,ActiveState,Environment,NRestarts sglang;"+
		" find "+testbed.KernelPythonPath+" -type f -exec sha256sum {} + | sort")
}

func (w *actWorld) readOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	before := w.fingerprint(t, ctx, "gpu1")
	for _, c := range action.Commands() {
		args := append([]string{c.Name, "--read-only", "--yes", "--config", w.cfg}, readOnlyArgs[c.Name]...)
		code, out, errOut := w.bringup(ctx, args...)
		if code != exitUsage || !strings.Contains(errOut, "read-only mode") {
			t.Errorf("%v: exit %d, want %d naming read-only\n%s%s", args, code, exitUsage, out, errOut)
		}
	}
	if after := w.fingerprint(t, ctx, "gpu1"); after != before {
		t.Errorf("gpu1 changed under --read-only:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// seedStory: gpu1 in validate mode fails at graph capture with a
// diagnosis naming the mode; `bringup mode gpu1 kdtree-verify=on
// --restart --yes` brings it to serving, and the drop-in on disk and the
// unit's Environment both say on.
func (w *actWorld) seedStory(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	w.sh(t, ctx, "gpu1", "systemctl start sglang")
	code, out, errOut := w.bringup(ctx, "watch", "--json", "--timeout", "90s", "--config", w.cfg, "gpu1")
	if code != exitFailed {
		t.Fatalf("watch gpu1: exit %d, want %d\n%s%s", code, exitFailed, out, errOut)
	}
	var fail *output.Line
	if l, ok := readWatch(t, out).failed["gpu1"]; ok {
		fail = &l
	}
	if fail == nil || fail.Cause != "graph-capture-host-sync" || fail.KernelMode != "kdtree-verify=validate" || fail.FailedIn != "graph-capture" {
		t.Fatalf("failure = %+v\n%s", fail, out)
	}

	start := time.Now()
	code, out, errOut = w.bringup(ctx, "mode", "gpu1", "kdtree-verify=on", "--restart", "--yes", "--timeout", "2m", "--config", w.cfg)
	took := time.Since(start)
	if code != exitServing {
		t.Fatalf("mode gpu1 kdtree-verify=on --restart: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("mode kdtree-verify=on --restart on gpu1, failed → serving: %v (infersim's startup is ~11 s)\n%s", took.Round(time.Millisecond), out)
	for _, want := range []string{`gpu1: set kdtree-verify to mode "on" for sglang.service`, "; then restart sglang.service",
		"mode kdtree-verify=on: done", "restart: done", "graph-capture at +", "serving (invocation"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The phases shown are the new run's, from its first line: starting
	// comes after the restart was issued. (The unit's new state and the
	// restart job's "done" race each other: either may print first.)
	if i, j := strings.Index(out, "restart: started"), strings.LastIndex(out, "starting at +0s"); j < i {
		t.Errorf("no start of the new run after the restart:\n%s", out)
	}
	dropIn := w.sh(t, ctx, "gpu1", "cat "+kernels.DropInPath("sglang.service", "kdtree-verify", false))
	if !strings.Contains(dropIn, "KDTREE_MODE=on") {
		t.Errorf("drop-in on disk:\n%s", dropIn)
	}
	if env := w.sh(t, ctx, "gpu1", "systemctl show -p Environment --value sglang"); !strings.Contains(" "+env+" ", " KDTREE_MODE=on ") {
		t.Errorf("Environment = %s", env)
	}
}

// preflight: validate with CUDA graphs on is refused before anything
// changes; on gpu3, whose unit has --disable-cuda-graph, it goes ahead.
func (w *actWorld) preflight(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	before := w.fingerprint(t, ctx, "gpu1")
	code, out, errOut := w.bringup(ctx, "mode", "gpu1", "kdtree-verify=validate", "--restart", "--yes", "--config", w.cfg)
	if code != exitUsage || !strings.Contains(errOut, "gpu1: refused by the capture-safety preflight") ||
		!strings.Contains(errOut, "--disable-cuda-graph") || !strings.Contains(errOut, "capture-safe modes of kdtree-verify: on, off") {
		t.Errorf("validate with graphs on gpu1: exit %d, want %d\n%s%s", code, exitUsage, out, errOut)
	}
	if after := w.fingerprint(t, ctx, "gpu1"); after != before {
		t.Errorf("gpu1 changed although the preflight refused:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	code, out, errOut = w.bringup(ctx, "mode", "gpu3", "kdtree-verify=validate", "--restart", "--yes", "--timeout", "90s", "--config", w.cfg)
	if code != exitServing || !strings.Contains(out, "serving (invocation") {
		t.Fatalf("validate on gpu3 (--disable-cuda-graph): exit %d\n%s%s", code, out, errOut)
	}
	if env := w.sh(t, ctx, "gpu3", "systemctl show -p Environment --value sglang"); !strings.Contains(" "+env+" ", " KDTREE_MODE=validate ") {
		t.Errorf("gpu3 Environment = %s", env)
	}
}

// redeploy: with a config whose kernel points at a local build, a changed
// file is the only one sent, and the service's hash (status --json
// kernel_hashes) differs from the build before and equals it after.
func (w *actWorld) redeploy(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	build := filepath.Join(dir, "site")
	files := map[string]string{
		"sitecustomize.py":          "import os\nif os.environ.get('KDTREE_MODE', 'off') != 'off':\n    import kdtree_verify\n",
		"kdtree_verify/__init__.py": "VERSION = '1.0'\n",
		"kdtree_verify/ops.py":      "def verify(tree, ref):\n    return tree == ref\n",
	}
	for name, body := range files {
		writeFile(t, filepath.Join(build, name), body)
	}
	raw, err := os.ReadFile(w.cfg)
	if err != nil {
		t.Fatal(err)
	}
	const local = "local_dir: kernels/kdtree"
	if !strings.Contains(string(raw), local) {
		t.Fatalf("testbed config has no %q:\n%s", local, raw)
	}
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, strings.Replace(string(raw), local, "local_dir: "+build, 1))

	hashOf := func() string {
		t.Helper()
		code, out, errOut := w.bringup(ctx, "status", "--json", "--config", cfg, "gpu1")
		if code != exitServing {
			t.Fatalf("status gpu1: exit %d\n%s%s", code, out, errOut)
		}
		st := statusLines(t, out, code)
		if len(st) != 1 {
			t.Fatalf("status --json: %d hosts\n%s", len(st), out)
		}
		return st["gpu1"].KernelHashes["kdtree-verify"]
	}
	redeploy := func(want string) {
		t.Helper()
		start := time.Now()
		code, out, errOut := w.bringup(ctx, "redeploy", "gpu1", "--restart", "--yes", "--timeout", "90s", "--config", cfg)
		if code != exitServing || !strings.Contains(out, want) || !strings.Contains(out, "serving (invocation") {
			t.Fatalf("redeploy gpu1 --restart: exit %d, want %d with %q\n%s%s", code, exitServing, want, out, errOut)
		}
		t.Logf("redeploy --restart (%s): %v", want, time.Since(start).Round(time.Millisecond))
	}

	// The host's files are the testbed's, not this build.
	localHash := func() string {
		h, err := bundle.DirHash(build)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if got := hashOf(); got == "" || got == localHash() {
		t.Errorf("before the first deploy: service hash %q, local %q: want both known and different", got, localHash())
	}
	redeploy("3 file(s) sent")
	if got, want := hashOf(), localHash(); got != want {
		t.Fatalf("after the first deploy: service hash %q, want the build's %q", got, want)
	}

	writeFile(t, filepath.Join(build, "kdtree_verify/ops.py"), "def verify(tree, ref):\n    return tree == ref and len(tree) > 0\n")
	if got, want := hashOf(), localHash(); got == want || got == "" {
		t.Errorf("after changing ops.py: service hash %q, local %q: want a drift", got, want)
	}
	redeploy("1 file(s) sent (kdtree_verify/ops.py)")
	if got, want := hashOf(), localHash(); got != want {
		t.Errorf("after the redeploy: service hash %q, want the build's %q", got, want)
	}
}

// resetFailed: a crash loop that hits the start limit leaves the unit
// unable to start; `bringup reset-failed` lets it start again.
func (w *actWorld) resetFailed(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// The testbed's unit has no start limit (StartLimitIntervalSec=0); put
	// a small one back in a drop-in of the test's own.
	w.sh(t, ctx, "gpu2", "mkdir -p /etc/systemd/system/sglang.service.d && printf '[Unit]\\nStartLimitIntervalSec=120\\nStartLimitBurst=3\\n[Service]\\nRestartSec=200ms\\n'"+
		" > /etc/systemd/system/sglang.service.d/50-test-startlimit.conf && systemctl daemon-reload && systemctl start sglang")
	var last string
	for {
		st, err := w.tb.Run(ctx, "gpu2", "systemctl show -p ActiveState,Result,NRestarts sglang")
		if err != nil {
			st += " (" + err.Error() + ")"
		}
		if st != last {
			t.Logf("gpu2: %s", strings.ReplaceAll(strings.TrimSpace(st), "\n", " "))
			last = st
		}
		// Out of restarts: failed for good (systemd 252 keeps the last
		// run's result; the refused start below shows the limit).
		if strings.Contains(st, "ActiveState=failed") {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("gpu2 never hit the start limit: %s", st)
		case <-time.After(200 * time.Millisecond):
		}
	}
	if out, err := w.tb.Run(ctx, "gpu2", "systemctl start sglang"); err == nil {
		t.Fatalf("systemctl start accepted past the start limit: %s", out)
	} else {
		t.Logf("systemctl start past the start limit: %v: %s", err, strings.TrimSpace(out))
	}
	inv := w.sh(t, ctx, "gpu2", "systemctl show -p InvocationID --value sglang")

	code, out, errOut := w.bringup(ctx, "reset-failed", "gpu2", "--yes", "--config", w.cfg)
	if code != exitServing || !strings.Contains(out, "clear the failed state and start limit of sglang.service") || !strings.Contains(out, "reset-failed: done") {
		t.Fatalf("reset-failed gpu2: exit %d\n%s%s", code, out, errOut)
	}
	w.sh(t, ctx, "gpu2", "systemctl start sglang")
	st := w.sh(t, ctx, "gpu2", "systemctl show -p ActiveState,InvocationID sglang")
	if strings.Contains(st, "ActiveState=failed") || strings.Contains(st, "InvocationID="+inv+"\n") || strings.HasSuffix(st, "InvocationID="+inv) {
		t.Errorf("gpu2 did not start again after reset-failed (invocation before %s): %s", inv, st)
	}
	w.sh(t, ctx, "gpu2", "systemctl stop sglang; rm /etc/systemd/system/sglang.service.d/50-test-startlimit.conf; systemctl daemon-reload; systemctl reset-failed sglang 2>/dev/null || true")
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
