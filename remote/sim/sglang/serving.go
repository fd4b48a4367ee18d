package sglang

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Rates is the decode rate, in tokens/s at a full batch, that each kernel
// mode gives the stand-ins: the story's capture-safe kernel is several
// times faster "on" than "off". A mode not listed decodes at the "off"
// rate.
type Rates map[string]float64

// DefaultRates are the stand-ins' rates: "on" four times "off", as the
// engineer's capture-safe kernel was.
func DefaultRates() Rates { return Rates{"off": 480, "on": 1920} }

// fallbackRate is the rate when neither the mode nor "off" is in Rates.
const fallbackRate = 480

// Rate is the decode rate of mode.
func (r Rates) Rate(mode string) float64 {
	if v, ok := r[mode]; ok {
		return v
	}
	if v, ok := r["off"]; ok {
		return v
	}
	return fallbackRate
}

// FullBatch is the number of streams at which a simulated engine reaches
// its mode's decode rate: fewer streams each decode at rate/FullBatch (a
// batch that is not full leaves the GPU idle), more share the rate. The
// stand-ins (infersim's decoder, the simulated hosts' smoke load) both
// time their completions by it.
const FullBatch = 8

// StreamRate is the decode rate, in tokens/s, of one stream of streams
// decoding at once on an engine whose full batch decodes at rate.
func StreamRate(rate float64, streams int) float64 { return rate / float64(max(streams, FullBatch)) }

// ParseRates reads "off=480,on=1920" (INFERSIM_DECODE_TPS); the modes it
// does not name keep DefaultRates'.
func ParseRates(s string) (Rates, error) {
	r := DefaultRates()
	if strings.TrimSpace(s) == "" {
		return r, nil
	}
	for _, kv := range strings.Split(s, ",") {
		mode, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		f, err := strconv.ParseFloat(v, 64)
		if !ok || mode == "" || err != nil || f <= 0 {
			return nil, fmt.Errorf("decode rate %q: want MODE=TOKENS_PER_SECOND, e.g. on=1920", kv)
		}
		r[mode] = f
	}
	return r, nil
}

// String is r as ParseRates reads it, modes sorted.
func (r Rates) String() string {
	modes := make([]string, 0, len(r))
	for m := range r {
		modes = append(modes, m)
	}
	sort.Strings(modes)
	parts := make([]string, len(modes))
	for i, m := range modes {
		parts[i] = m + "=" + strconv.FormatFloat(r[m], 'f', -1, 64)
	}
	return strings.Join(parts, ",")
}

// Batch is what a stats line reports: the engine's load over the last
// interval.
type Batch struct {
	Running, Queued int
	// Tokens is how many tokens the KV cache holds; Usage the fraction of
	// the pool that is.
	Tokens int
	Usage  float64
	// GenTPS is the generation rate over the interval, in tokens/s.
	GenTPS float64
	// Graph says the decode ran as a CUDA graph.
	Graph bool
}

// DecodeLine is SGLang's periodic decode stats line (0.5's
// scheduler_metrics_mixin.py: log_decode_stats), without the logger
// prefix: "Decode batch, #running-req: 8, #token: 62531, token usage:
// 0.12, cuda graph: True, gen throughput (token/s): 186.64, #queue-req: 0".
func DecodeLine(b Batch) string {
	graph := "False"
	if b.Graph {
		graph = "True"
	}
	return fmt.Sprintf("Decode batch, #running-req: %d, #token: %d, token usage: %.2f, cuda graph: %s, gen throughput (token/s): %.2f, #queue-req: %d",
		b.Running, b.Tokens, b.Usage, graph, b.GenTPS, b.Queued)
}

// StatsEvery is how often SGLang prints its decode stats line under load
// (every 40 decode steps: about two seconds), infersim's default.
const StatsEvery = 2 * time.Second

// SteadyLoad is the load the simulated hosts serve once up, at rate (the
// mode's decode rate): eight running requests, the rate within ±3 % from
// line to line, the KV cache slowly filling. rng makes it reproducible.
func SteadyLoad(rate float64, n int, rng *rand.Rand) Batch {
	const running = 8
	tokens := 4000 + 320*(n%200)
	return Batch{Running: running, Tokens: tokens, Usage: float64(tokens) / 500000, Graph: true,
		GenTPS: rate * (1 + 0.03*(2*rng.Float64()-1))}
}
