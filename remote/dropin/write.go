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
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"bringup/remote/sshx"
	"bringup/remote/systemd"
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

// host runs the steps of one change: as the login when it is root,
// through `sudo -n sh -c` otherwise.
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

// run runs script as root and returns its stdout.
func (h *host) run(ctx context.Context, what, script string) ([]byte, error) {
	cmd := script
	if h.sudo {
		cmd = "sudo -n sh -c " + sshx.ShellQuote(script)
	}
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

// prepare makes dst's directory, removes the temp files earlier runs of
// this writer left there (a run cut short between its temp write and its
// rename), and reads dst.
func (h *host) prepare(ctx context.Context, dst string) (File, error) {
	h.step(StepPrepare)
	dir, base := path.Split(dst)
	script := fmt.Sprintf("umask 022 && mkdir -p -- %s && find %s -maxdepth 1 -type f -name %s -delete && if [ -e %s ]; then printf 1 && cat -- %s; else printf 0; fi",
		sshx.ShellQuote(dir), sshx.ShellQuote(dir), sshx.ShellQuote(tempPrefix(base)+"*.tmp"), sshx.ShellQuote(dst), sshx.ShellQuote(dst))
	out, err := h.run(ctx, "read "+dst, script)
	if err != nil {
		return File{}, err
	}
	if len(out) == 0 || (out[0] != '0' && out[0] != '1') {
		return File{}, fmt.Errorf("%s: read %s: unexpected answer %q", h.name, dst, trim(out))
	}
	return File{Exists: out[0] == '1', Content: out[1:]}, nil
}

// tempPrefix is the name prefix of dst's temp files: hidden, and marked
// as bringup's so that the clean-up touches nothing else.
func tempPrefix(base string) string { return ".bringup-" + base + "-" }

// write replaces dst with content: a temp file in the same directory,
// fsync, rename over dst, fsync of the directory. A cut at any point
// leaves dst old or new, never partial; a temp file left behind is
// removed by the next prepare.
func (h *host) write(ctx context.Context, dst string, content []byte) error {
	dir, base := path.Split(dst)
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return fmt.Errorf("temp name: %w", err)
	}
	tmp := path.Join(dir, tempPrefix(base)+hex.EncodeToString(rnd[:])+".tmp")
	h.step(StepTemp)
	// base64 keeps the content one shell word whatever bytes it holds.
	if _, err := h.run(ctx, "write "+tmp, fmt.Sprintf("umask 022 && printf %%s %s | base64 -d > %s",
		base64.StdEncoding.EncodeToString(content), sshx.ShellQuote(tmp))); err != nil {
		return err
	}
	h.step(StepSyncTemp)
	if _, err := h.run(ctx, "fsync "+tmp, "sync -- "+sshx.ShellQuote(tmp)); err != nil {
		return err
	}
	h.step(StepRename)
	if _, err := h.run(ctx, "rename "+tmp, fmt.Sprintf("mv -f -T -- %s %s", sshx.ShellQuote(tmp), sshx.ShellQuote(dst))); err != nil {
		return err
	}
	return h.syncDir(ctx, dir)
}

// remove deletes dst and makes the removal durable.
func (h *host) remove(ctx context.Context, dst string) error {
	h.step(StepRename)
	if _, err := h.run(ctx, "remove "+dst, "rm -f -- "+sshx.ShellQuote(dst)); err != nil {
		return err
	}
	return h.syncDir(ctx, path.Dir(dst))
}

func (h *host) syncDir(ctx context.Context, dir string) error {
	h.step(StepSyncDir)
	_, err := h.run(ctx, "fsync "+dir, "sync -- "+sshx.ShellQuote(dir))
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
