package sim

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/benchstat"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/sim/sglang"
)

// benchSteps is how many progress events a simulated bench reports at
// most (and always the first and last request), as remote/live's does.
const benchSteps = 50

// benchOverhead is the simulated service's time per request besides the
// decode (the HTTP round trip through the tunnel, tokenising, the
// scheduler's admission); each request varies it by ±25 %.
const benchOverhead = 8 * time.Millisecond

// benchReq is one planned request of a simulated smoke load, its times
// counted from the load's start.
type benchReq struct {
	start, end time.Duration
	sample     benchstat.Sample
}

// benchLoad is a smoke load under way on the simulated host: its planned
// requests in the order they end, and how many have ended on the host's
// clock. Step moves it on; Do's goroutine hears each end on ended.
type benchLoad struct {
	inv   *invocation
	start time.Time
	reqs  []benchReq // sorted by end
	// next is how many requests have ended; broken is when the service
	// went away under the load (zero: it did not), failing the rest.
	next   int
	broken time.Time
	// ended carries the count of ended requests at each end, -1 when the
	// service went away; it holds one per request and one more, so the
	// host never blocks on it.
	ended chan int
}

// planBench plans a smoke load of n requests, at most c at a time, of
// maxTokens tokens each, on inv from start: every request decodes at its
// share of the invocation's mode rate (sglang.StreamRate over the streams
// decoding when it starts: infersim's model, with no background load),
// varied by ±3 % per request, plus benchOverhead. The jitter comes from
// the host's name, the invocation's seed and the load's number k, so the
// same demo benches alike and its hosts each their own way. Exactly n
// requests are planned: never more.
func planBench(host string, p sglang.Params, k, n, c, maxTokens int) []benchReq {
	f := fnv.New64a()
	f.Write([]byte(host))
	rng := rand.New(rand.NewPCG(f.Sum64()^uint64(p.Seed), uint64(1_000_003+k)))
	rate := p.Rates.Rate(p.Kernel.Mode)
	c = max(1, min(c, n))
	free := make([]time.Duration, c) // when each slot takes its next request
	reqs := make([]benchReq, 0, n)
	for range n {
		slot := 0
		for i, f := range free {
			if f < free[slot] {
				slot = i
			}
		}
		start := free[slot]
		streams := 1
		for i, f := range free {
			if i != slot && f > start {
				streams++
			}
		}
		per := sglang.StreamRate(rate, streams) * (1 + 0.03*(2*rng.Float64()-1))
		over := time.Duration(float64(benchOverhead) * (1 + 0.25*(2*rng.Float64()-1)))
		token := time.Duration(float64(time.Second) / per)
		lat := over + time.Duration(float64(maxTokens)/per*float64(time.Second))
		reqs = append(reqs, benchReq{start: start, end: start + lat,
			sample: benchstat.Sample{TTFT: over + token, Latency: lat, Tokens: maxTokens}})
		free[slot] = start + lat
	}
	// Stable: requests ending together end in the order they were sent.
	slices.SortStableFunc(reqs, func(a, b benchReq) int { return cmp.Compare(a.end, b.end) })
	return reqs
}

// result is what the load measured when up ended requests had: the
// requests still running then are not counted (a stopped real bench drops
// them too), and a load the service broke off counts the rest as failed.
func (l *benchLoad) result(model string, conc, up int, at time.Time) event.Bench {
	var samples []benchstat.Sample
	took := at.Sub(l.start)
	for _, r := range l.reqs[:up] {
		samples = append(samples, r.sample)
	}
	if !l.broken.IsZero() {
		for range l.reqs[up:] {
			samples = append(samples, benchstat.Sample{Err: fmt.Sprintf("POST /v1/completions: read stream: connection reset by peer (the service stopped under the load at %s)", l.broken.Format(time.TimeOnly))})
		}
		up = len(l.reqs)
	} else if up == len(l.reqs) {
		took = l.reqs[up-1].end
	}
	res := benchstat.Summarise(samples, took)
	res.Model, res.Concurrency = model, conc
	res.Interrupted = up < len(l.reqs)
	return res
}

// due is when the load's next request ends; zero when none is left.
func (l *benchLoad) due() time.Time {
	if l == nil || l.next >= len(l.reqs) || !l.broken.IsZero() {
		return time.Time{}
	}
	return l.start.Add(l.reqs[l.next].end)
}

// benchFire ends the load's requests due at t, or all of them at once
// when the service has gone away. Callers hold h.mu.
func (h *Host) benchFire(t time.Time) {
	l := h.load
	if h.inv != l.inv || l.inv.exited {
		l.broken = t
		l.ended <- -1
		return
	}
	for l.next < len(l.reqs) && !l.start.Add(l.reqs[l.next].end).After(t) {
		l.next++
		l.ended <- l.next
	}
}

