package cli

import (
	"context"
)

// Until runs fn and returns what it returns, or the context's cause as
// soon as ctx ends first. It is for reads of local files and of stdin,
// which Go cannot interrupt: a FIFO with no writer blocks open(2), a pipe
// that never closes blocks read(2). A command that gets ctx's cause back
// returns its exit code and the process ends, taking fn's goroutine with
// it; that is the goroutine's owner and its way to stop, so Until is for
// a command's reads, never for a loop the process outlives.
func Until[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := fn()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, context.Cause(ctx)
	}
}
