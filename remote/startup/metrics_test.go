package startup

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
)

// TestMetricLines reads real stats lines of both engines, copied as found
// from public issues (source and version on each; a version "~" is
// inferred from the date and the line's wording), into samples.
func TestMetricLines(t *testing.T) {
	tests := []struct {
		src, version string
		line         string
		want         Sample // Time and GenTime are checked apart
		gen          bool   // the line carries a generation rate
	}{
		// SGLang, the period form (0.1 → 0.4.x).
		{"https://github.com/sgl-project/sglang/issues/938", "~0.2 (2024-08)",
			"Decode batch. #running-req: 1010, #token: 55006, token usage: 0.93, gen throughput (token/s): 1397.13, #queue-req: 12279",
			Sample{GenTPS: 1397.13, Running: 1010, Queued: 12279, KVUsage: 0.93}, true},
		{"https://github.com/sgl-project/sglang/issues/3909", "~0.4.3 (2025-02)",
			"[2025-02-27 04:46:39 TP0] Decode batch. #running-req: 8, #token: 62531, token usage: 0.12, gen throughput (token/s): 186.64, #queue-req: 0",
			Sample{GenTPS: 186.64, Running: 8, KVUsage: 0.12}, true},
		{"https://github.com/sgl-project/sglang/issues/4407", "~0.4.3 (2025-03)",
			"[2025-03-14 02:16:14 TP0] Decode batch. #running-req: 509, #token: 180776, token usage: 0.43, gen throughput (token/s): 7897.87, largest-len: 0, #queue-req: 0, ",
			Sample{GenTPS: 7897.87, Running: 509, KVUsage: 0.43}, true},
		{"https://github.com/mit-han-lab/fastrl/pull/4", "~0.5 (2025-12, scheduler_metrics_mixin.py, speculative)",
			"2025-12-04 20:35:53 INFO 151972 [scheduler_metrics_mixin.py:287] Decode batch. #running-req: 48, #token: 3894, token usage: 0.00, accept len: 1.00, accept rate: 0.11, cuda graph: False, gen throughput (token/s): 5452.63, #queue-req: 0, ",
			Sample{GenTPS: 5452.63, Running: 48, Graph: "off"}, true},
		// SGLang, the comma form with the graph flag (0.5 on).
		{"https://github.com/sgl-project/sglang/pull/13023", "~0.5.5 (2025-11)",
			"[2025-11-11 04:06:30] Decode batch, #running-req: 28, #token: 22920, token usage: 0.13, cuda graph: True, gen throughput (token/s): 1086.59, #queue-req: 0, ",
			Sample{GenTPS: 1086.59, Running: 28, KVUsage: 0.13, Graph: "on"}, true},
		{"https://github.com/sgl-project/sglang/pull/13023", "~0.5.5 (2025-11)",
			"[2025-11-11 04:06:27] Decode batch, #running-req: 46, #token: 34901, token usage: 0.19, cuda graph: False, gen throughput (token/s): 1447.08, #queue-req: 0, ",
			Sample{GenTPS: 1447.08, Running: 46, KVUsage: 0.19, Graph: "off"}, true},
		{"https://github.com/sgl-project/sglang/pull/22331", "~0.5.10 (2026-04)",
			"[2026-04-08 14:05:21 TP0] Decode batch, #running-req: 5, #token: 20800, token usage: 0.29, cuda graph: True, gen throughput (token/s): 144.95, #queue-req: 0",
			Sample{GenTPS: 144.95, Running: 5, KVUsage: 0.29, Graph: "on"}, true},
		{"https://github.com/sgl-project/sglang/pull/22166", "~0.5.10 (2026-04)",
			"[2026-04-05 20:02:51] Prefill batch, #new-seq: 1, #new-token: 158, #cached-token: 0, token usage: 0.08, #running-req: 31, #queue-req: 0, cuda graph: True, input throughput (token/s): 559.53",
			Sample{PromptTPS: 559.53, Running: 31, KVUsage: 0.08}, false},
		// SGLang on NPU with a hybrid (mamba) pool: "full token usage",
		// "npu graph".
		{"https://github.com/sgl-project/sglang/pull/30047", "~0.5 (2026-07, NPU)",
			"[2026-07-04 05:01:33 TP0] Decode batch, #running-req: 40, #full token: 350592, full token usage: 0.74, mamba num: 160, mamba usage: 0.80, accept len: 3.13, accept rate: 0.71, npu graph: True, gen throughput (token/s): 155.34, #queue-req: 0",
			Sample{GenTPS: 155.34, Running: 40, KVUsage: 0.74, Graph: "on"}, true},
		{"https://github.com/sgl-project/sglang/pull/30047", "~0.5 (2026-07, NPU)",
			"[2026-07-04 05:01:20 TP0] Prefill batch, #new-seq: 1, #new-token: 128, #cached-token: 70016, full token usage: 0.28, mamba usage: 0.20, #running-req: 1, #queue-req: 0, #pending-token: 0, npu graph: False, input throughput (token/s): 16.23",
			Sample{PromptTPS: 16.23, Running: 1, KVUsage: 0.28}, false},
		// vLLM V0 (metrics.py: Swapped, Pending).
		{"https://github.com/vllm-project/vllm/issues/3094", "~0.3.2 (2024-02, metrics.py:161)",
			"INFO 02-28 21:48:18 metrics.py:161] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 44.9 tokens/s, Running: 2 reqs, Swapped: 0 reqs, Pending: 3 reqs, GPU KV cache usage: 82.1%, CPU KV cache usage: 0.0%",
			Sample{GenTPS: 44.9, Running: 2, Queued: 3, KVUsage: 0.821}, true},
		{"https://github.com/vllm-project/vllm/issues/12314", "~0.6.6 (2025-01, metrics.py:449)",
			"INFO 01-22 18:27:20 metrics.py:449] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 41.7 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 2.0%, CPU KV cache usage: 0.0%.",
			Sample{GenTPS: 41.7, Running: 1, KVUsage: 0.02}, true},
		// vLLM V1 (loggers.py: Engine NNN, Waiting).
		{"https://github.com/vllm-project/vllm/issues/19680", "~0.9 (2025-06, loggers.py:87)",
			"INFO 06-16 10:03:14 [loggers.py:87] Engine 000: Avg prompt throughput: 1254.4 tokens/s, Avg generation throughput: 29.2 tokens/s, Running: 10 reqs, Waiting: 4 reqs, GPU KV cache usage: 57.9%, Prefix cache hit rate: 40.5%",
			Sample{GenTPS: 29.2, PromptTPS: 1254.4, Running: 10, Queued: 4, KVUsage: 0.579}, true},
		{"https://github.com/vllm-project/vllm/issues/43295", "~0.2x (2026-05, loggers.py:271)",
			"(APIServer pid=3646) INFO 05-19 10:13:11 [loggers.py:271] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 1055.3 tokens/s, Running: 18 reqs, Waiting: 43 reqs, GPU KV cache usage: 95.9%, Prefix cache hit rate: 0.0%",
			Sample{GenTPS: 1055.3, Running: 18, Queued: 43, KVUsage: 0.959}, true},
		{"https://github.com/tenstorrent/tt-inference-server/issues/3359", "~0.2x (2026-05, loggers.py:271, docker timestamps)",
			"2026-05-12T08:01:39.331095044Z (APIServer pid=1) INFO 05-12 08:01:39 [loggers.py:271] Engine 000: Avg prompt throughput: 6335.3 tokens/s, Avg generation throughput: 4.8 tokens/s, Running: 9 reqs, Waiting: 0 reqs, GPU KV cache usage: 62.8%, Prefix cache hit rate: 0.0%",
			Sample{GenTPS: 4.8, PromptTPS: 6335.3, Running: 9, KVUsage: 0.628}, true},
	}
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for _, tc := range tests {
		t.Run(tc.src, func(t *testing.T) {
			tr := NewTracker(Options{Engine: "auto"})
			tr.Apply(event.Event{Kind: event.KindJournal, Time: at, Journal: &event.Journal{Message: tc.line}})
			st := tr.State()
			if st.Stats == nil || st.Stats.Lines != 1 {
				t.Fatalf("%s (%s): %q read as no stats line: %+v", tc.src, tc.version, tc.line, st.Stats)
			}
			got := st.Stats.Latest
			if !got.Time.Equal(at) || tc.gen != !got.GenTime.IsZero() {
				t.Errorf("times %v/%v, want %v (gen %v)", got.Time, got.GenTime, at, tc.gen)
			}
			got.Time, got.GenTime = time.Time{}, time.Time{}
			if !near(got, tc.want) {
				t.Errorf("%s (%s):\n got %+v\nwant %+v", tc.src, tc.version, got, tc.want)
			}
			if n := len(st.Stats.Decode); n != map[bool]int{true: 1, false: 0}[tc.gen] {
				t.Errorf("%d decode samples", n)
			}
			if st.Phase != Stopped || st.Diag != nil {
				t.Errorf("a stats line moved the startup: %s %+v", st.Phase, st.Diag)
			}
		})
	}
}

