package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote/history"
)

// TestBenchModesOnTestbed is the story's payoff on a real host: gpu1
// serves in kdtree-verify=off, `bringup bench` loads it through its SSH
// connection, `bringup mode gpu1 kdtree-verify=on --restart` switches it,
// bench again: on is about four times off (infersim's rates), and the
// history holds each run's steady decode rate, so `status --json` shows
// the ratio.
func TestBenchModesOnTestbed(t *testing.T) {
	cfg, state, ctx, bringup := servingInOff(t)
	benchOnce := func(mode string) output.Line {
		t.Helper()
		time.Sleep(6 * time.Second) // a dozen stats lines: a steady rate in the journal
		code, out, errOut := bringup(ctx, "bench", "--json", "-n", "64", "--concurrency", "8", "--config", cfg, "gpu1")
		lines := watchLines(t, out)
		if code != exitServing || len(lines) != 2 || lines[0].Kind != "bench" || lines[0].Bench == nil ||
			lines[1].Kind != "summary" || lines[1].Exit == nil || *lines[1].Exit != code {
			t.Fatalf("bench in %s: exit %d\n%s%s", mode, code, out, errOut)
		}
		l := lines[0]
		r := l.Bench
		if r.Requests != 64 || r.OK != 64 || r.Errors != 0 || r.TTFTP50 <= 0 || r.LatencyP99 < r.LatencyP50 {
			t.Errorf("bench in %s: %+v", mode, r)
		}
		t.Logf("bench gpu1 in %s: %s", mode, out)
		code, text, _ := bringup(ctx, "bench", "-n", "8", "--config", cfg, "gpu1")
		t.Logf("bench gpu1 in %s (text, exit %d):\n%s", mode, code, text)
		return l
	}
	off := benchOnce("off")
	if code, out, errOut := bringup(ctx, "mode", "gpu1", "kdtree-verify=on", "--restart", "--yes", "--timeout", "2m", "--config", cfg); code != exitServing {
		t.Fatalf("mode on --restart: exit %d\n%s%s", code, out, errOut)
	}
	on := benchOnce("on")
	if ratio := on.Bench.OutputTPS / off.Bench.OutputTPS; ratio < 2.5 || ratio > 5 {
		t.Errorf("bench output tok/s on %.0f / off %.0f = %.1f×, want about 4×", on.Bench.OutputTPS, off.Bench.OutputTPS, ratio)
	}

	// The history has both runs' steady decode rates, and status sets on
	// against off.
	code, out, errOut := bringup(ctx, "status", "--json", "--config", cfg, "gpu1")
	if code != exitServing {
		t.Fatalf("status: exit %d\n%s%s", code, out, errOut)
	}
	st := statusLines(t, out, code)
	if len(st) != 1 {
		t.Fatalf("status: %d hosts\n%s", len(st), out)
	}
	ab := st["gpu1"].Throughput
	if ab == nil || ab.Modes != "kdtree-verify=on" || ab.Base != "off" || ab.Ratio < 3.5 || ab.Ratio > 4.5 || ab.BaseRuns != 1 || st["gpu1"].Stats == nil {
		t.Errorf("status throughput %+v, stats %+v, want on about 4× off's one run", ab, st["gpu1"].Stats)
	}
	// The benches, stored with their modes, compare too.
	if ab != nil && (ab.BenchTPS <= 0 || ab.BaseBenchTPS <= 0 || ab.BenchRatio < 2.5 || ab.BenchRatio > 5) {
		t.Errorf("status throughput's benches %+v, want on about 4× off", ab)
	}
	t.Logf("status --json throughput: %+v", ab)
	b, err := os.ReadFile(filepath.Join(state, "bringup", "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	rates := map[string]float64{}
	benches := map[string][]history.Record{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r history.Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		switch r.Kind {
		case history.KindThroughput:
			rates[history.ModesKey(r.Modes)] = r.DecodeTPS
		case history.KindBench:
			benches[history.ModesKey(r.Modes)] = append(benches[history.ModesKey(r.Modes)], r)
		}
	}
	// Each bench run is in the history with its modes: the 64-request
	// one's figures as bench printed them, then the 8-request one.
	for mode, printed := range map[string]*output.BenchResult{"kdtree-verify=off": off.Bench, "kdtree-verify=on": on.Bench} {
		rs := benches[mode]
		if len(rs) != 2 || rs[0].Bench == nil || rs[1].Bench == nil {
			t.Errorf("history's benches in %s: %+v", mode, rs)
			continue
		}
		r := rs[0].Bench
		if r.Requests != 64 || r.Concurrency != 8 || r.OK != 64 || r.Errors != 0 || r.OutputTPS != printed.OutputTPS || r.ReqPerSec != printed.ReqPerSec ||
			r.TTFTP50 <= 0 || r.LatencyP99 < r.LatencyP50 || rs[0].InvocationID == "" || rs[1].Bench.Requests != 8 {
			t.Errorf("history's bench in %s: %+v (printed %+v)", mode, r, printed)
		}
		t.Logf("history bench %s: %s", mode, r.Summary())
	}
	if on, off := rates["kdtree-verify=on"], rates["kdtree-verify=off"]; off < 470 || off > 490 || on < 1900 || on > 1940 {
		t.Errorf("history decode rates %v, want off 480 and on 1920 tok/s", rates)
	}
}
