package remote

import "fmt"

// ActionKind names an action on a host: the word the command line, the
// palette and the JSON lines use.
type ActionKind string

// The actions. Each one's spec is its entry in Specs.
const (
	ActSetMode     ActionKind = "mode"         // set a kernel's mode (drop-in + daemon-reload)
	ActRestart     ActionKind = "restart"      // restart the unit and watch the new invocation
	ActStop        ActionKind = "stop"         // stop the unit
	ActResetFailed ActionKind = "reset-failed" // clear the unit's failed state and start limit
	ActRedeploy    ActionKind = "redeploy"     // sync the kernel's files to the host
	ActUndoMode    ActionKind = "undo-mode"    // put back the drop-in the last mode change replaced
	// ActBench sends a bounded smoke load to the serving service through
	// the host's connection (remote/bench). It changes nothing on the
	// host, so read-only mode allows it; it goes through Fleet.Do all the
	// same, to be queued, bounded, cancelled and reported like the rest.
	ActBench ActionKind = "bench"
	// ActDaemonReload makes systemd re-read unit files and drop-ins (a
	// unit edited by hand, a drop-in another tool wrote).
	ActDaemonReload ActionKind = "daemon-reload"
)

// DeadlineClass says which of the fleet's deadlines bounds an action.
type DeadlineClass uint8

const (
	// DeadlineSystemd bounds an action that waits for systemd's answer.
	DeadlineSystemd DeadlineClass = iota
	// DeadlineTransfer bounds a transfer: a base, plus the time of its
	// bytes at the slowest rate once the driver says how many.
	DeadlineTransfer
	// DeadlineLoad bounds a smoke load.
	DeadlineLoad
)

// Across says how an action applies to the nodes of a multi-node
// deployment (deployment.Steps reads it): the engine's rules, not the
// hosts'.
type Across uint8

const (
	// AcrossEach: on every node, all of them done before the
	// deployment's next action (a mode change, a stop, a redeploy).
	AcrossEach Across = iota
	// AcrossRanked: every node stopped, then each started in rank order,
	// the head first, the next once the one before is started: the other
	// nodes join the head's rendezvous, and one node restarted alone
	// never rejoins the others.
	AcrossRanked
	// AcrossHead: on the head only, which serves the API (a smoke load).
	AcrossHead
)

// ActionSpec is everything the layers know about one kind of action: the
// fleet's door and deadline, the words of a confirmation, the console's
// key and palette command, the command line's command. The steps on a
// host are not here: they stay where the IO is, in remote/live (SSH and
// D-Bus) and remote/sim (the simulation), each dispatching on the kind
// in one switch.
type ActionSpec struct {
	// Kind is the name: the command's and the palette's word (unless
	// Palette says another), the JSON "kind".
	Kind ActionKind
	// Changes says the action changes the host: read-only mode refuses
	// it. It needs root on the host (D-Bus as root, or `sudo -n` with the
	// commands of sshx.Scope).
	Changes bool
	// Deadline is the fleet's deadline that bounds it.
	Deadline DeadlineClass
	// Preempts: it cancels the restarts still pending on its host and
	// runs instead of waiting for them (stopping a unit or clearing its
	// failed state must not wait for a restart that may never end).
	Preempts bool
	// Reloads: it ends with a daemon-reload, after which the unit's
	// properties (its Environment) are read again; past its deadline,
	// the reload is what held systemd up.
	Reloads bool
	// Follows: the unit restarts, and the new invocation is followed
	// until it serves or fails.
	Follows bool
	// Across: how it applies to a multi-node deployment's nodes.
	Across Across

	// Label names an action of this kind in the log of remote commands;
	// nil, or "", the kind's name.
	Label func(a Action) string
	// Effect says in plain words what it will do to unit.
	Effect func(a Action, unit string) string
	// Question is a confirmation's first line: a on unit, on the hosts
	// on names (a host, or "N hosts").
	Question func(a Action, unit, on string) string

	// Key is the console's key for it; nil: none.
	Key *KeyEntry
	// Palette is its command in the console's `:` palette; nil: none.
	Palette *PaletteEntry
	// Command is its changing command on the command line (`bringup
	// KIND`); nil: none.
	Command *CommandEntry
}

