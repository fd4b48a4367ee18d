package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote/bench"
	"github.com/bringup-dev/bringup/remote/sanitize"
	"github.com/bringup-dev/bringup/remote/startup"
)

// exitBenchRefused is bench's exit code when a host was refused (not
// serving): as the changing commands' refusal.
const exitBenchRefused = cli.ExitUsage

func runBench(ctx context.Context, e env, args []string) int {
	fs := cli.NewFlags(e.stdout, e.stderr, "bench", "bringup bench [-n N] [--concurrency C] [--max-tokens T] [--json] [-H hosts | --config F] [HOST|GROUP...]")
	var ff fleetFlags
	ff.register(fs)
	n := fs.IntP("requests", "n", bench.DefaultRequests, "send `N` requests to each host, exactly")
	c := fs.Int("concurrency", bench.DefaultConcurrency, "at most `C` requests at a time")
	maxTokens := fs.Int("max-tokens", bench.DefaultMaxTokens, "max_tokens of each request")
	asJSON := fs.Bool("json", false, "print a v1 JSON line per host, then a summary line")
	timeout := fs.Duration("timeout", 15*time.Second, "how long to wait for every host to answer before the load")
	if code, stop := cli.ParseArgs(fs, args); stop {
		return code
	}
	if *n <= 0 || *c <= 0 || *maxTokens <= 0 {
		return e.fail("bench", "--requests, --concurrency and --max-tokens must be greater than 0")
	}
	ff.ReadOnly = true // a load changes no host
	fleet, closeKeys, err := openLiveFleet(ctx, e, &ff, fs.Args(), nil)
	if err != nil {
		return e.fail("bench", "%v", err)
	}
	defer closeKeys()
	fl, stop := follow(ctx, e, "bench", fleet)
	defer stop()
	hosts := fl.Snapshot(ctx, *timeout)
	code := exitServing
	var mu sync.Mutex // the hosts' progress and results share stdout/stderr
	var wg sync.WaitGroup
	for _, h := range hosts {
		d, _ := fleet.Driver(h.Name)
		tun, ok := d.(bench.Tunnel)
		refused := ""
		switch {
		case h.Startup.Phase != startup.Serving && output.ConnWhy(h) != "":
			refused = fmt.Sprintf("not serving (phase %s: %s): a smoke load needs a serving host", h.Startup.Phase, output.ConnWhy(h))
		case h.Startup.Phase != startup.Serving:
			refused = fmt.Sprintf("not serving (phase %s): a smoke load needs a serving host", h.Startup.Phase)
		case !ok:
			refused = "no tunnel to its service"
		}
		if refused != "" {
			output.Bench(e.stdout, h.Name, nil, refused, *asJSON)
			code = exitBenchRefused
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := bench.Run(ctx, tun, bench.Options{Addr: tun.ProbeAddr(), Requests: *n, Concurrency: *c, MaxTokens: *maxTokens},
				func(done, total int) {
					if !*asJSON {
						mu.Lock()
						output.BenchProgress(e.stderr, h.Name, done, total)
						mu.Unlock()
					}
				})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				// The host's answer may be in it: sanitised before it is printed.
				output.Bench(e.stdout, h.Name, nil, sanitize.String(err.Error()), *asJSON)
				code = max(code, exitFailed)
				return
			}
			output.Bench(e.stdout, h.Name, &res, "", *asJSON)
			if res.Errors > 0 || res.Interrupted {
				code = max(code, exitFailed)
			}
		}()
	}
	wg.Wait()
	if *asJSON {
		word := map[int]string{exitServing: "done", exitFailed: "failed", exitBenchRefused: "refused"}[code]
		output.Summary(e.stdout, "bench", word, code, nil, "")
	}
	return code
}
