package ui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/startup"
)

// servingDecode are gpu1's recent decode rates: ramping up under load,
// then steady near 1 920 tok/s.
var servingDecode = []float64{0, 412.5, 1210.8, 1650.4, 1890.3, 1921.7, 1915.0, 1930.2, 1908.6, 1921.7}

// setupServingStats gives the serving gpu1 its engine's stats.
func setupServingStats(t *testing.T, m *Model, _ *fakeSource) {
	feed(t, m, func(hs []remote.HostState) {
		hs[0].Startup.Stats = &startup.Stats{
			Latest: startup.Sample{Time: at("12m30s"), GenTime: at("12m30s"), GenTPS: 1921.7, PromptTPS: 559.53,
				Running: 8, Queued: 0, KVUsage: 0.12, Graph: "on"},
			Decode: servingDecode, Lines: 14,
		}
		hs[0].Throughput = history.ModeAB{Modes: "kdtree-verify=on", TPS: 1917.5, Live: true,
			Base: "off", BaseTPS: 410, BaseRuns: 3, Ratio: 1917.5 / 410}
	})
}

// setupSlower is gpu1 serving in a mode that decodes 35 % slower than the
// one before.
func setupSlower(t *testing.T, m *Model, src *fakeSource) {
	setupServingStats(t, m, src)
	feed(t, m, func(hs []remote.HostState) {
		hs[0].Startup.Stats = &startup.Stats{
			Latest: startup.Sample{Time: at("12m30s"), GenTime: at("12m30s"), GenTPS: 1240, Running: 8, KVUsage: 0.12, Graph: "on"},
			Decode: []float64{1200, 1250, 1240, 1238}, Lines: 4,
		}
		hs[0].Throughput = history.ModeAB{Modes: "kdtree-verify=on", TPS: 1240, Live: true,
			Base: "off", BaseTPS: 1905, BaseRuns: 4, Ratio: 1240.0 / 1905, Slower: true}
	})
}

// TestGoldenServing renders the table and gpu1's host view once it serves
// with stats. Regenerate with: go test ./ui -run TestGoldenServing -update
func TestGoldenServing(t *testing.T) {
	screens := []struct {
		name  string
		keys  []string
		setup func(*testing.T, *Model, *fakeSource)
	}{
		{"table", nil, setupServingStats},
		{"host-gpu1", []string{"enter"}, setupServingStats},
		{"table-slower", nil, setupSlower},
		{"host-gpu1-slower", []string{"enter"}, setupSlower},
	}
	for _, size := range [][2]int{{80, 24}, {160, 48}, {60, 20}} {
		for _, sc := range screens {
			t.Run(fmt.Sprintf("%s-%dx%d", sc.name, size[0], size[1]), func(t *testing.T) {
				m, src := newTestModel(t, size[0], size[1])
				sc.setup(t, m, src)
				press(m, sc.keys...)
				out := render(m)
				checkFits(t, out, size[0], size[1])
				golden.RequireEqual(t, []byte(out))
			})
		}
	}
}

// TestTPSColumnOnlyOnceServing: the column shows the rate of a serving
// host, nothing for the others, and is not there when no host serves with
// a rate; the mode stays in view at 80 columns.
func TestTPSColumnOnlyOnceServing(t *testing.T) {
	m, src := newTestModel(t, 80, 24)
	if out := render(m); strings.Contains(out, "TOK/S") {
		t.Fatalf("TOK/S column with no stats:\n%s", out)
	}
	setupServingStats(t, m, src)
	out := render(m)
	head, rows := "", map[string]string{}
	for _, l := range lines(out) {
		if strings.Contains(l, "HOST") {
			head = l
		}
		for _, h := range []string{"gpu1", "gpu2", "gpu3", "gpu4"} {
			if strings.Contains(l, " "+h+" ") && rows[h] == "" {
				rows[h] = l
			}
		}
	}
	if !strings.Contains(head, "TOK/S") || !strings.Contains(head, "MODE") {
		t.Fatalf("80 columns: header %q lacks TOK/S or MODE", head)
	}
	if !strings.Contains(rows["gpu1"], "1 922") {
		t.Errorf("gpu1 row %q lacks its rate", rows["gpu1"])
	}
	// A host that stats lines came from but that is not serving (it failed
	// after) shows none.
	feed(t, m, func(hs []remote.HostState) {
		hs[0].Startup.Stats = &startup.Stats{Latest: startup.Sample{GenTime: at("1m"), GenTPS: 99}}
		hs[2].Startup.Stats = &startup.Stats{Latest: startup.Sample{GenTime: at("1m"), GenTPS: 77}}
	})
	out = render(m)
	if strings.Contains(out, "77.0") || !strings.Contains(out, "99.0") {
		t.Errorf("rates shown for the wrong hosts:\n%s", out)
	}
}

func TestFmtTPS(t *testing.T) {
	for v, want := range map[float64]string{0: "0.0", 41.7: "41.7", 186.64: "187", 1920: "1 920", 12345.6: "12 346", 1234567: "1 234 567", -1: "—"} {
		if got := fmtTPS(v); got != want {
			t.Errorf("fmtTPS(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestABText(t *testing.T) {
	for _, tc := range []struct {
		ab   history.ModeAB
		want string
	}{
		{history.ModeAB{Modes: "kdtree-verify=on", TPS: 1920, Live: true, Base: "off", BaseTPS: 410, BaseRuns: 3, Ratio: 1920.0 / 410},
			"decode 1 920 tok/s with kdtree-verify=on vs 410 tok/s with off (4.7×, from 3 runs)"},
		{history.ModeAB{Modes: "kdtree-verify=on", TPS: 1905, Runs: 4},
			"decode 1 905 tok/s with kdtree-verify=on (from 4 runs)"},
		{history.ModeAB{Modes: "kdtree-verify=on", TPS: 1240, Live: true, Base: "off", BaseTPS: 1905, BaseRuns: 1, Ratio: 1240.0 / 1905, Slower: true},
			"⚠ 35 % slower: decode 1 240 tok/s with kdtree-verify=on vs 1 905 tok/s with off (0.7×, from 1 run)"},
		{history.ModeAB{Modes: "kdtree-verify=on", TPS: 1920, Live: true, Base: "off", BaseTPS: 480, BaseRuns: 1, Ratio: 4, BenchTPS: 876, BaseBenchTPS: 223, BenchRatio: 876.0 / 223},
			"decode 1 920 tok/s with kdtree-verify=on vs 480 tok/s with off (4.0×, from 1 run) · bench 876 tok/s on vs 223 off"},
		{history.ModeAB{Modes: "kdtree-verify=on", TPS: 1905, Runs: 4, BenchTPS: 876},
			"decode 1 905 tok/s with kdtree-verify=on (from 4 runs) · bench 876 tok/s on"},
		{history.ModeAB{Modes: "kdtree-verify=on", Base: "off", BenchTPS: 876, BaseBenchTPS: 223},
			"bench 876 tok/s on vs 223 off"},
		{history.ModeAB{Modes: "a=on,b=x", Base: "a=off,b=y", TPS: 100, Runs: 1, BaseTPS: 50, BaseRuns: 1, Ratio: 2, BenchTPS: 876, BaseBenchTPS: 223},
			"decode 100 tok/s with a=on,b=x vs 50.0 tok/s with a=off,b=y (2.0×, from 2 runs) · bench 876 tok/s a=on,b=x vs 223 a=off,b=y"},
	} {
		if got := abText(tc.ab); got != tc.want {
			t.Errorf("abText(%+v)\n got %q\nwant %q", tc.ab, got, tc.want)
		}
	}
}