func near(a, b Sample) bool {
	same := func(x, y float64) bool { return x-y < 1e-9 && y-x < 1e-9 }
	return same(a.GenTPS, b.GenTPS) && same(a.PromptTPS, b.PromptTPS) && same(a.KVUsage, b.KVUsage) &&
		a.Running == b.Running && a.Queued == b.Queued && a.Graph == b.Graph
}

// TestStatsMergeAndBound: a prefill line keeps the decode rate, the graph
// flag comes from decode lines only, the ring keeps the newest
// MaxDecodeSamples, and a new invocation starts afresh.
func TestStatsMergeAndBound(t *testing.T) {
	h := newHost(t, Options{Engine: "sglang"})
	h.unit("active", "running", "")
	// sglang/pull/22166, as found.
	h.lines("[2026-04-05 20:02:51] Decode batch, #running-req: 32, #token: 11179, token usage: 0.08, cuda graph: True, gen throughput (token/s): 1635.11, #queue-req: 0",
		"[2026-04-05 20:02:52] Prefill batch, #new-seq: 1, #new-token: 290, #cached-token: 0, token usage: 0.08, #running-req: 31, #queue-req: 0, cuda graph: True, input throughput (token/s): 1670.03")
	s := h.tr.State().Stats
	if s.Latest.GenTPS != 1635.11 || s.Latest.PromptTPS != 1670.03 || s.Latest.Running != 31 || s.Latest.Graph != "on" || len(s.Decode) != 1 || s.Lines != 2 {
		t.Fatalf("merged %+v", s)
	}
	for i := range MaxDecodeSamples + 5 {
		h.lines("[2026-04-05 20:02:52] Decode batch, #running-req: 29, #token: 10096, token usage: 0.08, cuda graph: False, gen throughput (token/s): " + strings.Repeat("1", 1+i%3) + ".5, #queue-req: 0")
	}
	s = h.tr.State().Stats
	if len(s.Decode) != MaxDecodeSamples || s.Latest.Graph != "off" || s.Lines != MaxDecodeSamples+7 {
		t.Fatalf("after many: %d samples, graph %s, %d lines", len(s.Decode), s.Latest.Graph, s.Lines)
	}
	h.inv = "inv-2"
	h.unit("activating", "start", "")
	if st := h.tr.State(); st.Stats != nil {
		t.Fatalf("a new invocation kept the old stats: %+v", st.Stats)
	}
}

