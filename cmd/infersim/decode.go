package main

import (
	"context"
	"sync"
	"time"

	"github.com/bringup-dev/bringup/remote/sim/sglang"
)

// decoder is the simulated engine's decode loop: completions take as long
// as their tokens take at the kernel mode's rate, and every interval the
// engine prints its stats line with the rate it reached, as SGLang and
// vLLM do. A background load (INFERSIM_LOAD streams) keeps it decoding
// without clients, so test hosts show a rate without one.
type decoder struct {
	rate     float64 // tokens/s at a full batch
	load     int     // background streams
	interval time.Duration

	mu      sync.Mutex
	active  int     // requests decoding now
	queued  int     // requests waiting beyond the batch limit
	tokens  float64 // generated since the last stats line
	started int     // requests ever started
}

// maxBatch bounds the requests decoding at once; the rest wait, as the
// engines' schedulers queue them.
const maxBatch = 256

// perStream is the decode rate of one stream with n streams decoding: the
// stand-ins' one model (sglang.StreamRate), which the simulated hosts'
// smoke load follows too.
func (d *decoder) perStream(n int) float64 { return sglang.StreamRate(d.rate, n) }

// generate decodes n tokens of one request: it waits its turn in the
// batch, then sleeps as long as n tokens take at its share of the rate,
// calling each (when not nil) with the count of tokens done whenever a
// token is done (a streamed answer sends it then). It returns false when
// ctx ended first.
func (d *decoder) generate(ctx context.Context, n int, each func(done int)) bool {
	if n <= 0 {
		return true
	}
	d.mu.Lock()
	d.queued++
	d.mu.Unlock()
	wait := time.NewTicker(5 * time.Millisecond)
	defer wait.Stop()
	for {
		d.mu.Lock()
		if d.active < maxBatch {
			d.queued--
			d.active++
			d.started++
			d.mu.Unlock()
			break
		}
		d.mu.Unlock()
		select {
		case <-ctx.Done():
			d.mu.Lock()
			d.queued--
			d.mu.Unlock()
			return false
		case <-wait.C:
		}
	}
	defer func() {
		d.mu.Lock()
		d.active--
		d.mu.Unlock()
	}()
	// Tokens come one step at a time; the share is read again at each
	// step, so a request that starts alone and is joined slows down.
	const step = 10 * time.Millisecond
	left := float64(n)
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for left > 0 {
		d.mu.Lock()
		per := d.perStream(d.active + d.load)
		d.mu.Unlock()
		dt, got := step, per*step.Seconds()
		if need := time.Duration(left / per * float64(time.Second)); need < dt {
			dt, got = max(need, time.Microsecond), left // the last tokens
		}
		timer.Reset(dt)
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
		}
		got = min(left, got)
		before := n - int(left+0.999999)
		left -= got
		d.mu.Lock()
		d.tokens += got
		d.mu.Unlock()
		if after := n - int(left+0.999999); each != nil && after > before {
			each(after)
		}
	}
	return true
}

// batch is the load over the last interval, for the stats line, and
// resets the count; busy is false when nothing decoded (the engines print
// no stats line then).
func (d *decoder) batch(elapsed time.Duration) (b sglang.Batch, busy bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	tokens := d.tokens + float64(d.load)*d.perStream(d.active+d.load)*elapsed.Seconds()
	d.tokens = 0
	running := d.active + d.load
	if tokens <= 0 {
		return sglang.Batch{}, false
	}
	kv := running * 600
	return sglang.Batch{Running: running, Queued: d.queued, Tokens: kv, Usage: float64(kv) / 500000, Graph: true,
		GenTPS: tokens / elapsed.Seconds()}, true
}

// report prints the engine's stats line every interval until ctx ends.
func (d *decoder) report(ctx context.Context, eng engine, p sglang.Params, logs *logWriter) {
	t := time.NewTicker(d.interval)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if b, busy := d.batch(now.Sub(last)); busy {
				logs.write(eng.statsLine(p, b), now)
			}
			last = now
		}
	}
}
