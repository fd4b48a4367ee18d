package main

import (
	"context"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/drive"
	"github.com/bringup-dev/bringup/cmd/bringup/output"
)

func runStatus(ctx context.Context, e env, args []string) int {
	fs := cli.NewFlags(e.stdout, e.stderr, "status", "bringup status [--json] [--timeout D] [-H hosts | --config F] [HOST|GROUP...]\n       bringup status --demo [--json] [--speed N] [--scenario S]")
	var ff fleetFlags
	ff.register(fs)
	var s simFlags
	s.register(fs)
	demo := fs.Bool("demo", false, "look at the simulated fleet (no hosts needed)")
	asJSON := fs.Bool("json", false, "print a v1 JSON line per host, then a summary line")
	timeout := fs.Duration("timeout", 15*time.Second, "how long (`D`) to wait for every host to answer")
	if code, stop := cli.ParseArgs(fs, args); stop {
		return code
	} else if *demo && fs.NArg() > 0 {
		return fs.Usagef("--demo takes no host names (got %q)", fs.Arg(0))
	}
	ff.ReadOnly = true
	fleet, closeKeys, err := s.openFleet(ctx, e, &ff, *demo, fs.Args())
	if err != nil {
		return e.interruptedOr(ctx, "status", "%v", err)
	}
	defer closeKeys()
	fl, stop := drive.Follow(ctx, e.stderr, "status", fleet)
	hosts := fl.Snapshot(ctx, *timeout)
	stop()
	code, word := drive.StatusOutcome(hosts, cli.WasInterrupted(ctx))
	if *asJSON {
		output.StatusJSON(e.stdout, hosts, ff.cfg.DeclaredDeployments(), word, code)
	} else {
		output.StatusTable(e.stdout, hosts)
	}
	return code
}