// KeyEntry is an action's key in the console.
type KeyEntry struct {
	Key  string // the key, as Bubble Tea names it
	Help string // what the help says it does
}

// PaletteEntry is an action's command in the console's palette: it takes
// HOST… (names, groups, marked, all), then Args' own arguments.
type PaletteEntry struct {
	Name, Args, Help string
}

// CommandEntry is an action's changing command on the command line.
type CommandEntry struct {
	Args, Summary string
}

// Specs is the table of actions, in the order the console's palette lists
// them. It is a value: each call returns a fresh one.
func Specs() []ActionSpec {
	return []ActionSpec{
		{
			Kind: ActRestart, Changes: true, Deadline: DeadlineSystemd, Follows: true, Across: AcrossRanked,
			Label: func(a Action) string {
				switch {
				case a.Force && a.SkipCheck:
					return "restart (preflight overridden, capture check skipped)"
				case a.Force:
					return "restart (preflight overridden)"
				case a.SkipCheck:
					return "restart (capture check skipped)"
				}
				return ""
			},
			Effect: func(_ Action, unit string) string {
				return fmt.Sprintf("restart %s (it stops serving until the new run is up)", unit)
			},
			Question: func(_ Action, unit, on string) string { return fmt.Sprintf("Restart %s on %s?", unit, on) },
			Key:      &KeyEntry{"r", "restart"},
			Palette:  &PaletteEntry{"restart", "HOST…", "restart (capture-safety preflight first)"},
			Command: &CommandEntry{"HOST|GROUP... [--force]",
				"restart the unit (after the capture-safety preflight) and follow the new run until serving or failed"},
		},
		{
			Kind: ActStop, Changes: true, Deadline: DeadlineSystemd, Preempts: true,
			Effect:   func(_ Action, unit string) string { return fmt.Sprintf("stop %s", unit) },
			Question: func(_ Action, unit, on string) string { return fmt.Sprintf("Stop %s on %s?", unit, on) },
			Palette:  &PaletteEntry{"stop", "HOST…", "stop the unit"},
			Command:  &CommandEntry{"HOST|GROUP...", "stop the unit"},
		},
		{
			Kind: ActResetFailed, Changes: true, Deadline: DeadlineSystemd, Preempts: true,
			Effect: func(_ Action, unit string) string {
				return fmt.Sprintf("clear the failed state and start limit of %s", unit)
			},
			Question: func(_ Action, unit, on string) string {
				return fmt.Sprintf("Reset the failed state of %s on %s?", unit, on)
			},
			Key:     &KeyEntry{"x", "reset-failed"},
			Palette: &PaletteEntry{"reset-failed", "HOST…", "clear the failed state and start limit"},
			Command: &CommandEntry{"HOST|GROUP...", "clear the unit's failed state and start limit so it can start again"},
		},
		{
			Kind: ActRedeploy, Changes: true, Deadline: DeadlineTransfer,
			Label: func(a Action) string {
				if a.Kernel != "" {
					return "redeploy " + a.Kernel
				}
				return ""
			},
			Effect: func(a Action, _ string) string {
				k := a.Kernel
				if k == "" {
					k = "the kernel"
				}
				return fmt.Sprintf("copy the local build of %s to the host (takes effect at the next restart)", k)
			},
			Question: func(a Action, _, on string) string { return fmt.Sprintf("Redeploy %s to %s?", a.Kernel, on) },
			Key:      &KeyEntry{"d", "redeploy"},
			Palette:  &PaletteEntry{"redeploy", "HOST… [KERNEL]", "copy the local build of a kernel"},
			Command: &CommandEntry{"HOST|GROUP... [KERNEL] [--restart]",
				"send the kernel's changed files from its local build (default: the first kernel); --restart restarts and follows"},
		},
		{
			Kind: ActSetMode, Changes: true, Deadline: DeadlineSystemd, Reloads: true,
			Label: func(a Action) string { return fmt.Sprintf("mode %s=%s", a.Kernel, a.Mode) },
			Effect: func(a Action, unit string) string {
				return fmt.Sprintf("set %s to mode %q for %s (takes effect at the next restart)", a.Kernel, a.Mode, unit)
			},
			Question: func(a Action, _, on string) string {
				return fmt.Sprintf("Set %s to mode %q on %s?", a.Kernel, a.Mode, on)
			},
			Key:     &KeyEntry{"m", "kernel mode"},
			Palette: &PaletteEntry{"mode", "HOST… KERNEL=MODE", "set a kernel's mode"},
			Command: &CommandEntry{"HOST|GROUP... KERNEL=MODE [--restart] [--runtime]",
				"set a kernel's mode (systemd drop-in + daemon-reload); --restart restarts and follows the new run"},
		},
		{
			// No command: it undoes a change of the same session.
			Kind: ActUndoMode, Changes: true, Deadline: DeadlineSystemd, Reloads: true,
			Label: func(a Action) string { return "undo mode " + a.Kernel },
			Effect: func(a Action, unit string) string {
				return fmt.Sprintf("put back %s's drop-in for %s as it was before the last mode change (takes effect at the next restart)", a.Kernel, unit)
			},
			Question: func(a Action, _, on string) string {
				return fmt.Sprintf("Undo the last mode change of %s on %s?", a.Kernel, on)
			},
			Key:     &KeyEntry{"u", "undo mode change"},
			Palette: &PaletteEntry{"undo", "HOST…", "undo the last mode change"},
		},
		{
			// Its command (`bringup bench`) has flags of its own.
			Kind: ActBench, Deadline: DeadlineLoad, Across: AcrossHead,
			Label: func(a Action) string {
				if a.Requests > 0 && a.Concurrency > 0 {
					return fmt.Sprintf("bench %d×%d", a.Requests, a.Concurrency)
				}
				return ""
			},
			Effect: func(a Action, unit string) string {
				return fmt.Sprintf("send %d completions, at most %d at a time, to %s's /v1/completions and measure them (changes nothing on the host)",
					a.Requests, a.Concurrency, unit)
			},
			Question: func(a Action, _, on string) string {
				return fmt.Sprintf("Bench %s: %d requests, %d at a time?", on, a.Requests, a.Concurrency)
			},
			Key:     &KeyEntry{"b", "bench (smoke load)"},
			Palette: &PaletteEntry{"bench", "HOST…", "a smoke load on serving hosts (changes nothing)"},
		},
		{
			Kind: ActDaemonReload, Changes: true, Deadline: DeadlineSystemd, Reloads: true,
			Effect: func(_ Action, unit string) string {
				return fmt.Sprintf("make systemd re-read unit files and drop-ins (a change to %s takes effect at its next restart)", unit)
			},
			Question: func(_ Action, _, on string) string { return fmt.Sprintf("Reload systemd's unit files on %s?", on) },
			Command: &CommandEntry{"HOST|GROUP...",
				"make systemd re-read unit files and drop-ins (systemctl daemon-reload), after a unit was edited by hand"},
		},
	}
}

// Spec is k's entry in Specs; false when k is none of them.
func (k ActionKind) Spec() (ActionSpec, bool) {
	for _, s := range Specs() {
		if s.Kind == k {
			return s, true
		}
	}
	return ActionSpec{}, false
}

// AllActionKinds lists every action kind that changes a host, in the
// table's order, for exhaustive checks.
func AllActionKinds() []ActionKind {
	var out []ActionKind
	for _, s := range Specs() {
		if s.Changes {
			out = append(out, s.Kind)
		}
	}
	return out
}

// Changes reports whether an action of kind k changes the host (read-only
// mode refuses those). A kind the table does not know counts as changing.
func (k ActionKind) Changes() bool {
	s, ok := k.Spec()
	return !ok || s.Changes
}
