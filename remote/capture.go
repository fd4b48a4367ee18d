package remote

import (
	"context"
	"slices"
	"time"

	"github.com/bringup-dev/bringup/kernels"
)

// CheckOutput is what one run of a kernel's check command gave on a host.
type CheckOutput struct {
	Output   string // stdout and stderr together, as they came
	Exit     int
	TimedOut bool // the deadline ended it
	Took     time.Duration
}

// CheckRunner is a driver that can run a kernel's check command on its
// host (remote/live's hosts): with env set (the unit's Environment as
// the restart will start it), given up after deadline. An error is a
// run that never began (no connection); a failed check is an output.
type CheckRunner interface {
	RunCheck(ctx context.Context, command string, env []string, deadline time.Duration) (CheckOutput, error)
}

// CheckWant is one check a restart's preflight asks for: kernel's mode
// on host, with the environment the unit will start with.
type CheckWant struct {
	Host, Kernel, Mode string
	Command            string   // the catalog's check command, {mode} filled in
	Env                []string // the unit's Environment after the actions
}

// HostKernel keys evidence: one kernel on one host.
type HostKernel struct{ Host, Kernel string }

// SafetyEvidence is what the lint and the checks said of each host's
// kernels, beside the catalog's declaration.
type SafetyEvidence map[HostKernel][]kernels.Evidence

// CheckPlan is the checks a restart of each of hosts after actions asks
// for, in the order of hosts and the catalog: every kernel with a check
// command in a mode that loads it (not "off"), on a unit that starts with
// CUDA graphs on (with graphs off no mode can fail at capture).
func CheckPlan(hosts []HostState, cat kernels.Catalog, actions []Action) []CheckWant {
	var out []CheckWant
	for _, h := range hosts {
		env := withModes(cat, h.UnitState.Environment, actions)
		for _, m := range cat.ModesIn(env) {
			k, ok := cat.Kernel(m.Kernel)
			if !ok || !m.Known || m.Mode == "off" {
				continue
			}
			cmd, ok := k.CheckCommand(m.Mode)
			if !ok || !kernels.Preflight(k, m.Mode, h.UnitState.ExecStart, h.Startup.Engine).GraphsOn {
				continue
			}
			out = append(out, CheckWant{Host: h.Name, Kernel: k.Name, Mode: m.Mode, Command: cmd, Env: slices.Clone(env)})
		}
	}
	return out
}

// Skipped is the evidence of wants that a person skipped (--skip-check):
// recorded, counted neither way.
func Skipped(wants []CheckWant, why string) SafetyEvidence {
	ev := SafetyEvidence{}
	for _, w := range wants {
		k := HostKernel{w.Host, w.Kernel}
		ev[k] = append(ev[k], kernels.Evidence{Source: kernels.SourceCheck, Skipped: true, Detail: why})
	}
	return ev
}
