// Package kernelfiles fetches the Python a host's service really loads
// for a kernel, for `bringup lint HOST`: the sitecustomize.py on the
// unit's PYTHONPATH (the directory that holds it) and the kernel's
// directory on the host (the catalog's remote_dir), read over the host's
// SSH connection as tar streams and laid out as Python's sys.path sees
// them (the first directory that holds a name wins).
package kernelfiles

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/systemd"
)

// Limits on what one fetch brings: a kernel's Python is small; a
// directory of megabytes is something else on PYTHONPATH.
const (
	MaxFileBytes  = 1 << 20
	MaxTotalBytes = 16 << 20
)

// Execer runs one command on the host (an *sshx.Conn).
type Execer interface {
	Exec(ctx context.Context, cmd string) (stdout, stderr []byte, exitCode int, err error)
}

// UnitEnvironment is unit's Environment on the host, read with
// `systemctl show` (for a caller without the fleet's copy, which D-Bus
// gives already unquoted): KEY=VALUE entries, systemd's quoting undone.
func UnitEnvironment(ctx context.Context, x Execer, unit string) ([]string, error) {
	out, errOut, code, err := x.Exec(ctx, "systemctl show -p Environment --value "+sshx.ShellQuote(unit))
	if err != nil || code != 0 {
		return nil, fmt.Errorf("read %s's Environment: %w", unit, cmdErr(err, code, errOut))
	}
	env, err := systemd.SplitList(string(out))
	if err != nil {
		return nil, fmt.Errorf("read %s's Environment: %w", unit, err)
	}
	return env, nil
}

// Dirs are the host's directories to lint for kernel k, for a unit whose
// Environment is env (KEY=VALUE entries): the first PYTHONPATH entry that
// holds a sitecustomize.py, then k's remote_dir (when it is another).
func Dirs(ctx context.Context, x Execer, env []string, k kernels.Kernel) ([]string, error) {
	var dirs []string
	if entries := PythonPath(env); len(entries) > 0 {
		var b strings.Builder
		b.WriteString("for d in")
		for _, d := range entries {
			b.WriteString(" " + sshx.ShellQuote(d))
		}
		b.WriteString(`; do if [ -f "$d/sitecustomize.py" ]; then printf '%s\n' "$d"; break; fi; done`)
		found, errOut, code, err := x.Exec(ctx, b.String())
		if err != nil || code != 0 {
			return nil, fmt.Errorf("look for sitecustomize.py on PYTHONPATH: %w", cmdErr(err, code, errOut))
		}
		if d := strings.TrimRight(string(found), "\n"); d != "" {
			dirs = append(dirs, d)
		}
	}
	if k.RemoteDir != "" && (len(dirs) == 0 || path.Clean(dirs[0]) != path.Clean(k.RemoteDir)) {
		dirs = append(dirs, k.RemoteDir)
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("no PYTHONPATH entry with a sitecustomize.py, and kernel %s no remote_dir", k.Name)
	}
	return dirs, nil
}

// PythonPath is the PYTHONPATH entries of an Environment (KEY=VALUE
// entries, as systemd hands them to the process: the last assignment
// wins), split as Python splits it: on ':' only, so a directory with a
// space is one entry. Relative and empty entries are left out: they name
// the service's working directory, which is not known here.
func PythonPath(env []string) []string {
	var pp string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PYTHONPATH="); ok {
			pp = v
		}
	}
	var out []string
	for _, d := range strings.Split(pp, ":") {
		if strings.HasPrefix(d, "/") {
			out = append(out, d)
		}
	}
	return out
}

// Fetch copies the Python files under each of dirs on the host into dst,
// a local directory, each dir's tree at dst's root (as sys.path entries
// are), a name already there kept (an earlier dir wins). It returns the
// files written, as host paths.
func Fetch(ctx context.Context, x Execer, dirs []string, dst string) ([]string, error) {
	var got []string
	total := 0
	for _, d := range dirs {
		cmd := "cd " + sshx.ShellQuote(d) + fmt.Sprintf(" && find . -name '*.py' -type f -size -%dk -print0 | tar --null -T - -cf -", MaxFileBytes>>10)
		out, errOut, code, err := x.Exec(ctx, cmd)
		if err != nil || code != 0 {
			return got, fmt.Errorf("read %s: %w", d, cmdErr(err, code, errOut))
		}
		files, n, err := extract(bytes.NewReader(out), dst, MaxTotalBytes-total)
		total += n
		for _, f := range files {
			got = append(got, path.Join(d, f))
		}
		if err != nil {
			return got, fmt.Errorf("read %s: %w", d, err)
		}
	}
	return got, nil
}

// extract writes the regular files of a tar stream under dst, skipping
// names already there and any name that would leave dst; budget bounds
// the bytes written.
func extract(r io.Reader, dst string, budget int) (files []string, written int, err error) {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, written, nil
		}
		if err != nil {
			return files, written, fmt.Errorf("tar: %w", err)
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if h.Typeflag != tar.TypeReg || !strings.HasSuffix(name, ".py") || !filepath.IsLocal(name) {
			continue
		}
		if written+int(h.Size) > budget {
			return files, written, fmt.Errorf("over %d bytes of Python", MaxTotalBytes)
		}
		p := filepath.Join(dst, filepath.FromSlash(name))
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return files, written, err
		}
		b, err := io.ReadAll(io.LimitReader(tr, h.Size))
		if err != nil {
			return files, written, fmt.Errorf("tar: %s: %w", name, err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return files, written, err
		}
		written += len(b)
		files = append(files, name)
	}
}

// cmdErr is why a command failed: its error, else its exit and stderr.
func cmdErr(err error, code int, errOut []byte) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("exit %d: %s", code, strings.TrimSpace(string(errOut)))
}
