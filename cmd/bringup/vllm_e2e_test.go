package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// TestVLLMOnTestbed runs bringup against two real hosts whose infersim
// stands in for vLLM (vllm.service): gpu1 in mode on, gpu2 in validate
// with CUDA graphs on.
//   - watch --json, with the engine left to detection (auto) and started
//     just after the units, follows gpu1 through vLLM's phases to serving
//     and explains gpu2's death at graph capture (the host-sync cause,
//     naming the mode and --enforce-eager), and exits 1;
//   - the capture-safety preflight refuses `mode gpu1
//     kdtree-verify=validate --restart` on vLLM without --enforce-eager,
//     and gpu1 stays as it was.
func TestVLLMOnTestbed(t *testing.T) {
	tb := testbed.StartWith(t, testbed.Options{Hosts: 2, Host: func(i int) testbed.HostOptions {
		if i == 1 {
			return testbed.HostOptions{Engine: testbed.EngineVLLM, KernelMode: "validate"}
		}
		return testbed.HostOptions{Engine: testbed.EngineVLLM, KernelMode: "on"}
	}})
	w := &actWorld{tb: tb, cfg: filepath.Join(tb.Inventory(), "config.yaml")}
	t.Run("WatchDetectsVLLM", func(t *testing.T) { vllmWatch(t, w) })
	t.Run("PreflightRefusesValidateWithoutEnforceEager", func(t *testing.T) { vllmPreflight(t, w) })
}

// vllmWatch starts both units under watch --json with engine auto.
func vllmWatch(t *testing.T, w *actWorld) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	// The inventory names the hosts' engine (vllm); leave it to detection.
	b, err := os.ReadFile(w.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "engine: vllm"); n != 3 {
		t.Fatalf("inventory config names engine vllm %d times, want 3 (defaults and two hosts):\n%s", n, b)
	}
	auto := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, auto, strings.ReplaceAll(string(b), "engine: vllm", "engine: auto"))

	// Start both units, then watch: it joins the runs under way and reads
	// their startups from their first lines in the journal.
	for _, h := range w.tb.Hosts() {
		w.sh(t, ctx, h.Name, "systemctl start "+testbed.VLLMUnitName)
	}
	code, out, errOut := w.bringup(ctx, "watch", "--json", "--timeout", "2m", "--config", auto)
	if code != exitFailed {
		t.Fatalf("watch exit %d, want %d\n%s%s", code, exitFailed, out, errOut)
	}
	story := readWatch(t, out)
	phases := story.phases
	var fail *output.Line
	if l, ok := story.failed["gpu2"]; ok {
		fail = &l
	}
	t.Logf("gpu1 phases %v; gpu2 phases %v", phases["gpu1"], phases["gpu2"])
	want := []string{"init", "weights", "kv-cache", "graph-capture", "http", "serving"}
	if !slices.Equal(only(phases["gpu1"], want), want) {
		t.Errorf("gpu1 phases %v, want %v in order\n%s", phases["gpu1"], want, out)
	}
	if p, want := phases["gpu2"], []string{"weights", "kv-cache", "failed"}; !slices.Equal(only(p, append(want, "serving")), want) {
		t.Errorf("gpu2 phases %v, want weights, kv-cache, then failed", p)
	}
	if fail == nil || fail.Cause != "graph-capture-host-sync" || fail.FailedIn != "graph-capture" || fail.KernelMode != "kdtree-verify=validate" ||
		!strings.Contains(fail.Hint, "--enforce-eager") || !strings.Contains(strings.Join(fail.Evidence, "\n"), "operation not permitted when stream is capturing") {
		t.Fatalf("gpu2 failure = %+v\n%s", fail, out)
	}
}

// vllmPreflight: with gpu1 serving in mode on, switching it to validate
// with a restart is refused before anything changes, naming vLLM's flag.
func vllmPreflight(t *testing.T, w *actWorld) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	state := func() string {
		return w.sh(t, ctx, "gpu1", "systemctl show -p InvocationID,ActiveState,Environment "+testbed.VLLMUnitName+
			"; ls /etc/systemd/system/"+testbed.VLLMUnitName+".d /run/systemd/system/"+testbed.VLLMUnitName+".d 2>&1; true")
	}
	before := state()
	code, out, errOut := w.bringup(ctx, "mode", "gpu1", "kdtree-verify=validate", "--restart", "--yes", "--config", w.cfg)
	if code != exitUsage || !strings.Contains(errOut, "gpu1: refused by the capture-safety preflight") ||
		!strings.Contains(errOut, "vllm starts with CUDA graphs on (no --enforce-eager in ExecStart)") {
		t.Errorf("validate without --enforce-eager on gpu1: exit %d, want %d\n%s%s", code, exitUsage, out, errOut)
	}
	t.Logf("bringup mode gpu1 kdtree-verify=validate --restart: exit %d\n%s", code, errOut)
	if after := state(); after != before {
		t.Errorf("gpu1 changed although the preflight refused:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// only keeps the elements of got that are in want, in got's order.
func only(got, want []string) []string {
	return slices.DeleteFunc(slices.Clone(got), func(s string) bool { return !slices.Contains(want, s) })
}
