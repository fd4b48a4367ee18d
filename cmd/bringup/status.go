package main

import (
	"context"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/drive"
	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote"
)

func runStatus(ctx context.Context, e env, args []string) int {
	fs := cli.NewFlags(e.stdout, e.stderr, "status", "bringup status [--json] [--timeout D] [-H hosts | --config F] [HOST|GROUP...]")
	var ff fleetFlags
	ff.register(fs)
	asJSON := fs.Bool("json", false, "print a v1 JSON line per host, then a summary line")
	timeout := fs.Duration("timeout", 15*time.Second, "how long (`D`) to wait for every host to answer")
	if code, stop := cli.ParseArgs(fs, args); stop {
		return code
	}
	ff.ReadOnly = true
	fleet, closeKeys, err := openLiveFleet(ctx, e, &ff, fs.Args(), nil)
	if err != nil {
		return e.interruptedOr(ctx, "status", "%v", err)
	}
	defer closeKeys()
	fl, stop := drive.Follow(ctx, e.stderr, "status", fleet)
	hosts := fl.Snapshot(ctx, *timeout)
	stop()
	code, word := drive.Outcome(hosts), "serving"
	switch {
	case cli.WasInterrupted(ctx):
		code, word = exitInterrupted, "interrupted"
	case !remote.AllSettled(hosts):
		code, word = exitTimeout, "timeout"
	case code == exitFailed:
		word = "failed"
	}
	if *asJSON {
		output.StatusJSON(e.stdout, hosts, ff.cfg.DeclaredDeployments(), word, code)
	} else {
		output.StatusTable(e.stdout, hosts)
	}
	return code
}
