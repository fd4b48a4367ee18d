package livefleet

import (
	"context"
	"iter"
	"sync"
	"time"

	"github.com/bringup-dev/bringup/remote/live"
)

// Parallel bounds how many hosts EachHost looks at at once.
const Parallel = 16

// EachHost runs look on every host, up to Parallel at a time, each under
// its own timeout, and yields the results in the order of rs, each as
// soon as it and those before it are done: a fleet takes the time of its
// slowest hosts, not the sum of them, and the output stays in the order
// given. Breaking out of the loop waits for the looks under way.
func EachHost[T any](ctx context.Context, rs []live.Options, timeout time.Duration, look func(context.Context, live.Options) T) iter.Seq2[live.Options, T] {
	return func(yield func(live.Options, T) bool) {
		out := make([]T, len(rs))
		done := make([]chan struct{}, len(rs))
		slots := make(chan struct{}, Parallel)
		var wg sync.WaitGroup
		defer wg.Wait()
		for i, r := range rs {
			done[i] = make(chan struct{})
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer close(done[i])
				select {
				case slots <- struct{}{}:
					defer func() { <-slots }()
				case <-ctx.Done(): // still looked at: it says the interruption its own way
				}
				hctx, cancel := context.WithTimeout(ctx, timeout)
				defer cancel()
				out[i] = look(hctx, r)
			}()
		}
		for i, r := range rs {
			<-done[i]
			if !yield(r, out[i]) {
				return
			}
		}
	}
}
