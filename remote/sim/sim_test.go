package sim

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// fixture is a seed-scenario fleet on a manual clock with a fixed Seen.
func fixture(t *testing.T, scenario string) (map[string]*Host, *ManualClock) {
	t.Helper()
	clock := NewManualClock(t0)
	hosts, _, err := NewHosts(scenario, Options{Clock: clock, Seen: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*Host{}
	for _, h := range hosts {
		byName[h.Name()] = h
	}
	return byName, clock
}

// until steps h in one-second strides until stop returns true for an
// event or limit passes, and returns the events and the matching one.
func until(t *testing.T, h *Host, clock *ManualClock, limit time.Duration, stop func(event.Event) bool) ([]event.Event, *event.Event) {
	t.Helper()
	var all []event.Event
	end := clock.Now().Add(limit)
	for now := clock.Now(); !now.After(end); now = clock.Advance(time.Second) {
		for _, ev := range h.Step(now) {
			all = append(all, ev)
			if stop(ev) {
				return all, &ev
			}
		}
	}
	return all, nil
}

func message(sub string) func(event.Event) bool {
	return func(ev event.Event) bool { return ev.Journal != nil && strings.Contains(ev.Journal.Message, sub) }
}

func unitState(active string) func(event.Event) bool {
	return func(ev event.Event) bool { return ev.Unit != nil && ev.Unit.ActiveState == active }
}

func messages(evs []event.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Journal != nil {
			b.WriteString(ev.Journal.Message + "\n")
		}
	}
	return b.String()
}

func TestSeedGPU3FailsAtCapture(t *testing.T) {
	hosts, clock := fixture(t, "")
	evs, failed := until(t, hosts["gpu3"], clock, 15*time.Minute, unitState("failed"))
	if failed == nil {
		t.Fatal("gpu3 never failed")
	}
	if at := failed.Time.Sub(t0); at < 620*time.Second || at > 640*time.Second {
		t.Errorf("gpu3 failed at %v, want 620-640 s", at)
	}
	if failed.Unit.Result != "exit-code" || failed.Unit.SubState != "failed" {
		t.Errorf("unit %+v, want failed/failed with result exit-code", failed.Unit)
	}
	text := messages(evs)
	for _, want := range []string{
		"Starting sglang.service - SGLang server...",
		"kdtree-verify: sitecustomize loaded from /opt/kdtree/site, mode=validate, content sha256=",
		"Capture target decode CUDA graph begin.",
		"TP0] Scheduler hit an exception: Traceback (most recent call last):",
		"torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing",
		"Exception: Capture cuda graph failed: CUDA error: operation failed due to a previous error during capture",
		"Received sigquit from a child process. It usually means the child failed.",
		"sglang.service: Main process exited, code=exited, status=1/FAILURE",
		"sglang.service: Failed with result 'exit-code'.",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("gpu3's journal lacks %q", want)
		}
	}
	var ids = map[string]string{}
	var lastCursor string
	for _, ev := range evs {
		if j := ev.Journal; j != nil {
			if j.MessageID != "" {
				ids[j.Message] = j.MessageID
			}
			if j.Cursor <= lastCursor && len(j.Cursor) == len(lastCursor) {
				t.Fatalf("cursor %q not after %q", j.Cursor, lastCursor)
			}
			lastCursor = j.Cursor
		}
		if !ev.Seen.Equal(t0) || ev.Host != "gpu3" {
			t.Fatalf("event not stamped: %+v", ev)
		}
	}
	if ids["sglang.service: Main process exited, code=exited, status=1/FAILURE"] != midExited ||
		ids["Started sglang.service - SGLang server."] != midStarted {
		t.Errorf("systemd message ids wrong: %v", ids)
	}
}

func TestSeedGPU1Serves(t *testing.T) {
	hosts, clock := fixture(t, "seed")
	evs, ready := until(t, hosts["gpu1"], clock, 15*time.Minute, message("The server is fired up and ready to roll!"))
	if ready == nil {
		t.Fatal("gpu1 never became ready")
	}
	if at := ready.Time.Sub(t0); at < 11*time.Minute || at > 12*time.Minute {
		t.Errorf("gpu1 ready at %v, want 11-12 min", at)
	}
	var shards, gpus, probes503 int
	var maxMem int
	for _, ev := range evs {
		switch {
		case ev.Journal != nil && strings.HasPrefix(ev.Journal.Message, "Loading safetensors checkpoint shards:"):
			shards++
		case ev.GPU != nil:
			gpus++
			if len(ev.GPU.Devices) != 8 {
				t.Fatalf("GPU sample with %d devices", len(ev.GPU.Devices))
			}
			maxMem = max(maxMem, ev.GPU.Devices[0].MemUsedMiB)
		case ev.Probe != nil && ev.Probe.Status == 503:
			probes503++
		}
	}
	if shards < 65 {
		t.Errorf("%d shard lines, want at least 65", shards)
	}
	if gpus < 100 || gpus > 200 {
		t.Errorf("%d GPU samples in ~11 min, want one per 5 s", gpus)
	}
	if maxMem < 120*1024 || maxMem > 143771 {
		t.Errorf("peak memory %d MiB, want about 127 GiB", maxMem)
	}
	// The next probe after ready answers 200.
	evs, ok := until(t, hosts["gpu1"], clock, 15*time.Second, func(ev event.Event) bool { return ev.Probe != nil })
	if ok == nil || !ok.Probe.OK || ok.Probe.Status != 200 {
		t.Errorf("probe after ready: %+v", ok)
	}
	if len(evs) == 0 {
		t.Error("no events after ready")
	}
}

