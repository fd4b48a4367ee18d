package dropin

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/sshx"
)

// ModeController is the part of a unit controller SetMode needs;
// *systemd.Controller satisfies it.
type ModeController interface {
	// DaemonReload makes systemd re-read unit files and drop-ins.
	DaemonReload(ctx context.Context) error
	// ReadEnvironment reads the unit's Environment property.
	ReadEnvironment(ctx context.Context, unit string) ([]string, error)
}

// Change is one mode change on one host: enough to show it and to undo it.
type Change struct {
	Host, Unit, Kernel, Mode string
	Path                     string // the drop-in
	Previous                 File   // what was at Path before
	New                      []byte // what SetMode wrote
	// EnvBefore and EnvAfter are the unit's Environment property before
	// the write and after the reload.
	EnvBefore, EnvAfter []string
}

// VerifyError is the unit's Environment, read back after the reload, not
// being what the drop-in asks: a drop-in sorting after bringup's, or a
// setting elsewhere, overrides it. No restart should follow.
type VerifyError struct {
	Host, Unit, Path string
	Key              string
	Want, Got        string
	Missing          bool // the variable is not set at all
	NeedReload       bool // systemd still reports NeedDaemonReload=yes
}

func (e *VerifyError) Error() string {
	if e.NeedReload {
		return fmt.Sprintf("%s: %s still needs a daemon-reload after the reload (is another tool writing unit files?)", e.Host, e.Unit)
	}
	got := strconv.Quote(e.Got)
	if e.Missing {
		got = "unset"
	}
	return fmt.Sprintf("%s: %s: after daemon-reload %s is %s, want %q: a drop-in sorting after %s or a setting elsewhere overrides it (see systemctl cat %s)",
		e.Host, e.Unit, e.Key, got, e.Want, path.Base(e.Path), e.Unit)
}

// SetMode sets kernel k's mode for unit on the host: it renders k's
// drop-in from the unit's current Environment (keeping its PYTHONPATH),
// writes it atomically (temp file in the drop-in directory, fsync, rename,
// fsync of the directory; stale temp files of earlier cut-short runs are
// removed first), issues one daemon-reload, and reads the unit's
// Environment back: it must set k's variable to mode and, for modes other
// than off, PYTHONPATH to what the drop-in says, and leave every other
// variable as it was. Only then may the caller restart the unit.
//
// On a VerifyError the new drop-in stays on disk (so that the operator
// can see what was written) and the returned Change is complete: Undo
// puts the previous file back. After any other error the change may or
// may not have reached the disk; the Change returned holds what is known.
func SetMode(ctx context.Context, r Runner, ctl ModeController, unit string, k kernels.Kernel, mode string, o SetOptions) (Change, error) {
	c := Change{Unit: unit, Kernel: k.Name, Mode: mode, Path: kernels.DropInPath(unit, k.Name, o.Runtime)}
	if err := kernels.CheckDropInNames(unit, k.Name); err != nil {
		return c, fmt.Errorf("set %s=%s: %w", k.Name, mode, err)
	}
	if _, err := kernels.DropInEnv(k, mode, nil); err != nil {
		return c, fmt.Errorf("set %s=%s: %w", k.Name, mode, err)
	}
	h, err := newHost(ctx, r, o)
	if err != nil {
		return c, fmt.Errorf("set %s=%s: %w", k.Name, mode, err)
	}
	c.Host = h.name
	before, err := ctl.ReadEnvironment(ctx, unit)
	if err != nil {
		return c, fmt.Errorf("%s: set %s=%s: %w", h.name, k.Name, mode, err)
	}
	c.EnvBefore = before
	if c.New, err = kernels.RenderDropIn(k, mode, before); err != nil {
		return c, fmt.Errorf("%s: set %s=%s: %w", h.name, k.Name, mode, err)
	}
	if c.Previous, err = h.prepare(ctx, c.Path); err != nil {
		return c, err
	}
	if err := h.write(ctx, c.Path, c.New); err != nil {
		return c, err
	}
	want, _ := kernels.DropInEnv(k, mode, before)
	c.EnvAfter, err = reloadAndVerify(ctx, h, ctl, c, k, before, want)
	return c, err
}

// Undo puts back what was at c.Path before c (removes the drop-in if
// there was none), reloads systemd once and checks that k's variable and
// PYTHONPATH are back to c.EnvBefore. It refuses with ErrChanged when the
// drop-in on disk is no longer c.New.
func Undo(ctx context.Context, r Runner, ctl ModeController, c Change, k kernels.Kernel, o SetOptions) error {
	if k.Name != c.Kernel {
		return fmt.Errorf("undo %s: change is for kernel %s", k.Name, c.Kernel)
	}
	if err := kernels.CheckDropInNames(c.Unit, c.Kernel); err != nil {
		return fmt.Errorf("undo %s=%s: %w", c.Kernel, c.Mode, err)
	}
	if o.Host == "" {
		o.Host = c.Host
	}
	h, err := newHost(ctx, r, o)
	if err != nil {
		return fmt.Errorf("undo %s=%s: %w", c.Kernel, c.Mode, err)
	}
	cur, err := h.prepare(ctx, c.Path)
	if err != nil {
		return err
	}
	if !cur.Exists || !bytes.Equal(cur.Content, c.New) {
		return fmt.Errorf("%s: undo %s=%s: %s: %w", h.name, c.Kernel, c.Mode, c.Path, ErrChanged)
	}
	if c.Previous.Exists {
		err = h.write(ctx, c.Path, c.Previous.Content)
	} else {
		err = h.remove(ctx, c.Path)
	}
	if err != nil {
		return err
	}
	var want []string
	for _, key := range []string{k.EnvVar, kernels.PythonPathVar} {
		if v, ok := kernels.EnvValue(c.EnvBefore, key); ok {
			want = append(want, key+"="+v)
		}
	}
	_, err = reloadAndVerify(ctx, h, ctl, c, k, c.EnvBefore, want)
	return err
}

