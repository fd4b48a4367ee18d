package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/startup"
)

// mixedFleet runs the mixed scenario through fleet.Fleet at speed, with
// the phase engine left to find each host's engine (auto), and returns
// the fleet and a function that reads its batches until done reports
// true for one (failing the test after a minute).
func mixedFleet(t *testing.T, speed float64) (*fleet.Fleet, func(what string, done func(remote.Batch) bool) remote.Batch) {
	t.Helper()
	return scenarioFleet(t, "mixed", speed)
}

// scenarioFleet is mixedFleet over any scenario.
func scenarioFleet(t *testing.T, scenario string, speed float64) (*fleet.Fleet, func(what string, done func(remote.Batch) bool) remote.Batch) {
	t.Helper()
	cat := kernels.DefaultCatalog()
	hosts, clock, err := NewHosts(scenario, Options{Speed: speed, Kernels: cat, Tick: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	specs := make([]fleet.HostSpec, len(hosts))
	for i, h := range hosts {
		specs[i] = fleet.HostSpec{Driver: h, Unit: h.Unit(), Engine: kernels.EngineAuto}
	}
	theFleet, err := fleet.New(specs, fleet.Options{Kernels: cat, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- theFleet.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("fleet: %v", err)
		}
	})
	deadline := time.After(time.Minute)
	var last remote.Batch
	wait := func(what string, until func(remote.Batch) bool) remote.Batch {
		t.Helper()
		for {
			select {
			case b := <-theFleet.Updates():
				last = b
				if until(b) {
					return b
				}
			case <-deadline:
				for _, h := range last.Hosts {
					t.Logf("%s: %s (engine %q) %+v", h.Name, h.Startup.Phase, h.Startup.Engine, h.Startup.Diag)
				}
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	return theFleet, wait
}

// phases is every host's phase in b.
func phases(b remote.Batch) map[string]startup.Phase {
	out := map[string]startup.Phase{}
	for _, h := range b.Hosts {
		out[h.Name] = h.Startup.Phase
	}
	return out
}

// host is the named host's state in b.
func host(b remote.Batch, name string) remote.HostState {
	for _, h := range b.Hosts {
		if h.Name == name {
			return h
		}
	}
	return remote.HostState{}
}

// actionEnd finds the end (done or failed) of action id on host in b.
func actionEnd(b remote.Batch, name string, id int) *event.ActionResult {
	for _, ev := range b.Events {
		if a := ev.Action; ev.Host == name && a != nil && a.ID == id && (a.Stage == event.ActionDone || a.Stage == event.ActionFailed) {
			return a
		}
	}
	return nil
}

// TestMixedFleet runs the mixed scenario through the fleet and the phase
// engine (engine auto): gpu1-3 serve, gpu3 and gpu4 are seen to run vLLM,
// gpu4 dies at graph capture with vLLM's hint; the preflight refuses
// validate + restart on gpu3 naming --enforce-eager, and mode on +
// restart brings gpu4 to serving.
func TestMixedFleet(t *testing.T) {
	theFleet, wait := mixedFleet(t, 1000)
	b := wait("gpu1-3 serving and gpu4 failed", func(b remote.Batch) bool {
		p := phases(b)
		return p["gpu1"] == startup.Serving && p["gpu2"] == startup.Serving && p["gpu3"] == startup.Serving && p["gpu4"] == startup.Failed
	})
	for name, want := range map[string]string{"gpu1": "sglang", "gpu2": "sglang", "gpu3": "vllm", "gpu4": "vllm"} {
		h := host(b, name)
		if h.Startup.Engine != want {
			t.Errorf("%s: engine detected %q, want %s", name, h.Startup.Engine, want)
		}
		if unit := want + ".service"; h.Unit != unit || h.UnitState.Name != unit {
			t.Errorf("%s: unit %q (state of %q), want %s", name, h.Unit, h.UnitState.Name, unit)
		}
	}
	g4 := host(b, "gpu4")
	if d := g4.Startup.Diag; d == nil || d.Cause != "graph-capture-host-sync" || d.Phase != startup.GraphCapture || !strings.Contains(d.Hint, "--enforce-eager") {
		t.Fatalf("gpu4 diagnosis %+v, want graph-capture-host-sync in graph capture with a hint naming --enforce-eager", d)
	}
	if !strings.HasPrefix(g4.UnitState.ExecStart, "/usr/local/bin/vllm serve /models/") || !strings.Contains(g4.UnitState.ExecStart, "--tensor-parallel-size 8") {
		t.Errorf("gpu4 ExecStart %q, want vllm serve", g4.UnitState.ExecStart)
	}

	// validate + restart on gpu3: the restart is refused, gpu3 stays up.
	if _, err := theFleet.Do("gpu3", remote.Action{Kind: remote.ActSetMode, Kernel: "kdtree-verify", Mode: "validate"}); err != nil {
		t.Fatal(err)
	}
	id, err := theFleet.Do("gpu3", remote.Action{Kind: remote.ActRestart})
	if err != nil {
		t.Fatal(err)
	}
	var refused *event.ActionResult
	b = wait("gpu3's restart to end", func(b remote.Batch) bool { refused = actionEnd(b, "gpu3", id); return refused != nil })
	if refused.Stage != event.ActionFailed || !strings.Contains(refused.Err, "--enforce-eager") || !strings.Contains(refused.Err, "kdtree-verify=validate") {
		t.Errorf("restart of gpu3 in validate: %s %q, want refused naming kdtree-verify=validate and --enforce-eager", refused.Stage, refused.Err)
	}
	if p := phases(b)["gpu3"]; p != startup.Serving {
		t.Errorf("gpu3 %s after the refused restart, want still serving", p)
	}

	// mode on + restart: gpu4 serves.
	if _, err := theFleet.Do("gpu4", remote.Action{Kind: remote.ActSetMode, Kernel: "kdtree-verify", Mode: "on"}); err != nil {
		t.Fatal(err)
	}
	if _, err := theFleet.Do("gpu4", remote.Action{Kind: remote.ActRestart}); err != nil {
		t.Fatal(err)
	}
	b = wait("gpu4 to serve after mode on + restart", func(b remote.Batch) bool { return phases(b)["gpu4"] == startup.Serving })
	if g4 := host(b, "gpu4"); g4.Startup.Engine != "vllm" || g4.Startup.Diag != nil {
		t.Errorf("gpu4 serving with engine %q, diagnosis %+v", g4.Startup.Engine, g4.Startup.Diag)
	}
}

// TestVLLMHostActions drives a vLLM host on a manual clock: its journal
// is vllm.service's, with the main process's PID on every line of the
// shared stream; it fails at capture in validate; reset-failed,
// redeploy and undo act as on SGLang, and a stop while serving logs
// uvicorn's shutdown under the API server's prefix.
func TestVLLMHostActions(t *testing.T) {
	hosts, clock := fixture(t, "mixed")
	h := hosts["gpu4"]
	if h.Unit() != "vllm.service" || h.Engine() != "vllm" || hosts["gpu1"].Unit() != "sglang.service" {
		t.Fatalf("units %s (%s), %s", h.Unit(), h.Engine(), hosts["gpu1"].Unit())
	}
	evs, failed := until(t, h, clock, 15*time.Minute, unitState("failed"))
	if failed == nil {
		t.Fatal("gpu4 never failed")
	}
	if at := failed.Time.Sub(t0); at < 585*time.Second || at > 600*time.Second {
		t.Errorf("gpu4 failed at %v, want 585-600 s", at)
	}
	text := messages(evs)
	for _, want := range []string{
		"Starting vllm.service - vLLM server...",
		") INFO 11-30 10:00:11 [api_server.py:1839] vLLM API server version 0.11.0",
		"non-default args: {'model_tag': '/models/DeepSeek-V3', 'model': '/models/DeepSeek-V3', 'tensor_parallel_size': 8}",
		"\rCapturing CUDA graphs (mixed prefill-decode, PIECEWISE):   0%|          | 0/67 [00:00<?, ?it/s](Worker_TP0 pid=",
		"[multiproc_executor.py:671] WorkerProc hit an exception.",
		"[core.py:708] EngineCore failed to start.",
		"RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}",
		"vllm.service: Main process exited, code=exited, status=1/FAILURE",
	} {
		contains(t, "gpu4's journal", text, want)
	}
	pid := 0
	for _, ev := range evs {
		if j := ev.Journal; j != nil && j.PID != 1 {
			if pid == 0 {
				pid = j.PID
			}
			if j.PID != pid || j.Unit != "vllm.service" || j.Priority != 6 {
				t.Fatalf("service line from pid %d of %s at priority %d, want pid %d of vllm.service at 6: %q", j.PID, j.Unit, j.Priority, pid, j.Message)
			}
		}
	}

	ctx := context.Background()
	noEmit := func(event.Event) bool { return true }
	if err := h.Do(ctx, remote.Action{Kind: remote.ActResetFailed}, noEmit); err != nil {
		t.Fatal(err)
	}
	if evs := h.Step(clock.Now()); len(evs) != 1 || evs[0].Unit == nil || evs[0].Unit.ActiveState != "inactive" {
		t.Errorf("reset-failed: %+v", evs)
	}
	before := h.kernel().Hash
	if err := h.Do(ctx, remote.Action{Kind: remote.ActRedeploy}, noEmit); err != nil || h.kernel().Hash == before {
		t.Errorf("redeploy: %v, hash %s was %s", err, h.kernel().Hash, before)
	}
	// A mode change and its undo; then the enforce-eager-free unit in
	// validate is refused a restart, and in mode on it restarts.
	for _, a := range []remote.Action{
		{Kind: remote.ActSetMode, Kernel: "kdtree-verify", Mode: "on"},
		{Kind: remote.ActUndoMode, Kernel: "kdtree-verify"},
	} {
		if err := h.Do(ctx, a, noEmit); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Do(ctx, remote.Action{Kind: remote.ActRestart}, noEmit); err == nil || !strings.Contains(err.Error(), "--enforce-eager") {
		t.Errorf("restart in validate after undo: %v, want refused naming --enforce-eager", err)
	}
	if err := h.Do(ctx, remote.Action{Kind: remote.ActSetMode, Kernel: "kdtree-verify", Mode: "on"}, noEmit); err != nil {
		t.Fatal(err)
	}
	if err := h.Do(ctx, remote.Action{Kind: remote.ActRestart}, noEmit); err != nil {
		t.Fatal(err)
	}
	evs, ready := until(t, h, clock, 15*time.Minute, message("Application startup complete."))
	if ready == nil {
		t.Fatalf("gpu4 did not serve after mode on + restart:\n%s", messages(evs))
	}
	if !strings.Contains(messages(evs), "mode=on, content sha256="+h.kernel().Hash) {
		t.Error("the restarted server did not load the redeployed kernel in mode on")
	}
	_, probe := until(t, h, clock, 15*time.Second, func(ev event.Event) bool { return ev.Probe != nil })
	if probe == nil || probe.Probe.Status != 200 {
		t.Errorf("probe after ready: %+v", probe)
	}
	if err := h.Do(ctx, remote.Action{Kind: remote.ActStop}, noEmit); err != nil {
		t.Fatal(err)
	}
	text = messages(h.Step(clock.Now()))
	for _, want := range []string{"Stopping vllm.service - vLLM server...", ") INFO:     Shutting down", ") INFO:     Application shutdown complete.", "vllm.service: Deactivated successfully."} {
		contains(t, "the stop's journal", text, want)
	}
	if strings.Contains(text, "SIGTERM received") {
		t.Errorf("vLLM host logged SGLang's shutdown:\n%s", text)
	}
}

// contains reports an error when text (what) lacks want.
func contains(t *testing.T, what, text, want string) {
	t.Helper()
	if !strings.Contains(text, want) {
		t.Errorf("%s lacks %q", what, want)
	}
}
