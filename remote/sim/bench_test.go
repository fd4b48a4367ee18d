package sim

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/sim/sglang"
	"github.com/bringup-dev/bringup/remote/startup"
)

// benchOutcome is what a simulated bench reported and returned.
type benchOutcome struct {
	counts []event.ActionResult // the counted progress events, in order
	res    *event.Bench         // the last one's measurement
	err    error
	took   time.Duration // host time from the start to the last event
}

// runBench runs a on h through Do while the test moves the clock in
// 50 ms strides (stepping the host as Run would), until Do returns;
// cancelAt > 0 cancels the bench once that many requests have ended.
func runBench(t *testing.T, h *Host, clock *ManualClock, a remote.Action, cancelAt int) benchOutcome {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	evs := make(chan event.Event, 1024)
	ret := make(chan error, 1)
	start := clock.Now()
	go func() {
		ret <- h.Do(ctx, a, func(ev event.Event) bool { evs <- ev; return true })
	}()
	var out benchOutcome
	take := func(ev event.Event) {
		if ev.Kind != event.KindAction || ev.Action == nil || ev.Action.Total == 0 {
			t.Errorf("bench emitted %+v", ev)
			return
		}
		out.counts = append(out.counts, *ev.Action)
		out.took = ev.Time.Sub(start)
		if ev.Action.Bench != nil {
			out.res = ev.Action.Bench
		}
		if cancelAt > 0 && ev.Action.Done >= cancelAt && ev.Action.Bench == nil {
			cancel(errors.New("stopped by the test"))
		}
	}
	for range 10_000 { // 500 s of host time: a hang, not a speed target
		select {
		case out.err = <-ret:
			for len(evs) > 0 {
				take(<-evs)
			}
			return out
		case ev := <-evs:
			take(ev)
			continue
		case <-time.After(time.Millisecond):
		}
		h.Step(clock.Advance(50 * time.Millisecond))
	}
	t.Fatal("the bench did not end within 500 s of host time")
	return out
}

// servingHost is a seed-scenario host started in mode, stepped until its
// /health answers 200; rates, if not nil, are its modes' decode rates.
func servingHost(t *testing.T, mode string, rates sglang.Rates) (*Host, *ManualClock) {
	t.Helper()
	specs, err := Scenario("seed")
	if err != nil {
		t.Fatal(err)
	}
	spec := specs[0]
	spec.Modes = map[string]string{"kdtree-verify": mode}
	spec.Params.Rates = rates
	clock := NewManualClock(t0)
	h, err := NewHost(spec, Options{Clock: clock, Seen: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := until(t, h, clock, 20*time.Minute, func(ev event.Event) bool { return ev.Probe != nil && ev.Probe.OK }); ok == nil {
		t.Fatal("the host never served")
	}
	return h, clock
}

// TestSimBench: the simulated host answers a bench as a real one does:
// counted progress up to N, a result on the last event whose output tok/s
// follows the mode's rate (on ≈ 4× off, or the configured rates), never
// more than N requests, the same numbers for the same demo, a stop part
// way that keeps what was measured, and a refusal with the reason on a
// host that does not serve.
func TestSimBench(t *testing.T) {
	bench := remote.Action{Kind: remote.ActBench, Requests: 64, Concurrency: 8}
	type run struct {
		tps float64
		res event.Bench
	}
	results := map[string]run{}
	for _, tc := range []struct {
		name     string
		mode     string
		rates    sglang.Rates
		a        remote.Action
		min, max float64 // output tok/s
	}{
		// 8 streams, a full batch: the mode's rate less the per-request
		// overhead (8 ms against ~267 ms of decode in on).
		{"on", "on", nil, bench, 1800, 1920},
		{"off", "off", nil, bench, 460, 480},
		{"on again", "on", nil, bench, 1800, 1920},
		// Below a full batch each stream decodes at rate/8: two streams
		// give a quarter of the rate.
		{"on, 2 at a time", "on", nil, remote.Action{Kind: remote.ActBench, Requests: 10, Concurrency: 2}, 440, 480},
		{"configured rates", "on", sglang.Rates{"off": 100, "on": 1000}, bench, 940, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, clock := servingHost(t, tc.mode, tc.rates)
			o := runBench(t, h, clock, tc.a, 0)
			if o.err != nil {
				t.Fatalf("bench: %v", o.err)
			}
			if o.res == nil {
				t.Fatal("no result")
			}
			n := tc.a.Requests
			if r := o.res; r.Requests != n || r.OK != n || r.Errors != 0 || r.Interrupted || r.OutputTokens != n*event.BenchMaxTokens ||
				r.Concurrency != tc.a.Concurrency || r.Model == "" {
				t.Errorf("result %+v, want %d requests all ok", r, n)
			}
			if r := o.res; r.OutputTPS < tc.min || r.OutputTPS > tc.max {
				t.Errorf("output %.1f tok/s, want %v-%v", r.OutputTPS, tc.min, tc.max)
			}
			if r := o.res; r.TTFTP50 <= 0 || r.TTFTP50 > r.LatencyP50 || r.LatencyP50 > r.LatencyP99 {
				t.Errorf("TTFT p50 %v, latency p50 %v p99 %v: not ordered", r.TTFTP50, r.LatencyP50, r.LatencyP99)
			}
			// The load took its time on the host's clock, and the counts
			// climbed to N, never past it, the first and last included.
			if d := o.res.Duration; o.took < d || o.took > d+100*time.Millisecond {
				t.Errorf("the bench ended %v after it began on the host's clock, measured %v", o.took, d)
			}
			last := 0
			for _, c := range o.counts {
				if c.Done < last || c.Done > n || c.Total != n {
					t.Fatalf("counts %+v: not climbing to %d", o.counts, n)
				}
				last = c.Done
			}
			if o.counts[0].Done != 1 || last != n || len(o.counts) > 52 {
				t.Errorf("%d counts from %d to %d, want 1..%d in at most 52", len(o.counts), o.counts[0].Done, last, n)
			}
			results[tc.name] = run{o.res.OutputTPS, *o.res}
		})
	}
	if on, off := results["on"].tps, results["off"].tps; off <= 0 || on/off < 3.8 || on/off > 4.2 {
		t.Errorf("on %.0f vs off %.0f tok/s: want about 4×", on, off)
	}
	if a, b := results["on"].res, results["on again"].res; a != b {
		t.Errorf("the same host benched twice alike differs:\n%+v\n%+v", a, b)
	}

	t.Run("stopped", func(t *testing.T) {
		h, clock := servingHost(t, "off", nil)
		o := runBench(t, h, clock, bench, 20)
		if o.err == nil || !strings.Contains(o.err.Error(), "bench stopped after") || !strings.Contains(o.err.Error(), "stopped by the test") {
			t.Fatalf("err = %v, want the stop and its cause", o.err)
		}
		if o.res == nil || !o.res.Interrupted || o.res.Requests < 20 || o.res.Requests >= 64 || o.res.OK != o.res.Requests {
			t.Fatalf("result %+v, want the 20-odd requests ended before the stop", o.res)
		}
		// The host is free for the next one.
		if o := runBench(t, h, clock, bench, 0); o.err != nil || o.res == nil || o.res.Requests != 64 {
			t.Errorf("a bench after the stop: %v %+v", o.err, o.res)
		}
	})

	t.Run("refused", func(t *testing.T) {
		hosts, clock := fixture(t, "seed")
		ctx := context.Background()
		none := func(ev event.Event) bool { t.Errorf("a refused bench emitted %+v", ev); return true }
		// At once: gpu1's unit starts, its server does not listen yet.
		err := hosts["gpu1"].Do(ctx, bench, none)
		if err == nil || !strings.Contains(err.Error(), "not serving: still starting") || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("bench on a starting host: %v", err)
		}
		// gpu3 in validate fails at capture.
		if _, ev := until(t, hosts["gpu3"], clock, 15*time.Minute, unitState("failed")); ev == nil {
			t.Fatal("gpu3 never failed")
		}
		err = hosts["gpu3"].Do(ctx, bench, none)
		if err == nil || !strings.Contains(err.Error(), "gpu3: not serving: unit sglang.service failed (result exit-code)") {
			t.Errorf("bench on a failed host: %v", err)
		}
	})
}

