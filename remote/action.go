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
	// SkipCheck: the restart goes ahead without the kernels' capture
	// checks (--skip-check); its audit line says so.
	SkipCheck bool `json:"skip_check,omitempty"`
	// Requests, Concurrency and MaxTokens shape an ActBench load (0: the
	// bench package's defaults): exactly Requests, at most Concurrency at
	// a time.
	Requests    int `json:"requests,omitempty"`
	Concurrency int `json:"concurrency,omitempty"`
	MaxTokens   int `json:"max_tokens,omitempty"`
}

// String names the action the way the log of remote commands shows it.
func (a Action) String() string {
	if s, ok := a.Kind.Spec(); ok && s.Label != nil {
		if l := s.Label(a); l != "" {
			return l
		}
	}
	return string(a.Kind)
}

// Effect says in plain words what the action will do, for confirmations.
func (a Action) Effect(unit string) string {
	if s, ok := a.Kind.Spec(); ok && s.Effect != nil {
		return s.Effect(a, unit)
	}
	return string(a.Kind)
}

// Question is a confirmation's first line: the action on unit, on the
// hosts on names (a host, or "N hosts").
func (a Action) Question(unit, on string) string {
	if s, ok := a.Kind.Spec(); ok && s.Question != nil {
		return s.Question(a, unit, on)
	}
	return fmt.Sprintf("%s on %s?", a, on)
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
	// RefusedBy names who refused: the catalog's declaration, the lint,
	// the check on the host (kernels.PreflightWith).
	RefusedBy []kernels.SafetySource
	// Evidence is what was weighed beside the declaration: the check's
	// cause and line and how long it took, a skipped check.
	Evidence []kernels.Evidence
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
	return preflightWith(h, cat, engine, nil)
}

// preflightWith is Preflight weighing what the lint and the checks said
// of h's kernels: a mode declared capture-safe is refused when either
// says otherwise.
func preflightWith(h HostState, cat kernels.Catalog, engine string, ev SafetyEvidence) *PreflightError {
	if engine == "" || engine == kernels.EngineAuto {
		// What the logs showed beats a guess from ExecStart (a wrapper
		// script names no engine); "" still leaves that guess to kernels.
		engine = h.Startup.Engine
	}
	for _, m := range cat.ModesIn(h.UnitState.Environment) {
		seen := ev[HostKernel{h.Name, m.Kernel}]
		if m.CaptureSafe && len(seen) == 0 {
			continue
		}
		k, ok := cat.Kernel(m.Kernel)
		if !ok {
			continue
		}
		if r := kernels.PreflightWith(k, m.Mode, h.UnitState.ExecStart, engine, seen); !r.OK {
			return &PreflightError{Host: h.Name, Kernel: k.Name, Mode: m.Mode, Reason: r.Reason, SafeModes: r.SafeModes,
				RefusedBy: r.RefusedBy, Evidence: seen}
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
	return PreflightAllWith(hosts, cat, actions, nil)
}

// PreflightAllWith is PreflightAll weighing ev, what the lint and the
// checks on the hosts said (CheckPlan's wants, judged): the one decision
// of a restart's preflight, pure.
func PreflightAllWith(hosts []HostState, cat kernels.Catalog, actions []Action, ev SafetyEvidence) []*PreflightError {
	var out []*PreflightError
	for _, h := range hosts {
		h.UnitState.Environment = withModes(cat, h.UnitState.Environment, actions)
		if pe := preflightWith(h, cat, kernels.EngineAuto, ev); pe != nil {
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

// Step is one action of a plan on one host. A host's steps run in
// order, each once the one before is done. Group and Stage order the
// steps of several hosts: a step waits until every step of its group
// with a lower stage is done (a deployment's nodes all stopped before its
// head starts); a step of group "" waits for nothing but its host's.
type Step struct {
	Host   string
	Action Action
	Group  string
	Stage  int
	// Head is the host whose new run settles this host's, when the
	// action restarts it: a deployment's node other than its head serves
	// only through the head, which alone says it serves. "" for a host
	// that settles by itself.
	Head string
}
