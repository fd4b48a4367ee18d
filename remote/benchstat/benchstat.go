// Package benchstat folds a smoke load's per-request measurements into
// its result (event.Bench): the one fold that the real load (remote/bench,
// over the host's SSH tunnel) and the simulated hosts' load (remote/sim,
// on the simulation's clock) share, so both report alike. It is pure.
package benchstat

import (
	"slices"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
)

// Sample is what one request of a smoke load measured. Err is the
// failure in words, already sanitised where it entered ("" when the
// request succeeded).
type Sample struct {
	TTFT, Latency time.Duration
	Tokens        int
	Err           string
}

// Summarise folds the requests' samples over the load's duration took:
// requests/s and output tok/s over took, TTFT and latency p50/p99 over
// the requests that succeeded, the errors and the first of them.
func Summarise(rs []Sample, took time.Duration) event.Bench {
	res := event.Bench{Requests: len(rs), Duration: took}
	var ttft, lat []time.Duration
	for _, r := range rs {
		if r.Err != "" {
			res.Errors++
			if res.FirstError == "" {
				res.FirstError = r.Err
			}
			continue
		}
		res.OK++
		res.OutputTokens += r.Tokens
		ttft, lat = append(ttft, r.TTFT), append(lat, r.Latency)
	}
	if s := took.Seconds(); s > 0 {
		res.ReqPerSec = float64(res.OK) / s
		res.OutputTPS = float64(res.OutputTokens) / s
	}
	res.TTFTP50, res.TTFTP99 = Percentile(ttft, 50), Percentile(ttft, 99)
	res.LatencyP50, res.LatencyP99 = Percentile(lat, 50), Percentile(lat, 99)
	return res
}

// Percentile is the nearest-rank p-th percentile of ds; 0 for none.
func Percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := (p*len(s) + 99) / 100 // ceil(p/100 · n)
	return s[min(len(s), max(1, rank))-1]
}
