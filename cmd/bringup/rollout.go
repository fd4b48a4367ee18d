package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"bringup/remote"
	"bringup/remote/event"
	"bringup/remote/rollout"
	"bringup/remote/startup"
)

// exitAborted is `bringup rollout`'s exit code when the person stopped it
// (ctrl-c); the other codes are watch's.
const exitAborted = 4

const rolloutUsage = `bringup rollout [--mode KERNEL=MODE] [--redeploy KERNEL] [--batch N] [--yes] [--force]
                [--rollback-on-failure] [--timeout D] [--json] [-H hosts | --config F] [HOST|GROUP...]
       bringup rollout --demo [--speed N] [--scenario S] [flags] [HOST...]

Sets the mode and/or redeploys, then restarts, host by host (or --batch N at
a time), waiting for each to serve before the next; halts on the first
failure with its diagnosis and offers to roll that host back to its previous
mode. Exit codes: 0 every host serving, 1 halted on a failure (rolled back
or not), 2 timeout, 3 usage or refused (nothing changed), 4 aborted.

--json prints one JSON object a line on stdout, with "time" (host time),
"seen" (local time), "host", "kind" and "phase" as in bringup watch --json:
  kind "step"     an action of the rollout: "action", "id", "outcome"
                  issued, refused, done or failed (with "err")
  kind "stage"    a host's lane changed: "stage" (pending, applying,
                  restarting, starting, serving, failed, untouched, halted,
                  rolling-back, rolled-back, rollback-failed), "action",
                  "elapsed" since the rollout reached the host, "outcome"
                  once the stage is final, "err"
  kind "failed"   the failure the rollout halted on, in watch's format:
                  "cause", "summary", "hint", "evidence", "failed_in", "fix"
  kind "halted"   a halt without a diagnosis: "err", "timed_out"
  kind "rollback" "outcome" started, declined, not-asked or failed, "to"
                  the mode it puts back
  kind "summary"  the last line: "status" (done, halted, aborted, refused,
                  not-started), "exit", "plan", "host", "cause" and "err" of
                  a halt, and "hosts" with each host's "stage"
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
	fs.BoolVar(&o.json, "json", false, "print one JSON object per step and host transition, then a summary (see above)")
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
		f, clock, err := s.simFleet(ff.readOnly, nil)
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
		f, closeKeys, err := openLiveFleet(ctx, e, &ff, fs.Args(), nil)
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

	fl, stop := follow(ctx, e, "rollout", fleet)
	defer stop()
	return rollOut(ctx, e, fl, plan, o, in)
}

// rollOut runs the rollout over the running fleet and returns the exit code.
// With --json, its progress is JSON on stdout and the text for people
// (the plan, prompts, the outcome) goes to stderr.
func rollOut(ctx context.Context, e env, fl *remote.Follower, plan rollout.Plan, o rolloutOptions, in io.Reader) int {
	fleet := fl.Fleet()
	rep := &rolloutReport{w: e.stdout, json: o.json, now: plan.Now, printed: map[string]string{}}
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
		return rep.summary(plan, nil, rollout.State{Err: err.Error()}, "not-started", code)
	}
	snap := inOrder(plan.Hosts, states)
	fmt.Fprintf(e.stdout, "will %s\n", plan)
	refused := func(why string) int {
		return rep.summary(plan, nil, rollout.State{Err: why}, "refused", exitUsage)
	}
	if pre := remote.PreflightAll(snap, fleet.Kernels(), plan.Changes()); len(pre) > 0 {
		explainPreflight(e.stdout, pre, len(plan.Hosts))
		if !overridePreflight(e, "rollout", o.force, in, len(plan.Hosts)) {
			return refused("refused by the capture-safety preflight on " + pre[0].Host)
		}
		plan.Force = true // the person confirmed: the rollout's restarts override the preflight
	}
	r, err := rollout.New(plan, fleet.Kernels())
	if err != nil { // checked before the fleet started; cannot change since
		fmt.Fprintf(e.stderr, "bringup rollout: %v\n", err)
		return refused(err.Error())
	}
	plan = r.Plan()
	if !o.yes {
		if in == nil {
			fmt.Fprintln(e.stderr, "bringup rollout: refused: no terminal to confirm on, and no --yes; nothing changed")
			return refused("no terminal to confirm on, and no --yes")
		}
		if !confirm(in, e.stdout, "Proceed? [y/N] ") {
			fmt.Fprintln(e.stdout, "Not confirmed: nothing changed.")
			return refused("not confirmed")
		}
	}

	d := rollout.NewDriver(r)
	hooks := rollout.Hooks{
		Issued: func(res []rollout.Issued) {
			for _, s := range res {
				rep.step(s.Step, s.ID, s.Err)
			}
		},
		Batch: func(b remote.Batch) { rep.actions(b.Events, d.Ours) },
		Step:  func() { rep.lanes(r.Lanes()) },
	}
	steps := d.Start(snap)
	offered := false
	for {
		err := d.Run(ctx, fl, steps, hooks)
		switch {
		case errors.Is(err, remote.ErrFleetStopped):
			r.Abort()
			return rep.summary(plan, r.Lanes(), rollout.State{Status: rollout.Aborted, Err: "the fleet stopped"},
				string(rollout.Aborted), exitAborted)
		case err != nil:
			r.Abort()
			rep.lanes(r.Lanes())
			fmt.Fprintln(e.stdout, "aborted: hosts not reached are untouched; actions under way may still finish")
			return rep.summary(plan, r.Lanes(), r.State(), string(rollout.Aborted), exitAborted)
		}
		st := r.State()
		if st.Status != rollout.Halted || offered {
			return rep.summary(plan, r.Lanes(), st, string(st.Status), rolloutExit(e, r))
		}
		offered = true
		rep.halt(st, r.Lanes())
		steps = offerRollback(e, rep, d, st.Host, o, in)
	}
}

// offerRollback rolls the failed host back when --rollback-on-failure says
// so or the person answers yes, and returns the steps to issue.
func offerRollback(e env, rep *rolloutReport, d *rollout.Driver, host string, o rolloutOptions, in io.Reader) []rollout.Step {
	r := d.Rollout()
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
		rep.rollback(host, target, "not-asked", nil)
		return nil
	}
	if !yes && !confirm(in, e.stdout, fmt.Sprintf("Roll back %s to %s? [y/N] ", host, target)) {
		fmt.Fprintf(e.stdout, "%s not rolled back\n", host)
		rep.rollback(host, target, "declined", nil)
		return nil
	}
	steps, err := d.Rollback(host)
	if err != nil {
		fmt.Fprintf(e.stdout, "%v\n", err)
		rep.rollback(host, target, "failed", err)
		return nil
	}
	fmt.Fprintf(e.stdout, "rolling back %s to %s\n", host, target)
	rep.rollback(host, target, "started", nil)
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

// rolloutReport prints the rollout's progress: lines of text, or with
// --json one JSON object a line (see rolloutUsage), its failure in watch's
// format.
type rolloutReport struct {
	w    io.Writer
	json bool
	now  func() time.Time // host time
	// printed is, per host, the lane as last printed: a lane is printed
	// again only when its stage, phase, action or error changed.
	printed map[string]string
	// issued are the step lines of the steps just issued, printed after
	// the lanes whose change made the rollout issue them.
	issued []rolloutLine
}

// rolloutLine is one line of `bringup rollout --json`: watch's line
// (time, seen, host, kind, phase, elapsed) with the rollout's step, stage
// or rollback.
type rolloutLine struct {
	watchLine
	Stage    string `json:"stage,omitempty"`
	Action   string `json:"action,omitempty"`
	ID       int    `json:"id,omitempty"`
	Outcome  string `json:"outcome,omitempty"`
	Err      string `json:"err,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
	To       string `json:"to,omitempty"` // the mode a rollback puts back
}

