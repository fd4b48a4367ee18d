package live

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/deploy"
	"github.com/bringup-dev/bringup/remote/dropin"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/systemd"
)

// audited wraps the host's connection so that every command an action
// runs on the host is reported as a KindCommand event (the `@` view).
type audited struct {
	h    *Host
	emit remote.Emit
}

func (a audited) report(c *event.Command) {
	now := a.h.opts.Now()
	a.emit(event.Event{Host: a.h.opts.Name, Kind: event.KindCommand, Time: now, Seen: now, Command: c})
}

// Exec runs cmd over the connection and reports it.
func (a audited) Exec(ctx context.Context, cmd string) ([]byte, []byte, int, error) {
	return a.exec(ctx, cmd, a.h.conn.Exec, nil)
}

// ExecInput runs cmd with stdin as its input (a redeploy's tar stream and
// rsync rules) and reports it with how much it was fed.
func (a audited) ExecInput(ctx context.Context, cmd string, stdin io.Reader) ([]byte, []byte, int, error) {
	if stdin == nil {
		return a.Exec(ctx, cmd)
	}
	fed := &countingReader{r: stdin}
	return a.exec(ctx, cmd, func(ctx context.Context, cmd string) ([]byte, []byte, int, error) {
		return a.h.conn.ExecInput(ctx, cmd, fed)
	}, func() string { return fmt.Sprintf("%s < stdin (%s)", cmd, byteCount(fed.n)) })
}

