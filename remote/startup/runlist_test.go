package startup

import (
	"fmt"
	"testing"
	"time"
)

// TestRunsOfInvocations: each invocation id of the unit is a run with its
// own number, trail and verdict; the list keeps the latest MaxRuns, the
// numbers counting on past those dropped.
func TestRunsOfInvocations(t *testing.T) {
	h := newHost(t, Options{Engine: "sglang"})
	const total = MaxRuns + 3
	for i := 1; i <= total; i++ {
		h.inv = fmt.Sprintf("inv-%d", i)
		h.unit("activating", "start", "success")
		h.unit("active", "running", "success")
		h.lines(sgWeights)
		if i == total {
			h.lines(sgCapture, sgReady)
			continue
		}
		h.lines("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")
		h.unit("activating", "auto-restart", "exit-code")
	}
	st := h.tr.State()
	if st.Phase != Serving || st.Run != total || len(st.Runs) != MaxRuns {
		t.Fatalf("phase %s, run %d, %d runs kept; want serving, run %d, %d kept", st.Phase, st.Run, len(st.Runs), total, MaxRuns)
	}
	for i, r := range st.Runs {
		n := total - MaxRuns + 1 + i
		if r.N != n || r.InvocationID != fmt.Sprintf("inv-%d", n) {
			t.Errorf("run %d is number %d of %s", n, r.N, r.InvocationID)
		}
		if n == total {
			if r.Outcome != Serving || r.Cause() != "" || !r.End.IsZero() {
				t.Errorf("last run: %+v, want serving and open", r)
			}
			continue
		}
		if r.Outcome != Failed || r.Cause() != "gpu-oom" || r.Reached != Weights || r.Duration(h.now) <= 0 {
			t.Errorf("run %d: outcome %s, cause %q, reached %s, lasted %s; want failed gpu-oom in weights", n, r.Outcome, r.Cause(), r.Reached, r.Duration(h.now))
		}
	}
}

// TestCrashLoop: failed runs in a row, each started again soon after the
// failure before, are a crash loop with their common cause (or "causes
// vary"), kept while the next run starts and ended by a run that serves;
// systemd giving up (start-limit-hit) is named, and reset-failed clears it.
func TestCrashLoop(t *testing.T) {
	const oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
	const nccl = "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled cuda error"
	failRun := func(h *host, n int, line string) {
		h.inv = fmt.Sprintf("inv-%d", n)
		h.unit("activating", "start", "success")
		h.unit("active", "running", "success")
		h.lines(sgWeights, line)
		h.unit("activating", "auto-restart", "exit-code")
	}
	newRun := func(h *host, n int) {
		h.inv = fmt.Sprintf("inv-%d", n)
		h.unit("activating", "start", "success")
		h.unit("active", "running", "success")
	}
	t.Run("same cause", func(t *testing.T) {
		h := newHost(t, Options{Engine: "sglang"})
		failRun(h, 1, oom)
		if l := h.tr.State().Loop; l != nil {
			t.Fatalf("one failed run is a loop: %+v", l)
		}
		failRun(h, 2, oom)
		failRun(h, 3, oom)
		l := h.tr.State().Loop
		if l == nil || l.Runs != 3 || l.Cause != "gpu-oom" || l.Summary == "" || l.StartLimit {
			t.Fatalf("after 3 failed runs: loop %+v, want 3 runs of gpu-oom", l)
		}
		newRun(h, 4)
		h.lines(sgWeights)
		if l := h.tr.State().Loop; l == nil || l.Runs != 3 || l.Cause != "gpu-oom" {
			t.Fatalf("while run 4 starts: loop %+v, want the 3 runs' gpu-oom kept", l)
		}
		h.lines(sgCapture, sgReady)
		if st := h.tr.State(); st.Phase != Serving || st.Loop != nil {
			t.Fatalf("run 4 serves: phase %s, loop %+v; want no loop", st.Phase, st.Loop)
		}
	})
	t.Run("causes vary", func(t *testing.T) {
		h := newHost(t, Options{Engine: "sglang"})
		failRun(h, 1, oom)
		failRun(h, 2, nccl)
		if l := h.tr.State().Loop; l == nil || l.Runs != 2 || l.Cause != CausesVary {
			t.Fatalf("loop %+v, want 2 runs, causes vary", l)
		}
	})
	t.Run("far apart", func(t *testing.T) {
		h := newHost(t, Options{Engine: "sglang"})
		failRun(h, 1, oom)
		h.now = h.now.Add(LoopGap + time.Minute)
		failRun(h, 2, oom)
		if l := h.tr.State().Loop; l != nil {
			t.Fatalf("runs %s apart make a loop: %+v", LoopGap, l)
		}
	})
	t.Run("start limit", func(t *testing.T) {
		h := newHost(t, Options{Engine: "sglang"})
		failRun(h, 1, oom)
		failRun(h, 2, oom)
		h.systemd("sglang.service: Start request repeated too quickly.", "sglang.service: Failed with result 'start-limit-hit'.")
		h.unit("failed", "failed", "start-limit-hit")
		st := h.tr.State()
		if st.Phase != Failed || st.Loop == nil || !st.Loop.StartLimit || st.Loop.Cause != "gpu-oom" || st.Loop.Runs != 2 {
			t.Fatalf("phase %s, loop %+v; want failed, start-limit-hit after 2 runs of gpu-oom", st.Phase, st.Loop)
		}
		h.unit("inactive", "dead", "success") // systemctl reset-failed
		if l := h.tr.State().Loop; l != nil && l.StartLimit {
			t.Fatalf("after reset-failed: loop %+v still says start-limit-hit", l)
		}
	})
	t.Run("start limit, unit state first", func(t *testing.T) {
		// systemd 252 keeps the last run's result: the unit's state says
		// failed before the journal says why.
		h := newHost(t, Options{Engine: "sglang"})
		failRun(h, 1, oom)
		failRun(h, 2, oom)
		h.unit("failed", "failed", "exit-code")
		if st := h.tr.State(); st.Phase != Failed || st.Loop == nil || st.Loop.StartLimit {
			t.Fatalf("phase %s, loop %+v; want failed, a loop not yet known as start-limit-hit", st.Phase, st.Loop)
		}
		h.systemd("sglang.service: Start request repeated too quickly.")
		if l := h.tr.State().Loop; l == nil || !l.StartLimit || l.Runs != 2 {
			t.Fatalf("after systemd's line: loop %+v, want start-limit-hit after 2 runs", l)
		}
	})
}