func TestModeOnRestartServes(t *testing.T) {
	hosts, clock := fixture(t, "seed")
	h := hosts["gpu3"]
	if _, f := until(t, h, clock, 15*time.Minute, unitState("failed")); f == nil {
		t.Fatal("gpu3 never failed")
	}
	ctx := context.Background()
	noEmit := func(event.Event) bool { return true }
	if err := h.Do(ctx, remote.Action{Kind: remote.ActSetMode, Kernel: "kdtree-verify", Mode: "bogus"}, noEmit); err == nil {
		t.Error("unknown mode accepted")
	}
	if err := h.Do(ctx, remote.Action{Kind: remote.ActSetMode, Kernel: "kdtree-verify", Mode: "on"}, noEmit); err != nil {
		t.Fatal(err)
	}
	evs := h.Step(clock.Now())
	if len(evs) != 1 || evs[0].Unit == nil || evs[0].Unit.ActiveState != "failed" ||
		!strings.Contains(strings.Join(evs[0].Unit.Environment, " "), "KDTREE_MODE=on") {
		t.Fatalf("after set mode: %+v", evs)
	}
	if err := h.Do(ctx, remote.Action{Kind: remote.ActRestart}, noEmit); err != nil {
		t.Fatal(err)
	}
	start := clock.Now()
	evs, ready := until(t, h, clock, 15*time.Minute, message("fired up and ready to roll"))
	if ready == nil {
		t.Fatalf("gpu3 did not serve after mode on + restart:\n%s", messages(evs))
	}
	if d := ready.Time.Sub(start); d < 10*time.Minute || d > 13*time.Minute {
		t.Errorf("restart to ready took %v", d)
	}
	text := messages(evs)
	if !strings.Contains(text, "mode=on, content sha256=") || strings.Contains(text, "Traceback") {
		t.Errorf("second invocation log unexpected:\n%s", text)
	}
	var invs = map[string]bool{}
	for _, ev := range evs {
		if ev.Unit != nil && ev.Unit.InvocationID != "" {
			invs[ev.Unit.InvocationID] = true
		}
	}
	if len(invs) != 1 {
		t.Errorf("restart gave %d invocation ids, want 1 new one", len(invs))
	}
}

func TestStopResetFailedRedeploy(t *testing.T) {
	hosts, clock := fixture(t, "seed")
	ctx := context.Background()
	var reports []event.Event
	emit := func(ev event.Event) bool { reports = append(reports, ev); return true }

	// A running unit stops cleanly.
	h := hosts["gpu1"]
	until(t, h, clock, time.Minute, func(event.Event) bool { return false })
	if err := h.Do(ctx, remote.Action{Kind: remote.ActStop}, emit); err != nil {
		t.Fatal(err)
	}
	text := messages(h.Step(clock.Now()))
	for _, want := range []string{"Stopping sglang.service - SGLang server...", "SIGTERM received.", "sglang.service: Deactivated successfully.", "Stopped sglang.service - SGLang server."} {
		if !strings.Contains(text, want) {
			t.Errorf("stop lacks %q:\n%s", want, text)
		}
	}
	// Reset-failed on a unit that has not failed does nothing.
	if err := h.Do(ctx, remote.Action{Kind: remote.ActResetFailed}, emit); err != nil {
		t.Fatal(err)
	}
	if evs := h.Step(clock.Now()); len(evs) != 0 {
		t.Errorf("reset-failed on an inactive unit emitted %v", evs)
	}

	// A failed unit goes inactive.
	h3 := hosts["gpu3"]
	until(t, h3, clock, 15*time.Minute, unitState("failed"))
	if err := h3.Do(ctx, remote.Action{Kind: remote.ActResetFailed}, emit); err != nil {
		t.Fatal(err)
	}
	evs := h3.Step(clock.Now())
	if len(evs) != 1 || evs[0].Unit.ActiveState != "inactive" || evs[0].Unit.Result != "success" {
		t.Errorf("reset-failed: %+v", evs)
	}

	// Redeploy changes the hash the next start reports.
	before := h3.kernel().Hash
	if err := h3.Do(ctx, remote.Action{Kind: remote.ActRedeploy, Kernel: "kdtree-verify"}, emit); err != nil {
		t.Fatal(err)
	}
	if after := h3.kernel().Hash; after == before || len(after) != 64 {
		t.Errorf("hash %q after redeploy, was %q", after, before)
	}
	if len(reports) != 1 || reports[0].Action == nil || !strings.Contains(reports[0].Action.Detail, h3.kernel().Hash) {
		t.Errorf("redeploy report: %+v", reports)
	}
	if err := h3.Do(ctx, remote.Action{Kind: remote.ActRedeploy, Kernel: "nope"}, emit); err == nil {
		t.Error("redeploy of an unknown kernel succeeded")
	}
}

