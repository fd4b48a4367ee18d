package main

import (
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/remote/testkit/fleetbench"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// TestPrintSummary: every figure is printed with its two sides and its
// ratio, and a run that left something behind says so.
func TestPrintSummary(t *testing.T) {
	s := &fleetbench.Summary{Hosts: 16, Cores: 2, Load: [2]float64{9.3, 3}, BootS: 3.5, TookS: 166,
		Raised:    []testbed.Limit{{Name: "fs.inotify.max_user_instances", From: 192, To: 384}},
		FullTable: fleetbench.FullTable{BringupS: 0.455, RawS: 1.807, ResolveS: 0.069, Ratio: 0.2518},
		Latency: fleetbench.Latency{Lines: 768,
			Fleet: fleetbench.Dist{N: 768, P50ms: 257, P99ms: 465, MaxMs: 490}, Raw: fleetbench.Dist{N: 768, P50ms: 256, P99ms: 465, MaxMs: 490},
			Added: fleetbench.Dist{N: 768, P50ms: -0.2, P99ms: 2, MaxMs: 301}, Ratio: 1.0,
			Late: []fleetbench.LateLine{{Host: "gpu7", AtS: 4.2, AddedMs: 301, Message: "[2026-12-01 22:00:01 TP0] Load weight begin."}}},
		Steady:  fleetbench.Steady{WindowS: 60, BringupCPUPct: 1.79, RawCPUPct: 0.07, CPURatio: 25.6, BringupRSSMiB: 29.4, RawRSSMiB: 128.3, RSSRatio: 0.23, BaseRSSMiB: 16.7},
		Catchup: fleetbench.Catchup{Lines: 400000, Runs: make([]fleetbench.CatchupPair, 3), BringupS: 11.91, RawS: 7.88, Speedup: 0.66, RawBytesPerLine: 518},
		Cleanup: fleetbench.Cleanup{Down: true, InventoryRemoved: true},
	}
	var b strings.Builder
	printSummary(&b, s)
	out := b.String()
	for _, want := range []string{
		"16 hosts on 2 cores, load 9.3 → 3.0",
		"raised fs.inotify.max_user_instances 192 → 384",
		"0.46 s                 1.81 s                   0.25×",
		"257/465/490 ms         256/465/490 ms           1.00×",
		"added per line (fleet − raw)     0/2/301 ms",
		"late: gpu7 at 4.2 s, +301 ms: [2026-12-01 22:00:01 TP0] Load weight begin.",
		"1.79 %                 0.07 %                  25.60×",
		"11.91 s 34k/s          7.88 s 51k/s             0.66×",
		"cleaned up: hosts down",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "time to cause") {
		t.Errorf("a run without the time-to-cause phase prints its row:\n%s", out)
	}
	s.Causes = &fleetbench.Causes{Failing: 16, Settled: 15, Right: 14,
		TimeToCause: fleetbench.Dist{N: 15, MinMs: 3050, P50ms: 3210.4, P99ms: 5480, MaxMs: 5480},
		Times: []fleetbench.CauseTime{{Host: "gpu40", Log: "sglang-14644-gated-repo-401-config-oserror", Cause: "model-fetch", Ms: 5480},
			{Host: "gpu4", Log: "a", Cause: "b", Ms: 3300}, {Host: "gpu8", Log: "c", Cause: "d", Ms: 3200}, {Host: "gpu12", Log: "fourth", Cause: "e", Ms: 3100}},
		Misses:     []fleetbench.CauseMiss{{Host: "gpu24", Log: "sglang-1314-slime-ray-capture-ninja", Want: "jit-build", Got: "unit-failed"}},
		Unmeasured: []string{"gpu64 sglang-165-v01: no settled cause"}}
	b.Reset()
	printSummary(&b, s)
	for _, want := range []string{
		"time to cause p50/p99/max          3210/5480/5480 ms",
		"15 of 16 failures settled, 14 on the corpus's cause",
		"miss: sglang-1314-slime-ray-capture-ninja → jit-build → unit-failed (gpu24)",
		"no time: gpu64 sglang-165-v01: no settled cause",
		"slow: sglang-14644-gated-repo-401-config-oserror model-fetch in 5480 ms (gpu40)",
		"slow: c d in 3200 ms (gpu8)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary with causes lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "fourth") {
		t.Errorf("more than the 3 slowest printed:\n%s", b.String())
	}
	if i, j := strings.Index(b.String(), "time to cause"), strings.Index(b.String(), "catch-up"); i < 0 || j < i {
		t.Errorf("time to cause not printed before the catch-up:\n%s", b.String())
	}
	s.Store = &fleetbench.Store{
		ServingTable: fleetbench.ServingTable{SSHS: 1.2, StoreS: 2.9, Ratio: 2.42},
		Latency: fleetbench.StoreLatency{Lines: 760, Missing: 8, Store: fleetbench.Dist{P50ms: 2301, P99ms: 2620, MaxMs: 2700},
			AddedVsSSH: fleetbench.Dist{P50ms: 2010, P99ms: 2400, MaxMs: 2500}, Ratio: 8.1, ServingS: 14.2},
		Steady: fleetbench.StoreSteady{WindowS: 60, StoreCPUPct: 0.31, SSHCPUPct: 1.79, CPURatio: 0.17, StoreRSSMiB: 21, SSHRSSMiB: 29.4, RSSRatio: 0.71, VLCPUPct: 0.5, VLRSSMiB: 40},
	}
	b.Reset()
	printSummary(&b, s)
	for _, want := range []string{
		"full table, hosts serving          2.90 s                 1.20 s                   2.42×",
		"2301/2620/2700 ms",
		"added per line vs ssh fleet      2010/2400/2500 ms",
		"0.31 %                 1.79 %                   0.17×",
		"victoria-logs 40.0 MiB",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("store summary lacks %q:\n%s", want, b.String())
		}
	}
	s.Cleanup = fleetbench.Cleanup{Down: true, Left: []string{"netns brtb-abc123-gpu1"}}
	b.Reset()
	printSummary(&b, s)
	if !strings.Contains(b.String(), "NOT cleaned up") || !strings.Contains(b.String(), "netns brtb-abc123-gpu1") {
		t.Errorf("a run that left a namespace:\n%s", b.String())
	}
}
