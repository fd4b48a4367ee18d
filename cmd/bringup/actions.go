package main

import (
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/action"
	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/drive"
	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote/fleet"
)

// The changing commands: each names its hosts, says exactly what will
// change, asks (unless --yes), goes through Fleet.Do and, for restarts,
// follows the new invocation (drive.Act). The table of them is package
// action's; here are their flags and their fleet.

// actionCommands are the changing commands, in package action's order,
// for commands().
func actionCommands() []command {
	var out []command
	for _, c := range action.Commands() {
		out = append(out, command{name: c.Name, usage: "bringup " + c.Name + " " + c.Args + " [--yes] [--json]", summary: c.Summary,
			run: func(ctx context.Context, e env, args []string) int { return act(ctx, e, c, args, stdinTerminal()) }})
	}
	return out
}

// stdinTerminal is standard input when it is a terminal (someone can
// answer a prompt), else nil.
func stdinTerminal() io.Reader {
	if cli.IsTerminal(os.Stdin) {
		return os.Stdin
	}
	return nil
}

// act is the flow every changing command shares. in is where answers to
// prompts come from; nil means there is nobody to ask.
func act(ctx context.Context, e env, c action.Command, args []string, in io.Reader) int {
	fs := cli.NewFlags(e.stdout, e.stderr, c.Name, "bringup "+c.Name+" [flags] "+c.Args+"\n       bringup "+c.Name+" --demo [flags] "+c.Args+
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
	var o action.Options
	if c.RestartFlag {
		fs.BoolVar(&o.Restart, "restart", false, "restart afterwards and follow the new run until serving or failed")
	}
	if c.RuntimeFlag {
		fs.BoolVar(&o.Runtime, "runtime", false, "write the drop-in under /run (lost at reboot)")
	}
	if c.Restarts || c.RestartFlag {
		fs.BoolVar(&o.Force, "force", false, "restart even if the capture-safety preflight refuses (needs --yes)")
		fs.BoolVar(&o.SkipCheck, "skip-check", false, "run no capture check on the hosts before the restart (recorded, and said)")
	}
	if code, stop := cli.ParseArgs(fs, args); stop {
		return code
	}
	o.Restart = o.Restart || c.Restarts
	if o.Force && !*yes {
		return e.fail(c.Name, "--force needs --yes (interactively, the preflight asks you to type the host count instead)")
	}
	s, err := openActFleet(ctx, e, c, &ff, sf, *demo, *all, fs.Args())
	if err != nil {
		return e.fail(c.Name, "%v", err)
	}
	defer s.close()
	actions, err := c.Actions(s.fleet.Kernels(), s.extra, o)
	if err != nil {
		return e.fail(c.Name, "%v", err)
	}
	return drive.Act{Name: c.Name, Fleet: s.fleet, Hosts: s.hosts, Actions: actions, Restart: o.Restart, Force: o.Force, SkipCheck: o.SkipCheck,
		Yes: *yes, JSON: *asJSON, Timeout: *timeout, Deployments: ff.cfg.DeclaredDeployments()}.Run(ctx, drive.Streams{Out: e.stdout, Err: e.stderr, In: in})
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
func openActFleet(ctx context.Context, e env, c action.Command, ff *fleetFlags, sf simFlags, demo, all bool, args []string) (actFleet, error) {
	if demo {
		f, clock, err := sf.simFleet(ff.ReadOnly, nil)
		if err != nil {
			return actFleet{}, err
		}
		names, extra := c.SplitArgs(f.Kernels(), args, func(s string) bool { return slices.Contains(f.Hosts(), s) })
		if names, err = action.SimHosts(f.Hosts(), names, all); err != nil {
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
	names, extra := c.SplitArgs(cfg.Kernels, args, isHost)
	if len(names) == 0 && !all {
		return actFleet{}, errors.New("name the hosts or groups to act on (or --all)")
	}
	f, closeKeys, err := openLiveFleet(ctx, e, ff, names, nil)
	if err != nil {
		return actFleet{}, err
	}
	return actFleet{fleet: f, hosts: f.Hosts(), extra: extra, now: time.Now, close: closeKeys}, nil
}
