package drive

import (
	"context"
	"fmt"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/deployment"
	"github.com/bringup-dev/bringup/remote/fleet"
)

// answerTimeout bounds the wait for every named host's unit state.
const answerTimeout = 30 * time.Second

// Act is a changing command over its open fleet: what it asks for, on
// which hosts, and the flags that say how.
type Act struct {
	Name    string // the command, for its messages
	Fleet   *fleet.Fleet
	Hosts   []string        // the named hosts, in order
	Actions []remote.Action // for each host, the restart last when it restarts
	Restart bool            // the actions restart the unit: the preflight first
	Force   bool            // restart even where the preflight refuses
	// SkipCheck runs no capture check before the restart; the restart's
	// audit line and the output say so.
	SkipCheck bool
	Yes       bool // do not ask
	JSON      bool // JSON lines on s.Out; text for people on s.Err
	Timeout   time.Duration
	// Deployments are the config's; the units' command lines add theirs.
	// A deployment is acted on as a whole (deployment.Steps).
	Deployments []deployment.Declared
}

// Run says exactly what will change, asks (unless Yes), goes through
// Fleet.Do (the one door, which refuses everything in read-only mode)
// and, for restarts, follows the new invocation until it serves or
// fails; it returns the exit code. With JSON, every outcome ends in a
// summary.
func (a Act) Run(ctx context.Context, s Streams) int {
	out := s.Out // where the JSON goes
	if a.JSON {
		s.Out = s.Err
	}
	refused := func(why string) int {
		if a.JSON {
			output.Summary(out, a.Name, "refused", cli.ExitUsage, nil, why)
		}
		return cli.ExitUsage
	}
	if a.Fleet.ReadOnly() {
		// Ask the fleet itself: its door is what makes every change
		// impossible, and its refusal is what the person sees.
		for _, h := range a.Hosts {
			for _, act := range a.Actions {
				if _, err := a.Fleet.Do(h, act); err != nil {
					fmt.Fprintf(s.Err, "bringup %s: refused: %v\n", a.Name, err)
				} else {
					fmt.Fprintf(s.Err, "bringup %s: BUG: %s on %s accepted in read-only mode\n", a.Name, act, h)
				}
			}
		}
		return refused(remote.ErrReadOnly.Error())
	}

	ctx, cancel := context.WithTimeout(ctx, a.Timeout)
	defer cancel()
	fl, stop := Follow(ctx, s.Err, a.Name, a.Fleet)
	defer stop()
	states, err := fl.AwaitUnits(ctx, a.Hosts, min(answerTimeout, a.Timeout))
	if err != nil {
		fmt.Fprintf(s.Err, "bringup %s: %v\n", a.Name, err)
		if cli.WasInterrupted(ctx) {
			if a.JSON {
				output.Summary(out, a.Name, "interrupted", cli.ExitInterrupted, nil, err.Error())
			}
			return cli.ExitInterrupted
		}
		return refused(err.Error())
	}
	actions := a.Actions
	if a.Restart {
		hs := InOrder(a.Hosts, states)
		ev := s.captureChecks(ctx, a.Name, s.Err, a.Fleet, hs, actions, a.SkipCheck)
		force, ok, why := s.preflight(a.Name, s.Err, hs, a.Fleet.Kernels(), actions, ev, a.Force)
		if !ok {
			return refused(why)
		}
		for i := range actions {
			restart := actions[i].Kind == remote.ActRestart
			actions[i].Force = restart && force
			actions[i].SkipCheck = restart && a.SkipCheck
		}
	}
	steps, err := deployment.Steps(deployment.FromStates(a.Deployments, InOrder(a.Hosts, states)), a.Hosts, actions)
	if err != nil {
		fmt.Fprintf(s.Err, "bringup %s: %v\n", a.Name, err)
		return refused(err.Error())
	}
	output.Plan(s.Out, a.Hosts, states, actions)
	output.StepsPlan(s.Out, steps)
	if a.JSON {
		output.PlanJSON(out, a.Hosts, states, actions)
	}
	if ok, why := s.proceed(a.Name, a.Yes, "Go ahead? [y/N] "); !ok {
		return refused(why)
	}
	var rep fleet.ApplyReport = output.Actions{W: s.Out}
	if a.JSON {
		rep = output.ActionsJSON{W: out}
	}
	done := fl.ApplySteps(ctx, a.Hosts, steps, states, rep)
	var hostsOut []output.HostOutcome
	if a.JSON {
		hostsOut = output.AppliedJSON(out, done, ctx.Err())
	}
	code, outcome := cli.ExitOK, "done"
	switch timedOut, failed := output.Applied(s.Out, done, ctx.Err()); {
	case cli.WasInterrupted(ctx): // ctrl-c, not the timeout
		code, outcome = cli.ExitInterrupted, "interrupted"
	case timedOut:
		code, outcome = cli.ExitTimeout, "timeout"
	case failed:
		code, outcome = cli.ExitFailed, "failed"
	}
	if a.JSON {
		output.Summary(out, a.Name, outcome, code, hostsOut, "")
	}
	return code
}
