package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/fleet"
)

// The changing commands: each names its hosts, says exactly what will
// change, asks (unless --yes), goes through Fleet.Do (the one door, which
// refuses everything in read-only mode) and, for restarts, follows the new
// invocation until it serves or fails. They share one flow, act.

// actionCmd describes one changing command.
type actionCmd struct {
	name, args, summary string
	// restartFlag offers --restart (restart after the change).
	restartFlag bool
	// restarts: the command itself is a restart (preflight, --force).
	restarts bool
	// runtimeFlag offers --runtime (a mode's drop-in under /run).
	runtimeFlag bool
	// extra says whether a positional argument is the command's own
	// argument rather than a host or group name; nil: none.
	extra func(cat kernels.Catalog, s string, isHost func(string) bool) bool
	// build turns the command's own arguments into the actions for one
	// host (before the restart that --restart adds).
	build func(cat kernels.Catalog, extra []string, o actOptions) ([]remote.Action, error)
}

// actOptions are the flags that shape the actions.
type actOptions struct {
	restart, runtime, force bool
}

// actionCmds lists the changing commands.
func actionCmds() []actionCmd {
	return []actionCmd{
		{
			name: "mode", args: "HOST|GROUP... KERNEL=MODE [--restart] [--runtime]", restartFlag: true, runtimeFlag: true,
			summary: "set a kernel's mode (systemd drop-in + daemon-reload); --restart restarts and follows the new run",
			extra:   func(_ kernels.Catalog, s string, _ func(string) bool) bool { return strings.Contains(s, "=") },
			build: func(cat kernels.Catalog, extra []string, o actOptions) ([]remote.Action, error) {
				if len(extra) != 1 {
					return nil, fmt.Errorf("want exactly one KERNEL=MODE (got %d)", len(extra))
				}
				k, m, err := cat.ParseAssignment(extra[0])
				if err != nil {
					return nil, err
				}
				return []remote.Action{{Kind: remote.ActSetMode, Kernel: k.Name, Mode: m.Name, Runtime: o.runtime}}, nil
			},
		},
		{
			name: "redeploy", args: "HOST|GROUP... [KERNEL] [--restart]", restartFlag: true,
			summary: "send the kernel's changed files from its local build (default: the first kernel); --restart restarts and follows",
			extra: func(cat kernels.Catalog, s string, isHost func(string) bool) bool {
				_, ok := cat.Kernel(s)
				return ok && !isHost(s)
			},
			build: func(cat kernels.Catalog, extra []string, _ actOptions) ([]remote.Action, error) {
				switch {
				case len(extra) > 1:
					return nil, fmt.Errorf("one kernel at a time (got %s)", strings.Join(extra, ", "))
				case len(extra) == 1:
					return []remote.Action{{Kind: remote.ActRedeploy, Kernel: extra[0]}}, nil
				case len(cat.Kernels) == 0:
					return nil, errors.New("no kernels configured")
				}
				return []remote.Action{{Kind: remote.ActRedeploy, Kernel: cat.Kernels[0].Name}}, nil
			},
		},
		{
			name: "restart", args: "HOST|GROUP... [--force]", restarts: true,
			summary: "restart the unit (after the capture-safety preflight) and follow the new run until serving or failed",
			build:   fixed(),
		},
		{name: "stop", args: "HOST|GROUP...", summary: "stop the unit", build: fixed(remote.Action{Kind: remote.ActStop})},
		{
			name: "reset-failed", args: "HOST|GROUP...", summary: "clear the unit's failed state and start limit so it can start again",
			build: fixed(remote.Action{Kind: remote.ActResetFailed}),
		},
	}
}

// fixed builds the same actions whatever the arguments.
func fixed(as ...remote.Action) func(kernels.Catalog, []string, actOptions) ([]remote.Action, error) {
	return func(_ kernels.Catalog, extra []string, _ actOptions) ([]remote.Action, error) {
		if len(extra) > 0 {
			return nil, fmt.Errorf("unexpected argument %q", extra[0])
		}
		return slices.Clone(as), nil
	}
}

// actionCommand returns the subcommand named name, for commands().
func actionCommand(name string) command {
	for _, c := range actionCmds() {
		if c.name == name {
			c := c
			return command{name: c.name, usage: "bringup " + c.name + " " + c.args + " [--yes] [--json]", summary: c.summary,
				run: func(ctx context.Context, e env, args []string) int { return act(ctx, e, c, args, stdinTerminal()) }}
		}
	}
	panic("bringup: no action command " + name) // a typo in commands(): caught by every test run
}

// stdinTerminal is standard input when it is a terminal (someone can
// answer a prompt), else nil.
func stdinTerminal() io.Reader {
	if isTerminal(os.Stdin) {
		return os.Stdin
	}
	return nil
}

// answerTimeout bounds the wait for every named host's unit state.
const answerTimeout = 30 * time.Second

