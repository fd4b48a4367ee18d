// Package action is the table of bringup's changing commands, one for
// each action whose spec (remote.Specs) has a command: each command's
// flags, its own arguments told from host names, and the actions it asks
// the fleet for on each host.
package action

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
)

// Command describes one changing command.
type Command struct {
	// Kind is the action the command is named for.
	Kind                remote.ActionKind
	Name, Args, Summary string
	// RestartFlag offers --restart (restart after the change).
	RestartFlag bool
	// Restarts: the command itself is a restart (preflight, --force).
	Restarts bool
	// RuntimeFlag offers --runtime (a mode's drop-in under /run).
	RuntimeFlag bool
	// Extra says whether a positional argument is the command's own
	// argument rather than a host or group name; nil: none.
	Extra func(cat kernels.Catalog, s string, isHost func(string) bool) bool
	// Build turns the command's own arguments into the actions for one
	// host (before the restart that --restart adds).
	Build func(cat kernels.Catalog, extra []string, o Options) ([]remote.Action, error)
}

// Options are the flags that shape the actions.
type Options struct {
	Restart, Runtime, Force bool
	SkipCheck               bool // restart without the kernels' capture checks (recorded)
}

// Actions are the actions for one host: Build's, then the restart when
// o asks for one.
func (c Command) Actions(cat kernels.Catalog, extra []string, o Options) ([]remote.Action, error) {
	actions, err := c.Build(cat, extra, o)
	if err != nil || !o.Restart {
		return actions, err
	}
	return append(actions, remote.Action{Kind: remote.ActRestart}), nil
}

// Commands lists the changing commands: first those with arguments of
// their own (mode, redeploy), then every other action with a command in
// its spec, in the table's order. Those take hosts only: a restart
// (remote.ActionSpec.Follows) follows the new run; any other issues its
// action.
func Commands() []Command {
	own := ownArguments()
	var out []Command
	for _, c := range own {
		s, _ := c.Kind.Spec()
		c.Name, c.Args, c.Summary = string(s.Kind), s.Command.Args, s.Command.Summary
		out = append(out, c)
	}
	for _, s := range remote.Specs() {
		if s.Command == nil || slices.ContainsFunc(own, func(c Command) bool { return c.Kind == s.Kind }) {
			continue
		}
		c := Command{Kind: s.Kind, Name: string(s.Kind), Args: s.Command.Args, Summary: s.Command.Summary, Build: fixed(remote.Action{Kind: s.Kind})}
		if s.Follows {
			c.Restarts, c.Build = true, fixed() // act adds the restart
		}
		out = append(out, c)
	}
	return out
}

// ownArguments are the commands that take arguments of their own beside
// the hosts; their names, usage and summary come from their specs.
func ownArguments() []Command {
	return []Command{
		{
			Kind: remote.ActSetMode, RestartFlag: true, RuntimeFlag: true,
			Extra: func(_ kernels.Catalog, s string, _ func(string) bool) bool { return strings.Contains(s, "=") },
			Build: func(cat kernels.Catalog, extra []string, o Options) ([]remote.Action, error) {
				if len(extra) != 1 {
					return nil, fmt.Errorf("want exactly one KERNEL=MODE (got %d)", len(extra))
				}
				k, m, err := cat.ParseAssignment(extra[0])
				if err != nil {
					return nil, err
				}
				return []remote.Action{{Kind: remote.ActSetMode, Kernel: k.Name, Mode: m.Name, Runtime: o.Runtime}}, nil
			},
		},
		{
			Kind: remote.ActRedeploy, RestartFlag: true,
			Extra: func(cat kernels.Catalog, s string, isHost func(string) bool) bool {
				_, ok := cat.Kernel(s)
				return ok && !isHost(s)
			},
			Build: func(cat kernels.Catalog, extra []string, _ Options) ([]remote.Action, error) {
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
	}
}

// fixed builds the same actions whatever the arguments.
func fixed(as ...remote.Action) func(kernels.Catalog, []string, Options) ([]remote.Action, error) {
	return func(_ kernels.Catalog, extra []string, _ Options) ([]remote.Action, error) {
		if len(extra) > 0 {
			return nil, fmt.Errorf("unexpected argument %q", extra[0])
		}
		return slices.Clone(as), nil
	}
}

// SplitArgs separates host and group names from the command's own
// arguments.
func (c Command) SplitArgs(cat kernels.Catalog, args []string, isHost func(string) bool) (names, extra []string) {
	for _, a := range args {
		if c.Extra != nil && c.Extra(cat, a, isHost) {
			extra = append(extra, a)
		} else {
			names = append(names, a)
		}
	}
	return names, extra
}

// SimHosts checks names against the simulated fleet's hosts (known); all
// names every host.
func SimHosts(known, names []string, all bool) ([]string, error) {
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
