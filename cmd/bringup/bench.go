package main

import (
	"context"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/action"
	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/drive"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/bench"
)

// exitBenchRefused is bench's exit code when a host was refused (not
// serving).
const exitBenchRefused = drive.ExitBenchRefused

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
	benched, closeKeys, err := sf.openFleet(ctx, e, &ff, *demo, fs.Args())
	if err != nil {
		return e.interruptedOr(ctx, "bench", "%v", err)
	}
	defer closeKeys()
	var names []string // --demo: the hosts named, all when none
	if *demo {
		if names, err = action.SimHosts(benched.Hosts(), fs.Args(), fs.NArg() == 0); err != nil {
			return e.fail("bench", "%v", err)
		}
	}
	wait := *timeout
	if *demo && !fs.Changed("timeout") {
		wait = demoBenchWait
	}
	return drive.Bench{Fleet: benched, Demo: *demo, Hosts: names, Wait: wait, JSON: *asJSON, Terminal: cli.IsTerminal(e.stderr),
		Load: remote.Action{Kind: remote.ActBench, Requests: *n, Concurrency: *c, MaxTokens: *maxTokens}}.Run(ctx, drive.Streams{Out: e.stdout, Err: e.stderr})
}