// TestSimBenchThroughFleet: through the fleet's door, the mixed
// scenario's vLLM gpu3 (in on) answers a bench with on's rate, and
// Fleet.Cancel stops a long one part way: its last count still carries
// what was measured, and the action fails as cancelled.
func TestSimBenchThroughFleet(t *testing.T) {
	fleet, wait := mixedFleet(t, 1000)
	wait("gpu3 serving", func(b remote.Batch) bool { return phases(b)["gpu3"] == startup.Serving })
	result := func(b remote.Batch, id int) *event.Bench {
		for _, ev := range b.Events {
			if a := ev.Action; ev.Host == "gpu3" && a != nil && a.ID == id && a.Bench != nil {
				return a.Bench
			}
		}
		return nil
	}

	id, err := fleet.Do("gpu3", remote.Action{Kind: remote.ActBench})
	if err != nil {
		t.Fatal(err)
	}
	var res *event.Bench
	b := wait("the bench's end", func(b remote.Batch) bool {
		if r := result(b, id); r != nil {
			res = r
		}
		return actionEnd(b, "gpu3", id) != nil
	})
	if end := actionEnd(b, "gpu3", id); end.Stage != event.ActionDone || res == nil || res.OK != 64 || res.OutputTPS < 1800 || res.OutputTPS > 1920 {
		t.Fatalf("bench on gpu3: %+v, result %+v", end, res)
	}
	if h := host(b, "gpu3"); h.Bench == nil || h.Bench.Action != id || h.Bench.OK != 64 {
		t.Errorf("gpu3's state keeps no bench: %+v", h.Bench)
	}

	// 64 000 requests: about 37 minutes of host time, 2 s at 1000×.
	id, err = fleet.Do("gpu3", remote.Action{Kind: remote.ActBench, Requests: 64_000})
	if err != nil {
		t.Fatal(err)
	}
	res = nil
	cancelled := false
	b = wait("the long bench stopped", func(b remote.Batch) bool {
		for _, ev := range b.Events {
			if a := ev.Action; !cancelled && ev.Host == "gpu3" && a != nil && a.ID == id && a.Done > 0 {
				if err := fleet.Cancel("gpu3", id); err != nil {
					t.Fatalf("cancel: %v", err)
				}
				cancelled = true
			}
		}
		if r := result(b, id); r != nil {
			res = r
		}
		return actionEnd(b, "gpu3", id) != nil
	})
	end := actionEnd(b, "gpu3", id)
	if end.Stage != event.ActionFailed || !strings.Contains(end.Err, "bench stopped after") || !strings.Contains(end.Err, "cancelled") {
		t.Errorf("the stopped bench ended %+v", end)
	}
	if res == nil || !res.Interrupted || res.Requests <= 0 || res.Requests >= 64_000 || res.OK != res.Requests {
		t.Errorf("the stopped bench measured %+v", res)
	}
}
