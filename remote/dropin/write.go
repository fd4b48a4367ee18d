// Package dropin sets a kernel's mode on a host: it writes the kernel's
// systemd drop-in atomically over SSH, reloads systemd once, and reads the
// unit's Environment back before anyone restarts the unit; it undoes the
// last change byte for byte, and reads the mode the running process
// started with. The rendering is kernels.RenderDropIn; this package is
// the IO around it.
package dropin

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/systemd"
)

// Runner runs a command on the host; *sshx.Conn satisfies it. A non-zero
// exit is not an error; err is for transport failures.
type Runner interface {
	Exec(ctx context.Context, cmd string) (stdout, stderr []byte, exitCode int, err error)
}

// Step is one step of a change on the host, in order.
type Step string

// The steps of a write, as passed to SetOptions.StepHook.
const (
	StepPrepare  Step = "prepare"       // directory made, stale temp files removed, current file read
	StepTemp     Step = "temp"          // new content written to a temp file in the same directory
	StepSyncTemp Step = "sync-temp"     // temp file fsynced
	StepRename   Step = "rename"        // temp file renamed over the target (or the target removed)
	StepSyncDir  Step = "sync-dir"      // directory fsynced
	StepReload   Step = "daemon-reload" // systemd re-reads its units
	StepVerify   Step = "verify"        // the unit's Environment read back
)

// SetOptions tune SetMode, Undo and WriteFile.
type SetOptions struct {
	// Runtime puts the drop-in under /run/systemd/system (lost on reboot).
	Runtime bool
	// Host names the host in errors; empty means the Runner's Host() if
	// it has one.
	Host string
	// StepHook, when set, is called before each step. Tests use it to cut
	// the connection at a chosen step.
	StepHook func(Step)
}

// File is a file's state on the host before a change.
type File struct {
	Exists  bool
	Content []byte
}

// host runs the steps of one change. What needs root runs as one of
// sshx's fixed commands (sshx.DropIn…Cmd), through `sudo -n` for a
// non-root login, so that a sudoers rule can allow exactly those; what
// does not (reading the drop-in, fsync) runs as the login.
type host struct {
	r    Runner
	name string
	sudo bool
	hook func(Step)
}

// newHost asks the login's uid once per change.
func newHost(ctx context.Context, r Runner, o SetOptions) (*host, error) {
	h := &host{r: r, name: o.Host, hook: o.StepHook}
	if h.name == "" {
		if n, ok := r.(interface{ Host() string }); ok {
			h.name = n.Host()
		}
	}
	out, errOut, code, err := r.Exec(ctx, "id -u")
	if err != nil {
		return nil, fmt.Errorf("%s: id -u: %w", h.name, err)
	}
	uid, perr := strconv.Atoi(strings.TrimSpace(string(out)))
	if code != 0 || perr != nil {
		return nil, fmt.Errorf("%s: id -u: exit %d: %q", h.name, code, trim(errOut))
	}
	h.sudo = uid != 0
	return h, nil
}

// step announces s to the hook.
func (h *host) step(s Step) {
	if h.hook != nil {
		h.hook(s)
	}
}

// root runs privileged commands, in order, each only if the one before
// succeeded; the login's shell joins them, sudo runs each alone.
func (h *host) root(ctx context.Context, what string, cmds ...sshx.RootCmd) ([]byte, error) {
	lines := make([]string, len(cmds))
	for i, c := range cmds {
		lines[i] = c.Line(h.sudo)
	}
	return h.exec(ctx, what, strings.Join(lines, " && "))
}

// exec runs cmd as the login and returns its stdout; a failure names the
// step, and a sudo refusal inside it is classified.
func (h *host) exec(ctx context.Context, what, cmd string) ([]byte, error) {
	out, errOut, code, err := h.r.Exec(ctx, cmd)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", h.name, what, err)
	}
	if code != 0 {
		if h.sudo {
			if serr := systemd.SudoRefusal(h.name, string(errOut)); serr != nil {
				return nil, fmt.Errorf("%s: %w", what, serr)
			}
		}
		return nil, fmt.Errorf("%s: %s: exit %d: %q", h.name, what, code, trim(errOut))
	}
	return out, nil
}

