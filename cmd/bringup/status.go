package main

import (
	"context"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote"
)

func runStatus(ctx context.Context, e env, args []string) int {
	fs := cli.NewFlags(e.stdout, e.stderr, "status", "bringup status [--json] [--timeout D] [-H hosts | --config F] [HOST|GROUP...]")
	var ff fleetFlags
	ff.register(fs)
	asJSON := fs.Bool("json", false, "print one JSON document")
	timeout := fs.Duration("timeout", 15*time.Second, "how long (`D`) to wait for every host to answer")
	if code, stop := cli.ParseArgs(fs, args); stop {
		return code
	}
	ff.ReadOnly = true
	fleet, closeKeys, err := openLiveFleet(ctx, e, &ff, fs.Args(), nil)
	if err != nil {
		return e.fail("status", "%v", err)
	}
	defer closeKeys()
	fl, stop := follow(ctx, e, "status", fleet)
	hosts := fl.Snapshot(ctx, *timeout)
	stop()
	if *asJSON {
		output.StatusJSON(e.stdout, hosts)
	} else {
		output.StatusTable(e.stdout, hosts)
	}
	if cli.WasInterrupted(ctx) {
		return exitInterrupted
	}
	if !remote.AllSettled(hosts) {
		return exitTimeout
	}
	return outcome(hosts)
}