// act is the flow every changing command shares. in is where answers to
// prompts come from; nil means there is nobody to ask.
func act(ctx context.Context, e env, c actionCmd, args []string, in io.Reader) int {
	fs := cli.NewFlags(e.stdout, e.stderr, c.name, "bringup "+c.name+" [flags] "+c.args+"\n       bringup "+c.name+" --demo [flags] "+c.args+
		"\n\n"+strings.TrimSpace(output.JSONHelp())+"\nWith --json, the plan's text, prompts and messages go to stderr.")
	var ff fleetFlags
	ff.register(fs)
	var sf simFlags
	sf.register(fs)
	demo := fs.Bool("demo", false, "act on the simulated fleet (no hosts needed)")
	yes := fs.BoolP("yes", "y", false, "do not ask for confirmation")
	all := fs.Bool("all", false, "act on every configured host (changing commands never default to all)")
	timeout := fs.Duration("timeout", 20*time.Minute, "give up after `D` (exit 2)")
	asJSON := fs.Bool("json", false, "print JSON lines (schema above), the last a summary")
	var o actOptions
	if c.restartFlag {
		fs.BoolVar(&o.restart, "restart", false, "restart afterwards and follow the new run until serving or failed")
	}
	if c.runtimeFlag {
		fs.BoolVar(&o.runtime, "runtime", false, "write the drop-in under /run (lost at reboot)")
	}
	if c.restarts || c.restartFlag {
		fs.BoolVar(&o.force, "force", false, "restart even if the capture-safety preflight refuses (needs --yes)")
	}
	if code, stop := cli.ParseArgs(fs, args); stop {
		return code
	}
	o.restart = o.restart || c.restarts
	fail := func(format string, a ...any) int { return e.fail(c.name, format, a...) }
	// out is where the JSON goes; with --json, text for people goes to
	// stderr, and every outcome after the fleet started ends in a summary.
	out := e.stdout
	refused := func(why string) int {
		if *asJSON {
			output.Summary(out, c.name, "refused", exitUsage, nil, why)
		}
		return exitUsage
	}
	if *asJSON {
		e.stdout = e.stderr
	}
	if o.force && !*yes {
		return fail("--force needs --yes (interactively, the preflight asks you to type the host count instead)")
	}

	s, err := openActFleet(ctx, e, c, &ff, sf, *demo, *all, fs.Args())
	if err != nil {
		return fail("%v", err)
	}
	defer s.close()
	actions, err := c.build(s.fleet.Kernels(), s.extra, o)
	if err != nil {
		return fail("%v", err)
	}
	if o.restart {
		actions = append(actions, remote.Action{Kind: remote.ActRestart})
	}
	if s.fleet.ReadOnly() {
		// Ask the fleet itself: its door is what makes every change
		// impossible, and its refusal is what the person sees.
		for _, h := range s.hosts {
			for _, a := range actions {
				if _, err := s.fleet.Do(h, a); err != nil {
					fmt.Fprintf(e.stderr, "bringup %s: refused: %v\n", c.name, err)
				} else {
					fmt.Fprintf(e.stderr, "bringup %s: BUG: %s on %s accepted in read-only mode\n", c.name, a, h)
				}
			}
		}
		return refused(remote.ErrReadOnly.Error())
	}

	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	fl, stop := follow(ctx, e, c.name, s.fleet)
	defer stop()
	states, err := fl.AwaitUnits(ctx, s.hosts, min(answerTimeout, *timeout))
	if err != nil {
		fail("%v", err)
		if cli.WasInterrupted(ctx) {
			if *asJSON {
				output.Summary(out, c.name, "interrupted", exitInterrupted, nil, err.Error())
			}
			return exitInterrupted
		}
		return refused(err.Error())
	}
	if o.restart {
		force, ok := passPreflight(e, c.name, e.stderr, inOrder(s.hosts, states), s.fleet.Kernels(), actions, o.force, in)
		if !ok {
			return refused("refused by the capture-safety preflight")
		}
		for i := range actions {
			actions[i].Force = actions[i].Kind == remote.ActRestart && force
		}
	}
	output.Plan(e.stdout, s.hosts, states, actions)
	if *asJSON {
		output.PlanJSON(out, s.hosts, states, actions)
	}
	if ok, why := proceed(e, c.name, *yes, in, "Go ahead? [y/N] "); !ok {
		return refused(why)
	}
	var rep fleet.ApplyReport = output.Actions{W: e.stdout}
	if *asJSON {
		rep = output.ActionsJSON{W: out}
	}
	done := fl.Apply(ctx, s.hosts, states, actions, rep)
	var hostsOut []output.HostOutcome
	if *asJSON {
		hostsOut = output.AppliedJSON(out, done, ctx.Err())
	}
	code, outcome := exitServing, "done"
	switch timedOut, failed := output.Applied(e.stdout, done, ctx.Err()); {
	case cli.WasInterrupted(ctx): // ctrl-c, not the timeout
		code, outcome = exitInterrupted, "interrupted"
	case timedOut:
		code, outcome = exitTimeout, "timeout"
	case failed:
		code, outcome = exitFailed, "failed"
	}
	if *asJSON {
		output.Summary(out, c.name, outcome, code, hostsOut, "")
	}
	return code
}

