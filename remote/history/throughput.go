package history

import (
	"maps"

	"github.com/bringup-dev/bringup/remote/event"
	"slices"
	"sort"
	"strings"
	"time"
)

// KindThroughput marks a record of a serving run's steady decode rate; a
// record without a kind is a startup.
const KindThroughput = "throughput"

// KindBench marks a record of a smoke load's result on a serving run.
const KindBench = "bench"

// SteadyMin is how many decode rates a run must have printed before its
// steady rate counts: the first ones ramp up with the load.
const SteadyMin = 8

// steadySkip is how many of the first decode rates the steady rate leaves
// out (the warm-up and the first batches).
const steadySkip = 2

// DefaultSlowerBy is the drop against the mode before that flags a mode as
// slower (DefaultSlowerBy: 20 %).
const DefaultSlowerBy = 0.20

// Steady is a run's steady decode rate from the rates its engine printed,
// oldest first: the median of the busy ones (above zero) after the first
// steadySkip, once SteadyMin are busy. ok is false before that.
func Steady(decode []float64) (tps float64, ok bool) {
	var busy []float64
	for _, v := range decode {
		if v > 0 {
			busy = append(busy, v)
		}
	}
	if len(busy) < SteadyMin {
		return 0, false
	}
	return median(busy[steadySkip:]), true
}

// Throughput returns the record of a serving run's steady decode rate.
func Throughput(at time.Time, host, unit, engine string, modes map[string]string, invocation string, tps float64) Record {
	return Record{Kind: KindThroughput, Time: at, Host: host, Unit: unit, Engine: engine, Modes: modes,
		InvocationID: invocation, DecodeTPS: tps}
}

// BenchRecord returns the record of a smoke load's result b on a serving
// run of host's unit under modes.
func BenchRecord(at time.Time, host, unit, engine string, modes map[string]string, invocation string, b event.Bench) Record {
	return Record{Kind: KindBench, Time: at, Host: host, Unit: unit, Engine: engine, Modes: modes,
		InvocationID: invocation, Bench: &b}
}

// ModeAB compares the decode rate of a host's current kernel modes with
// the modes it ran before: "decode 1 920 tok/s with kdtree-verify=on vs
// 410 tok/s with off (4.7×, from 3 runs)".
type ModeAB struct {
	// Modes is the configuration compared ("kdtree-verify=on"), TPS its
	// rate: the current run's steady rate when it has one (Live), else
	// the median of its earlier runs (Runs of them).
	Modes string  `json:"modes"`
	TPS   float64 `json:"decode_tps"`
	Live  bool    `json:"live,omitempty"`
	Runs  int     `json:"runs,omitempty"`
	// Base is the configuration before it on this host (the newest other
	// one), BaseTPS the median of its newest runs, BaseRuns how many.
	// Empty when the host ran no other.
	Base     string  `json:"base,omitempty"`
	BaseTPS  float64 `json:"base_decode_tps,omitempty"`
	BaseRuns int     `json:"base_runs,omitempty"`
	// Ratio is TPS/BaseTPS; Slower marks a drop of more than the
	// threshold the comparison was made with.
	Ratio  float64 `json:"ratio,omitempty"`
	Slower bool    `json:"slower,omitempty"`
	// BenchTPS is the output tok/s of the newest smoke load under the
	// modes compared, BaseBenchTPS the newest under Base's (0: none);
	// BenchRatio is one over the other when both are known.
	BenchTPS     float64 `json:"bench_output_tps,omitempty"`
	BaseBenchTPS float64 `json:"base_bench_output_tps,omitempty"`
	BenchRatio   float64 `json:"bench_ratio,omitempty"`
}

// Known reports whether ab has a rate to show.
func (ab ModeAB) Known() bool { return ab.TPS > 0 || ab.BenchTPS > 0 }

// Compared reports whether ab has a configuration to compare with.
func (ab ModeAB) Compared() bool { return ab.Known() && ab.BaseTPS > 0 }