// notServing says why a smoke load cannot run on the host at now ("" when
// it can): what a real bench would meet there. Callers hold h.mu.
func (h *Host) notServing(now time.Time) string {
	inv := h.inv
	switch {
	case h.active == "failed":
		return fmt.Sprintf("unit %s failed (result %s): no service to send a load to", h.unit, h.result)
	case inv == nil || inv.exited:
		return fmt.Sprintf("unit %s is %s (%s): no service to send a load to", h.unit, h.active, h.sub)
	}
	at := now.Sub(inv.start)
	switch {
	case inv.listen == sglang.Never || at < inv.listen:
		return fmt.Sprintf("still starting: GET /v1/models: dial tcp 127.0.0.1:%d: connect: connection refused", inv.script.Params.Port)
	case inv.ready == sglang.Never || at < inv.ready:
		return "still starting: /health answers 503 until the warmup has passed"
	}
	return ""
}

// bench runs a's smoke load on the simulated service on the host's clock:
// progress goes out as counted action events as the requests end (as
// remote/live's bench reports them), the last one carrying the
// measurement, also when ctx ends first (Fleet.Cancel, the deadline):
// then it fails with that cause after reporting what was measured.
func (h *Host) bench(ctx context.Context, a remote.Action, emit remote.Emit) error {
	n, c, tokens := a.Requests, a.Concurrency, a.MaxTokens
	if n <= 0 {
		n = event.BenchRequests
	}
	if c <= 0 {
		c = event.BenchConcurrency
	}
	if tokens <= 0 {
		tokens = event.BenchMaxTokens
	}
	c = min(c, n)
	h.mu.Lock()
	now := h.clock.Now()
	h.pending = append(h.pending, h.advance(now)...)
	if why := h.notServing(now); why != "" {
		h.mu.Unlock()
		return fmt.Errorf("bench on %s: not serving: %s", h.spec.Name, why)
	}
	if h.load != nil {
		h.mu.Unlock()
		return fmt.Errorf("bench on %s: a load is already running", h.spec.Name)
	}
	h.benches++
	p := h.inv.script.Params
	l := &benchLoad{inv: h.inv, start: now, reqs: planBench(h.spec.Name, p, h.benches, n, c, tokens), ended: make(chan int, n+1)}
	h.load = l
	h.queue() // Run sleeps until the first request ends, no longer
	h.mu.Unlock()

	done, lastStep := 0, -1
wait:
	for done < n {
		select {
		case v := <-l.ended:
			if v < 0 {
				break wait // the service went away: result says so
			}
			done = v
		case <-ctx.Done():
			break wait
		}
		if step := done * benchSteps / n; step != lastStep || done == 1 || done == n {
			lastStep = step
			h.count(emit, l.start.Add(l.reqs[done-1].end), done, n, nil)
		}
	}
	h.mu.Lock()
	end := h.clock.Now()
	switch {
	case !l.broken.IsZero():
		end = l.broken
	case l.next == n:
		end = l.start.Add(l.reqs[n-1].end)
	}
	res := l.result(p.ModelPath, c, l.next, end)
	h.load = nil
	h.mu.Unlock()
	h.count(emit, end, res.Requests, n, &res)
	if res.Interrupted {
		return fmt.Errorf("%s: bench stopped after %d of %d requests: %w", h.spec.Name, res.Requests, n, context.Cause(ctx))
	}
	if !l.broken.IsZero() {
		return fmt.Errorf("%s: bench: the service stopped under the load", h.spec.Name)
	}
	return nil
}

// count reports a counted step of a bench (done of total) at host time
// now, with the measurement on the last one.
func (h *Host) count(emit remote.Emit, now time.Time, done, total int, res *event.Bench) {
	r := &event.ActionResult{Stage: event.ActionProgress, Done: done, Total: total,
		Percent: done * 100 / max(1, total), Detail: fmt.Sprintf("%d/%d requests (simulated)", done, total)}
	if res != nil {
		r.Bench, r.Detail = res, res.Summary()
	}
	emit(h.stamp(event.Event{Kind: event.KindAction, Time: now, Action: r}))
}

// wholeBench is what the k-th default smoke load (the console's b) on an
// invocation of host with params p measures when it runs to its end: the
// simulated history's benches of earlier runs, from the same model.
func wholeBench(host string, p sglang.Params, k int) event.Bench {
	l := &benchLoad{reqs: planBench(host, p, k, event.BenchRequests, event.BenchConcurrency, event.BenchMaxTokens)}
	l.next = len(l.reqs)
	return l.result(p.ModelPath, event.BenchConcurrency, l.next, time.Time{})
}