// TestMetricRuleErrors: a user pack's metric rule with no field, or a
// label too short, is refused with the rule named.
func TestMetricRuleErrors(t *testing.T) {
	for _, tc := range []struct {
		r    MetricRule
		want string
	}{
		{MetricRule{Keywords: []string{"tok/s"}}, "pack x: metrics[0]: no field"},
		{MetricRule{Keywords: []string{"tok/s"}, GenTPS: []string{"g:"}}, "pack x: metrics[0].gen_tps[0]: label"},
		{MetricRule{GenTPS: []string{"rate: "}}, "pack x: metrics[0].keywords: empty"},
	} {
		_, err := RulePack{Engine: "x", Metrics: []MetricRule{tc.r}}.Compile()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.r, err, tc.want)
		}
	}
}

// TestMetricRuleFromYAML: a user pack adds a stats line of its own engine
// (here a kernel's own rate line); errors name the file and the rule's line.
func TestMetricRuleFromYAML(t *testing.T) {
	packs, err := ParsePacks("my.yaml", []byte(`engine: sglang
first: true
metrics:
  - keywords: ["kdtree-verify rate"]
    gen_tps: ["rate="]
`))
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTracker(Options{Engine: "sglang", Packs: WithBuiltins(packs)})
	tr.Apply(event.Event{Kind: event.KindJournal, Time: time.Unix(1, 0), Journal: &event.Journal{Message: "kdtree-verify rate=812.5 tok/s"}})
	if s := tr.State().Stats; s == nil || s.Latest.GenTPS != 812.5 {
		t.Fatalf("user metric rule: %+v", s)
	}
	_, err = ParsePacks("bad.yaml", []byte("engine: x\nmetrics:\n  - keywords: [\"abc\"]\n  - keywords: [\"tok/s\"]\n    gen_tps: [\"r\"]\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "bad.yaml:3: pack x: metrics[0]: no field") {
		t.Fatalf("error %v", err)
	}
}

// TestStatsChangesThrottled: stats lines with a rate become ChangeStats at
// most one a StatsEvery of host time; lines without one never do.
func TestStatsChangesThrottled(t *testing.T) {
	tr := NewTracker(Options{Engine: "vllm"})
	at := time.Date(2026, 5, 19, 10, 13, 11, 0, time.UTC)
	// vllm-project/vllm#43295, as found: one line every 10 s.
	lines := []string{
		"(APIServer pid=3646) INFO 05-19 10:13:11 [loggers.py:271] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 1055.3 tokens/s, Running: 18 reqs, Waiting: 43 reqs, GPU KV cache usage: 95.9%, Prefix cache hit rate: 0.0%",
		"(APIServer pid=3646) INFO 05-19 10:13:21 [loggers.py:271] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 1226.3 tokens/s, Running: 18 reqs, Waiting: 42 reqs, GPU KV cache usage: 95.5%, Prefix cache hit rate: 0.0%",
		"(APIServer pid=3646) INFO 05-19 10:13:31 [loggers.py:271] Engine 000: Avg prompt throughput: 12068.8 tokens/s, Avg generation throughput: 734.9 tokens/s, Running: 18 reqs, Waiting: 33 reqs, GPU KV cache usage: 87.7%, Prefix cache hit rate: 0.0%",
	}
	var stats []Change
	for i, l := range lines {
		// Each line twice, 5 s apart: the second is too soon.
		for _, dt := range []time.Duration{0, 5 * time.Second} {
			for _, c := range tr.Apply(event.Event{Kind: event.KindJournal, Time: at.Add(time.Duration(i)*10*time.Second + dt), Journal: &event.Journal{Message: l}}) {
				if c.Kind == ChangeStats {
					stats = append(stats, c)
				}
			}
		}
	}
	if len(stats) != 3 || stats[1].Stats.GenTPS != 1226.3 || stats[2].Stats.Queued != 33 {
		t.Fatalf("%d stats changes: %+v", len(stats), stats)
	}
}

// benchDecodeLine is sglang/pull/22166's decode line, as found.
const benchDecodeLine = "[2026-04-05 20:02:51] Decode batch, #running-req: 32, #token: 11179, token usage: 0.08, cuda graph: True, gen throughput (token/s): 1635.11, #queue-req: 0"

// BenchmarkMetricLabels reads a decode line with the pack's literal labels.
func BenchmarkMetricLabels(b *testing.B) {
	c, err := sglangPack().Compile()
	if err != nil {
		b.Fatal(err)
	}
	m := &c.metrics[0]
	var s Sample
	at := time.Unix(1, 0)
	b.ReportAllocs()
	for b.Loop() {
		if !m.apply(benchDecodeLine, at, &s) {
			b.Fatal("no match")
		}
	}
}

// BenchmarkMetricRegexp is the obvious alternative, a pattern per field
// with a capture group, side by side with BenchmarkMetricLabels.
func BenchmarkMetricRegexp(b *testing.B) {
	res := []*regexp.Regexp{
		regexp.MustCompile(`gen throughput \(token/s\): ([\d.]+)`), regexp.MustCompile(`#running-req: (\d+)`),
		regexp.MustCompile(`#queue-req: (\d+)`), regexp.MustCompile(`token usage: ([\d.]+)`), regexp.MustCompile(`(?:cuda|npu|cpu) graph: (True|False)`),
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, re := range res {
			if re.FindStringSubmatch(benchDecodeLine) == nil {
				b.Fatal("no match")
			}
		}
	}
}

// TestDPStatsSum reads real data-parallel stats lines (testdata/dp, as
// found; sources in its README): one decode line per DP rank, each its
// own batch. The host's rate is their sum (the latest of each rank), its
// running and queued requests too, its KV use the fullest rank's; other
// lines among them change nothing. Replaying a file's lines (a second
// round of the same ranks) makes one decode sample of the round's sum.
func TestDPStatsSum(t *testing.T) {
	for _, tc := range []struct {
		file    string
		version string
		lines   int // stats lines
		want    Sample
	}{
		{"sglang-6081-dp8-mtp.log", "~0.4.6", 5, Sample{GenTPS: 171.01 + 168.28 + 173.06 + 155.80 + 152.08, Running: 40, KVUsage: 0.13, Graph: "on"}},
		{"sglang-20766-dp16-node1.log", "~0.5.9", 8, Sample{GenTPS: 3.83*6 + 3.82 + 3.84, Running: 96, Graph: "on"}},
		{"sglang-17392-dp4-ep4-pd-decode.log", "~0.5.11", 3, Sample{GenTPS: 1082.11 + 653.92 + 1111.11, Running: 25, KVUsage: 0.01, Graph: "on"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "dp", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
			h := newHost(t, Options{Engine: "sglang"})
			h.unit("active", "running", "")
			h.lines(lines...)
			s := h.tr.State().Stats
			if s == nil || s.Lines != tc.lines {
				t.Fatalf("%s (%s): stats %+v, want %d lines", tc.file, tc.version, s, tc.lines)
			}
			if !near(s.Latest, tc.want) {
				t.Errorf("%s (%s): the ranks' sum\n got %+v\nwant %+v", tc.file, tc.version, s.Latest, tc.want)
			}
			if len(s.Decode) != 0 {
				t.Errorf("one round gave %d decode samples before it closed: %v", len(s.Decode), s.Decode)
			}
			h.lines(lines...) // the same ranks again: the first round closes
			s = h.tr.State().Stats
			if len(s.Decode) != 1 || s.Decode[0]-tc.want.GenTPS > 1e-9 || tc.want.GenTPS-s.Decode[0] > 1e-9 {
				t.Errorf("after a second round: decode samples %v, want [%v]", s.Decode, tc.want.GenTPS)
			}
			if !near(s.Latest, tc.want) {
				t.Errorf("after a second round: %+v", s.Latest)
			}
		})
	}
}

// TestDPStatsOneTPRankPerGroup: the TP ranks of one DP group share its
// batch, so a second TP rank's line of the group is not added. No public
// log shows that (testdata/dp/README.md): this case is derived from the
// real DP0 and DP3 lines of sglang/pull/17392, with the TP rank of a copy
// changed, and says so.
func TestDPStatsOneTPRankPerGroup(t *testing.T) {
	dp0 := "[2026-05-07 13:40:42 DP0 TP0 EP0] Decode batch, #running-req: 8, #token: 7198, token usage: 0.01, pre-allocated usage: 0.00, #prealloc-req: 0, #transfer-req: 0, #retracted-req: 0, cuda graph: True, gen throughput (token/s): 1082.11, #queue-req: 0"
	dp3 := "[2026-05-07 13:40:42 DP3 TP3 EP3] Decode batch, #running-req: 6, #token: 6037, token usage: 0.01, pre-allocated usage: 0.00, #prealloc-req: 0, #transfer-req: 0, #retracted-req: 0, cuda graph: True, gen throughput (token/s): 653.92, #queue-req: 0"
	derived := strings.Replace(dp0, "DP0 TP0 EP0", "DP0 TP1 EP1", 1) // derived: DP0's TP1 printing the group's line
	h := newHost(t, Options{Engine: "sglang"})
	h.unit("active", "running", "")
	h.lines(dp0, derived, dp3, derived)
	s := h.tr.State().Stats
	if want := 1082.11 + 653.92; s.Lines != 4 || s.Latest.GenTPS-want > 1e-9 || want-s.Latest.GenTPS > 1e-9 || s.Latest.Running != 14 {
		t.Errorf("DP0's TP1 copies were added: %+v", s)
	}
	if dp, tp, ok := dpRank(derived); !ok || dp != 0 || tp != 1 {
		t.Errorf("dpRank(%q) = %d %d %v", derived, dp, tp, ok)
	}
	for _, line := range []string{
		"[2026-04-08 14:05:21 TP0] Decode batch, #running-req: 5, #token: 20800, token usage: 0.29, cuda graph: True, gen throughput (token/s): 144.95, #queue-req: 0",
		"[2026-04-05 20:02:51] Decode batch, #running-req: 32, #token: 11179, token usage: 0.08, cuda graph: True, gen throughput (token/s): 1635.11, #queue-req: 0",
	} {
		if _, _, ok := dpRank(line); ok {
			t.Errorf("dpRank found a DP rank in %q", line)
		}
	}
}

// BenchmarkDPRank is the DP prefix read every stats line pays for,
// beside BenchmarkMetricLabels (the line's fields): on a line with DP
// ranks (sglang/pull/17392, as found) and on one without.
func BenchmarkDPRank(b *testing.B) {
	for name, line := range map[string]string{
		"dp":    "[2026-05-07 13:40:42 DP3 TP3 EP3] Decode batch, #running-req: 6, #token: 6037, token usage: 0.01, pre-allocated usage: 0.00, #prealloc-req: 0, #transfer-req: 0, #retracted-req: 0, cuda graph: True, gen throughput (token/s): 653.92, #queue-req: 0",
		"no-dp": benchDecodeLine,
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, ok := dpRank(line); ok != (name == "dp") {
					b.Fatal("wrong")
				}
			}
		})
	}
}
