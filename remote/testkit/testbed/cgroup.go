package testbed

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// Each host's container gets cgroups of its own. Without a systemd on the
// machine, nspawn leaves a container in its caller's cgroup, so hosts
// booted by one process share it, and their systemds trip over each
// other's unit cgroups ("Failed to attach to cgroup
// /system.slice/systemd-remount-fs.service: No such file or directory",
// status 219/CGROUP): a host came up degraded about one boot in ten.

// cgroupParent is the directory, in each hierarchy, holding the hosts'
// cgroups, one per machine name.
const cgroupParent = "bringup-testbed"

// cgroupRoots are the hierarchies systemd tracks units in: the v2 tree
// when it is all there is, else the named v1 systemd tree and the unified
// tree of a hybrid setup.
func cgroupRoots() []string {
	var out []string
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return []string{"/sys/fs/cgroup"}
	}
	for _, r := range []string{"/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified"} {
		if _, err := os.Stat(filepath.Join(r, "cgroup.procs")); err == nil {
			out = append(out, r)
		}
	}
	return out
}

// cgroupWrapper is run as `sh -c cgroupWrapper sh ROOT... -- NSPAWN-ARGS`
// with $BRTB_MACHINE set: it moves itself into the machine's cgroups and
// then becomes systemd-nspawn (same process id), so the container starts
// in them. A cgroup it cannot make is skipped: the host then boots as it
// would have without.
const cgroupWrapper = `for r in "$@"; do
  shift
  [ "$r" = -- ] && break
  d="$r/` + cgroupParent + `/$BRTB_MACHINE"
  mkdir -p "$d" 2>/dev/null && echo $$ > "$d/cgroup.procs" 2>/dev/null || true
done
exec systemd-nspawn "$@"`

// nspawnCommand is the argv that starts systemd-nspawn with args inside
// machine's own cgroups.
func nspawnCommand(args []string) []string {
	argv := append([]string{"/bin/sh", "-c", cgroupWrapper, "sh"}, cgroupRoots()...)
	argv = append(argv, "--")
	return append(argv, args...)
}

// machineCgroups lists the machine's cgroup directories that exist.
func machineCgroups(machine string) []string {
	var out []string
	for _, r := range cgroupRoots() {
		d := filepath.Join(r, cgroupParent, machine)
		if _, err := os.Stat(d); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// removeCgroups removes the machine's cgroups, deepest first (a cgroup
// goes with rmdir once it has no processes and no children).
func removeCgroups(machine string) error {
	var errs []error
	for _, d := range machineCgroups(machine) {
		var dirs []string
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		slices.Reverse(dirs)
		for _, p := range dirs {
			if err := syscall.Rmdir(p); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", p, err))
				break
			}
		}
	}
	return errors.Join(errs...)
}

// ownCgroups lists the machine names that have testbed cgroups.
func ownCgroups() []string {
	var out []string
	for _, r := range cgroupRoots() {
		ents, _ := os.ReadDir(filepath.Join(r, cgroupParent))
		for _, e := range ents {
			if e.IsDir() && !slices.Contains(out, e.Name()) {
				out = append(out, e.Name())
			}
		}
	}
	return out
}
