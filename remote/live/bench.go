package live

import (
	"context"
	"fmt"
	"sync"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/bench"
	"github.com/bringup-dev/bringup/remote/event"
)

// benchSteps is how many progress events a bench reports at most (and
// always the first and last request): a bar needs no more, and the fleet
// and the console fold each one.
const benchSteps = 50

// bench runs a's smoke load on the host's service through the host's SSH
// connection (the probe's tunnel). Progress goes out as counted action
// events (24 of 64 requests); the last event carries the measurement,
// also when ctx ended first (the person cancelled, the deadline): then
// the action fails with that cause after reporting what was measured.
// Never more than a.Requests requests are sent (bench.Run's bound).
func (h *Host) bench(ctx context.Context, au audited, a remote.Action, emit remote.Emit) error {
	n, c := a.Requests, a.Concurrency
	if n <= 0 {
		n = bench.DefaultRequests
	}
	if c <= 0 {
		c = bench.DefaultConcurrency
	}
	opts := bench.Options{Addr: h.ProbeAddr(), Requests: n, Concurrency: c, MaxTokens: a.MaxTokens}
	var mu sync.Mutex
	lastStep := -1
	progress := func(done, total int) {
		step := done * benchSteps / max(1, total)
		mu.Lock()
		defer mu.Unlock()
		if step == lastStep && done != 1 && done != total {
			return
		}
		lastStep = step
		h.count(emit, done, total, nil)
	}
	var res bench.Result
	err := au.call("http", fmt.Sprintf("POST %s%s ×%d (%d at a time)", opts.Addr, bench.Path, n, c),
		func() (string, error) {
			var err error
			res, err = bench.Run(ctx, h, opts, progress)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("%d ok, %d errors, %.1f output tok/s", res.OK, res.Errors, res.OutputTPS), nil
		})
	if err != nil {
		return fmt.Errorf("%s: bench: %w", h.opts.Name, err)
	}
	h.count(emit, res.Requests, n, &res)
	if res.Interrupted {
		return fmt.Errorf("%s: bench stopped after %d of %d requests: %w", h.opts.Name, res.Requests, n, context.Cause(ctx))
	}
	return nil
}

// count reports a counted step of an action (done of total), with the
// bench's measurement on the last one.
func (h *Host) count(emit remote.Emit, done, total int, res *bench.Result) {
	now := h.opts.Now()
	r := &event.ActionResult{Stage: event.ActionProgress, Done: done, Total: total,
		Percent: done * 100 / max(1, total), Detail: fmt.Sprintf("%d/%d requests", done, total)}
	if res != nil {
		r.Bench, r.Detail = res, res.Summary()
	}
	emit(event.Event{Host: h.opts.Name, Kind: event.KindAction, Time: now, Seen: now, Action: r})
}
