package drive

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/deployment"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/rollout"
)

// RolloutOptions are the flags of `bringup rollout` beyond the fleet's.
type RolloutOptions struct {
	Mode, Redeploy    string
	Batch             int
	Yes, Force        bool
	SkipCheck         bool // no capture check before the restarts (recorded)
	RollbackOnFailure bool
	JSON              bool // one JSON object a line on Out; text to Err
	Timeout           time.Duration
	Settle            time.Duration // how long to wait for every host's unit state
	ThroughputWait    time.Duration // how long to wait for the new runs' steady decode rates
	// Deployments are the config's; with the units' command lines they
	// say which hosts are one deployment, rolled out as one step.
	Deployments []deployment.Declared
}

// Rollout runs the rollout over the running fleet and returns the exit
// code. With JSON, its progress is JSON on s.Out and the text for people
// (the plan, prompts, the outcome) goes to s.Err.
func Rollout(ctx context.Context, s Streams, fl *fleet.Follower, plan rollout.Plan, o RolloutOptions) int {
	theFleet := fl.Fleet()
	rep := output.NewRollout(s.Out, o.JSON, plan.Now)
	if o.JSON {
		s.Out = s.Err
	}
	// Hosts mid-startup are not waited for: the rollout's restart
	// preempts their startup.
	states, err := fl.AwaitUnits(ctx, plan.Hosts, o.Settle)
	if err != nil {
		fmt.Fprintf(s.Err, "bringup rollout: %v\n", err)
		code := cli.ExitTimeout
		if ctx.Err() != nil {
			code = cli.ExitAborted
		}
		return rep.Summary(plan, nil, rollout.State{Err: err.Error()}, "not-started", code)
	}
	snap := InOrder(plan.Hosts, states)
	plan.Deployments = deployment.FromStates(o.Deployments, snap)
	plan.Before, plan.SlowerBy = previousRates(theFleet, snap), theFleet.SlowerBy()
	fmt.Fprintf(s.Out, "will %s\n", plan)
	refused := func(why string) int {
		return rep.Summary(plan, nil, rollout.State{Err: why}, "refused", cli.ExitUsage)
	}
	ev := s.captureChecks(ctx, "rollout", s.Out, theFleet, snap, plan.Changes(), o.SkipCheck)
	forced, ok, why := s.preflight("rollout", s.Out, snap, theFleet.Kernels(), plan.Changes(), ev, o.Force)
	if !ok {
		return refused(why)
	}
	plan.SkipCheck = o.SkipCheck
	plan.Force = plan.Force || forced // the person confirmed: the rollout's restarts override the preflight
	r, err := rollout.New(plan, theFleet.Kernels())
	if err != nil { // a node of a deployment not named (the units say so only now)
		fmt.Fprintf(s.Err, "bringup rollout: %v\n", err)
		return refused(err.Error())
	}
	plan = r.Plan()
	if ok, why := s.proceed("rollout", o.Yes, "Proceed? [y/N] "); !ok {
		return refused(why)
	}

	d := rollout.NewDriver(r)
	hooks := rollout.Hooks{
		Issued: func(res []rollout.Issued) {
			for _, is := range res {
				rep.Step(is.Step, is.ID, is.Err)
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
				string(rollout.Aborted), cli.ExitAborted)
		case err != nil:
			r.Abort()
			rep.Lanes(r.Lanes())
			fmt.Fprintln(s.Out, "aborted: hosts not reached are untouched; actions under way may still finish")
			return rep.Summary(plan, r.Lanes(), r.State(), string(rollout.Aborted), cli.ExitAborted)
		}
		st := r.State()
		if st.Status != rollout.Halted || offered {
			code := s.rolloutExit(r)
			if err := awaitRates(ctx, fl, d, plan.Now, o.ThroughputWait, func() { rep.Lanes(r.Lanes()) }); err != nil {
				fmt.Fprintf(s.Out, "waiting for the decode rates: %v\n", err)
			}
			return rep.Summary(plan, r.Lanes(), st, string(st.Status), code)
		}
		offered = true
		rep.Halt(st, r.Lanes())
		steps = s.offerRollback(rep, d, st.Host, o)
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
func (s Streams) offerRollback(rep *output.Rollout, d *rollout.Driver, host string, o RolloutOptions) []rollout.Step {
	to := d.Rollout().RollbackTo(host)
	if to == nil {
		return nil // nothing to put back
	}
	target := to.String()
	yes := o.RollbackOnFailure
	if !yes && s.In == nil {
		fmt.Fprintf(s.Out, "%s not rolled back (no terminal to ask on; pass --rollback-on-failure)\n", host)
		rep.Rollback(host, target, "not-asked", nil)
		return nil
	}
	if !yes && !confirm(s.In, s.Out, fmt.Sprintf("Roll back %s to %s? [y/N] ", host, target)) {
		fmt.Fprintf(s.Out, "%s not rolled back\n", host)
		rep.Rollback(host, target, "declined", nil)
		return nil
	}
	steps, err := d.Rollback(host)
	if err != nil {
		fmt.Fprintf(s.Out, "%v\n", err)
		rep.Rollback(host, target, "failed", err)
		return nil
	}
	fmt.Fprintf(s.Out, "rolling back %s to %s\n", host, target)
	rep.Rollback(host, target, "started", nil)
	return steps
}

// rolloutExit prints the outcome and returns the exit code.
func (s Streams) rolloutExit(r *rollout.Rollout) int {
	st := r.State()
	output.RolloutOutcome(s.Out, st, r.Lanes())
	switch {
	case st.Status == rollout.Done:
		return cli.ExitOK
	case st.Status == rollout.Aborted:
		return cli.ExitAborted
	case st.TimedOut:
		return cli.ExitTimeout
	}
	return cli.ExitFailed
}
