package startup

import (
	"fmt"
	mbits "math/bits"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MetricRule turns one of an engine's periodic stats lines (SGLang's
// "Decode batch …, gen throughput (token/s): 186.64", vLLM's "Avg
// generation throughput: 123.8 tokens/s, …") into a serving sample. Each
// field is found by its own label because the engines add, drop and
// reorder the fields around them from release to release ("cuda graph:
// True" appeared between token usage and the rate; "#queue-req" moved to
// the end): a label per value survives that, one pattern for the whole
// line does not. Labels are literal text, not patterns, so that reading a
// stats line (the bulk of a serving host's journal) allocates nothing.
type MetricRule struct {
	// Keywords work as in PhaseRule: a line must contain one.
	Keywords []string `json:"keywords" yaml:"keywords"`
	// Pattern, when set, must match too (an RE2 gate, not anchored).
	Pattern string `json:"pattern,omitempty" yaml:"pattern,omitempty"`
	// The fields: each a list of labels, the value being the number right
	// after the first label found in the line ("gen throughput (token/s):
	// " → 186.64); a field none of whose labels is in the line is not in
	// it. GenTPS is the generation (decode) rate in tokens/s, PromptTPS the
	// prompt (prefill, input) rate, Running and Queued request counts,
	// KVUsage the KV cache in use as a fraction (0.12) or KVPercent as a
	// percentage (17.5), Graph a "True"/"False" for CUDA graphs on or off.
	GenTPS    []string `json:"gen_tps,omitempty" yaml:"gen_tps,omitempty"`
	PromptTPS []string `json:"prompt_tps,omitempty" yaml:"prompt_tps,omitempty"`
	Running   []string `json:"running,omitempty" yaml:"running,omitempty"`
	Queued    []string `json:"queued,omitempty" yaml:"queued,omitempty"`
	KVUsage   []string `json:"kv_usage,omitempty" yaml:"kv_usage,omitempty"`
	KVPercent []string `json:"kv_percent,omitempty" yaml:"kv_percent,omitempty"`
	Graph     []string `json:"graph,omitempty" yaml:"graph,omitempty"`
}

// Sample is what the engine's stats lines said last: each field is the
// value of the newest line that carried it (SGLang gives the generation
// rate in its decode lines and the input rate in its prefill lines).
type Sample struct {
	// Time is the host time of the newest stats line.
	Time time.Time `json:"time"`
	// GenTPS is the generation rate in tokens/s (GenTime: its line's time).
	GenTPS  float64   `json:"gen_tps"`
	GenTime time.Time `json:"gen_time,omitzero"`
	// PromptTPS is the prompt (input) rate in tokens/s.
	PromptTPS float64 `json:"prompt_tps"`
	Running   int     `json:"running"`
	Queued    int     `json:"queued"`
	// KVUsage is the KV cache in use, 0..1.
	KVUsage float64 `json:"kv_usage"`
	// Graph is "on" or "off" (CUDA graphs used for the batch), "" when no
	// line said.
	Graph string `json:"cuda_graph,omitempty"`
}

// StatsEvery is how much host time goes by between two ChangeStats of a
// host: vLLM logs its stats every 10 s, SGLang every 40 decode steps (a
// second or two), and a change is a line in a watch, not the log.
const StatsEvery = 10 * time.Second

// MaxDecodeSamples bounds the generation rates a startup keeps for the
// sparkline and the steady rate (STYLE: every buffer is bounded; the
// oldest go first).
const MaxDecodeSamples = 64

// Stats is what the engine's periodic stats lines say about the run.
type Stats struct {
	Latest Sample `json:"latest"`
	// Decode holds the latest generation rates (tokens/s), oldest first,
	// at most MaxDecodeSamples.
	Decode []float64 `json:"decode,omitempty"`
	// Lines counts the stats lines of this invocation.
	Lines int `json:"lines"`
}

func (s *Stats) clone() *Stats {
	if s == nil {
		return nil
	}
	c := *s
	c.Decode = slices.Clone(s.Decode)
	return &c
}

type compiledMetric struct {
	MetricRule
	gate *regexp.Regexp
}

// compileMetric checks r and compiles its gate; where names it in errors.
func compileMetric(where string, r MetricRule) (compiledMetric, error) {
	gate, err := compileRule(where, r.Keywords, r.Pattern, "", nil)
	if err != nil {
		return compiledMetric{}, err
	}
	fields := []struct {
		name   string
		labels []string
	}{
		{"gen_tps", r.GenTPS}, {"prompt_tps", r.PromptTPS}, {"running", r.Running}, {"queued", r.Queued},
		{"kv_usage", r.KVUsage}, {"kv_percent", r.KVPercent}, {"graph", r.Graph},
	}
	some := false
	for _, f := range fields {
		for j, l := range f.labels {
			if len(l) < minKeyword {
				return compiledMetric{}, fmt.Errorf("%s.%s[%d]: label %q is shorter than %d bytes", where, f.name, j, l, minKeyword)
			}
		}
		some = some || len(f.labels) > 0
	}
	if !some {
		return compiledMetric{}, fmt.Errorf("%s: no field (gen_tps, prompt_tps, running, queued, kv_usage, kv_percent, graph)", where)
	}
	return compiledMetric{MetricRule: r, gate: gate}, nil
}

// after returns the text of msg right after the first of labels found in
// it.
func after(msg string, labels []string) (string, bool) {
	for _, l := range labels {
		if i := strings.Index(msg, l); i >= 0 {
			return msg[i+len(l):], true
		}
	}
	return "", false
}

// number reads the decimal number at the start of s ("186.64, #queue…").
func number(s string) (float64, bool) {
	n := 0
	for n < len(s) && (s[n] >= '0' && s[n] <= '9' || s[n] == '.') {
		n++
	}
	if n == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(s[:n], 64)
	return v, err == nil
}

// apply reads the rule's fields out of msg into s; it reports false when
// the gate does not match or no field does.
func (r *compiledMetric) apply(msg string, at time.Time, s *Sample) bool {
	if r.gate != nil && !r.gate.MatchString(msg) {
		return false
	}
	got := false
	num := func(labels []string) (float64, bool) {
		rest, ok := after(msg, labels)
		if !ok {
			return 0, false
		}
		v, ok := number(rest)
		got = got || ok
		return v, ok
	}
	next := *s
	if v, ok := num(r.GenTPS); ok {
		next.GenTPS, next.GenTime = v, at
	}
	if v, ok := num(r.PromptTPS); ok {
		next.PromptTPS = v
	}
	if v, ok := num(r.Running); ok {
		next.Running = int(min(v, 1<<30))
	}
	if v, ok := num(r.Queued); ok {
		next.Queued = int(min(v, 1<<30))
	}
	if v, ok := num(r.KVUsage); ok {
		next.KVUsage = min(v, 1)
	}
	if v, ok := num(r.KVPercent); ok {
		next.KVUsage = min(v/100, 1)
	}
	if rest, ok := after(msg, r.Graph); ok {
		switch {
		case strings.HasPrefix(rest, "True"):
			next.Graph, got = "on", true
		case strings.HasPrefix(rest, "False"):
			next.Graph, got = "off", true
		}
	}
	if !got {
		return false
	}
	next.Time = at
	*s = next
	return true
}

// applyMetric runs the metric rules whose keywords hit msg; the first that
// matches decides. It reports whether one did, and reports the sample as a
// ChangeStats when the line gave a generation rate StatsEvery or more
// after the last one reported.
func (t *Tracker) applyMetric(msg string, at time.Time, hit []uint64, out *[]Change) bool {
	for w, bits := range hit {
		for bits != 0 {
			b := mbits.TrailingZeros64(bits)
			bits &^= 1 << b
			r := t.set.refs[w<<6|b]
			if r.kind != refMetric || !t.active[r.pack] {
				continue
			}
			m := &t.set.packs[r.pack].metrics[r.idx]
			if t.st.Stats == nil {
				t.st.Stats = &Stats{Decode: make([]float64, 0, MaxDecodeSamples)}
			}
			sv := t.st.Stats
			if dp, tp, ok := dpRank(msg); ok {
				if !t.applyDP(m, msg, at, dp, tp, out) {
					continue
				}
				return true
			}
			prev := sv.Latest.GenTime
			if !m.apply(msg, at, &sv.Latest) {
				continue
			}
			sv.Lines++
			if !sv.Latest.GenTime.Equal(prev) {
				t.decoded(at, out)
			}
			return true
		}
	}
	return false
}

// decoded appends the host's generation rate to the decode ring and
// reports it as a ChangeStats when StatsEvery has passed since the last.
func (t *Tracker) decoded(at time.Time, out *[]Change) {
	sv := t.st.Stats
	if len(sv.Decode) == MaxDecodeSamples {
		sv.Decode = append(sv.Decode[:0], sv.Decode[1:]...)
	}
	sv.Decode = append(sv.Decode, sv.Latest.GenTPS)
	if t.statsSaid.IsZero() || at.Sub(t.statsSaid) >= StatsEvery {
		t.statsSaid = at
		l := sv.Latest
		*out = append(*out, Change{Kind: ChangeStats, Time: at, Phase: t.path.display(), Progress: t.path.progress, Stats: &l})
	}
}

// dpGroup is one data-parallel rank's latest sample. SGLang with
// --dp-size N runs N schedulers, each printing its own stats lines
// ("[… DP1 TP1] Decode batch, …"): the host's rate is their sum. The TP
// ranks of one DP group share its batch, so only one of them counts (the
// lowest seen: the group's TP0 once it printed).
type dpGroup struct {
	dp, tp int
	s      Sample
	// fresh says the group gave a rate since the host's last decode
	// sample: a second one from it closes the round of groups.
	fresh bool
}

// maxDPGroups bounds the data-parallel ranks a host's stats keep apart
// (STYLE: every buffer is bounded); beyond it a rank's lines count as
// the last group's.
const maxDPGroups = 256

// applyDP reads a stats line of DP rank dp (TP rank tp) into its group's
// sample and sets the host's sample to the groups' sum: rates, running
// and queued requests add up, the KV use is the fullest rank's. The host
// gets one decode sample a round (each group's rate once), so that the
// sparkline and the steady rate see the host, not each rank.
func (t *Tracker) applyDP(m *compiledMetric, msg string, at time.Time, dp, tp int, out *[]Change) bool {
	i := 0
	for i < len(t.dp) && t.dp[i].dp < dp {
		i++
	}
	if i == len(t.dp) || t.dp[i].dp != dp {
		if len(t.dp) >= maxDPGroups {
			i = len(t.dp) - 1
		} else {
			t.dp = append(t.dp, dpGroup{})
			copy(t.dp[i+1:], t.dp[i:])
			t.dp[i] = dpGroup{dp: dp, tp: tp}
		}
	}
	g := &t.dp[i]
	next := g.s
	if !m.apply(msg, at, &next) {
		return false
	}
	sv := t.st.Stats
	sv.Lines++
	if tp > g.tp {
		return true // another TP rank of the group: the same batch, counted once
	}
	g.tp = tp
	gen := !next.GenTime.Equal(g.s.GenTime)
	if gen && g.fresh {
		// The group's second rate since the last sample: every group
		// has had its turn, the round's sum is one sample.
		t.decoded(at, out)
		for j := range t.dp {
			t.dp[j].fresh = false
		}
	}
	g.s, g.fresh = next, g.fresh || gen
	sum := Sample{Time: at, Graph: t.dp[0].s.Graph}
	for _, x := range t.dp {
		sum.GenTPS += x.s.GenTPS
		sum.PromptTPS += x.s.PromptTPS
		sum.Running += x.s.Running
		sum.Queued += x.s.Queued
		sum.KVUsage = max(sum.KVUsage, x.s.KVUsage)
		if x.s.GenTime.After(sum.GenTime) {
			sum.GenTime = x.s.GenTime
		}
		if sum.Graph == "" {
			sum.Graph = x.s.Graph
		}
	}
	sv.Latest = sum
	return true
}

// dpRank reads the DP and TP ranks of SGLang's logger prefix ("[2026-03-17
// 17:35:07 DP9 TP9] …", "[… DP0 TP0 EP0] …"); ok is false for a line
// without a DP rank. It allocates nothing: it runs on every stats line.
func dpRank(msg string) (dp, tp int, ok bool) {
	end := strings.IndexByte(msg, ']')
	if end < 0 || end > 96 {
		return 0, 0, false
	}
	head := msg[:end]
	read := func(label string) (int, bool) {
		for from := 0; ; {
			i := strings.Index(head[from:], label)
			if i < 0 {
				return 0, false
			}
			i += from
			j := i + len(label)
			n, k := 0, j
			for k < len(head) && head[k] >= '0' && head[k] <= '9' && k-j < 6 {
				n = n*10 + int(head[k]-'0')
				k++
			}
			if k > j && (i == 0 || head[i-1] == ' ' || head[i-1] == '[') && (k == len(head) || head[k] == ' ') {
				return n, true
			}
			from = j
		}
	}
	dp, ok = read("DP")
	if !ok {
		return 0, 0, false
	}
	tp, _ = read("TP")
	return dp, tp, true
}

// StatsLines counts the stats lines of the current invocation: a cheap
// way for the fleet to see a new sample without copying the state.
func (t *Tracker) StatsLines() int {
	if t.st.Stats == nil {
		return 0
	}
	return t.st.Stats.Lines
}