func TestCrashLoopRestarts(t *testing.T) {
	hosts, clock := fixture(t, "crashloop")
	evs, _ := until(t, hosts["gpu3"], clock, 3*time.Minute, func(event.Event) bool { return false })
	text := messages(evs)
	if n := strings.Count(text, "Starting sglang.service"); n < 3 {
		t.Errorf("%d starts in 3 min, want a loop:\n%s", n, text)
	}
	if !strings.Contains(text, "sglang.service: Scheduled restart job, restart counter is at 2.") {
		t.Errorf("no restart counter line:\n%s", text)
	}
}

func TestUnknownScenario(t *testing.T) {
	_, _, err := NewFleet("nope", Options{})
	if err == nil || !strings.Contains(err.Error(), "seed, all-ok, crashloop") {
		t.Errorf("error %v, want one naming the known scenarios", err)
	}
}

func TestAllOKServes(t *testing.T) {
	hosts, clock := fixture(t, "all-ok")
	if _, r := until(t, hosts["gpu3"], clock, 13*time.Minute, message("fired up")); r == nil {
		t.Error("gpu3 does not serve in all-ok")
	}
}

// TestRunStops runs a fleet at high speed and checks that Run emits in
// time order and returns, with its goroutines gone, when ctx ends.
func TestRunStops(t *testing.T) {
	before := runtime.NumGoroutine()
	drivers, _, err := NewFleet("seed", Options{Speed: 2000, Tick: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	got := map[string][]event.Event{}
	var wg sync.WaitGroup
	for _, d := range drivers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.Run(ctx, func(ev event.Event) bool {
				mu.Lock()
				defer mu.Unlock()
				got[ev.Host] = append(got[ev.Host], ev)
				return true
			}); err != nil {
				t.Error(err)
			}
		}()
	}
	// Actions run concurrently with Run.
	for i := 0; i < 20; i++ {
		if err := drivers[2].Do(ctx, remote.Action{Kind: remote.ActSetMode, Kernel: "kdtree-verify", Mode: "on"}, func(event.Event) bool { return true }); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond) // ~1000 virtual seconds
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for name, evs := range got {
		// The connection event comes first, stamped when Run began.
		for i := 2; i < len(evs); i++ {
			if evs[i].Time.Before(evs[i-1].Time) {
				t.Fatalf("%s: event %d at %v before %v", name, i, evs[i].Time, evs[i-1].Time)
			}
		}
	}
	if !strings.Contains(messages(got["gpu1"]), "fired up") {
		t.Error("gpu1 did not reach ready in ~1000 virtual seconds")
	}
	deadline := time.Now().Add(time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after Run returned, %d before", n, before)
	}
}

// TestDaemonReload: a simulated daemon-reload says it re-read the unit
// files and changes nothing on the host: no journal line, no unit change.
func TestDaemonReload(t *testing.T) {
	hosts, clock := fixture(t, "seed")
	h := hosts["gpu1"]
	until(t, h, clock, time.Minute, func(event.Event) bool { return false })
	before := h.Step(clock.Now())
	var reports []event.Event
	emit := func(ev event.Event) bool { reports = append(reports, ev); return true }
	if err := h.Do(context.Background(), remote.Action{Kind: remote.ActDaemonReload}, emit); err != nil {
		t.Fatal(err)
	}
	if len(reports) != 1 || reports[0].Action == nil || reports[0].Action.Name != "daemon-reload" ||
		reports[0].Action.Stage != event.ActionProgress || !strings.Contains(reports[0].Action.Detail, "re-read") {
		t.Errorf("reports %+v", reports)
	}
	if evs := h.Step(clock.Now()); len(evs) != 0 {
		t.Errorf("daemon-reload changed the host: %v (before: %d events)", messages(evs), len(before))
	}
}
