package live

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/kernelfiles"
	"github.com/bringup-dev/bringup/remote/sshx"
)

// exitTimedOut is timeout(1)'s status for a command it ended.
const exitTimedOut = 124

// RunCheck runs a kernel's check command on the host (the preflight's
// proof, before a restart): with env set, its stderr in its stdout, ended
// by timeout(1) on the host after deadline (then killed 5 s later), so
// that nothing is left running there when the connection gives up. It is
// reported as a command, as an action's are.
func (h *Host) RunCheck(ctx context.Context, command string, env []string, deadline time.Duration) (remote.CheckOutput, error) {
	emit := h.emitter()
	if emit == nil {
		emit = func(event.Event) bool { return true }
	}
	ctx, cancel := context.WithTimeout(ctx, deadline+15*time.Second)
	defer cancel()
	start := time.Now()
	out, _, code, err := audited{h: h, emit: emit}.Exec(ctx, checkScript(command, env, deadline))
	res := remote.CheckOutput{Output: string(out), Exit: code, TimedOut: code == exitTimedOut, Took: time.Since(start)}
	if err != nil {
		return res, fmt.Errorf("%s: capture check over SSH: %w", h.opts.Name, err)
	}
	return res, nil
}

// checkScript is the shell line that runs command with env under a
// deadline, its stderr merged into its stdout.
func checkScript(command string, env []string, deadline time.Duration) string {
	var b strings.Builder
	secs := max(1, int(deadline.Round(time.Second)/time.Second))
	fmt.Fprintf(&b, "exec 2>&1; timeout -k 5 %d env", secs)
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok && k != "" && !strings.ContainsAny(k, " \t\n'\"$`\\;&|<>()") {
			b.WriteString(" " + sshx.ShellQuote(kv))
		}
	}
	b.WriteString(" sh -c " + sshx.ShellQuote(command))
	return b.String()
}

// RunCheck runs a check over the host's on-demand connection, opening
// it if it is not open.
func (o *OnDemand) RunCheck(ctx context.Context, command string, env []string, deadline time.Duration) (remote.CheckOutput, error) {
	h, release := o.acquire()
	defer release()
	if _, err := h.conn.Client(ctx); err != nil {
		return remote.CheckOutput{}, fmt.Errorf("%s: capture check over SSH: %w", o.opts.Name, err)
	}
	return h.RunCheck(ctx, command, env, deadline)
}

// ReadKernelFiles reads, over the host's connection, the Python a unit
// with Environment env loads for k (the directory with sitecustomize.py
// on its PYTHONPATH, then k's remote_dir) into dst, for the preflight's
// lint; its commands are reported as an action's are.
func (h *Host) ReadKernelFiles(ctx context.Context, k kernels.Kernel, env []string, dst string) (string, error) {
	emit := h.emitter()
	if emit == nil {
		emit = func(event.Event) bool { return true }
	}
	au := audited{h: h, emit: emit}
	dirs, err := kernelfiles.Dirs(ctx, au, env, k)
	if err != nil {
		return "", fmt.Errorf("%s: %w", h.opts.Name, err)
	}
	where := h.opts.Name + ":" + strings.Join(dirs, ",")
	if _, err := kernelfiles.Fetch(ctx, au, dirs, dst); err != nil {
		return where, fmt.Errorf("%s: %w", h.opts.Name, err)
	}
	return where, nil
}

// ReadKernelFiles reads them over the host's on-demand connection,
// opening it if it is not open.
func (o *OnDemand) ReadKernelFiles(ctx context.Context, k kernels.Kernel, env []string, dst string) (string, error) {
	h, release := o.acquire()
	defer release()
	if _, err := h.conn.Client(ctx); err != nil {
		return "", fmt.Errorf("%s: read the kernel files over SSH: %w", o.opts.Name, err)
	}
	return h.ReadKernelFiles(ctx, k, env, dst)
}

var (
	_ remote.CheckRunner  = (*Host)(nil)
	_ remote.CheckRunner  = (*OnDemand)(nil)
	_ remote.KernelReader = (*Host)(nil)
	_ remote.KernelReader = (*OnDemand)(nil)
)
