package sim

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/history/store"
	"github.com/bringup-dev/bringup/remote/startup"
)

var (
	modeOn       = map[string]string{"kdtree-verify": "on"}
	modeValidate = map[string]string{"kdtree-verify": "validate"}
)

// within fails t unless got is within tol of want.
func within(t *testing.T, what string, got, want, tol time.Duration) {
	t.Helper()
	if d := got - want; d < -tol || d > tol {
		t.Errorf("%s = %v, want %v ± %v", what, got, want, tol)
	}
}

// TestSeedHistory checks the seed scenario's earlier runs: every host has
// HistoryRuns whole startups in mode on from the days before, whose
// medians are the scenario's phase lengths; gpu3, in validate today, has
// no history in validate.
func TestSeedHistory(t *testing.T) {
	recs, err := History("seed", HistoryRuns, t0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	again, err := History("seed", HistoryRuns, t0, Options{})
	if err != nil || !reflect.DeepEqual(recs, again) {
		t.Errorf("History is not deterministic (err %v)", err)
	}
	specs, _ := Scenario("seed")
	// gpu3, which ran off before, was benched in each of those runs once
	// its rate was steady (the A/B line's bench against off): the record
	// follows the run's throughput, at the rate of off.
	var benches, rest []history.Record
	for i, r := range recs {
		if r.Kind != history.KindBench {
			rest = append(rest, r)
			continue
		}
		benches = append(benches, r)
		tput := recs[i-1]
		if b := r.Bench; r.Host != "gpu3" || tput.Kind != history.KindThroughput || r.InvocationID != tput.InvocationID ||
			!r.Time.After(tput.Time) || history.ModesKey(r.Modes) != "kdtree-verify=off" || b == nil ||
			b.OK != 64 || b.Interrupted || b.OutputTPS < 460 || b.OutputTPS > 480 || !r.Time.Before(t0.Add(-20*time.Hour)) {
			t.Errorf("bench record %+v (bench %+v) after %+v", r, r.Bench, tput)
		}
	}
	if len(benches) != HistoryRuns || benches[0].Bench.OutputTPS == benches[1].Bench.OutputTPS {
		t.Errorf("%d bench records, want gpu3's %d, each its own run's numbers", len(benches), HistoryRuns)
	}
	recs = rest
	if len(recs) != 2*len(specs)*HistoryRuns {
		t.Fatalf("%d records, want %d (a startup and a throughput a run)", len(recs), 2*len(specs)*HistoryRuns)
	}
	// Each run's throughput record follows its startup: the same run, its
	// steady decode rate at the rate of its modes (gpu3 ran off before).
	var startups []history.Record
	for i, r := range recs {
		if i%2 == 0 {
			startups = append(startups, r)
			continue
		}
		run := recs[i-1]
		want := 1920.0
		if r.Host == "gpu3" {
			want = 480
		}
		if r.Kind != history.KindThroughput || r.InvocationID != run.InvocationID || !r.Time.After(run.Time) ||
			history.ModesKey(r.Modes) != history.ModesKey(run.Modes) || r.DecodeTPS < want*0.97 || r.DecodeTPS > want*1.03 {
			t.Errorf("%s: throughput record %+v after run %s at %v, want %v tok/s", r.Host, r, run.InvocationID, run.Time, want)
		}
	}
	recs = startups
	ids := map[string]bool{}
	for _, r := range recs {
		if !r.Time.Before(t0.Add(-20*time.Hour)) || r.Total <= 0 || !r.Time.Equal(r.Spans[0].Start.Add(r.Total)) {
			t.Errorf("%s: run served at %v after %v (start %v), want a whole run the day before %v or earlier", r.Host, r.Time, r.Total, r.Spans[0].Start, t0)
		}
		modes := "kdtree-verify=on"
		if r.Host == "gpu3" {
			modes = "kdtree-verify=off"
		}
		if r.Unit != "sglang.service" || r.Engine != kernels.EngineSGLang || history.ModesKey(r.Modes) != modes {
			t.Errorf("%s: unit %s engine %s modes %v", r.Host, r.Unit, r.Engine, r.Modes)
		}
		if first, last := r.Spans[0].Phase, r.Spans[len(r.Spans)-1].Phase; first != startup.Starting || last != startup.Serving {
			t.Errorf("%s: spans from %s to %s", r.Host, first, last)
		}
		if r.WeightMemMiB < 50_000 {
			t.Errorf("%s: weights took %d MiB per GPU, want the loaded model's", r.Host, r.WeightMemMiB)
		}
		if r.InvocationID == "" || ids[r.InvocationID] {
			t.Errorf("%s: invocation id %q empty or repeated", r.Host, r.InvocationID)
		}
		ids[r.InvocationID] = true
	}

	for _, s := range specs {
		modes := modeOn
		if s.Name == "gpu3" {
			modes = map[string]string{"kdtree-verify": "off"}
		}
		e := history.Estimate(recs, s.Name, "sglang.service", modes)
		if e.Runs != HistoryRuns || e.OtherHosts {
			t.Errorf("%s: %d runs (other hosts %v), want %d of its own", s.Name, e.Runs, e.OtherHosts, HistoryRuns)
			continue
		}
		within(t, s.Name+" weights", e.Phase[startup.Weights], s.Params.Weights, s.Params.Weights*4/100)
		within(t, s.Name+" graph capture", e.Phase[startup.GraphCapture], s.Params.Capture, s.Params.Capture*8/100)
		within(t, s.Name+" total", e.Total, 12*time.Minute, 50*time.Second)
		if e.WeightMemMiB == 0 {
			t.Errorf("%s: no weight memory", s.Name)
		}
		t.Logf("%s: weights %v, capture %v, total %v, %d MiB", s.Name, e.Phase[startup.Weights], e.Phase[startup.GraphCapture], e.Total, e.WeightMemMiB)
	}
	if e := history.Estimate(recs, "gpu3", "sglang.service", modeValidate); e.Known() {
		t.Errorf("gpu3 has an expectation for validate: %+v", e)
	}
}

// TestMixedHistory checks that the vLLM hosts of the mixed scenario have
// their history under their own unit and engine, in mode on (gpu4 runs
// validate today).
func TestMixedHistory(t *testing.T) {
	recs, err := History("mixed", 3, t0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gpu3", "gpu4"} {
		e := history.Estimate(recs, name, "vllm.service", modeOn)
		if e.Runs != 3 || e.OtherHosts {
			t.Errorf("%s: %d runs (other hosts %v), want 3 of its own", name, e.Runs, e.OtherHosts)
		}
		within(t, name+" total", e.Total, 12*time.Minute, 90*time.Second)
	}
	for _, r := range recs {
		vllm := r.Host == "gpu3" || r.Host == "gpu4"
		if vllm != (r.Engine == kernels.EngineVLLM) || vllm != (r.Unit == "vllm.service") {
			t.Errorf("%s: engine %s unit %s", r.Host, r.Engine, r.Unit)
		}
	}
}

// TestSeedFleetShowsETA runs the seed fleet on a manual clock with its
// history: gpu1 has an ETA throughout its startup, close to when it
// actually serves; gpu3 (validate) has none until it is switched to on
// and restarted; and the fleet records the new startups.
func TestSeedFleetShowsETA(t *testing.T) {
	cat := kernels.DefaultCatalog()
	recs, err := History("seed", HistoryRuns, t0, Options{Kernels: cat})
	if err != nil {
		t.Fatal(err)
	}
	sink := store.NewSink(store.NewMemoryStore(recs))
	clock := NewManualClock(t0)
	hosts, _, err := NewHosts("seed", Options{Clock: clock, Kernels: cat, Seen: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	specs := make([]fleet.HostSpec, len(hosts))
	stepped := make([]Stepped, len(hosts))
	for i, h := range hosts {
		stepped[i] = NewStepped(h)
		specs[i] = fleet.HostSpec{Driver: stepped[i], Unit: h.Unit(), Engine: h.Engine()}
	}
	theFleet, err := fleet.New(specs, fleet.Options{Kernels: cat, Clock: clock, Flush: time.Millisecond}.WithHistory(sink))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- theFleet.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("fleet: %v", err)
		}
	}()

	deadline := time.After(2 * time.Minute) // a hang, not a speed target
	wait := func(what string, until func(remote.Batch) bool) remote.Batch {
		t.Helper()
		for {
			select {
			case b := <-theFleet.Updates():
				if until(b) {
					return b
				}
			case <-deadline:
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	// step moves the clock to t and returns the first batch whose
	// snapshot has every host's events up to t.
	step := func(t time.Time) remote.Batch {
		for _, s := range stepped {
			s.To <- t
		}
		upToDate := map[string]bool{}
		return wait("the hosts at "+t.Format(time.TimeOnly), func(b remote.Batch) bool {
			for _, ev := range b.Events {
				if ev.Kind == event.KindConn && ev.Time.Equal(t) {
					upToDate[ev.Host] = true
				}
			}
			return len(upToDate) == len(stepped)
		})
	}
	type sample struct {
		at, eta time.Time
		phase   startup.Phase
		since   time.Time // when the phase began
		expect  history.Expectation
	}
	// follow steps until name serves or fails, noting its ETAs.
	follow := func(name string) (samples []sample, end remote.HostState) {
		for now := clock.Now(); ; now = clock.Advance(5 * time.Second) {
			if now.Sub(t0) > time.Hour {
				t.Fatalf("%s neither served nor failed within an hour", name)
			}
			h := host(step(now), name)
			if h.Startup.Phase.Terminal() {
				return samples, h
			}
			if h.Startup.Phase.Rank() > startup.Stopped.Rank() {
				sp := h.Startup.Spans[len(h.Startup.Spans)-1]
				samples = append(samples, sample{now, h.ETA, h.Startup.Phase, sp.Start, h.Expected})
			}
		}
	}
	// checkETA says whether name's ETAs were sane against when it served.
	checkETA := func(name string, samples []sample, end remote.HostState) {
		t.Helper()
		if end.Startup.Phase != startup.Serving {
			t.Fatalf("%s ended %s, want serving", name, end.Startup.Phase)
		}
		served := end.Startup.PhaseSince
		var worst time.Duration
		for _, s := range samples {
			if s.eta.IsZero() {
				if s.phase != startup.Starting { // the modes are known once the unit is read
					t.Errorf("%s: no ETA at %s in %s", name, s.at.Format(time.TimeOnly), s.phase)
				}
				continue
			}
			// Early in weights the pace of the first few of 65 shards
			// (each ±35 %) is blended with the median, so the ETA does
			// not swing by minutes there either.
			off := s.eta.Sub(served)
			worst = max(worst, off, -off)
			if tol := 45 * time.Second; off < -tol || off > tol {
				t.Errorf("%s: ETA %s at %s (%s), served at %s", name, s.eta.Format(time.TimeOnly), s.at.Format(time.TimeOnly), s.phase, served.Format(time.TimeOnly))
			}
		}
		t.Logf("%s served %v after the fleet started; %d ETAs, the worst %v off", name, served.Sub(t0), len(samples), worst)
	}

	samples, end := follow("gpu1")
	checkETA("gpu1", samples, end)

	samples, end = follow("gpu3")
	if end.Startup.Phase != startup.Failed || end.Expected.Known() {
		t.Fatalf("gpu3 ended %s with expectation %+v, want failed without one", end.Startup.Phase, end.Expected)
	}
	for _, s := range samples {
		if !s.eta.IsZero() {
			t.Fatalf("gpu3 in validate has an ETA at %s", s.at.Format(time.TimeOnly))
		}
	}

	// The demo moment: switch gpu3 to on and restart it; the other hosts'
	// history in on gives it an ETA (its own earlier runs were in off).
	for _, a := range []remote.Action{{Kind: remote.ActSetMode, Kernel: "kdtree-verify", Mode: "on"}, {Kind: remote.ActRestart}} {
		id, err := theFleet.Do("gpu3", a)
		if err != nil {
			t.Fatal(err)
		}
		b := wait(a.String(), func(b remote.Batch) bool { return actionEnd(b, "gpu3", id) != nil })
		if r := actionEnd(b, "gpu3", id); r.Stage != event.ActionDone {
			t.Fatalf("%s: %s %s", a, r.Stage, r.Err)
		}
	}
	step(clock.Advance(5 * time.Second)) // past the restart's stop
	samples, end = follow("gpu3")
	// The expectation its ETAs came from, during the start: once it
	// serves, its own run in on is on record (the history writer races
	// the snapshot that says so) and is its expectation from then on.
	if len(samples) == 0 {
		t.Fatal("gpu3 in on: no sample of its start")
	}
	if e := samples[len(samples)-1].expect; e.Runs < HistoryRuns || !e.OtherHosts {
		t.Errorf("gpu3 in on: expectation %+v, want the other hosts' %d runs or more", e, HistoryRuns)
	}
	checkETA("gpu3", samples, end)
	// Serving in on, its steady decode rate is measured against its
	// earlier runs in off: four times as fast.
	var ab history.ModeAB
	for range 120 {
		if ab = host(step(clock.Advance(time.Second)), "gpu3").Throughput; ab.Compared() && ab.Live {
			break
		}
	}
	if !ab.Live || ab.Modes != "kdtree-verify=on" || ab.Base != "off" || ab.BaseRuns != HistoryRuns || ab.Ratio < 3.8 || ab.Ratio > 4.2 || ab.Slower {
		t.Errorf("gpu3 in on against off: %+v, want about 4× live against %d runs", ab, HistoryRuns)
	}

	for range 100 {
		if theFleet.HistoryStats().Written >= 4 { // gpu1, gpu2, gpu4, gpu3's second start
			break
		}
		step(clock.Advance(time.Second))
	}
	if s := theFleet.HistoryStats(); s.Written < 4 || s.Failed > 0 {
		t.Errorf("history stats %+v, want the four startups that served recorded", s)
	}
	if e, ok := sink.Expect("gpu1", "sglang.service", modeOn); !ok || e.Runs != HistoryRuns+1 {
		t.Errorf("gpu1 after serving: %+v, want %d runs", e, HistoryRuns+1)
	}
}
