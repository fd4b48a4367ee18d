package drive

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/bench"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/startup"
)

// ExitBenchRefused is bench's exit code when a host was refused (not
// serving): as the changing commands' refusal.
const ExitBenchRefused = cli.ExitUsage

// Bench is a bounded smoke load on each serving host of an open fleet.
type Bench struct {
	Fleet *fleet.Fleet
	// Demo: the fleet is simulated; its hosts start cold, and the load
	// waits up to Wait for them to serve or fail. Hosts are those named.
	Demo  bool
	Hosts []string
	// Wait bounds the wait for the hosts: to serve (Demo), or to answer.
	Wait time.Duration
	Load remote.Action // an ActBench
	JSON bool
	// Terminal: the progress stream is a terminal, for live bars (else
	// one line per host at the end).
	Terminal bool
}

// Run sends the load to each serving host, refuses the others with their
// phase, and returns the exit code: 0 clean, 1 errors, ExitBenchRefused a
// host refused. Results go to s.Out, progress to s.Err.
func (b Bench) Run(ctx context.Context, s Streams) int {
	// The fleet runs past Ctrl-C (ctx), so that the stopped loads still
	// report what they measured; stop ends it.
	fl, stop := Follow(context.WithoutCancel(ctx), s.Err, "bench", b.Fleet)
	defer stop()
	// On a terminal, a note while the hosts are awaited: the load and its
	// bars start only once they answer.
	waiting := output.NewBenchBoard(s.Err, b.Terminal && !b.JSON, nil, 0)
	waiting.Waiting(fmt.Sprintf("bench: waiting for %d hosts to answer…", len(b.Fleet.Hosts())))
	var hosts []remote.HostState
	if b.Demo {
		waiting.Waiting("bench: waiting for the simulated hosts to serve or fail…")
		// The simulated hosts start cold: the load waits for them to
		// serve (or fail, and be refused with their diagnosis).
		wctx, cancel := context.WithTimeout(ctx, b.Wait)
		all, _ := fl.Watch(wctx, func(remote.Batch) {}) // a timeout refuses the hosts not serving by then
		cancel()
		for _, h := range all {
			if slices.Contains(b.Hosts, h.Name) {
				hosts = append(hosts, h)
			}
		}
	} else {
		hosts = fl.Snapshot(ctx, b.Wait)
	}
	waiting.Close()
	code := cli.ExitOK
	var serving []string
	for _, h := range hosts {
		refused := ""
		switch d, _ := b.Fleet.Driver(h.Name); {
		case h.Startup.Phase != startup.Serving && output.ConnWhy(h) != "":
			refused = fmt.Sprintf("not serving (phase %s: %s): a smoke load needs a serving host", h.Startup.Phase, output.ConnWhy(h))
		case h.Startup.Phase != startup.Serving:
			refused = fmt.Sprintf("not serving (phase %s): a smoke load needs a serving host", h.Startup.Phase)
		case !b.Demo && !isTunnel(d): // a simulated host answers a load itself
			refused = "no tunnel to its service"
		}
		if refused != "" {
			output.Bench(s.Out, h.Name, nil, refused, b.JSON)
			code = ExitBenchRefused
			continue
		}
		serving = append(serving, h.Name)
	}
	// The load runs as an action through the fleet's door, as the
	// console's b: the fleet keeps each complete result in the history
	// with the run's kernel modes.
	board := output.NewBenchBoard(s.Err, b.Terminal, serving, b.Load.Requests)
	if b.JSON {
		board = output.NewBenchBoard(io.Discard, false, nil, 0) // JSON lines say it all
	}
	board.Start()
	// On a terminal the results wait for the last bar: a line printed
	// between the bars would be drawn over.
	var outcomes []fleet.BenchOutcome
	report := func(o fleet.BenchOutcome) {
		if o.Result == nil {
			output.Bench(s.Out, o.Host, nil, o.Err, b.JSON)
			code = max(code, cli.ExitFailed)
			return
		}
		output.Bench(s.Out, o.Host, o.Result, "", b.JSON)
		if o.Result.Errors > 0 || o.Result.Interrupted || o.Err != "" {
			code = max(code, cli.ExitFailed)
		}
	}
	fl.Bench(ctx, serving, b.Load, 10*time.Second, board.Progress, func(o fleet.BenchOutcome) {
		done := -1
		if o.Result != nil {
			done = o.Result.Requests
		}
		board.End(o.Host, done)
		if b.Terminal && !b.JSON {
			outcomes = append(outcomes, o)
			return
		}
		report(o)
	})
	for _, o := range outcomes {
		report(o)
	}
	if b.JSON {
		word := map[int]string{cli.ExitOK: "done", cli.ExitFailed: "failed", ExitBenchRefused: "refused"}[code]
		output.Summary(s.Out, "bench", word, code, nil, "")
	}
	return code
}

// isTunnel reports whether d reaches the host's service (bench.Tunnel: a
// live host's SSH connection).
func isTunnel(d remote.Driver) bool {
	_, ok := d.(bench.Tunnel)
	return ok
}
