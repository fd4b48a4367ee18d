package gpu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/sshx"
)

// exitErr is a command's exit, as *ssh.ExitError reports it.
type exitErr struct{ code int }

func (e exitErr) Error() string   { return fmt.Sprintf("Process exited with status %d", e.code) }
func (e exitErr) ExitStatus() int { return e.code }

// fakeHost plays nvidia-smi: each Stream call runs the next script. A
// script writes to w and returns the command's exit error; err fails the
// start instead.
type fakeHost struct {
	mu      sync.Mutex
	scripts []fakeRun
	cmds    []string
	wg      sync.WaitGroup
}

type fakeRun struct {
	err    error // Stream's own error
	script func(ctx context.Context, w io.Writer) error
}

func (h *fakeHost) Stream(ctx context.Context, cmd string) (io.ReadCloser, func() error, error) {
	h.mu.Lock()
	h.cmds = append(h.cmds, cmd)
	var run fakeRun
	if len(h.scripts) > 0 {
		run, h.scripts = h.scripts[0], h.scripts[1:]
	} else {
		run = fakeRun{script: func(ctx context.Context, _ io.Writer) error { <-ctx.Done(); return exitErr{143} }}
	}
	h.mu.Unlock()
	if run.err != nil {
		return nil, nil, run.err
	}
	r, w := io.Pipe()
	done := make(chan error, 1)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		err := run.script(ctx, w)
		w.Close()
		done <- err
	}()
	return r, func() error { return <-done }, nil
}

func (h *fakeHost) calls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.cmds)
}

// polls writes n polls of devs GPUs, one per interval, with the host's
// clock off ours by zone, using mem(poll) as memory used.
func polls(n, devs int, zone time.Duration, mem func(int) int) func(context.Context, io.Writer) error {
	return func(ctx context.Context, w io.Writer) error {
		for i := range n {
			var b strings.Builder
			ts := time.Now().UTC().Add(zone).Format(TimeLayout)
			for d := range devs {
				fmt.Fprintf(&b, "%s, %d, NVIDIA H200, %d, 143771, 0, 79.00\n", ts, d, mem(i))
			}
			if _, err := io.WriteString(w, b.String()); err != nil {
				return exitErr{141}
			}
			if i < n-1 {
				select {
				case <-time.After(time.Second):
				case <-ctx.Done():
					return exitErr{143}
				}
			}
		}
		return nil
	}
}

// collect returns an emit that keeps n events and then refuses.
func collect(n int, evs *[]event.Event) func(event.Event) bool {
	return func(e event.Event) bool {
		*evs = append(*evs, e)
		return len(*evs) < n
	}
}

func TestRunSamples(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &fakeHost{scripts: []fakeRun{{script: polls(4, 8, 2*time.Hour, func(i int) int { return 1000 * i })}}}
		var evs []event.Event
		start := time.Now()
		if err := Run(t.Context(), h, "gpu1", 0, collect(3, &evs)); err != nil {
			t.Fatalf("Run = %v, want nil when emit refuses", err)
		}
		h.wg.Wait()
		if h.cmds[0] != Command(time.Second) {
			t.Errorf("ran %q, want %q", h.cmds[0], Command(time.Second))
		}
		for i, e := range evs {
			if e.Host != "gpu1" || e.Kind != event.KindGPU || e.GPU == nil || len(e.GPU.Devices) != 8 {
				t.Fatalf("event %d: %+v, want an 8-GPU sample of gpu1", i, e)
			}
			// The host's clock is 2 h ahead in its zone: the same instant.
			if want := start.Add(time.Duration(i) * time.Second); !e.Time.Equal(want) {
				t.Errorf("event %d at %v, want %v", i, e.Time, want)
			}
			if _, off := e.Time.Zone(); off != 7200 {
				t.Errorf("event %d in zone offset %d s, want the host's 7200", i, off)
			}
			if got := MemPerGPU(*e.GPU); got != 1000*i {
				t.Errorf("event %d: %d MiB per GPU, want %d", i, got, 1000*i)
			}
			// The first poll's sample goes out when the stream goes quiet,
			// not a whole interval later with the next poll; from then
			// on, as soon as it has a row for each of the 8 devices.
			want := time.Duration(0)
			if i == 0 {
				want = quietAfter(time.Second)
			}
			if lag := e.Seen.Sub(e.Time); lag != want {
				t.Errorf("event %d seen %v after its poll, want %v", i, lag, want)
			}
		}
	})
}

func TestRunRestarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &fakeHost{scripts: []fakeRun{
			{err: fmt.Errorf("gpu1: %w", sshx.ErrNotConnected)},
			{script: polls(1, 2, 0, func(int) int { return 5 })}, // exits 0 after one poll
			{script: func(context.Context, io.Writer) error { return exitErr{9} }},
			{script: polls(1, 2, 0, func(int) int { return 7 })},
		}}
		var evs []event.Event
		start := time.Now()
		if err := Run(t.Context(), h, "gpu1", 0, collect(2, &evs)); err != nil {
			t.Fatalf("Run = %v", err)
		}
		h.wg.Wait()
		if n := h.calls(); n != 4 {
			t.Errorf("%d starts, want 4", n)
		}
		if len(evs) != 2 || evs[0].GPU.Devices[0].MemUsedMiB != 5 || evs[1].GPU.Devices[0].MemUsedMiB != 7 {
			t.Fatalf("events %+v, want one sample from each live stream", evs)
		}
		// Three waits of the backoff (reset after the stream that
		// delivered), each at least 0.8 s with the ±20 % jitter.
		if el := time.Since(start); el < 3*800*time.Millisecond {
			t.Errorf("restarted within %v, want a backoff between attempts", el)
		}
	})
}

func TestRunNoNvidiaSMI(t *testing.T) {
	tests := []struct {
		name string
		wait error
	}{
		{"exit 127", fmt.Errorf("gpu1: %q: %w", "nvidia-smi", exitErr{127})},
		{"shell message", fmt.Errorf("gpu1: %q: %w (stderr: sh: 1: nvidia-smi: not found)", "nvidia-smi", exitErr{2})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := &fakeHost{scripts: []fakeRun{{script: func(context.Context, io.Writer) error { return tt.wait }}}}
				emitted := 0
				err := Run(t.Context(), h, "gpu1", 0, func(event.Event) bool { emitted++; return true })
				h.wg.Wait()
				if !errors.Is(err, ErrNoNvidiaSMI) || !strings.HasPrefix(err.Error(), "gpu1: ") {
					t.Errorf("Run = %v, want ErrNoNvidiaSMI naming the host", err)
				}
				if h.calls() != 1 || emitted != 0 {
					t.Errorf("%d starts, %d events; want 1 start and nothing emitted", h.calls(), emitted)
				}
			})
		})
	}
}

func TestRunStopsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &fakeHost{scripts: []fakeRun{{script: polls(100, 1, 0, func(int) int { return 1 })}}}
		ctx, cancel := context.WithCancel(t.Context())
		n := 0
		err := Run(ctx, h, "gpu1", 0, func(event.Event) bool {
			if n++; n == 2 {
				cancel()
			}
			return true
		})
		h.wg.Wait()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v, want context.Canceled", err)
		}
	})
}

func TestHostZone(t *testing.T) {
	seen := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		printed time.Duration // printed wall clock minus seen
		want    int           // offset, seconds
	}{
		{0, 0},
		{-300 * time.Millisecond, 0}, // latency
		{5*time.Hour + 30*time.Minute + 3*time.Second, 19800}, // India, clocks 3 s apart
		{-8*time.Hour + 2*time.Minute, -28800},                // skew 2 min
	}
	for _, tt := range tests {
		loc := hostZone(seen.Add(tt.printed), seen)
		if _, off := time.Date(2026, 1, 1, 0, 0, 0, 0, loc).Zone(); off != tt.want {
			t.Errorf("printed %v from seen: offset %d, want %d", tt.printed, off, tt.want)
		}
	}
}

// A change of pace ends the running nvidia-smi and starts it again at the
// new interval, at once (no backoff); a wake-up that leaves the interval
// as it was changes nothing.
func TestRunPacedRestartsAtTheNewInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &fakeHost{scripts: []fakeRun{
			{script: polls(100, 1, 0, func(int) int { return 1 })},
			{script: polls(100, 1, 0, func(int) int { return 2 })},
		}}
		var mu sync.Mutex
		iv := time.Second
		changed := make(chan struct{}, 1)
		pace := Pacing{Interval: func() time.Duration { mu.Lock(); defer mu.Unlock(); return iv }, Changed: changed}
		set := func(d time.Duration) {
			mu.Lock()
			iv = d
			mu.Unlock()
			changed <- struct{}{}
		}
		var evs []event.Event
		var restartAt time.Time
		err := RunPaced(t.Context(), h, "gpu1", pace, func(e event.Event) bool {
			evs = append(evs, e)
			switch len(evs) {
			case 2:
				set(time.Second) // the same interval: the stream goes on
			case 3:
				restartAt = time.Now()
				set(30 * time.Second)
			}
			return e.GPU.Devices[0].MemUsedMiB != 2
		})
		if err != nil {
			t.Fatalf("RunPaced = %v", err)
		}
		h.wg.Wait()
		if len(h.cmds) != 2 || h.cmds[0] != Command(time.Second) || h.cmds[1] != Command(30*time.Second) {
			t.Fatalf("ran %q, want nvidia-smi at 1 s, then at 30 s", h.cmds)
		}
		if len(evs) != 4 || evs[2].GPU.Devices[0].MemUsedMiB != 1 {
			t.Fatalf("%d events, want three from the first stream and one from the second", len(evs))
		}
		// The second stream's first poll comes right away, then its
		// sample once the stream is quiet: no backoff between the two.
		if lag := evs[3].Seen.Sub(restartAt); lag > time.Second {
			t.Errorf("the new stream's first sample came %v after the change, want no backoff", lag)
		}
	})
}
