package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/action"
	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/drive"
	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/rollout"
)

const rolloutUsage = `bringup rollout [--mode KERNEL=MODE] [--redeploy KERNEL] [--batch N] [--yes] [--force]
                [--rollback-on-failure] [--timeout D] [--throughput-wait D] [--json]
                [-H hosts | --config F] [HOST|GROUP...]
       bringup rollout --demo [--speed N] [--scenario S] [flags] [HOST...]

Sets the mode and/or redeploys, then restarts, host by host (or --batch N at
a time), waiting for each to serve before the next; halts on the first
failure with its diagnosis and offers to roll that host back to its previous
mode. Exit codes: 0 every host serving, 1 halted on a failure (rolled back
or not), 2 timeout, 3 usage or refused (nothing changed), 4 aborted.

The summary compares each host's decode rate after the rollout (the new
run's steady rate, from the engine's own stats lines) with before (its
previous run in the history): "decode 1920 tok/s with kdtree-verify=on vs
410 tok/s with off (4.68×)". A rate is steady after a few stats lines,
which an idle engine does not print: --throughput-wait D waits up to D
(host time) after the last host serves for the rates still missing.

` + output.RolloutJSONHelp + `
Prompts and messages go to stderr; a usage error prints no summary.`

// rolloutCmd is `bringup rollout`; in is where answers to prompts come
// from (nil: nobody to ask).
func rolloutCmd(ctx context.Context, e env, args []string, in io.Reader) int {
	fs := cli.NewFlags(e.stdout, e.stderr, "rollout", rolloutUsage)
	var s simFlags
	s.register(fs)
	var ff fleetFlags
	ff.register(fs)
	var o drive.RolloutOptions
	demo := fs.Bool("demo", false, "roll out over the simulated fleet (no hosts needed)")
	fs.StringVar(&o.Mode, "mode", "", "set this kernel mode (`KERNEL=MODE`) before each restart")
	fs.StringVar(&o.Redeploy, "redeploy", "", "redeploy this `KERNEL`'s local build before each restart")
	fs.IntVar(&o.Batch, "batch", 1, "`N` hosts restarted at once")
	fs.BoolVarP(&o.Yes, "yes", "y", false, "do not ask for confirmation")
	fs.BoolVar(&o.Force, "force", false, "restart even where the capture-safety preflight refuses (needs --yes)")
	fs.BoolVar(&o.SkipCheck, "skip-check", false, "run no capture check on the hosts before the restarts (recorded, and said)")
	fs.BoolVar(&o.RollbackOnFailure, "rollback-on-failure", false, "roll the failed host back to its previous mode without asking")
	fs.BoolVar(&o.JSON, "json", false, "print one JSON object per step and host transition, then a summary (see above)")
	fs.DurationVar(&o.Timeout, "timeout", 20*time.Minute, "how long (`D`) each host may take to serve before the rollout halts (exit 2)")
	fs.DurationVar(&o.Settle, "settle", 30*time.Second, "how long (`D`) to wait for every host's unit state before starting")
	fs.DurationVar(&o.ThroughputWait, "throughput-wait", 0, "after the rollout, wait up to `D` (host time) for each new run's steady decode rate")
	if code, stop := cli.ParseArgs(fs, args); stop {
		return code
	}
	fail := func(format string, a ...any) int { return e.fail("rollout", format, a...) }
	if o.Force && !o.Yes {
		return fail("--force overrides the preflight only with --yes")
	}
	if o.Mode == "" && o.Redeploy == "" {
		fmt.Fprintln(e.stderr, "bringup rollout: no --mode or --redeploy: a rolling restart")
	}
	t, err := openActFleet(ctx, e, action.Command{Name: "rollout"}, &ff, s, *demo, fs.NArg() == 0, fs.Args())
	if err != nil {
		return fail("%v", err)
	}
	defer t.close()
	fleet, hosts, now := t.fleet, t.hosts, t.now
	if fleet.ReadOnly() {
		return fail("%v", remote.ErrReadOnly)
	}
	plan := rollout.Plan{Hosts: hosts, Batch: o.Batch, Redeploy: o.Redeploy, Force: o.Force, Timeout: o.Timeout, Now: now}
	if o.Mode != "" {
		k, m, err := fleet.Kernels().ParseAssignment(o.Mode)
		if err != nil {
			return fail("--mode %v", err)
		}
		plan.Mode = &rollout.ModeChange{Kernel: k.Name, Mode: m.Name}
	}
	if o.Batch < 1 {
		return fail("--batch %d: must be at least 1", o.Batch)
	}
	if _, err := rollout.New(plan, fleet.Kernels()); err != nil {
		return fail("%v", err)
	}

	o.Deployments = ff.cfg.DeclaredDeployments()
	fl, stop := drive.Follow(ctx, e.stderr, "rollout", fleet)
	defer stop()
	return drive.Rollout(ctx, drive.Streams{Out: e.stdout, Err: e.stderr, In: in}, fl, plan, o)
}