// rolloutSummary is the last line of `bringup rollout --json`.
type rolloutSummary struct {
	Time     string            `json:"time"`
	Seen     string            `json:"seen"`
	Kind     string            `json:"kind"`   // summary
	Status   string            `json:"status"` // done, halted, aborted, refused, not-started
	Exit     int               `json:"exit"`
	Plan     string            `json:"plan"`
	Host     string            `json:"host,omitempty"`  // the host it halted on
	Cause    string            `json:"cause,omitempty"` // the halt's diagnosis
	Err      string            `json:"err,omitempty"`
	TimedOut bool              `json:"timed_out,omitempty"`
	Hosts    []rolloutHostLine `json:"hosts"`
}

// rolloutHostLine is one host in the summary.
type rolloutHostLine struct {
	Host     string `json:"host"`
	Stage    string `json:"stage"`
	Phase    string `json:"phase,omitempty"`
	PrevMode string `json:"prev_mode,omitempty"`
	Cause    string `json:"cause,omitempty"`
	Err      string `json:"err,omitempty"`
}

// line starts a JSON line about host at host time t.
func (p *rolloutReport) line(t time.Time, host, kind string, phase startup.Phase) rolloutLine {
	return rolloutLine{watchLine: watchLine{Time: t.Format(timeLayout), Seen: time.Now().Format(timeLayout),
		Host: host, Kind: kind, Phase: string(phase)}}
}

// emit prints v as one JSON line.
func (p *rolloutReport) emit(v any) {
	b, err := json.Marshal(v)
	if err != nil { // cannot happen for these types; say so rather than drop the line
		b, _ = json.Marshal(map[string]string{"kind": "error", "err": err.Error()})
	}
	fmt.Fprintf(p.w, "%s\n", b)
}