// reloadAndVerify issues the one daemon-reload of a change and checks the
// unit's Environment against want (KEY=VALUE that must hold) and before
// (every variable other than k's and PYTHONPATH must be unchanged).
func reloadAndVerify(ctx context.Context, h *host, ctl ModeController, c Change, k kernels.Kernel, before, want []string) ([]string, error) {
	h.step(StepReload)
	if err := ctl.DaemonReload(ctx); err != nil {
		return nil, fmt.Errorf("%s: daemon-reload after writing %s: %w", h.name, c.Path, err)
	}
	h.step(StepVerify)
	after, err := ctl.ReadEnvironment(ctx, c.Unit)
	if err != nil {
		return nil, fmt.Errorf("%s: read back the environment of %s: %w", h.name, c.Unit, err)
	}
	if err := checkEnv(before, after, want, k.EnvVar); err != nil {
		err.Host, err.Unit, err.Path = h.name, c.Unit, c.Path
		return after, err
	}
	out, errOut, code, err := h.r.Exec(ctx, "systemctl show -p NeedDaemonReload --value -- "+sshx.ShellQuote(c.Unit))
	switch {
	case err != nil:
		return after, fmt.Errorf("%s: read NeedDaemonReload of %s: %w", h.name, c.Unit, err)
	case code != 0:
		return after, fmt.Errorf("%s: read NeedDaemonReload of %s: exit %d: %q", h.name, c.Unit, code, trim(errOut))
	case strings.TrimSpace(string(out)) == "yes":
		return after, &VerifyError{Host: h.name, Unit: c.Unit, Path: c.Path, NeedReload: true}
	}
	return after, nil
}

// checkEnv compares the environment read back with what was asked.
func checkEnv(before, after, want []string, modeVar string) *VerifyError {
	for _, kv := range want {
		key, val, _ := strings.Cut(kv, "=")
		got, ok := kernels.EnvValue(after, key)
		if !ok || got != val {
			return &VerifyError{Key: key, Want: val, Got: got, Missing: !ok}
		}
	}
	keys := map[string]bool{}
	for _, env := range [][]string{before, after} {
		for _, kv := range env {
			key, _, _ := strings.Cut(kv, "=")
			keys[key] = true
		}
	}
	sorted := make([]string, 0, len(keys))
	for key := range keys {
		sorted = append(sorted, key)
	}
	slices.Sort(sorted)
	for _, key := range sorted {
		if key == modeVar || key == kernels.PythonPathVar {
			continue
		}
		b, bok := kernels.EnvValue(before, key)
		a, aok := kernels.EnvValue(after, key)
		if a != b || aok != bok {
			return &VerifyError{Key: key, Want: b, Got: a, Missing: !aok}
		}
	}
	return nil
}

// ProcessEnv reads the environment process pid started with
// (/proc/PID/environ, through sudo for a non-root login). pid 0 (no main
// process) gives nil and no error. Values are returned as they are:
// remote text, to be sanitised before display.
func ProcessEnv(ctx context.Context, r Runner, pid int, o SetOptions) ([]string, error) {
	if pid <= 0 {
		return nil, nil
	}
	h, err := newHost(ctx, r, o)
	if err != nil {
		return nil, err
	}
	out, err := h.root(ctx, fmt.Sprintf("read the environment of pid %d", pid), sshx.EnvironCmd(pid))
	if err != nil {
		return nil, err
	}
	env := []string{}
	for kv := range bytes.SplitSeq(out, []byte{0}) {
		if len(kv) > 0 {
			env = append(env, string(kv))
		}
	}
	return env, nil
}

// RunningModes is each kernel's mode in the environment the unit's main
// process (mainPID) started with; nil when mainPID is 0.
func RunningModes(ctx context.Context, r Runner, mainPID int, c kernels.Catalog, o SetOptions) ([]kernels.ActiveMode, error) {
	env, err := ProcessEnv(ctx, r, mainPID, o)
	if err != nil || env == nil {
		return nil, err
	}
	return c.ModesIn(env), nil
}

// ReadExecStart reads unit's ExecStart as systemctl shows it (`{ path=… ;
// argv[]=… ; … }`), the input kernels.Preflight takes.
func ReadExecStart(ctx context.Context, r Runner, unit string) (string, error) {
	cmd := "systemctl show -p ExecStart --value -- " + sshx.ShellQuote(unit)
	out, errOut, code, err := r.Exec(ctx, cmd)
	switch {
	case err != nil:
		return "", fmt.Errorf("read ExecStart of %s: %w", unit, err)
	case code != 0:
		return "", fmt.Errorf("%s: exit %d: %q", cmd, code, trim(errOut))
	}
	return strings.TrimSpace(string(out)), nil
}
