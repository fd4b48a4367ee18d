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

// KernelReader is a driver that can read, over its host's connection,
// the Python files a unit with Environment env loads for kernel k (the
// directory with sitecustomize.py on its PYTHONPATH, then k's
// remote_dir: remote/live's hosts, through remote/kernelfiles) into dst,
// a local directory, for the preflight's lint. where names what it read:
// HOST:/dir,/dir.
type KernelReader interface {
	ReadKernelFiles(ctx context.Context, k kernels.Kernel, env []string, dst string) (where string, err error)
}

// CheckWant is one kernel mode a restart's preflight looks at beyond the
// declaration: kernel's mode on host, with the environment the unit will
// start with. The lint reads every want's kernel files; a want with a
// Command is checked on the host too.
type CheckWant struct {
	Host, Kernel, Mode string
	Command            string   // the catalog's check command, {mode} filled in; "" when it gives none
	Env                []string // the unit's Environment after the actions
}

// HostKernel keys evidence: one kernel on one host.
type HostKernel struct{ Host, Kernel string }

// SafetyEvidence is what the lint and the checks said of each host's
// kernels, beside the catalog's declaration.
type SafetyEvidence map[HostKernel][]kernels.Evidence

// PreflightPlan is what the lint and the checks look at before a restart
// of each of hosts after actions, in the order of hosts and the catalog:
// every kernel in a mode that loads it (not "off"), on a unit that starts
// with CUDA graphs on (with graphs off no mode can fail at capture); the
// kernels with a check command have it filled in.
func PreflightPlan(hosts []HostState, cat kernels.Catalog, actions []Action) []CheckWant {
	var out []CheckWant
	for _, h := range hosts {
		env := withModes(cat, h.UnitState.Environment, actions)
		for _, m := range cat.ModesIn(env) {
			k, ok := cat.Kernel(m.Kernel)
			if !ok || !m.Known || m.Mode == "off" || !kernels.Preflight(k, m.Mode, h.UnitState.ExecStart, h.Startup.Engine).GraphsOn {
				continue
			}
			cmd, _ := k.CheckCommand(m.Mode)
			out = append(out, CheckWant{Host: h.Name, Kernel: k.Name, Mode: m.Mode, Command: cmd, Env: slices.Clone(env)})
		}
	}
	return out
}

// CheckPlan is the checks a restart of each of hosts after actions asks
// for: PreflightPlan's wants with a check command.
func CheckPlan(hosts []HostState, cat kernels.Catalog, actions []Action) []CheckWant {
	return Checked(PreflightPlan(hosts, cat, actions))
}

// Checked is the wants with a check command.
func Checked(wants []CheckWant) []CheckWant {
	return slices.DeleteFunc(slices.Clone(wants), func(w CheckWant) bool { return w.Command == "" })
}

// Merge is ev with more's evidence after each host and kernel's own.
func (ev SafetyEvidence) Merge(more SafetyEvidence) SafetyEvidence {
	out := SafetyEvidence{}
	for k, e := range ev {
		out[k] = slices.Clone(e)
	}
	for k, e := range more {
		out[k] = append(out[k], e...)
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
