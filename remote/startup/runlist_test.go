package startup

import (
	"fmt"
	"testing"
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
