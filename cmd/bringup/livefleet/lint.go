package livefleet

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/config"
	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/kernelfiles"
	"github.com/bringup-dev/bringup/remote/sshx"
)

// fetchTimeout bounds reaching a host and reading its kernel files.
const fetchTimeout = 30 * time.Second

// KernelTree is the tree `bringup lint` reads: arg when it is a local
// directory or a path (none: k's local_dir), else the configured host arg names,
// whose kernel files (the sitecustomize.py on the unit's PYTHONPATH and
// k's remote_dir) are fetched over SSH into a temporary directory that
// release removes. where names what was read: the directory, or
// HOST:/dir,/dir.
func KernelTree(ctx context.Context, prompt io.Writer, cfgPath string, getenv func(string) string, arg string, k kernels.Kernel) (tree fs.FS, where string, release func(), err error) {
	if arg == "" {
		arg = k.LocalDir
	}
	if arg == "" {
		return nil, "", nil, fmt.Errorf("name the kernel's DIR or a HOST (the catalog gives no local_dir)")
	}
	if st, err := os.Stat(arg); err == nil && st.IsDir() || strings.ContainsRune(arg, os.PathSeparator) {
		return os.DirFS(arg), arg, func() {}, nil // a path: no host name has a slash
	}
	cfg, hosts, err := config.Flags{Path: cfgPath}.Open(getenv, []string{arg})
	if err != nil {
		return nil, "", nil, fmt.Errorf("%s: not a directory, nor a host of the config: %w", arg, err)
	}
	if len(hosts) != 1 {
		return nil, "", nil, fmt.Errorf("%s: one host at a time (it names %d)", arg, len(hosts))
	}
	rs, closeKeys, err := Resolve(ctx, prompt, cfg, hosts)
	if err != nil {
		return nil, "", nil, err
	}
	defer closeKeys()
	dst, err := os.MkdirTemp("", "bringup-lint-")
	if err != nil {
		return nil, "", nil, err
	}
	release = func() { os.RemoveAll(dst) }
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	h := rs[0]
	err = sshx.WithConn(ctx, h.SSH, sshx.ConnOptions{Dial: h.Dial}, func(c *sshx.Conn) error {
		env, err := kernelfiles.UnitEnvironment(ctx, c, h.Unit)
		if err != nil {
			return err
		}
		dirs, err := kernelfiles.Dirs(ctx, c, env, k)
		if err != nil {
			return err
		}
		where = h.Name + ":" + strings.Join(dirs, ",")
		_, err = kernelfiles.Fetch(ctx, c, dirs, dst)
		return err
	})
	if err != nil {
		release()
		return nil, "", nil, fmt.Errorf("%s: %w", arg, err)
	}
	return os.DirFS(dst), where, release, nil
}