// step reports an action the rollout issued, with the next lanes (JSON
// only: the lane's line says it in text).
func (p *rolloutReport) step(s rollout.Step, id int, err error) {
	if !p.json {
		return
	}
	l := p.line(p.now(), s.Host, "step", "")
	l.Action, l.ID, l.Outcome = s.Action.String(), id, "issued"
	if err != nil {
		l.Outcome, l.Err = "refused", err.Error()
	}
	p.issued = append(p.issued, l)
}

// actions reports how the rollout's actions among evs ended (JSON only).
func (p *rolloutReport) actions(evs []event.Event, ours func(id int) bool) {
	if !p.json {
		return
	}
	for _, ev := range evs {
		a := ev.Action
		if ev.Kind != event.KindAction || a == nil || !ours(a.ID) || (a.Stage != event.ActionDone && a.Stage != event.ActionFailed) {
			continue
		}
		l := p.line(ev.Time, ev.Host, "step", "")
		l.Seen = ev.Seen.Format(timeLayout)
		l.Action, l.ID, l.Outcome, l.Err = a.Name, a.ID, string(a.Stage), a.Err
		p.emit(l)
	}
}

// lanes prints each lane whose stage, phase, action or error changed
// since the last call, then the steps issued since.
func (p *rolloutReport) lanes(lanes []rollout.Lane) {
	defer func() {
		for _, l := range p.issued {
			p.emit(l)
		}
		p.issued = nil
	}()
	now := p.now()
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
		if p.printed[l.Host] == text {
			continue
		}
		p.printed[l.Host] = text
		var elapsed time.Duration
		if !l.Since.IsZero() {
			end := l.Until
			if end.IsZero() {
				end = now
			}
			elapsed = end.Sub(l.Since).Round(time.Second)
			text += fmt.Sprintf(" at +%s", elapsed)
		}
		if !p.json {
			fmt.Fprintf(p.w, "%s %-8s %s\n", now.Format(timeLayout), l.Host, text)
			continue
		}
		j := p.line(now, l.Host, "stage", l.Phase)
		j.Stage, j.Action, j.Err = string(l.Stage), l.Action, l.Err
		if !l.Since.IsZero() {
			j.Elapsed = elapsed.String()
		}
		if l.Stage.Final() {
			j.Outcome = string(l.Stage)
		}
		p.emit(j)
	}
}

// halt prints why the rollout halted, in watch's failure format.
func (p *rolloutReport) halt(st rollout.State, lanes []rollout.Lane) {
	now := p.now()
	if st.Diag == nil {
		if p.json {
			l := p.line(now, st.Host, "halted", startup.Failed)
			l.Err, l.TimedOut = st.Err, st.TimedOut
			p.emit(l)
			return
		}
		fmt.Fprintf(p.w, "%s %-8s HALTED: %s\n", now.Format(timeLayout), st.Host, st.Err)
		return
	}
	var started time.Time
	for _, l := range lanes {
		if l.Host == st.Host && len(l.Phases) > 0 {
			started = l.Phases[0].Start
		}
	}
	c := remote.HostChange{Host: st.Host, Seen: time.Now(),
		Change: startup.Change{Kind: startup.ChangeFail, Time: st.Diag.Time, Phase: startup.Failed, Diag: st.Diag}}
	if c.Time.IsZero() {
		c.Time = now
	}
	printChange(p.w, c, started, p.json)
}

// rollback reports what became of the rollback offered for host (JSON
// only: the text is printed where it is decided).
func (p *rolloutReport) rollback(host, to, outcome string, err error) {
	if !p.json {
		return
	}
	l := p.line(p.now(), host, "rollback", "")
	l.To, l.Outcome = to, outcome
	if err != nil {
		l.Err = err.Error()
	}
	p.emit(l)
}

// summary prints the summary line (JSON only) and returns code. lanes is
// nil when the rollout did not start: every host is untouched.
func (p *rolloutReport) summary(plan rollout.Plan, lanes []rollout.Lane, st rollout.State, status string, code int) int {
	if !p.json {
		return code
	}
	s := rolloutSummary{Time: p.now().Format(timeLayout), Seen: time.Now().Format(timeLayout), Kind: "summary",
		Status: status, Exit: code, Plan: plan.String(), Host: st.Host, Err: st.Err, TimedOut: st.TimedOut,
		Hosts: []rolloutHostLine{}}
	if lanes == nil {
		for _, h := range plan.Hosts {
			s.Hosts = append(s.Hosts, rolloutHostLine{Host: h, Stage: string(rollout.StageUntouched)})
		}
	}
	for _, l := range lanes {
		h := rolloutHostLine{Host: l.Host, Stage: string(l.Stage), Phase: string(l.Phase), PrevMode: l.PrevMode, Err: l.Err}
		if l.Diag != nil {
			h.Cause = l.Diag.Cause
		}
		s.Hosts = append(s.Hosts, h)
	}
	if st.Diag != nil {
		s.Cause = st.Diag.Cause
		if s.Err == "" {
			s.Err = st.Diag.Summary
		}
	}
	p.emit(s)
	return code
}
