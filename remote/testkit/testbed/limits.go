package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Limit is a kernel setting Up raised so that its hosts boot: its sysctl
// name, the value it had and the value Up gave it. Up never lowers one,
// and Down leaves it raised (other runs may need it; it ends with the
// boot).
type Limit struct {
	Name string `json:"name"`
	From int64  `json:"from"`
	To   int64  `json:"to"`
}

func (l Limit) String() string { return fmt.Sprintf("%s %d → %d", l.Name, l.From, l.To) }

// limitNeed is what the booted hosts take of one per-user kernel limit
// (every host's processes are root's in the machine's user namespace, so
// all hosts of all runs share it): base for the machine itself, perHost
// for each host.
type limitNeed struct {
	name          string
	base, perHost int64
}

// hostLimitNeeds are the limits booting many hosts runs into. Measured on
// a booted Debian 12 host: its systemd (5), dbus-daemon, systemd-logind and
// agetty hold 8 inotify instances with 27 watches in all, so the default
// of 128 instances is full at 16 hosts and the 17th fails with "Failed to
// create control group inotify object: Too many open files". Each need is
// twice the measured use per host, above the kernel's default for the
// machine's own processes. Other limits were checked and are far: 18
// tasks a serving host (kernel.pid_max 32768), 1 key a host
// (kernel.keys.root_maxkeys 1000000), 1 neighbour entry a link
// (gc_thresh3 1024).
func hostLimitNeeds() []limitNeed {
	return []limitNeed{
		{name: "fs.inotify.max_user_instances", base: 128, perHost: 16},
		{name: "fs.inotify.max_user_watches", base: 8192, perHost: 64},
	}
}

// raiseLimits raises, under procSys (/proc/sys), every limit that hosts
// hosts would exceed, and returns what it changed. A value already at or
// above the need is left as it is.
func raiseLimits(procSys string, hosts int) ([]Limit, error) {
	var out []Limit
	var errs []error
	for _, n := range hostLimitNeeds() {
		p := filepath.Join(procSys, strings.ReplaceAll(n.name, ".", "/"))
		b, err := os.ReadFile(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s: %w", n.name, err))
			continue
		}
		cur, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s: %q: %w", n.name, strings.TrimSpace(string(b)), err))
			continue
		}
		need := n.base + n.perHost*int64(hosts)
		if cur >= need {
			continue
		}
		if err := os.WriteFile(p, []byte(strconv.FormatInt(need, 10)+"\n"), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("raise %s from %d to %d for %d hosts: %w", n.name, cur, need, hosts, err))
			continue
		}
		out = append(out, Limit{Name: n.name, From: cur, To: need})
	}
	return out, errors.Join(errs...)
}
