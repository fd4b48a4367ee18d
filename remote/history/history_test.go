package history

import (
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/startup"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// run builds a record whose phases take the given seconds in path order
// (starting, init, weights, kv-cache, graph-capture, http, warmup), ending
// in serving.
func run(host string, mode string, at time.Duration, secs ...int) Record {
	start := t0.Add(at)
	cur := start
	var spans []startup.Span
	for i, s := range secs {
		p := startup.Order[i+1]
		end := cur.Add(time.Duration(s) * time.Second)
		spans = append(spans, startup.Span{Phase: p, Start: cur, End: end})
		cur = end
	}
	spans = append(spans, startup.Span{Phase: startup.Serving, Start: cur})
	return Record{Time: cur, Host: host, Unit: "sglang.service", Engine: "sglang",
		Modes: map[string]string{"kdtree-verify": mode}, Spans: spans, Total: cur.Sub(start), WeightMemMiB: 1000 * len(secs)}
}

func TestModesKeyIsOrderFree(t *testing.T) {
	a := ModesKey(map[string]string{"b": "2", "a": "1"})
	if a != "a=1,b=2" {
		t.Fatalf("key = %q", a)
	}
	if ModesKey(nil) != "" {
		t.Fatalf("nil key = %q", ModesKey(nil))
	}
}

func TestEstimate(t *testing.T) {
	on := map[string]string{"kdtree-verify": "on"}
	recs := []Record{
		run("gpu1", "on", 0, 5, 30, 300, 20, 60, 10, 20),
		run("gpu1", "on", time.Hour, 7, 40, 400, 30, 90, 10, 30),
		run("gpu1", "on", 2*time.Hour, 6, 35, 350, 25, 70, 10, 25),
		run("gpu1", "validate", 3*time.Hour, 1, 1, 1, 1, 1, 1, 1), // other modes: ignored
		run("gpu2", "on", 4*time.Hour, 9, 9, 900, 9, 9, 9, 9),     // other host: ignored while gpu1 has its own
	}
	recs[1].WeightMemMiB = 71000 // newest of gpu1 is recs[2] (7000)
	tests := []struct {
		name   string
		host   string
		modes  map[string]string
		want   Expectation
		phases map[startup.Phase]time.Duration
	}{
		{"own history, odd count", "gpu1", on,
			Expectation{Total: 521 * time.Second, WeightMemMiB: 7000, Runs: 3}, map[startup.Phase]time.Duration{
				startup.Starting: 6 * time.Second, startup.Weights: 350 * time.Second, startup.GraphCapture: 70 * time.Second}},
		{"fallback to other hosts", "gpu9", on,
			Expectation{Total: 465 * time.Second, WeightMemMiB: 7000, Runs: 4, OtherHosts: true}, map[startup.Phase]time.Duration{
				// gpu1's three runs and gpu2's one: the mean of the middle two.
				startup.Weights: 375 * time.Second, startup.Starting: 6500 * time.Millisecond}},
		{"no history for these modes", "gpu1", map[string]string{"kdtree-verify": "off"}, Expectation{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Estimate(recs, tc.host, "sglang.service", tc.modes)
			if got.Runs != tc.want.Runs || got.OtherHosts != tc.want.OtherHosts || got.WeightMemMiB != tc.want.WeightMemMiB {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if tc.want.Runs == 0 {
				if got.Known() {
					t.Fatalf("known without history: %+v", got)
				}
				return
			}
			if tc.host == "gpu1" && got.Total != tc.want.Total {
				t.Errorf("total = %v, want %v", got.Total, tc.want.Total)
			}
			for p, d := range tc.phases {
				if got.Phase[p] != d {
					t.Errorf("%s = %v, want %v", p, got.Phase[p], d)
				}
			}
			if _, ok := got.Phase[startup.Serving]; ok {
				t.Error("serving has a duration")
			}
		})
	}
}

func TestEstimateUsesRecentRuns(t *testing.T) {
	var recs []Record
	for i := range 30 {
		w := 100
		if i >= 30-recentRuns {
			w = 500 // the newest runs are slower (a bigger model)
		}
		recs = append(recs, run("gpu1", "on", time.Duration(i)*time.Hour, 1, 1, w))
	}
	got := Estimate(recs, "gpu1", "sglang.service", map[string]string{"kdtree-verify": "on"})
	if got.Runs != recentRuns || got.Phase[startup.Weights] != 500*time.Second {
		t.Fatalf("got runs %d weights %v", got.Runs, got.Phase[startup.Weights])
	}
}

func TestETA(t *testing.T) {
	exp := Expectation{Runs: 3, Phase: map[startup.Phase]time.Duration{
		startup.Starting: 5 * time.Second, startup.Init: 30 * time.Second, startup.Weights: 300 * time.Second,
		startup.KVCache: 20 * time.Second, startup.GraphCapture: 60 * time.Second, startup.HTTP: 10 * time.Second,
		startup.Warmup: 20 * time.Second}}
	later := func(from startup.Phase) time.Duration { // medians after from
		var d time.Duration
		for _, p := range startup.Order[from.Rank()+1 : startup.Serving.Rank()] {
			d += exp.Phase[p]
		}
		return d
	}
	weights := startup.Span{Phase: startup.Weights, Start: t0}
	tests := []struct {
		name string
		exp  Expectation
		s    startup.Startup
		now  time.Time
		want time.Time
		ok   bool
	}{
		{"on track: rest of phase plus later medians", exp,
			startup.Startup{Phase: startup.Weights, PhaseSince: t0, Spans: []startup.Span{weights}},
			t0.Add(100 * time.Second), t0.Add(300*time.Second + later(startup.Weights)), true},
		{"overdue phase counts as done now", exp,
			startup.Startup{Phase: startup.Weights, PhaseSince: t0, Spans: []startup.Span{weights}},
			t0.Add(400 * time.Second), t0.Add(400*time.Second + later(startup.Weights)), true},
		// 1/4 done in 100 s: the pace says 400 s, the median 300 s; at a
		// quarter the pace weighs a half: 350 s.
		{"early log progress blends with the median", exp,
			startup.Startup{Phase: startup.Weights, PhaseSince: t0, Spans: []startup.Span{weights},
				Progress: startup.Progress{Done: 1, Total: 4}},
			t0.Add(100 * time.Second), t0.Add(350*time.Second + later(startup.Weights)), true},
		{"from half way the log's pace alone", exp,
			startup.Startup{Phase: startup.Weights, PhaseSince: t0, Spans: []startup.Span{weights},
				Progress: startup.Progress{Done: 3, Total: 4}},
			t0.Add(300 * time.Second), t0.Add(400*time.Second + later(startup.Weights)), true},
		{"a slow run past half way is not pulled back to the median", exp,
			startup.Startup{Phase: startup.Weights, PhaseSince: t0, Spans: []startup.Span{weights},
				Progress: startup.Progress{Done: 2, Total: 4}},
			t0.Add(400 * time.Second), t0.Add(800*time.Second + later(startup.Weights)), true},
		{"pace alone when the phase has no median", Expectation{Runs: 1, Phase: map[startup.Phase]time.Duration{startup.Warmup: 20 * time.Second}},
			startup.Startup{Phase: startup.Weights, PhaseSince: t0, Spans: []startup.Span{weights},
				Progress: startup.Progress{Done: 1, Total: 10}},
			t0.Add(10 * time.Second), t0.Add(100*time.Second + 20*time.Second), true},
		{"stuck uses the phase beneath and its span start", exp,
			startup.Startup{Phase: startup.Stuck, StuckIn: startup.Weights, PhaseSince: t0.Add(200 * time.Second),
				Spans: []startup.Span{weights}},
			t0.Add(250 * time.Second), t0.Add(300*time.Second + later(startup.Weights)), true},
		{"last phase", exp,
			startup.Startup{Phase: startup.Warmup, PhaseSince: t0},
			t0.Add(5 * time.Second), t0.Add(20 * time.Second), true},
		{"serving has none", exp, startup.Startup{Phase: startup.Serving, PhaseSince: t0}, t0, time.Time{}, false},
		{"failed has none", exp, startup.Startup{Phase: startup.Failed, PhaseSince: t0}, t0, time.Time{}, false},
		{"stopped has none", exp, startup.Startup{Phase: startup.Stopped, PhaseSince: t0}, t0, time.Time{}, false},
		{"no history", Expectation{}, startup.Startup{Phase: startup.Weights, PhaseSince: t0}, t0, time.Time{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ETA(tc.exp, tc.s, tc.now)
			if ok != tc.ok || !got.Equal(tc.want) {
				t.Fatalf("ETA = %v %v, want %v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
