package history

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// KindThroughput marks a record of a serving run's steady decode rate; a
// record without a kind is a startup.
const KindThroughput = "throughput"

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
	return medianF(busy[steadySkip:]), true
}

// Throughput returns the record of a serving run's steady decode rate.
func Throughput(at time.Time, host, unit, engine string, modes map[string]string, invocation string, tps float64) Record {
	return Record{Kind: KindThroughput, Time: at, Host: host, Unit: unit, Engine: engine, Modes: modes,
		InvocationID: invocation, DecodeTPS: tps}
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
}

// Known reports whether ab has a rate to show.
func (ab ModeAB) Known() bool { return ab.TPS > 0 }

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
		ab.TPS = medianF(rates(own))
	default:
		return ModeAB{}
	}
	// The configuration before: the one whose newest run is newest.
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
	if base == "" {
		return ab
	}
	prev := newest(byKey[base])
	ab.Base, ab.BaseTPS, ab.BaseRuns = base, medianF(rates(prev)), len(prev)
	ab.Ratio = ab.TPS / ab.BaseTPS
	ab.Slower = ab.TPS < ab.BaseTPS*(1-slowerBy)
	ab.Modes, ab.Base = Differ(modes, prev[len(prev)-1].Modes)
	return ab
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

// medianF is the middle value of vs (the mean of the two middle ones for
// an even count); 0 for none.
func medianF(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
