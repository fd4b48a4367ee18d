package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/fleet"
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

// rolloutOptions are the flags of `bringup rollout` beyond the fleet's.
type rolloutOptions struct {
	mode, redeploy    string
	batch             int
	yes, force        bool
	rollbackOnFailure bool
	json              bool // one JSON object a line on stdout; text to stderr
	timeout           time.Duration
	settle            time.Duration // how long to wait for every host's unit state
	tputWait          time.Duration // how long to wait for the new runs' steady decode rates
}

// rolloutCmd is `bringup rollout`; in is where answers to prompts come
// from (nil: nobody to ask).
func rolloutCmd(ctx context.Context, e env, args []string, in io.Reader) int {
	fs := cli.NewFlags(e.stdout, e.stderr, "rollout", rolloutUsage)
	var s simFlags
	s.register(fs)
	var ff fleetFlags
	ff.register(fs)
	var o rolloutOptions
	demo := fs.Bool("demo", false, "roll out over the simulated fleet (no hosts needed)")
	fs.StringVar(&o.mode, "mode", "", "set this kernel mode (`KERNEL=MODE`) before each restart")
	fs.StringVar(&o.redeploy, "redeploy", "", "redeploy this `KERNEL`'s local build before each restart")
	fs.IntVar(&o.batch, "batch", 1, "`N` hosts restarted at once")
	fs.BoolVarP(&o.yes, "yes", "y", false, "do not ask for confirmation")
	fs.BoolVar(&o.force, "force", false, "restart even where the capture-safety preflight refuses (needs --yes)")
	fs.BoolVar(&o.rollbackOnFailure, "rollback-on-failure", false, "roll the failed host back to its previous mode without asking")
	fs.BoolVar(&o.json, "json", false, "print one JSON object per step and host transition, then a summary (see above)")
	fs.DurationVar(&o.timeout, "timeout", 20*time.Minute, "how long (`D`) each host may take to serve before the rollout halts (exit 2)")
	fs.DurationVar(&o.settle, "settle", 30*time.Second, "how long (`D`) to wait for every host's unit state before starting")
	fs.DurationVar(&o.tputWait, "throughput-wait", 0, "after the rollout, wait up to `D` (host time) for each new run's steady decode rate")
	if code, stop := cli.ParseArgs(fs, args); stop {
		return code
	}
	fail := func(format string, a ...any) int { return e.fail("rollout", format, a...) }
	if o.force && !o.yes {
		return fail("--force overrides the preflight only with --yes")
	}
	if o.mode == "" && o.redeploy == "" {
		fmt.Fprintln(e.stderr, "bringup rollout: no --mode or --redeploy: a rolling restart")
	}
	t, err := openActFleet(ctx, e, actionCmd{name: "rollout"}, &ff, s, *demo, fs.NArg() == 0, fs.Args())
	if err != nil {
		return fail("%v", err)
	}
	defer t.close()
	fleet, hosts, now := t.fleet, t.hosts, t.now
	if fleet.ReadOnly() {
		return fail("%v", remote.ErrReadOnly)
	}
	plan := rollout.Plan{Hosts: hosts, Batch: o.batch, Redeploy: o.redeploy, Force: o.force, Timeout: o.timeout, Now: now}
	if o.mode != "" {
		k, m, err := fleet.Kernels().ParseAssignment(o.mode)
		if err != nil {
			return fail("--mode %v", err)
		}
		plan.Mode = &rollout.ModeChange{Kernel: k.Name, Mode: m.Name}
	}
	if o.batch < 1 {
		return fail("--batch %d: must be at least 1", o.batch)
	}
	if _, err := rollout.New(plan, fleet.Kernels()); err != nil {
		return fail("%v", err)
	}

	fl, stop := follow(ctx, e, "rollout", fleet)
	defer stop()
	return rollOut(ctx, e, fl, plan, o, in)
}

