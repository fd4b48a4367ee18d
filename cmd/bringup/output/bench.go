package output

import (
	"fmt"
	"io"
	"strings"
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

// BenchBoard shows the smoke loads' progress: on a terminal, a bar per
// host, each on its own line, drawn as soon as the loads are sent and
// redrawn in place; anywhere else (a pipe, a file, a CI log), no redraws,
// one line per host when its load ends. It is not safe for concurrent use.
type BenchBoard struct {
	w     io.Writer
	tty   bool
	hosts []string
	done  map[string]int
	total map[string]int
	ended map[string]bool
	drawn int  // lines of bars on screen (tty)
	note  bool // a waiting note is on the line (tty): Close clears it
}

// NewBenchBoard is the board of hosts' loads of total requests each, on w
// (tty: a terminal).
func NewBenchBoard(w io.Writer, tty bool, hosts []string, total int) *BenchBoard {
	b := &BenchBoard{w: w, tty: tty, hosts: hosts, done: map[string]int{}, total: map[string]int{}, ended: map[string]bool{}}
	for _, h := range hosts {
		b.total[h] = total
	}
	return b
}

// Waiting says, on a terminal, what the load waits for before it starts
// (the hosts' answers); the bars replace it.
func (b *BenchBoard) Waiting(msg string) {
	if b.tty {
		fmt.Fprintf(b.w, "\r\x1b[2K%s", msg)
		b.note = true
	}
}

// Close takes the waiting note off the line.
func (b *BenchBoard) Close() {
	if b.note {
		fmt.Fprint(b.w, "\r\x1b[2K")
		b.note = false
	}
}

// Start draws every bar at 0 the moment the loads are sent.
func (b *BenchBoard) Start() {
	if b.tty && len(b.hosts) > 0 {
		b.draw()
	}
}

// Progress notes that host's load has done of total requests.
func (b *BenchBoard) Progress(host string, done, total int) {
	b.done[host], b.total[host] = done, total
	if b.tty {
		b.draw()
	}
}

// End notes that host's load ended after done requests (negative: as
// last reported): off a terminal, its one line.
func (b *BenchBoard) End(host string, done int) {
	if b.ended[host] {
		return
	}
	b.ended[host] = true
	if done >= 0 {
		b.done[host] = done
	}
	if b.tty {
		b.draw()
		return
	}
	if _, ok := b.total[host]; ok {
		fmt.Fprintf(b.w, "%-8s %d/%d requests\n", host, b.done[host], b.total[host])
	}
}

// draw redraws every bar in place: the cursor goes back up over the
// lines drawn last time.
func (b *BenchBoard) draw() {
	var s strings.Builder
	if b.drawn > 0 {
		fmt.Fprintf(&s, "\x1b[%dA", b.drawn)
	}
	for _, h := range b.hosts {
		fmt.Fprintf(&s, "\r\x1b[2K%s\n", BenchBar(h, b.done[h], b.total[h]))
	}
	b.drawn = len(b.hosts)
	fmt.Fprint(b.w, s.String())
}

// BenchBar is one host's bar: "gpu1     ███▌░░░░ 24/64".
func BenchBar(host string, done, total int) string {
	const width = 20
	n := done * width / max(1, total)
	return fmt.Sprintf("%-8s %s%s %d/%d", host, strings.Repeat("█", n), strings.Repeat("░", width-n), done, total)
}
