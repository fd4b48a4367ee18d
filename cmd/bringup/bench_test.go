package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchDemo: bench --demo waits for the simulated hosts to serve or
// fail, sends each serving one the load (its result follows the mode's
// rate: the seed's gpu1 serves in on), refuses gpu3, failed in validate,
// with its phase, and exits 3 for the refusal; a name the demo does not
// have is an error that lists the simulated hosts.
func TestBenchDemo(t *testing.T) {
	var out, errOut syncBuffer
	code := runBench(t.Context(), testEnv(&out, &errOut), []string{"--demo", "--speed", "600", "--json", "gpu1", "gpu3"})
	if code != exitBenchRefused {
		t.Errorf("exit %d, want %d (gpu3 refused)\nstdout:\n%s\nstderr:\n%s", code, exitBenchRefused, out.String(), errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d JSON lines, want gpu3's refusal, gpu1's result and the summary:\n%s", len(lines), out.String())
	}
	type line struct {
		Kind  string `json:"kind"`
		Host  string `json:"host"`
		Err   string `json:"err"`
		Bench *struct {
			Requests int     `json:"requests"`
			OK       int     `json:"ok"`
			TPS      float64 `json:"output_tok_per_s"`
		} `json:"bench"`
		Outcome string `json:"outcome"`
	}
	got := map[string]line{}
	for _, l := range lines {
		var v line
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		got[v.Kind+" "+v.Host] = v
	}
	if g := got["bench gpu3"]; g.Bench != nil || !strings.Contains(g.Err, "not serving (phase failed)") {
		t.Errorf("gpu3: %+v, want refused as failed", g)
	}
	if g := got["bench gpu1"]; g.Bench == nil || g.Bench.Requests != 64 || g.Bench.OK != 64 || g.Bench.TPS < 1800 || g.Bench.TPS > 1920 {
		t.Errorf("gpu1: %+v, want 64 ok at about on's 1 920 tok/s", g.Bench)
	}
	if g := got["summary "]; g.Outcome != "refused" {
		t.Errorf("summary %+v", g)
	}

	out, errOut = syncBuffer{}, syncBuffer{}
	if code := runBench(t.Context(), testEnv(&out, &errOut), []string{"--demo", "gpu9"}); code != exitUsage ||
		!strings.Contains(errOut.String(), `unknown host "gpu9" (simulated hosts: gpu1, gpu2, gpu3, gpu4)`) {
		t.Errorf("bench --demo gpu9: exit %d, stderr %q", code, errOut.String())
	}
}