// rollOut runs the rollout over the running fleet and returns the exit code.
// With --json, its progress is JSON on stdout and the text for people
// (the plan, prompts, the outcome) goes to stderr.
func rollOut(ctx context.Context, e env, fl *fleet.Follower, plan rollout.Plan, o rolloutOptions, in io.Reader) int {
	f := fl.Fleet()
	rep := output.NewRollout(e.stdout, o.json, plan.Now)
	if o.json {
		e.stdout = e.stderr
	}
	// Hosts mid-startup are not waited for: the rollout's restart
	// preempts their startup.
	states, err := fl.AwaitUnits(ctx, plan.Hosts, o.settle)
	if err != nil {
		fmt.Fprintf(e.stderr, "bringup rollout: %v\n", err)
		code := exitTimeout
		if ctx.Err() != nil {
			code = exitAborted
		}
		return rep.Summary(plan, nil, rollout.State{Err: err.Error()}, "not-started", code)
	}
	snap := inOrder(plan.Hosts, states)
	plan.Before, plan.SlowerBy = previousRates(f, snap), f.SlowerBy()
	fmt.Fprintf(e.stdout, "will %s\n", plan)
	refused := func(why string) int {
		return rep.Summary(plan, nil, rollout.State{Err: why}, "refused", exitUsage)
	}
	forced, ok := passPreflight(e, "rollout", e.stdout, snap, f.Kernels(), plan.Changes(), o.force, in)
	if !ok {
		return refused("refused by the capture-safety preflight")
	}
	plan.Force = plan.Force || forced // the person confirmed: the rollout's restarts override the preflight
	r, err := rollout.New(plan, f.Kernels())
	if err != nil { // checked before the fleet started; cannot change since
		fmt.Fprintf(e.stderr, "bringup rollout: %v\n", err)
		return refused(err.Error())
	}
	plan = r.Plan()
	if ok, why := proceed(e, "rollout", o.yes, in, "Proceed? [y/N] "); !ok {
		return refused(why)
	}

	d := rollout.NewDriver(r)
	hooks := rollout.Hooks{
		Issued: func(res []rollout.Issued) {
			for _, s := range res {
				rep.Step(s.Step, s.ID, s.Err)
			}
		},
		Batch: func(b remote.Batch) { rep.Actions(b.Events, d.Ours) },
		Step:  func() { rep.Lanes(r.Lanes()) },
	}
	steps := d.Start(snap)
	offered := false
	for {
		err := d.Run(ctx, fl, steps, hooks)
		switch {
		case errors.Is(err, fleet.ErrFleetStopped):
			r.Abort()
			return rep.Summary(plan, r.Lanes(), rollout.State{Status: rollout.Aborted, Err: "the fleet stopped"},
				string(rollout.Aborted), exitAborted)
		case err != nil:
			r.Abort()
			rep.Lanes(r.Lanes())
			fmt.Fprintln(e.stdout, "aborted: hosts not reached are untouched; actions under way may still finish")
			return rep.Summary(plan, r.Lanes(), r.State(), string(rollout.Aborted), exitAborted)
		}
		st := r.State()
		if st.Status != rollout.Halted || offered {
			code := rolloutExit(e, r)
			if err := awaitRates(ctx, fl, d, plan.Now, o.tputWait, func() { rep.Lanes(r.Lanes()) }); err != nil {
				fmt.Fprintf(e.stdout, "waiting for the decode rates: %v\n", err)
			}
			return rep.Summary(plan, r.Lanes(), st, string(st.Status), code)
		}
		offered = true
		rep.Halt(st, r.Lanes())
		steps = offerRollback(e, rep, d, st.Host, o, in)
	}
}

// previousRates are the hosts' previous serving runs' decode rates from
// the fleet's history: what the rollout's summary compares with.
func previousRates(f *fleet.Fleet, hosts []remote.HostState) map[string]rollout.Rate {
	out := map[string]rollout.Rate{}
	for _, h := range hosts {
		if rec, ok := f.PreviousRun(h.Name, h.Unit); ok {
			out[h.Name] = rollout.Rate{Modes: rec.Modes, TPS: rec.DecodeTPS}
		}
	}
	return out
}

// awaitRates keeps the settled rollout observing the fleet for up to wait
// (host time, now) until every host it brought to serving has its new
// run's steady decode rate; seen runs after each batch. Nothing to wait
// for, or wait 0, returns at once.
func awaitRates(ctx context.Context, fl *fleet.Follower, d *rollout.Driver, now func() time.Time, wait time.Duration, seen func()) error {
	missing := func() bool {
		for _, l := range d.Rollout().Lanes() {
			if l.Stage == rollout.StageServing && !l.After.Known() {
				return true
			}
		}
		return false
	}
	if wait <= 0 || !missing() {
		return nil
	}
	until := now().Add(wait)
	err := fl.Until(ctx, time.Second, func(b remote.Batch) bool {
		d.Observe(b) // settled: no steps come of it
		seen()
		return !missing() || !now().Before(until)
	})
	if errors.Is(err, fleet.ErrFleetStopped) || ctx.Err() != nil {
		return err
	}
	return nil
}

// offerRollback rolls the failed host back when --rollback-on-failure says
// so or the person answers yes, and returns the steps to issue.
func offerRollback(e env, rep *output.Rollout, d *rollout.Driver, host string, o rolloutOptions, in io.Reader) []rollout.Step {
	to := d.Rollout().RollbackTo(host)
	if to == nil {
		return nil // nothing to put back
	}
	target := to.String()
	yes := o.rollbackOnFailure
	if !yes && in == nil {
		fmt.Fprintf(e.stdout, "%s not rolled back (no terminal to ask on; pass --rollback-on-failure)\n", host)
		rep.Rollback(host, target, "not-asked", nil)
		return nil
	}
	if !yes && !confirm(in, e.stdout, fmt.Sprintf("Roll back %s to %s? [y/N] ", host, target)) {
		fmt.Fprintf(e.stdout, "%s not rolled back\n", host)
		rep.Rollback(host, target, "declined", nil)
		return nil
	}
	steps, err := d.Rollback(host)
	if err != nil {
		fmt.Fprintf(e.stdout, "%v\n", err)
		rep.Rollback(host, target, "failed", err)
		return nil
	}
	fmt.Fprintf(e.stdout, "rolling back %s to %s\n", host, target)
	rep.Rollback(host, target, "started", nil)
	return steps
}

// rolloutExit prints the outcome and returns the exit code.
func rolloutExit(e env, r *rollout.Rollout) int {
	st := r.State()
	output.RolloutOutcome(e.stdout, st, r.Lanes())
	switch {
	case st.Status == rollout.Done:
		return exitServing
	case st.Status == rollout.Aborted:
		return exitAborted
	case st.TimedOut:
		return exitTimeout
	}
	return exitFailed
}
