package output

import (
	"fmt"
	"io"
	"time"

	"github.com/bringup-dev/bringup/remote/bench"
)

// Bench prints one host's smoke-load result (or refusal) as text or a v1
// line of kind bench.
func Bench(w io.Writer, host string, res *bench.Result, refused string, asJSON bool) {
	if asJSON {
		l := Line{Kind: "bench", Host: host, Err: refused}
		if r := res; r != nil {
			sec := func(d time.Duration) float64 { return d.Round(time.Microsecond).Seconds() }
			l.Bench = &BenchResult{Model: r.Model, Requests: r.Requests, OK: r.OK, Errors: r.Errors, Concurrency: r.Concurrency,
				Interrupted: r.Interrupted, Seconds: sec(r.Duration), ReqPerSec: r.ReqPerSec, OutputTokens: r.OutputTokens, OutputTPS: r.OutputTPS,
				TTFTP50: sec(r.TTFTP50), TTFTP99: sec(r.TTFTP99), LatencyP50: sec(r.LatencyP50), LatencyP99: sec(r.LatencyP99), FirstError: r.FirstError}
		}
		emit(w, l)
		return
	}
	if refused != "" {
		fmt.Fprintf(w, "%-8s refused: %s\n", host, refused)
		return
	}
	r := res
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
	fmt.Fprintf(w, "%-8s %d requests (%d ok, %d errors) at concurrency %d in %.2f s: %.1f req/s, %.1f output tok/s\n",
		host, r.Requests, r.OK, r.Errors, r.Concurrency, r.Duration.Seconds(), r.ReqPerSec, r.OutputTPS)
	fmt.Fprintf(w, "%-8s TTFT p50 %s p99 %s · latency p50 %s p99 %s · model %s\n", "", ms(r.TTFTP50), ms(r.TTFTP99), ms(r.LatencyP50), ms(r.LatencyP99), r.Model)
	if r.Interrupted {
		fmt.Fprintf(w, "%-8s interrupted: the rest of the requests were not sent\n", "")
	}
	if r.FirstError != "" {
		fmt.Fprintf(w, "%-8s first error: %s\n", "", r.FirstError)
	}
}

// BenchProgress is the progress line of a smoke load, redrawn in place on
// a terminal: "gpu1 ███▌░░░░ 24/64".
func BenchProgress(w io.Writer, host string, done, total int) {
	const width = 20
	n := done * width / max(1, total)
	bar := ""
	for i := range width {
		if i < n {
			bar += "█"
		} else {
			bar += "░"
		}
	}
	end := ""
	if done == total {
		end = "\n"
	}
	fmt.Fprintf(w, "\r%-8s %s %d/%d%s", host, bar, done, total, end)
}
