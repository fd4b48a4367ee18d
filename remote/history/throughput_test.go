package history

import (
	"testing"
	"time"
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
