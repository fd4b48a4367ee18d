package history

import (
	"testing"
	"time"
)

// TestPrevious: the newest throughput record of the host and unit wins,
// whatever its modes; startups, other hosts and units, and records
// without a rate are not runs to compare with.
func TestPrevious(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	off, on := map[string]string{"kdtree-verify": "off"}, map[string]string{"kdtree-verify": "on"}
	recs := []Record{
		Throughput(t0.Add(2*time.Hour), "gpu3", "sglang.service", "sglang", off, "c", 430),
		Throughput(t0, "gpu3", "sglang.service", "sglang", on, "a", 1900),
		Throughput(t0.Add(time.Hour), "gpu3", "sglang.service", "sglang", off, "b", 410),
		{Time: t0.Add(3 * time.Hour), Host: "gpu3", Unit: "sglang.service", Modes: on}, // a startup
		Throughput(t0.Add(4*time.Hour), "gpu1", "sglang.service", "sglang", on, "d", 2000),
		Throughput(t0.Add(5*time.Hour), "gpu3", "vllm.service", "vllm", on, "e", 800),
		Throughput(t0.Add(6*time.Hour), "gpu3", "sglang.service", "sglang", on, "f", 0),
	}
	for _, tc := range []struct {
		host, unit string
		ok         bool
		inv        string
	}{
		{"gpu3", "sglang.service", true, "c"},
		{"gpu1", "sglang.service", true, "d"},
		{"gpu3", "vllm.service", true, "e"},
		{"gpu2", "sglang.service", false, ""},
	} {
		r, ok := Previous(recs, tc.host, tc.unit)
		if ok != tc.ok || r.InvocationID != tc.inv {
			t.Errorf("%s %s: %q %v, want %q %v", tc.host, tc.unit, r.InvocationID, ok, tc.inv, tc.ok)
		}
	}
}
