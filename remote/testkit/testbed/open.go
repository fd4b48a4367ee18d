package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Open attaches to the running testbed whose inventory is dir, as the
// command line's down and status do after up has exited.
func Open(dir string) (*Testbed, error) {
	inv, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("testbed: open %s: %w", dir, err)
	}
	st, err := readRun(filepath.Join(inv, stateName))
	if err != nil {
		return nil, fmt.Errorf("testbed: open %s: %w", inv, err)
	}
	key, err := os.ReadFile(filepath.Join(inv, keyName))
	if err != nil {
		return nil, fmt.Errorf("testbed: open %s: %w", inv, err)
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("testbed: open %s: key: %w", inv, err)
	}
	cb, err := knownhosts.New(filepath.Join(inv, knownHostsName))
	if err != nil {
		return nil, fmt.Errorf("testbed: open %s: %w", inv, err)
	}
	runDir := st.RunDir
	if runDir == "" {
		runDir = DefaultRunDir
	}
	return &Testbed{runDir: runDir, logf: func(string, ...any) {}, signer: signer, hostKeyCB: cb, st: st}, nil
}

// Run describes one recorded run, for listings.
type Run struct {
	ID        string
	Inventory string
	Detached  bool // made by the command line; stays until down
	Live      bool // its owner still runs, or it is detached
	OwnerPID  int
	Hosts     []string // "gpu1 10.213.0.2"
}

// Runs lists the runs recorded in runDir ("" for DefaultRunDir).
func Runs(runDir string) ([]Run, error) {
	if runDir == "" {
		runDir = DefaultRunDir
	}
	runs, _, err := readRuns(runDir)
	if err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	out := make([]Run, 0, len(runs))
	for _, r := range runs {
		x := Run{ID: r.RunID, Inventory: r.Inventory, Detached: r.Detached, Live: r.live(), OwnerPID: r.Owner.PID}
		for _, h := range r.Hosts {
			x.Hosts = append(x.Hosts, h.Name+" "+h.Addr)
		}
		out = append(out, x)
	}
	return out, nil
}

// Clean removes every detached run in runDir ("" for DefaultRunDir), every
// run whose owner has died, and every testbed namespace, link or nspawn
// process that no remaining run claims. Runs of live test processes stay.
func Clean(ctx context.Context, runDir string, logf func(string, ...any)) error {
	if runDir == "" {
		runDir = DefaultRunDir
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	unlock, err := flock(ctx, filepath.Join(runDir, lockName))
	if err != nil {
		return fmt.Errorf("testbed: clean: %w", err)
	}
	defer unlock()
	if err := sweep(ctx, runDir, "", func(r runState) bool { return r.Detached }, logf); err != nil {
		return fmt.Errorf("testbed: clean: %w", err)
	}
	return nil
}

// Leftovers lists every testbed namespace, link and process on the
// machine, whichever run made it: systemd-nspawn processes running a
// testbed machine, processes in testbed namespaces, and infersim
// processes outside the machine's own network namespace. Runs still in use
// are listed too; a run's own leftovers are (*Testbed).Leftovers.
func Leftovers() ([]string, error) {
	var out []string
	nss, err := ownNetns()
	if err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	ids := map[string]string{}
	for _, ns := range nss {
		out = append(out, "netns "+ns)
		if id, err := netnsIDOfFile(filepath.Join(netnsDir, ns)); err == nil {
			ids[id] = ns
		}
	}
	links, err := ownLinks()
	if err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	for _, l := range links {
		out = append(out, "link "+l)
	}
	for _, m := range ownCgroups() {
		out = append(out, "cgroups of "+m)
	}
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	ps, err := listProcs()
	if err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	for _, p := range ps {
		switch {
		case nspawnMachine(p) != "":
			out = append(out, fmt.Sprintf("nspawn process %d (%s)", p.PID, nspawnMachine(p)))
		case ids[p.NetNS] != "":
			out = append(out, fmt.Sprintf("process %d %s in %s", p.PID, p.Comm, ids[p.NetNS]))
		case p.Comm == "infersim" && p.NetNS != self:
			out = append(out, fmt.Sprintf("infersim process %d in %s", p.PID, p.NetNS))
		}
	}
	slices.Sort(out)
	return out, nil
}
