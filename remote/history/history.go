// Package history is the record of earlier successful startups and what
// it predicts: the median duration of each phase for a host, unit and
// kernel modes, the memory the weights reached, and from those an ETA for
// a startup under way.
//
// It is pure: no IO, no clock but the times it is handed. The records are
// kept on disk by the history/store package.
package history

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
)

// Record is one successful startup: the phases it went through with their
// host-side times, and the GPU memory the weights took. A record of Kind
// KindThroughput is instead a serving run's steady decode rate (DecodeTPS),
// with no spans; one of KindBench a smoke load's result on a serving run
// (Bench).
type Record struct {
	// Kind is "" for a startup, KindThroughput for a decode rate,
	// KindBench for a smoke load.
	Kind string `json:"kind,omitempty"`
	// Time is when the startup reached serving (host time).
	Time   time.Time `json:"time"`
	Host   string    `json:"host"`
	Unit   string    `json:"unit"`
	Engine string    `json:"engine,omitempty"`
	// Modes maps each kernel to the mode in force (kernel → mode).
	Modes        map[string]string `json:"modes,omitempty"`
	InvocationID string            `json:"invocation_id,omitempty"`
	Spans        []startup.Span    `json:"spans"`
	// Total is from the start of the invocation to serving.
	Total time.Duration `json:"total"`
	// WeightMemMiB is the mean memory per GPU when the weights had loaded
	// (or at serving when no sample fell at the end of weights); 0 unknown.
	WeightMemMiB int `json:"weight_mem_mib,omitempty"`
	// DecodeTPS is a throughput record's steady decode rate (tokens/s).
	DecodeTPS float64 `json:"decode_tps,omitempty"`
	// Bench is a bench record's measurement: output tok/s, req/s, TTFT
	// and latency p50/p99, errors, N (requests) and C (concurrency).
	Bench *event.Bench `json:"bench,omitempty"`
}

// ModesKey is a canonical text for a modes map ("k1=m1,k2=m2", sorted), so
// records of the same configuration compare equal whatever the map order.
func ModesKey(modes map[string]string) string {
	keys := slices.Sorted(maps.Keys(modes))
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k + "=" + modes[k])
	}
	return b.String()
}

// Expectation is what history says a startup of one host, unit and modes
// takes.
type Expectation struct {
	// Phase is the median duration of each phase on the path (serving
	// excluded) over the runs used.
	Phase map[startup.Phase]time.Duration `json:"phase,omitempty"`
	// Total is the median time from start to serving.
	Total time.Duration `json:"total,omitempty"`
	// WeightMemMiB is the memory per GPU the most recent run reached at the
	// end of weights (the level memory climbs toward); 0 when unknown.
	WeightMemMiB int `json:"weight_mem_mib,omitempty"`
	// Runs is how many earlier startups the medians come from; 0 means
	// there is no expectation.
	Runs int `json:"runs,omitempty"`
	// OtherHosts says the host had no history of its own, so the runs are
	// those of the same unit and modes on other hosts.
	OtherHosts bool `json:"other_hosts,omitempty"`
}

// Known reports whether e holds any runs.
func (e Expectation) Known() bool { return e.Runs > 0 }

// recentRuns bounds how many of the newest matching runs the medians use:
// a new model, driver or kernel build shifts the durations, and the
// estimate should follow within a few runs rather than a few hundred.
const recentRuns = 20

// Estimate computes the expectation for host, unit and modes from records
// (in any order; the newest recentRuns matching ones are used). When the
// host has none, it falls back to the same unit and modes on other hosts
// and sets OtherHosts. The zero Expectation means no history.
func Estimate(records []Record, host, unit string, modes map[string]string) Expectation {
	key := ModesKey(modes)
	var own, other []Record
	for _, r := range records {
		if r.Kind != "" || r.Unit != unit || ModesKey(r.Modes) != key {
			continue
		}
		if r.Host == host {
			own = append(own, r)
		} else {
			other = append(other, r)
		}
	}
	use, fallback := own, false
	if len(use) == 0 {
		use, fallback = other, true
	}
	if len(use) == 0 {
		return Expectation{}
	}
	slices.SortStableFunc(use, func(a, b Record) int { return a.Time.Compare(b.Time) })
	use = use[max(0, len(use)-recentRuns):]

	e := Expectation{Phase: map[startup.Phase]time.Duration{}, Runs: len(use), OtherHosts: fallback}
	per := map[startup.Phase][]time.Duration{}
	totals := make([]time.Duration, 0, len(use))
	for _, r := range use {
		totals = append(totals, r.Total)
		for _, sp := range r.Spans {
			if sp.Phase == startup.Serving || !sp.Phase.Path() || sp.End.IsZero() {
				continue
			}
			per[sp.Phase] = append(per[sp.Phase], sp.End.Sub(sp.Start))
		}
		if r.WeightMemMiB > 0 {
			e.WeightMemMiB = r.WeightMemMiB // sorted oldest first: the last one wins
		}
	}
	for p, ds := range per {
		e.Phase[p] = median(ds)
	}
	e.Total = median(totals)
	return e
}

// median is the middle value (the mean of the two middle ones for an even
// count); 0 for none. One function for the durations of phases and the
// rates of runs.
func median[T ~int64 | ~float64](vs []T) T {
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

// ETA is when s is expected to serve, at host time now: what is left of
// the current phase plus the medians of the phases after it. What is left
// of the current phase comes from the log progress when it is known
// (elapsed/fraction − elapsed, blended with the phase's median while the
// progress is under half) and otherwise from the phase's median less the
// time spent in it, never below zero. ok is false when there is no
// history or s is not under way on the path (stopped, serving, failed,
// restarting, unknown).
func ETA(exp Expectation, s startup.Startup, now time.Time) (eta time.Time, ok bool) {
	if !exp.Known() || s.Loop != nil {
		// A crash-looping unit's next run is no startup on its way.
		return time.Time{}, false
	}
	phase := s.Phase
	if phase == startup.Stuck {
		phase = s.StuckIn
	}
	if !phase.Underway() {
		return time.Time{}, false
	}
	since := s.PhaseSince
	if n := len(s.Spans); n > 0 && s.Spans[n-1].Phase == phase && s.Spans[n-1].End.IsZero() {
		since = s.Spans[n-1].Start // stuck moves PhaseSince; the span keeps the phase's start
	}
	elapsed := max(0, now.Sub(since))
	var left time.Duration
	median := exp.Phase[phase]
	if f := s.Progress.Fraction(); s.Progress.Known() && f > 0 && s.Phase != startup.Stuck {
		// The log's pace extrapolates the phase's length; early on it
		// rests on a few shards and swings by minutes, so it is blended
		// with the median, the pace's weight growing with the progress
		// until it alone counts from half way.
		total := time.Duration(float64(elapsed) / f)
		if median > 0 {
			w := min(1, 2*f)
			total = time.Duration(w*float64(total) + (1-w)*float64(median))
		}
		left = max(0, total-elapsed)
	} else {
		left = max(0, median-elapsed)
	}
	for _, p := range startup.Order[phase.Rank()+1:] {
		if p != startup.Serving {
			left += exp.Phase[p]
		}
	}
	return now.Add(left), true
}
