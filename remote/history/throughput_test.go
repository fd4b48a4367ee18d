package history

import (
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
)

func TestSteady(t *testing.T) {
	if _, ok := Steady([]float64{0, 100, 1900, 1920, 1910, 1930, 1925}); ok {
		t.Error("steady from 6 busy rates")
	}
	// Idle lines left out, the ramp (first two busy) too: the median of
	// the rest.
	v, ok := Steady([]float64{0, 0, 100, 900, 1900, 1920, 1910, 0, 1930, 1925, 1915})
	if !ok || v != 1917.5 {
		t.Errorf("steady %v %v, want 1917.5", v, ok)
	}
}

func TestCompare(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	on, off := map[string]string{"kdtree-verify": "on"}, map[string]string{"kdtree-verify": "off"}
	var recs []Record
	for i, v := range []float64{400, 410, 420} {
		recs = append(recs, Throughput(t0.Add(time.Duration(i)*time.Hour), "gpu3", "sglang.service", "sglang", off, "", v))
	}
	// Another host's, a startup record and another unit's: not counted.
	recs = append(recs, Throughput(t0, "gpu1", "sglang.service", "sglang", on, "", 9999),
		Record{Time: t0, Host: "gpu3", Unit: "sglang.service", Modes: on},
		Throughput(t0, "gpu3", "other.service", "sglang", on, "", 1))

	// The same run recorded twice (two bringups followed it) is one run.
	recs = append(recs, Throughput(t0, "gpu3", "sglang.service", "sglang", off, "inv-9", 410), Throughput(t0.Add(time.Minute), "gpu3", "sglang.service", "sglang", off, "inv-9", 410))
	ab := Compare(recs, "gpu3", "sglang.service", on, 1920, 0)
	if !ab.Compared() || !ab.Live || ab.Modes != "kdtree-verify=on" || ab.Base != "off" || ab.BaseTPS != 410 || ab.BaseRuns != 4 || ab.Ratio < 4.68 || ab.Ratio > 4.69 || ab.Slower {
		t.Errorf("on against off: %+v", ab)
	}
	// Without a live rate, the modes' own runs; none: nothing to show.
	if ab := Compare(recs, "gpu3", "sglang.service", on, 0, 0); ab.Known() {
		t.Errorf("no rate for on yet: %+v", ab)
	}
	if ab := Compare(recs, "gpu3", "sglang.service", off, 0, 0); ab.TPS != 410 || ab.Runs != 4 || ab.Compared() {
		t.Errorf("off alone: %+v", ab)
	}
	// The newest other configuration is the one compared with; a drop
	// over the threshold is slower.
	recs = append(recs, Throughput(t0.Add(5*time.Hour), "gpu3", "sglang.service", "sglang", on, "", 1900))
	ab = Compare(recs, "gpu3", "sglang.service", off, 420, 0)
	if ab.Base != "on" || ab.Modes != "kdtree-verify=off" || !ab.Slower {
		t.Errorf("off after on: %+v, want slower", ab)
	}
	if ab := Compare(recs, "gpu3", "sglang.service", on, 1600, 0); ab.Slower || ab.Base != "off" {
		t.Errorf("on at 1600 against off: %+v", ab)
	}
	// The threshold is the caller's: 1520 against on's 1900 is 20 % down,
	// not more; 10 % flags it.
	recs = append(recs, Throughput(t0.Add(6*time.Hour), "gpu3", "sglang.service", "sglang", map[string]string{"kdtree-verify": "on", "other": "x"}, "", 1520))
	two := map[string]string{"kdtree-verify": "on", "other": "x"}
	if ab := Compare(recs, "gpu3", "sglang.service", two, 1520, 0); ab.Slower || ab.Modes != "other=x" || ab.Base != "unset" {
		t.Errorf("20 %% down at the default 20 %%: %+v", ab)
	}
	if ab := Compare(recs, "gpu3", "sglang.service", two, 1520, 0.1); !ab.Slower {
		t.Errorf("20 %% down at 10 %%: %+v", ab)
	}
}

func TestEstimateSkipsThroughput(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	recs := []Record{Throughput(t0, "gpu1", "u", "sglang", nil, "", 1000)}
	if e := Estimate(recs, "gpu1", "u", nil); e.Known() {
		t.Errorf("a throughput record made an expectation: %+v", e)
	}
}

// TestCompareBench: the smoke loads' results (KindBench) set the newest
// complete bench of the current configuration against the one before's;
// a stopped bench, another host's and a failed one are left out; without
// decode rates of another configuration, the benches alone compare.
func TestCompareBench(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	on, off := map[string]string{"kdtree-verify": "on"}, map[string]string{"kdtree-verify": "off"}
	b := func(at time.Duration, host string, modes map[string]string, tps float64, stopped bool) Record {
		return BenchRecord(t0.Add(at), host, "sglang.service", "sglang", modes, "", event.Bench{Requests: 64, OK: 64, Concurrency: 8, OutputTPS: tps, Interrupted: stopped})
	}
	recs := []Record{
		Throughput(t0, "gpu1", "sglang.service", "sglang", off, "inv-1", 480),
		b(time.Minute, "gpu1", off, 200, false),
		b(2*time.Minute, "gpu1", off, 223, false), // the newest of off's
		b(3*time.Minute, "gpu1", off, 50, true),   // stopped part way: no measurement
		b(3*time.Minute, "gpu2", off, 1, false),   // another host's
		Throughput(t0.Add(time.Hour), "gpu1", "sglang.service", "sglang", on, "inv-2", 1920),
		b(time.Hour+time.Minute, "gpu1", on, 876, false),
		{Kind: KindBench, Time: t0.Add(2 * time.Hour), Host: "gpu1", Unit: "sglang.service", Modes: on, Bench: &event.Bench{Requests: 64, Errors: 64}},
	}
	ab := Compare(recs, "gpu1", "sglang.service", on, 0, 0)
	if ab.TPS != 1920 || ab.BaseTPS != 480 || ab.BenchTPS != 876 || ab.BaseBenchTPS != 223 || ab.BenchRatio < 3.92 || ab.BenchRatio > 3.93 || ab.Base != "off" {
		t.Errorf("on against off with benches: %+v", ab)
	}
	// Benches only (no decode rates): still compared, with the modes named.
	ab = Compare(recs[1:5], "gpu1", "sglang.service", on, 0, 0)
	if ab.Known() {
		t.Errorf("no bench nor rate of on: %+v", ab)
	}
	benchOnly := []Record{recs[2], recs[6]}
	ab = Compare(benchOnly, "gpu1", "sglang.service", on, 0, 0)
	if !ab.Known() || ab.TPS != 0 || ab.BenchTPS != 876 || ab.BaseBenchTPS != 223 || ab.Modes != "kdtree-verify=on" || ab.Base != "off" {
		t.Errorf("benches alone: %+v", ab)
	}
	// The fleet's own newest bench, before the history holds it.
	ab = Compare(recs[:5], "gpu1", "sglang.service", on, 1900, 0).WithBench("kdtree-verify=on", 900)
	if ab.BenchTPS != 900 || ab.BaseBenchTPS != 223 || ab.BenchRatio < 4.03 || ab.BenchRatio > 4.04 {
		t.Errorf("with the fleet's bench: %+v", ab)
	}
}
