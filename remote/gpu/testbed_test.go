package gpu

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/testkit/tbssh"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// noPath runs every command with an empty PATH, as on a host without the
// NVIDIA driver's tools.
type noPath struct{ s Streamer }

func (n noPath) Stream(ctx context.Context, cmd string) (io.ReadCloser, func() error, error) {
	return n.s.Stream(ctx, "PATH=/nonexistent "+cmd)
}

// TestGPUOnTestbed streams the nvidia-smi stand-in of a real host over SSH:
// idle GPUs, then memory climbing while sglang loads its weights.
func TestGPUOnTestbed(t *testing.T) {
	tb := testbed.Start(t, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	conn := tbssh.Connect(t, tb, "gpu1")

	events := make(chan event.Event, 1024)
	runCtx, stopRun := context.WithCancel(ctx)
	runDone := make(chan error, 1)
	go func() {
		runDone <- Run(runCtx, conn, "gpu1", 200*time.Millisecond, func(e event.Event) bool {
			select {
			case events <- e:
				return true
			case <-runCtx.Done():
				return false
			}
		})
	}()
	next := func() event.Event {
		t.Helper()
		select {
		case e := <-events:
			if e.Host != "gpu1" || e.Kind != event.KindGPU || e.GPU == nil || len(e.GPU.Devices) != 8 {
				t.Fatalf("event %+v, want an 8-GPU sample of gpu1", e)
			}
			if skew := e.Seen.Sub(e.Time); skew < -time.Second || skew > 5*time.Second {
				t.Fatalf("sample at %v seen at %v: the host's time was not read right", e.Time, e.Seen)
			}
			return e
		case <-ctx.Done():
			t.Fatalf("no GPU sample: %v", ctx.Err())
		}
		panic("unreachable")
	}
	if e := next(); MemPerGPU(*e.GPU) != 0 {
		t.Fatalf("before start: %d MiB per GPU, want idle GPUs", MemPerGPU(*e.GPU))
	}
	if out, err := tb.Run(ctx, "gpu1", "systemctl start sglang"); err != nil {
		t.Fatalf("start sglang: %v: %s", err, out)
	}
	// Collect the distinct levels memory passes through: seven are enough
	// to see the climb (weights take ~4 s of the ~10 s startup), and 40 s
	// is far past the end of the startup.
	var levels []int
	deadline := time.Now().Add(40 * time.Second)
	for len(levels) < 7 && time.Now().Before(deadline) {
		m := MemPerGPU(*next().GPU)
		if len(levels) == 0 || m != levels[len(levels)-1] {
			levels = append(levels, m)
		}
	}
	stopRun()
	if err := <-runDone; !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
	t.Logf("memory per GPU (MiB) as it changed: %v", levels)
	climb := 0
	for i := 1; i < len(levels); i++ {
		if levels[i] > levels[i-1] {
			climb++
		}
	}
	if climb < 3 {
		t.Fatalf("memory rose %d times, want a climb of at least 3 steps: %v", climb, levels)
	}
	// Against the peak as the reference, the progress rises with the climb.
	ref := max(levels[len(levels)-1], 1)
	mid := event.GPU{Devices: []event.GPUDevice{{MemUsedMiB: levels[1]}}}
	if done, total := WeightProgress(mid, ref); done <= 0 || done >= total {
		t.Errorf("progress at %d MiB toward %d: %d/%d, want part way", levels[1], ref, done, total)
	}

	// A host without nvidia-smi: one clear error, no retries.
	err := Run(ctx, noPath{conn}, "gpu1", 0, func(event.Event) bool {
		t.Error("event from a host without nvidia-smi")
		return true
	})
	if !errors.Is(err, ErrNoNvidiaSMI) {
		t.Errorf("Run without nvidia-smi = %v, want ErrNoNvidiaSMI", err)
	} else {
		t.Logf("without nvidia-smi: %v", err)
	}
}