// countingReader counts what is read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// byteCount is n bytes the way the log of commands shows sizes.
func byteCount(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// ExecTerm runs cmd the way systemd.ExecTerm does (a command cut short
// gets SIGTERM, which sudo relays) and reports it.
func (a audited) ExecTerm(ctx context.Context, cmd string) ([]byte, []byte, int, error) {
	return a.exec(ctx, cmd, func(ctx context.Context, cmd string) ([]byte, []byte, int, error) {
		return systemd.ExecTerm(ctx, a.h.conn, cmd)
	}, nil)
}

// exec runs cmd with run and reports it, as text() says when it is set
// (after the run: what it fed the command), else as cmd.
func (a audited) exec(ctx context.Context, cmd string, run func(context.Context, string) ([]byte, []byte, int, error), text func() string) ([]byte, []byte, int, error) {
	start := time.Now()
	out, errOut, code, err := run(ctx, cmd)
	shown := cmd
	if text != nil {
		shown = text()
	}
	c := &event.Command{Via: "exec", Text: shown, Exit: code, Duration: time.Since(start)}
	if err != nil {
		c.Err = err.Error()
	} else if code != 0 {
		c.Err = firstLine(string(errOut))
	}
	a.report(c)
	return out, errOut, code, err
}

// DialUnix opens the bus channel; the calls on it are reported by do.
func (a audited) DialUnix(ctx context.Context, path string) (net.Conn, error) {
	return a.h.conn.DialUnix(ctx, path)
}

// Client returns the SSH client (SFTP, the stdio bridge).
func (a audited) Client(ctx context.Context) (*ssh.Client, error) { return a.h.conn.Client(ctx) }

// call runs one step that is not a plain command (a D-Bus call, a
// transfer) and reports it with its outcome.
func (a audited) call(via, text string, f func() (string, error)) error {
	start := time.Now()
	result, err := f()
	c := &event.Command{Via: via, Text: text, Result: result, Duration: time.Since(start)}
	if err != nil {
		c.Err = err.Error()
	}
	a.report(c)
	return err
}

// Do runs an action over the host's connection. Every command it runs on
// the host is reported as a KindCommand event.
func (h *Host) Do(ctx context.Context, a remote.Action, emit remote.Emit) error {
	au := audited{h: h, emit: emit}
	ctl := systemd.NewController(au, h.opts.Name)
	unit := h.opts.Unit
	switch a.Kind {
	case remote.ActRestart:
		if !a.Force {
			if err := h.preflight(ctx, au, ctl); err != nil {
				return err
			}
		}
		return au.call("dbus", "RestartUnit "+unit, func() (string, error) {
			o, err := ctl.Restart(ctx, unit)
			return string(o), err
		})
	case remote.ActStop:
		return au.call("dbus", "StopUnit "+unit, func() (string, error) {
			o, err := ctl.Stop(ctx, unit)
			return string(o), err
		})
	case remote.ActResetFailed:
		return au.call("dbus", "ResetFailedUnit "+unit, func() (string, error) {
			return "done", ctl.ResetFailed(ctx, unit)
		})
	case remote.ActSetMode:
		k, _, err := h.opts.Kernels.ParseAssignment(a.Kernel + "=" + a.Mode)
		if err != nil {
			return fmt.Errorf("%s: %w", h.opts.Name, err)
		}
		c, err := dropin.SetMode(ctx, au, ctl, unit, k, a.Mode, dropin.SetOptions{Runtime: a.Runtime, Host: h.opts.Name})
		if c.Path != "" {
			h.remember(c) // even a failed verify leaves a file to undo
		}
		if err != nil {
			return err
		}
		h.progress(emit, fmt.Sprintf("%s: %s=%s written to %s; Environment read back", a.Kernel, k.EnvVar, a.Mode, c.Path), 100)
		return nil
	case remote.ActUndoMode:
		k, ok := h.opts.Kernels.Kernel(a.Kernel)
		if !ok {
			return fmt.Errorf("%s: unknown kernel %q", h.opts.Name, a.Kernel)
		}
		c, ok := h.lastChange(a.Kernel)
		if !ok {
			return fmt.Errorf("%s: no mode change of %s to undo in this session", h.opts.Name, a.Kernel)
		}
		if err := dropin.Undo(ctx, au, ctl, c, k, dropin.SetOptions{Runtime: c.Path != "" && strings.HasPrefix(c.Path, "/run/"), Host: h.opts.Name}); err != nil {
			return err
		}
		h.forget(a.Kernel)
		return nil
	case remote.ActDaemonReload:
		return au.call("dbus", "Reload", func() (string, error) {
			return "done", ctl.DaemonReload(ctx)
		})
	case remote.ActRedeploy:
		return h.redeploy(ctx, au, a, emit)
	case remote.ActBench:
		return h.bench(ctx, au, a, emit)
	}
	return fmt.Errorf("%s: %s: unknown action", h.opts.Name, a)
}

// preflight refuses a restart that would fail at graph capture: it reads
// the unit's ExecStart and Environment fresh from the host.
func (h *Host) preflight(ctx context.Context, au audited, ctl *systemd.Controller) error {
	env, err := ctl.ReadEnvironment(ctx, h.opts.Unit)
	if err != nil {
		return fmt.Errorf("%s: preflight: %w", h.opts.Name, err)
	}
	exec, err := dropin.ReadExecStart(ctx, au, h.opts.Unit)
	if err != nil {
		return fmt.Errorf("%s: preflight: %w", h.opts.Name, err)
	}
	st := remote.HostState{Name: h.opts.Name, UnitState: event.Unit{Environment: env, ExecStart: exec}}
	if pe := remote.Preflight(st, h.opts.Kernels, h.opts.Engine); pe != nil {
		return pe
	}
	return nil
}

// redeploy syncs a kernel's local build to the host, reporting progress.
func (h *Host) redeploy(ctx context.Context, au audited, a remote.Action, emit remote.Emit) error {
	name := a.Kernel
	if name == "" && len(h.opts.Kernels.Kernels) > 0 {
		name = h.opts.Kernels.Kernels[0].Name
	}
	k, ok := h.opts.Kernels.Kernel(name)
	if !ok {
		return fmt.Errorf("%s: unknown kernel %q", h.opts.Name, name)
	}
	if k.LocalDir == "" || k.RemoteDir == "" {
		return fmt.Errorf("%s: kernel %s has no local_dir/remote_dir to deploy", h.opts.Name, k.Name)
	}
	var mu sync.Mutex
	last := -1
	progress := func(p deploy.Progress) {
		if p.Total <= 0 {
			return
		}
		// The deadline grows with what is sent (once: ExpectBytes keeps
		// the largest count it was told).
		remote.ExpectBytes(ctx, p.Total)
		pct := int(p.Done * 100 / p.Total)
		mu.Lock()
		defer mu.Unlock()
		if pct == last || (pct < 100 && pct-last < 5) {
			return // a few dozen events per deploy, not one per read
		}
		last = pct
		h.progress(emit, "sending "+p.File, pct)
	}
	var res deploy.Result
	err := au.call("sftp", fmt.Sprintf("sync %s → %s", k.LocalDir, k.RemoteDir), func() (string, error) {
		var err error
		res, err = deploy.Sync(ctx, au, k.LocalDir, k.RemoteDir, deploy.Options{Progress: progress})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%d sent, %d unchanged, %d deleted, %d replaced, hash %.12s", len(res.Uploaded), res.Unchanged, len(res.Deleted), len(res.Replaced), res.Hash), nil
	})
	if err != nil {
		return err
	}
	replaced := ""
	if len(res.Replaced) > 0 {
		replaced = fmt.Sprintf("; replaced what stood where the build has a directory (a symlink is removed, never followed): %s", someNames(res.Replaced))
	}
	h.progress(emit, fmt.Sprintf("%s deployed: %d file(s) sent (%s)%s, content sha256 %.12s…; takes effect at the next restart",
		k.Name, len(res.Uploaded), someNames(res.Uploaded), replaced, res.Hash), 100)
	return nil
}

// someNames lists the first few of names and counts the rest: a redeploy
// of 40 000 files is one line, not a megabyte.
func someNames(names []string) string {
	const shown = 8
	if len(names) <= shown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:shown], ", "), len(names)-shown)
}

// progress reports how far an action is; the fleet gives it the action's id.
func (h *Host) progress(emit remote.Emit, detail string, pct int) {
	now := h.opts.Now()
	emit(event.Event{Host: h.opts.Name, Kind: event.KindAction, Time: now, Seen: now,
		Action: &event.ActionResult{Stage: event.ActionProgress, Detail: detail, Percent: pct}})
}

func (h *Host) remember(c dropin.Change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.changes == nil {
		h.changes = map[string]dropin.Change{}
	}
	h.changes[c.Kernel] = c
}

func (h *Host) lastChange(kernel string) (dropin.Change, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.changes[kernel]
	return c, ok
}

func (h *Host) forget(kernel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.changes, kernel)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
