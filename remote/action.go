// Package remote is the contract every part of bringup shares about hosts:
// the Driver a host's connection implements and the Emit it hands events
// to, the Actions the one door takes, the Pace a driver is told, and the
// snapshots (HostState, Batch) readers get. The fleet that fans in the
// drivers, folds their events and runs the actions is remote/fleet;
// transports live in other subpackages (sshx, systemd, journal, probe,
// gpu for real hosts; sim for simulated ones).
package remote

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/event"
)

// ActionKind names an action on a host.
type ActionKind string

// The actions. All of them change the host but ActBench.
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
)

// AllActionKinds lists every action kind that changes a host, for
// exhaustive checks (ActBench, which does not, is the one left out).
var AllActionKinds = []ActionKind{ActSetMode, ActRestart, ActStop, ActResetFailed, ActRedeploy, ActUndoMode}

// Changes reports whether an action of kind k changes the host (read-only
// mode refuses those).
func (k ActionKind) Changes() bool { return k != ActBench }

// Action is one change to make on a host.
type Action struct {
	Kind   ActionKind `json:"kind"`
	Kernel string     `json:"kernel,omitempty"` // for ActSetMode, ActUndoMode and ActRedeploy
	Mode   string     `json:"mode,omitempty"`   // for ActSetMode
	// Runtime puts a mode's drop-in under /run (lost at reboot).
	Runtime bool `json:"runtime,omitempty"`
	// Force restarts even though the capture-safety preflight refuses:
	// the person typed the host count to confirm.
	Force bool `json:"force,omitempty"`
	// Requests, Concurrency and MaxTokens shape an ActBench load (0: the
	// bench package's defaults): exactly Requests, at most Concurrency at
	// a time.
	Requests    int `json:"requests,omitempty"`
	Concurrency int `json:"concurrency,omitempty"`
	MaxTokens   int `json:"max_tokens,omitempty"`
}

// String names the action the way the log of remote commands shows it.
func (a Action) String() string {
	switch a.Kind {
	case ActSetMode:
		return fmt.Sprintf("mode %s=%s", a.Kernel, a.Mode)
	case ActRedeploy:
		if a.Kernel != "" {
			return "redeploy " + a.Kernel
		}
	case ActUndoMode:
		return "undo mode " + a.Kernel
	case ActBench:
		if a.Requests > 0 && a.Concurrency > 0 {
			return fmt.Sprintf("bench %d×%d", a.Requests, a.Concurrency)
		}
	case ActRestart:
		if a.Force {
			return "restart (preflight overridden)"
		}
	case ActStop, ActResetFailed: // the kind says it all
	}
	return string(a.Kind)
}

// Effect says in plain words what the action will do, for confirmations.
func (a Action) Effect(unit string) string {
	switch a.Kind {
	case ActSetMode:
		return fmt.Sprintf("set %s to mode %q for %s (takes effect at the next restart)", a.Kernel, a.Mode, unit)
	case ActRestart:
		return fmt.Sprintf("restart %s (it stops serving until the new run is up)", unit)
	case ActStop:
		return fmt.Sprintf("stop %s", unit)
	case ActResetFailed:
		return fmt.Sprintf("clear the failed state and start limit of %s", unit)
	case ActRedeploy:
		k := a.Kernel
		if k == "" {
			k = "the kernel"
		}
		return fmt.Sprintf("copy the local build of %s to the host (takes effect at the next restart)", k)
	case ActBench:
		return fmt.Sprintf("send %d completions, at most %d at a time, to %s's /v1/completions and measure them (changes nothing on the host)",
			a.Requests, a.Concurrency, unit)
	case ActUndoMode:
		return fmt.Sprintf("put back %s's drop-in for %s as it was before the last mode change (takes effect at the next restart)", a.Kernel, unit)
	}
	return string(a.Kind)
}

// PreflightError is a restart refused because a kernel mode in force is
// not capture-safe while the unit starts with CUDA graphs on: it would
// fail at graph capture, minutes in. Retry with Action.Force after the
// person confirmed, or pick one of SafeModes.
type PreflightError struct {
	Host      string
	Kernel    string
	Mode      string
	Reason    string
	SafeModes []string
}

func (e *PreflightError) Error() string {
	return fmt.Sprintf("%s: preflight: %s (capture-safe modes: %s)", e.Host, e.Reason, strings.Join(e.SafeModes, ", "))
}

// Preflight checks a restart of h against the capture-safety rule, from
// what the fleet already knows (the unit's ExecStart and Environment): a
// pure check the UI and the commands run before asking, and drivers run
// again before acting. engine is sglang, vllm, or auto/"": then the engine
// h's logs showed, else the one ExecStart names.
func Preflight(h HostState, cat kernels.Catalog, engine string) *PreflightError {
	if engine == "" || engine == kernels.EngineAuto {
		// What the logs showed beats a guess from ExecStart (a wrapper
		// script names no engine); "" still leaves that guess to kernels.
		engine = h.Startup.Engine
	}
	for _, m := range cat.ModesIn(h.UnitState.Environment) {
		if m.CaptureSafe {
			continue
		}
		k, ok := cat.Kernel(m.Kernel)
		if !ok {
			continue
		}
		if r := kernels.Preflight(k, m.Mode, h.UnitState.ExecStart, engine); !r.OK {
			return &PreflightError{Host: h.Name, Kernel: k.Name, Mode: m.Mode, Reason: r.Reason, SafeModes: r.SafeModes}
		}
	}
	return nil
}

// Emit hands one event to the fleet. It blocks while the fleet is busy and
// returns false once the fleet has stopped.
type Emit func(event.Event) bool

// Driver is one host's connection: SSH-backed or simulated.
type Driver interface {
	// Name is the host's name as the user wrote it.
	Name() string
	// Run streams the host's events until ctx ends, and owns every
	// goroutine it starts; it returns after they have stopped.
	Run(ctx context.Context, emit Emit) error
	// Do performs a on the host. Progress may be reported through emit;
	// the returned error is the outcome. It must return soon after ctx
	// ends, and stop what it waits for on the host: the fleet ends ctx
	// at the action's deadline, when a later action preempts it, and
	// when it stops (Fleet.Do says when).
	Do(ctx context.Context, a Action, emit Emit) error
}

// PreflightAll is the one preflight planner: it checks a restart of each
// of hosts as it will start after actions, whose mode changes are applied
// to the unit's Environment the way their drop-ins apply them. Refusals
// come in the order of hosts.
func PreflightAll(hosts []HostState, cat kernels.Catalog, actions []Action) []*PreflightError {
	var out []*PreflightError
	for _, h := range hosts {
		h.UnitState.Environment = withModes(cat, h.UnitState.Environment, actions)
		if pe := Preflight(h, cat, kernels.EngineAuto); pe != nil {
			out = append(out, pe)
		}
	}
	return out
}

// withModes returns env with each ActSetMode of actions applied as its
// drop-in would apply it (a later entry overrides an earlier one, as
// systemd does). A mode the catalog does not know is left out: that
// action fails before any restart.
func withModes(cat kernels.Catalog, env []string, actions []Action) []string {
	out := slices.Clone(env)
	for _, a := range actions {
		if a.Kind != ActSetMode {
			continue
		}
		k, ok := cat.Kernel(a.Kernel)
		if !ok {
			continue
		}
		if set, err := kernels.DropInEnv(k, a.Mode, env); err == nil {
			out = append(out, set...)
		}
	}
	return out
}
