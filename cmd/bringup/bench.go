package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/bench"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/startup"
)

// exitBenchRefused is bench's exit code when a host was refused (not
// serving): as the changing commands' refusal.
const exitBenchRefused = cli.ExitUsage

// benchUsage is bench's synopsis.
const benchUsage = "bringup bench [-n N] [--concurrency C] [--max-tokens T] [--json] [-H hosts | --config F] [HOST|GROUP...]\n" +
	"       bringup bench --demo [--speed N] [--scenario S] [flags] [HOST...]"

// demoBenchWait is how long bench --demo waits, unless --timeout says
// otherwise, for the simulated hosts to serve: they start cold, and at the
// default speed the seed's hosts serve after about 40 s.
const demoBenchWait = 2 * time.Minute

func runBench(ctx context.Context, e env, args []string) int {
	fs := cli.NewFlags(e.stdout, e.stderr, "bench", benchUsage)
	var ff fleetFlags
	ff.register(fs)
	var sf simFlags
	sf.register(fs)
	demo := fs.Bool("demo", false, "bench the simulated fleet (no hosts needed), once its hosts have served or failed")
	n := fs.IntP("requests", "n", bench.DefaultRequests, "send `N` requests to each host, exactly")
	c := fs.Int("concurrency", bench.DefaultConcurrency, "at most `C` requests at a time")
	maxTokens := fs.Int("max-tokens", bench.DefaultMaxTokens, "max_tokens of each request")
	asJSON := fs.Bool("json", false, "print a v1 JSON line per host, then a summary line")
	timeout := fs.Duration("timeout", 15*time.Second, "how long to wait for every host to answer before the load (--demo: for the hosts to serve or fail, default 2m)")
	if code, stop := cli.ParseArgs(fs, args); stop {
		return code
	}
	if *n <= 0 || *c <= 0 || *maxTokens <= 0 {
		return e.fail("bench", "--requests, --concurrency and --max-tokens must be greater than 0")
	}
	ff.ReadOnly = true // a load changes no host (the fleet's door lets ActBench through)
	var (
		theFleet *fleet.Fleet
		names    []string // --demo: the hosts named, all when none
	)
	if *demo {
		f, _, err := sf.simFleet(true, nil)
		if err != nil {
			return e.fail("bench", "%v", err)
		}
		if names, err = simHosts(f, fs.Args(), fs.NArg() == 0); err != nil {
			return e.fail("bench", "%v", err)
		}
		theFleet = f
	} else {
		f, closeKeys, err := openLiveFleet(ctx, e, &ff, fs.Args(), nil)
		if err != nil {
			return e.fail("bench", "%v", err)
		}
		defer closeKeys()
		theFleet = f
	}
	// The fleet runs past Ctrl-C (ctx), so that the stopped loads still
	// report what they measured; stop ends it.
	fl, stop := follow(context.WithoutCancel(ctx), e, "bench", theFleet)
	defer stop()
	var hosts []remote.HostState
	if *demo {
		// The simulated hosts start cold: the load waits for them to
		// serve (or fail, and be refused with their diagnosis).
		wait := demoBenchWait
		if fs.Changed("timeout") {
			wait = *timeout
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		all, _ := fl.Watch(wctx, func(remote.Batch) {}) // a timeout refuses the hosts not serving by then
		cancel()
		for _, h := range all {
			if slices.Contains(names, h.Name) {
				hosts = append(hosts, h)
			}
		}
	} else {
		hosts = fl.Snapshot(ctx, *timeout)
	}
	code := exitServing
	var serving []string
	for _, h := range hosts {
		refused := ""
		switch d, _ := theFleet.Driver(h.Name); {
		case h.Startup.Phase != startup.Serving && output.ConnWhy(h) != "":
			refused = fmt.Sprintf("not serving (phase %s: %s): a smoke load needs a serving host", h.Startup.Phase, output.ConnWhy(h))
		case h.Startup.Phase != startup.Serving:
			refused = fmt.Sprintf("not serving (phase %s): a smoke load needs a serving host", h.Startup.Phase)
		case !*demo && !isTunnel(d): // a simulated host answers a load itself
			refused = "no tunnel to its service"
		}
		if refused != "" {
			output.Bench(e.stdout, h.Name, nil, refused, *asJSON)
			code = exitBenchRefused
			continue
		}
		serving = append(serving, h.Name)
	}
	// The load runs as an action through the fleet's door, as the
	// console's b: the fleet keeps each complete result in the history
	// with the run's kernel modes.
	a := remote.Action{Kind: remote.ActBench, Requests: *n, Concurrency: *c, MaxTokens: *maxTokens}
	fl.Bench(ctx, serving, a, 10*time.Second, func(host string, done, total int) {
		if !*asJSON {
			output.BenchProgress(e.stderr, host, done, total)
		}
	}, func(o fleet.BenchOutcome) {
		if o.Result == nil {
			output.Bench(e.stdout, o.Host, nil, o.Err, *asJSON)
			code = max(code, exitFailed)
			return
		}
		output.Bench(e.stdout, o.Host, o.Result, "", *asJSON)
		if o.Result.Errors > 0 || o.Result.Interrupted || o.Err != "" {
			code = max(code, exitFailed)
		}
	})
	if *asJSON {
		word := map[int]string{exitServing: "done", exitFailed: "failed", exitBenchRefused: "refused"}[code]
		output.Summary(e.stdout, "bench", word, code, nil, "")
	}
	return code
}

// isTunnel reports whether d reaches the host's service (bench.Tunnel: a
// live host's SSH connection).
func isTunnel(d remote.Driver) bool {
	_, ok := d.(bench.Tunnel)
	return ok
}
