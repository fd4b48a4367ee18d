package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// zooHost is one way a startup goes wrong, on one test host, and what
// bringup must say about it.
type zooHost struct {
	opts     testbed.HostOptions
	cause    string
	failedIn string
}

// TestFailureCatalogueOnTestbed starts four real hosts that each fail a
// different way — SGLang out of GPU memory while loading weights, SGLang
// whose HTTP port is taken, SGLang whose NCCL collective times out in
// capture, vLLM out of GPU memory — and checks that watch --json names
// each cause, the phase it struck in, a hint and the evidence, from the
// real journal; and that status --json, joining afterwards, says the same.
func TestFailureCatalogueOnTestbed(t *testing.T) {
	fail := func(engine, what string, env ...string) testbed.HostOptions {
		o := testbed.HostOptions{Engine: engine, KernelMode: "on", Env: map[string]string{"INFERSIM_FAIL": what}}
		for i := 0; i+1 < len(env); i += 2 {
			o.Env[env[i]] = env[i+1]
		}
		return o
	}
	zoo := map[string]zooHost{
		"gpu1": {fail(testbed.EngineSGLang, "oom"), "gpu-oom", "weights"},
		"gpu2": {fail(testbed.EngineSGLang, "port"), "port-in-use", "http"},
		"gpu3": {fail(testbed.EngineSGLang, "nccl", "INFERSIM_NCCL_TIMEOUT_SECONDS", "3"), "nccl-timeout", "graph-capture"},
		"gpu4": {fail(testbed.EngineVLLM, "oom"), "gpu-oom", "weights"},
	}
	names := []string{"gpu1", "gpu2", "gpu3", "gpu4"}
	tb := testbed.StartWith(t, testbed.Options{Hosts: len(names), Host: func(i int) testbed.HostOptions { return zoo[names[i]].opts }})
	w := &actWorld{tb: tb, cfg: filepath.Join(tb.Inventory(), "config.yaml")}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	for _, h := range names {
		w.sh(t, ctx, h, "systemctl start "+zoo[h].opts.Unit())
	}
	code, out, errOut := w.bringup(ctx, "watch", "--json", "--timeout", "2m", "--config", w.cfg)
	if code != exitFailed {
		t.Fatalf("watch exit %d, want %d\n%s%s", code, exitFailed, out, errOut)
	}
	failed := readWatch(t, out).failed
	for _, h := range names {
		want, got := zoo[h], failed[h]
		t.Logf("%s: %s in %s: %s — hint: %s", h, got.Cause, got.FailedIn, got.Summary, got.Hint)
		if got.Cause != want.cause || got.FailedIn != want.failedIn || got.Hint == "" || got.Summary == "" || len(got.Evidence) == 0 {
			t.Errorf("%s: failure %+v, want cause %s in %s with a summary, hint and evidence", h, got, want.cause, want.failedIn)
		}
	}

	// status joins after the fact and reads each failed run from its
	// first line: the same causes.
	code, out, errOut = w.bringup(ctx, "status", "--json", "--config", w.cfg)
	if code != exitFailed {
		t.Fatalf("status exit %d, want %d\n%s%s", code, exitFailed, out, errOut)
	}
	causes := map[string]string{}
	for _, h := range statusLines(t, out, code) {
		if h.Cause != "" {
			causes[h.Host] = h.Cause
		}
	}
	for _, h := range names {
		if causes[h] != zoo[h].cause {
			t.Errorf("status: %s cause %q, want %q", h, causes[h], zoo[h].cause)
		}
	}
}