// inOrder is states in the order of hosts.
func inOrder(hosts []string, states map[string]remote.HostState) []remote.HostState {
	out := make([]remote.HostState, 0, len(hosts))
	for _, h := range hosts {
		if st, ok := states[h]; ok {
			out = append(out, st)
		}
	}
	return out
}

// actFleet is the fleet a changing command acts through and what it acts on.
type actFleet struct {
	fleet *fleet.Fleet
	hosts []string         // the named hosts, in order
	extra []string         // the command's own positional arguments
	now   func() time.Time // the hosts' clock
	close func()
}

// openActFleet builds the live (or simulated) fleet over the hosts named
// in args, or every host with all, splitting off the command's own
// arguments.
func openActFleet(ctx context.Context, e env, c actionCmd, ff *fleetFlags, sf simFlags, demo, all bool, args []string) (actFleet, error) {
	if demo {
		f, clock, err := sf.simFleet(ff.ReadOnly, nil)
		if err != nil {
			return actFleet{}, err
		}
		names, extra := splitArgs(c, f.Kernels(), args, func(s string) bool { return slices.Contains(f.Hosts(), s) })
		if names, err = simHosts(f, names, all); err != nil {
			return actFleet{}, err
		}
		return actFleet{fleet: f, hosts: names, extra: extra, now: clock.Now, close: func() {}}, nil
	}
	// The catalog and the host names come from the config: load it once
	// to tell hosts from the command's own arguments.
	cfg, _, err := ff.load(ctx, e, nil)
	if err != nil {
		return actFleet{}, err
	}
	isHost := func(s string) bool {
		_, err := cfg.Select([]string{s})
		return err == nil
	}
	names, extra := splitArgs(c, cfg.Kernels, args, isHost)
	if len(names) == 0 && !all {
		return actFleet{}, errors.New("name the hosts or groups to act on (or --all)")
	}
	f, closeKeys, err := openLiveFleet(ctx, e, ff, names, nil)
	if err != nil {
		return actFleet{}, err
	}
	return actFleet{fleet: f, hosts: f.Hosts(), extra: extra, now: time.Now, close: closeKeys}, nil
}

// simHosts checks names against the simulated fleet's hosts; all names
// every host.
func simHosts(f *fleet.Fleet, names []string, all bool) ([]string, error) {
	known := f.Hosts()
	if all {
		return known, nil
	}
	for _, n := range names {
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("unknown host %q (simulated hosts: %s)", n, strings.Join(known, ", "))
		}
	}
	if len(names) == 0 {
		return nil, errors.New("name the hosts to act on (or --all)")
	}
	return names, nil
}

// splitArgs separates host and group names from the command's own
// arguments.
func splitArgs(c actionCmd, cat kernels.Catalog, args []string, isHost func(string) bool) (names, extra []string) {
	for _, a := range args {
		if c.extra != nil && c.extra(cat, a, isHost) {
			extra = append(extra, a)
		} else {
			names = append(names, a)
		}
	}
	return names, extra
}

// passPreflight runs the one preflight planner over hosts as they will
// start after changes; on a refusal it explains why (on w) and asks for
// the override, or takes it from --force. It reports whether the
// restarts must be forced, and whether to go on at all.
func passPreflight(e env, name string, w io.Writer, hosts []remote.HostState, cat kernels.Catalog, changes []remote.Action, force bool, in io.Reader) (forced, ok bool) {
	refused := remote.PreflightAll(hosts, cat, changes)
	if len(refused) == 0 {
		return false, true
	}
	output.Preflight(w, refused, len(hosts))
	switch {
	case force:
		fmt.Fprintf(e.stderr, "bringup %s: WARNING: --force: restarting against the preflight\n", name)
		return true, true
	case in == nil:
		fmt.Fprintf(e.stderr, "bringup %s: refused: no terminal to confirm on, and no --force --yes\n", name)
		return false, false
	}
	fmt.Fprintf(e.stdout, "Type the number of hosts (%d) to go on anyway: ", len(hosts))
	line, _ := bufio.NewReader(in).ReadString('\n')
	if !kernels.OverrideConfirmed(line, len(hosts)) {
		fmt.Fprintln(e.stdout, "Not confirmed: nothing changed.")
		return false, false
	}
	return true, true
}

// proceed asks question unless --yes answered it; there is no going ahead
// without a terminal to ask on. why says what stopped it.
func proceed(e env, name string, yes bool, in io.Reader, question string) (ok bool, why string) {
	switch {
	case yes:
		return true, ""
	case in == nil:
		fmt.Fprintf(e.stderr, "bringup %s: refused: no terminal to confirm on; pass --yes to go ahead (nothing changed)\n", name)
		return false, "no terminal to confirm on, and no --yes"
	case !confirm(in, e.stdout, question):
		fmt.Fprintln(e.stdout, "Not confirmed: nothing changed.")
		return false, "not confirmed"
	}
	return true, ""
}

// confirm asks a yes/no question; only y or yes goes ahead.
func confirm(in io.Reader, w io.Writer, q string) bool {
	fmt.Fprint(w, q)
	line, _ := bufio.NewReader(in).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}
