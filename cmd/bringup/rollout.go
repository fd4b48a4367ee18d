package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"bringup/remote"
	"bringup/remote/rollout"
	"bringup/remote/startup"
)

// exitAborted is `bringup rollout`'s exit code when the person stopped it
// (ctrl-c); the other codes are watch's.
const exitAborted = 4

const rolloutUsage = `bringup rollout [--mode KERNEL=MODE] [--redeploy KERNEL] [--batch N] [--yes] [--force]
                [--rollback-on-failure] [--timeout D] [-H hosts | --config F] [HOST|GROUP...]
       bringup rollout --demo [--speed N] [--scenario S] [flags] [HOST...]

Sets the mode and/or redeploys, then restarts, host by host (or --batch N at
a time), waiting for each to serve before the next; halts on the first
failure with its diagnosis and offers to roll that host back to its previous
mode. Exit codes: 0 every host serving, 1 halted on a failure (rolled back
or not), 2 timeout, 3 usage or refused (nothing changed), 4 aborted.`

// rolloutOptions are the flags of `bringup rollout` beyond the fleet's.
type rolloutOptions struct {
	mode, redeploy    string
	batch             int
	yes, force        bool
	rollbackOnFailure bool
	timeout           time.Duration
	settle            time.Duration // how long to wait for every host's unit state
}

func runRollout(ctx context.Context, e env, args []string) int {
	return rolloutCmd(ctx, e, args, stdinTerminal())
}

// rolloutCmd is `bringup rollout`; in is where answers to prompts come
// from (nil: nobody to ask).
func rolloutCmd(ctx context.Context, e env, args []string, in io.Reader) int {
	fs := newFlags(e, "rollout", rolloutUsage)
	var s simFlags
	s.register(fs)
	var ff fleetFlags
	ff.register(fs)
	var o rolloutOptions
	demo := fs.Bool("demo", false, "roll out over the simulated fleet (no hosts needed)")
	fs.StringVar(&o.mode, "mode", "", "set this kernel mode (KERNEL=MODE) before each restart")
	fs.StringVar(&o.redeploy, "redeploy", "", "redeploy this kernel's local build before each restart")
	fs.IntVar(&o.batch, "batch", 1, "hosts restarted at once")
	fs.BoolVar(&o.yes, "yes", false, "do not ask for confirmation")
	fs.BoolVar(&o.force, "force", false, "restart even where the capture-safety preflight refuses (needs --yes)")
	fs.BoolVar(&o.rollbackOnFailure, "rollback-on-failure", false, "roll the failed host back to its previous mode without asking")
	fs.DurationVar(&o.timeout, "timeout", 20*time.Minute, "how long each host may take to serve before the rollout halts (exit 2)")
	fs.DurationVar(&o.settle, "settle", 30*time.Second, "how long to wait for every host's unit state before starting")
	if code, stop := parseArgs(fs, args); stop {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "bringup rollout: "+format+"\n", a...)
		return exitUsage
	}
	if o.force && !o.yes {
		return fail("--force overrides the preflight only with --yes")
	}
	if o.mode == "" && o.redeploy == "" {
		fmt.Fprintln(e.stderr, "bringup rollout: no --mode or --redeploy: a rolling restart")
	}
	var (
		fleet *remote.Fleet
		now   = time.Now
		hosts []string
	)
	if *demo {
		f, clock, err := s.simFleet(ff.readOnly)
		if err != nil {
			return fail("%v", err)
		}
		fleet, now, hosts = f, clock.Now, fs.Args()
		for _, h := range hosts {
			if !slices.Contains(f.Hosts(), h) {
				return fail("--demo: unknown host %q (hosts: %s)", h, strings.Join(f.Hosts(), ", "))
			}
		}
		if len(hosts) == 0 {
			hosts = f.Hosts()
		}
	} else {
		f, closeKeys, err := openLiveFleet(ctx, e, &ff, fs.Args())
		if err != nil {
			return fail("%v", err)
		}
		defer closeKeys()
		fleet, hosts = f, f.Hosts()
	}
	if fleet.ReadOnly() {
		return fail("%v", remote.ErrReadOnly)
	}
	plan := rollout.Plan{Hosts: hosts, Batch: o.batch, Redeploy: o.redeploy, Force: o.force, Timeout: o.timeout, Now: now}
	if o.mode != "" {
		k, m, err := fleet.Kernels().ParseAssignment(o.mode)
		if err != nil {
			return fail("--mode %w", err)
		}
		plan.Mode = &rollout.ModeChange{Kernel: k.Name, Mode: m.Name}
	}
	if o.batch < 1 {
		return fail("--batch %d: must be at least 1", o.batch)
	}
	if _, err := rollout.New(plan, fleet.Kernels()); err != nil {
		return fail("%v", err)
	}

	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- fleet.Run(ctx) }()
	code := rollOut(ctx, e, fleet, plan, o, in)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		fmt.Fprintln(e.stderr, "bringup rollout: hosts did not stop within 5 s")
	}
	return code
}