// Compare sets the decode rate of host's unit under modes against the
// configuration it ran before, from throughput records (any order, other
// hosts' and kinds ignored). live is the current run's steady rate (0:
// none yet). slowerBy is the drop that flags the modes as slower (0:
// DefaultSlowerBy). The zero ModeAB means nothing to show.
func Compare(records []Record, host, unit string, modes map[string]string, live, slowerBy float64) ModeAB {
	if slowerBy <= 0 {
		slowerBy = DefaultSlowerBy
	}
	key := ModesKey(modes)
	// One run, one rate: every bringup that followed the run while it
	// served (the console, a status, a bench) recorded it; the newest
	// record of an invocation counts.
	byRun := map[string]Record{}
	var noID []Record
	for _, r := range records {
		if r.Kind != KindThroughput || r.Host != host || r.Unit != unit || r.DecodeTPS <= 0 {
			continue
		}
		if r.InvocationID == "" {
			noID = append(noID, r)
		} else if prev, ok := byRun[r.InvocationID]; !ok || r.Time.After(prev.Time) {
			byRun[r.InvocationID] = r
		}
	}
	byKey := map[string][]Record{}
	for _, r := range append(noID, slices.Collect(maps.Values(byRun))...) {
		k := ModesKey(r.Modes)
		byKey[k] = append(byKey[k], r)
	}
	ab := ModeAB{Modes: key}
	own := newest(byKey[key])
	ab.Runs = len(own)
	switch {
	case live > 0:
		ab.TPS, ab.Live = live, true
	case len(own) > 0:
		ab.TPS = median(rates(own))
	}
	// The configuration before: the one whose newest decode rate is
	// newest; without one, the one whose newest bench is.
	base := newestOther(byKey, key)
	benches := benchesByKey(records, host, unit)
	if base == "" {
		base = newestOther(benches, key)
	}
	if b := newestBench(benches[key]); b != nil {
		ab.BenchTPS = b.Bench.OutputTPS
	}
	if ab.TPS <= 0 && ab.BenchTPS <= 0 {
		return ModeAB{}
	}
	if base == "" {
		return ab
	}
	var baseModes map[string]string
	if prev := newest(byKey[base]); len(prev) > 0 {
		baseModes = prev[len(prev)-1].Modes
		if ab.TPS > 0 {
			ab.BaseTPS, ab.BaseRuns = median(rates(prev)), len(prev)
			ab.Ratio = ab.TPS / ab.BaseTPS
			ab.Slower = ab.TPS < ab.BaseTPS*(1-slowerBy)
		}
	}
	if b := newestBench(benches[base]); b != nil {
		ab.BaseBenchTPS = b.Bench.OutputTPS
		if baseModes == nil {
			baseModes = b.Modes
		}
		if ab.BenchTPS > 0 && ab.BaseBenchTPS > 0 {
			ab.BenchRatio = ab.BenchTPS / ab.BaseBenchTPS
		}
	}
	ab.Modes, ab.Base = Differ(modes, baseModes)
	return ab
}

// WithBench is ab with tps as the output tok/s of the newest bench of
// its configuration (key, ModesKey of its modes): the fleet's own latest
// one, which the history may not hold yet (its writer runs apart).
func (ab ModeAB) WithBench(key string, tps float64) ModeAB {
	if tps <= 0 {
		return ab
	}
	if !ab.Known() {
		ab = ModeAB{Modes: key}
	}
	ab.BenchTPS, ab.BenchRatio = tps, 0
	if ab.BaseBenchTPS > 0 {
		ab.BenchRatio = tps / ab.BaseBenchTPS
	}
	return ab
}

// newestOther is the configuration other than key whose newest record is
// newest (ties: the smaller key); "" when there is none.
func newestOther(byKey map[string][]Record, key string) string {
	var base string
	var baseAt time.Time
	for k, rs := range byKey {
		if k == key {
			continue
		}
		for _, r := range rs {
			if r.Time.After(baseAt) || r.Time.Equal(baseAt) && k < base {
				base, baseAt = k, r.Time
			}
		}
	}
	return base
}

// benchesByKey is host's complete smoke loads on unit (a stopped or an
// all-failed one is no measurement), by kernel configuration.
func benchesByKey(records []Record, host, unit string) map[string][]Record {
	out := map[string][]Record{}
	for _, r := range records {
		if r.Kind != KindBench || r.Host != host || r.Unit != unit || r.Bench == nil || r.Bench.Interrupted || r.Bench.OutputTPS <= 0 {
			continue
		}
		k := ModesKey(r.Modes)
		out[k] = append(out[k], r)
	}
	return out
}

// newestBench is the newest of rs; nil for none.
func newestBench(rs []Record) *Record {
	var out *Record
	for i := range rs {
		if out == nil || rs[i].Time.After(out.Time) {
			out = &rs[i]
		}
	}
	return out
}

// Differ names what differs between two configurations: the kernels whose
// modes differ, "kdtree-verify=on" against "off" for one kernel,
// "a=on,b=x" against "a=off,b=y" for several; the full keys when none
// differ in a way one kernel tells.
func Differ(a, b map[string]string) (string, string) {
	var ka, kb []string
	names := slices.Sorted(maps.Keys(a))
	for _, k := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	val := func(m map[string]string, k string) string {
		if v, ok := m[k]; ok {
			return v
		}
		return "unset" // the kernel was not configured then
	}
	for _, k := range names {
		_, inA := a[k]
		_, inB := b[k]
		if a[k] != b[k] || inA != inB {
			ka, kb = append(ka, k+"="+val(a, k)), append(kb, k+"="+val(b, k))
		}
	}
	switch {
	case len(ka) == 0:
		return ModesKey(a), ModesKey(b)
	case len(ka) == 1:
		_, mode, _ := strings.Cut(kb[0], "=")
		return ka[0], mode
	}
	return strings.Join(ka, ","), strings.Join(kb, ",")
}

// newest is the newest recentRuns of rs, oldest first.
func newest(rs []Record) []Record {
	rs = slices.Clone(rs)
	slices.SortStableFunc(rs, func(a, b Record) int { return a.Time.Compare(b.Time) })
	return rs[max(0, len(rs)-recentRuns):]
}

func rates(rs []Record) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = r.DecodeTPS
	}
	return out
}