// prepare makes dst's directory, removes the temp file an earlier run cut
// short between its temp write and its rename left there, and reads dst
// (as the login: drop-ins are world-readable).
func (h *host) prepare(ctx context.Context, dst string) (File, error) {
	h.step(StepPrepare)
	if _, err := h.root(ctx, "prepare "+path.Dir(dst), sshx.DropInMkdirCmd(dst), sshx.DropInCleanCmd(dst)); err != nil {
		return File{}, err
	}
	q := sshx.ShellQuote(dst)
	out, err := h.exec(ctx, "read "+dst, "if [ -e "+q+" ]; then printf 1 && cat -- "+q+"; else printf 0; fi")
	if err != nil {
		return File{}, err
	}
	if len(out) == 0 || (out[0] != '0' && out[0] != '1') {
		return File{}, fmt.Errorf("%s: read %s: unexpected answer %q", h.name, dst, trim(out))
	}
	return File{Exists: out[0] == '1', Content: out[1:]}, nil
}

// write replaces dst with content: its temp file in the same directory
// (installed from stdin, read back), fsync, rename over dst, fsync of
// the directory. A cut at any point leaves dst old or new, never
// partial; a temp file left behind is removed by the next prepare.
func (h *host) write(ctx context.Context, dst string, content []byte) error {
	tmp := sshx.DropInTemp(dst)
	h.step(StepTemp)
	// The content reaches the privileged install on stdin, through the
	// login's own pipe: base64 keeps it one shell word whatever bytes it
	// holds. A drop-in is a few hundred bytes, far below any argument
	// limit; reading it back catches a pipe that broke on the way.
	feed := "printf %s " + base64.StdEncoding.EncodeToString(content) + " | base64 -d | "
	if _, err := h.exec(ctx, "write "+tmp, feed+sshx.DropInInstallCmd(dst).Line(h.sudo)); err != nil {
		return err
	}
	h.step(StepSyncTemp)
	got, err := h.exec(ctx, "fsync "+tmp, "sync -- "+sshx.ShellQuote(tmp)+" && cat -- "+sshx.ShellQuote(tmp))
	if err != nil {
		return err
	}
	if !bytes.Equal(got, content) {
		return fmt.Errorf("%s: write %s: %d bytes on disk differ from the %d written", h.name, tmp, len(got), len(content))
	}
	h.step(StepRename)
	if _, err := h.root(ctx, "rename "+tmp, sshx.DropInRenameCmd(dst)); err != nil {
		return err
	}
	return h.syncDir(ctx, path.Dir(dst))
}

// remove deletes dst and makes the removal durable.
func (h *host) remove(ctx context.Context, dst string) error {
	h.step(StepRename)
	if _, err := h.root(ctx, "remove "+dst, sshx.DropInRemoveCmd(dst)); err != nil {
		return err
	}
	return h.syncDir(ctx, path.Dir(dst))
}

// syncDir flushes dir (a rename or an unlink in it) as the login: fsync
// needs no more than read access.
func (h *host) syncDir(ctx context.Context, dir string) error {
	h.step(StepSyncDir)
	_, err := h.exec(ctx, "fsync "+dir, "sync -- "+sshx.ShellQuote(dir))
	return err
}

// WriteFile replaces the file at dst on the host atomically (see
// SetMode for the steps) and returns what was there before. It does not
// reload systemd.
func WriteFile(ctx context.Context, r Runner, dst string, content []byte, o SetOptions) (File, error) {
	if !path.IsAbs(dst) || path.Clean(dst) != dst {
		return File{}, fmt.Errorf("write %q: want a clean absolute path", dst)
	}
	h, err := newHost(ctx, r, o)
	if err != nil {
		return File{}, err
	}
	prev, err := h.prepare(ctx, dst)
	if err != nil {
		return File{}, err
	}
	return prev, h.write(ctx, dst, content)
}

// trim shortens remote output for an error message.
func trim(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 300 {
		b = append(b[:300:300], "…"...)
	}
	return string(b)
}

// ErrChanged is returned by Undo when the drop-in is no longer the one the
// change wrote: someone changed it since, and undoing would lose that.
var ErrChanged = errors.New("the drop-in changed since")