// rollOut runs the rollout over the running fleet and returns the exit code.
func rollOut(ctx context.Context, e env, fleet *remote.Fleet, plan rollout.Plan, o rolloutOptions, in io.Reader) int {
	// Hosts mid-startup are not waited for: the rollout's restart
	// preempts their startup.
	states, err := awaitHosts(ctx, fleet, plan.Hosts, o.settle)
	if err != nil {
		fmt.Fprintf(e.stderr, "bringup rollout: %v\n", err)
		if ctx.Err() != nil {
			return exitAborted
		}
		return exitTimeout
	}
	snap := make([]remote.HostState, 0, len(states))
	for _, h := range plan.Hosts {
		snap = append(snap, states[h])
	}
	fmt.Fprintf(e.stdout, "will %s\n", plan)
	var actions []remote.Action
	if m := plan.Mode; m != nil {
		actions = append(actions, remote.Action{Kind: remote.ActSetMode, Kernel: m.Kernel, Mode: m.Mode})
	}
	if refused := preflightAll(fleet.Kernels(), states, actions); len(refused) > 0 {
		explainPreflight(e.stdout, refused, len(plan.Hosts))
		if !overridePreflight(e, "rollout", o.force, in, len(plan.Hosts)) {
			return exitUsage
		}
		plan.Force = true // the person confirmed: the rollout's restarts override the preflight
	}
	r, err := rollout.New(plan, fleet.Kernels())
	if err != nil { // checked before the fleet started; cannot change since
		fmt.Fprintf(e.stderr, "bringup rollout: %v\n", err)
		return exitUsage
	}
	plan = r.Plan()
	if !o.yes {
		if in == nil {
			fmt.Fprintln(e.stderr, "bringup rollout: refused: no terminal to confirm on, and no --yes; nothing changed")
			return exitUsage
		}
		if !confirm(in, e.stdout, "Proceed? [y/N] ") {
			fmt.Fprintln(e.stdout, "Not confirmed: nothing changed.")
			return exitUsage
		}
	}

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	printed := map[string]string{}
	offered := false
	steps := r.Start(snap)
	for {
		for _, s := range steps {
			id, err := fleet.Do(s.Host, s.Action)
			r.Issued(s, id, err)
		}
		steps = nil
		printLanes(e.stdout, r.Lanes(), printed, plan.Now())
		if r.Settled() {
			st := r.State()
			if st.Status != rollout.Halted || offered {
				return rolloutExit(e, r)
			}
			offered = true
			printHalt(e.stdout, st, r.Lanes(), plan.Now())
			steps = offerRollback(e, r, st.Host, o, in)
			continue
		}
		select {
		case <-ctx.Done():
			r.Abort()
			printLanes(e.stdout, r.Lanes(), printed, plan.Now())
			fmt.Fprintln(e.stdout, "aborted: hosts not reached are untouched; actions under way may still finish")
			return exitAborted
		case <-tick.C:
			steps = r.Observe(remote.Batch{}) // the timeout, while hosts are quiet
		case b, ok := <-fleet.Updates():
			if !ok {
				r.Abort()
				return exitAborted
			}
			steps = r.Observe(b)
		}
	}
}

// offerRollback rolls the failed host back when --rollback-on-failure says
// so or the person answers yes, and returns the steps to issue.
func offerRollback(e env, r *rollout.Rollout, host string, o rolloutOptions, in io.Reader) []rollout.Step {
	var prev string
	for _, l := range r.Lanes() {
		if l.Host == host {
			prev = l.PrevMode
		}
	}
	m := r.Plan().Mode
	if m == nil || prev == "" {
		return nil // nothing to put back
	}
	target := m.Kernel + "=" + prev
	yes := o.rollbackOnFailure
	if !yes && in == nil {
		fmt.Fprintf(e.stdout, "%s not rolled back (no terminal to ask on; pass --rollback-on-failure)\n", host)
		return nil
	}
	if !yes && !confirm(in, e.stdout, fmt.Sprintf("Roll back %s to %s? [y/N] ", host, target)) {
		fmt.Fprintf(e.stdout, "%s not rolled back\n", host)
		return nil
	}
	steps, err := r.Rollback(host)
	if err != nil {
		fmt.Fprintf(e.stdout, "%v\n", err)
		return nil
	}
	fmt.Fprintf(e.stdout, "rolling back %s to %s\n", host, target)
	return steps
}

// rolloutExit prints the outcome and returns the exit code.
func rolloutExit(e env, r *rollout.Rollout) int {
	st := r.State()
	switch st.Status {
	case rollout.Done:
		fmt.Fprintf(e.stdout, "done: %d host(s) serving\n", len(r.Lanes()))
		return exitServing
	case rollout.Aborted:
		return exitAborted
	}
	var untouched []string
	for _, l := range r.Lanes() {
		if l.Stage == rollout.StageUntouched {
			untouched = append(untouched, l.Host)
		}
	}
	if len(untouched) > 0 {
		fmt.Fprintf(e.stdout, "halted on %s; untouched: %s\n", st.Host, strings.Join(untouched, ", "))
	} else {
		fmt.Fprintf(e.stdout, "halted on %s\n", st.Host)
	}
	if st.TimedOut {
		return exitTimeout
	}
	return exitFailed
}

// printLanes prints one line for each lane whose stage, phase or action
// changed since the last call; printed remembers what was printed.
func printLanes(w io.Writer, lanes []rollout.Lane, printed map[string]string, now time.Time) {
	for _, l := range lanes {
		var b strings.Builder
		fmt.Fprintf(&b, "%s", l.Stage)
		if l.Phase != "" && string(l.Phase) != string(l.Stage) {
			fmt.Fprintf(&b, " · %s", l.Phase)
		}
		if l.Action != "" {
			fmt.Fprintf(&b, " (%s)", l.Action)
		}
		if l.Err != "" {
			fmt.Fprintf(&b, ": %s", l.Err)
		}
		text := b.String()
		if printed[l.Host] == text {
			continue
		}
		printed[l.Host] = text
		if !l.Since.IsZero() {
			end := l.Until
			if end.IsZero() {
				end = now
			}
			text += fmt.Sprintf(" at +%s", end.Sub(l.Since).Round(time.Second))
		}
		fmt.Fprintf(w, "%s %-8s %s\n", now.Format(timeLayout), l.Host, text)
	}
}

// printHalt prints why the rollout halted, in watch's failure format.
func printHalt(w io.Writer, st rollout.State, lanes []rollout.Lane, now time.Time) {
	if st.Diag == nil {
		fmt.Fprintf(w, "%s %-8s HALTED: %s\n", now.Format(timeLayout), st.Host, st.Err)
		return
	}
	var started time.Time
	for _, l := range lanes {
		if l.Host == st.Host && len(l.Phases) > 0 {
			started = l.Phases[0].Start
		}
	}
	c := remote.HostChange{Host: st.Host, Seen: now,
		Change: startup.Change{Kind: startup.ChangeFail, Time: st.Diag.Time, Phase: startup.Failed, Diag: st.Diag}}
	if c.Time.IsZero() {
		c.Time = now
	}
	printChange(w, c, started, false)
}
