package testbed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// hostState is everything made for one host, recorded before it is made
// so that a teardown (this process's, or a later run's sweep) can remove
// exactly it.
type hostState struct {
	Index    int    `json:"index"`
	Name     string `json:"name"`
	Addr     string `json:"addr"`
	RootAddr string `json:"root_addr"`
	Slot     int    `json:"slot"`
	NetNS    string `json:"netns"`
	NetNSID  string `json:"netns_id,omitempty"` // "net:[inode]", once made
	Link     string `json:"link"`
	Machine  string `json:"machine"`
	// MachineID is the host's /etc/machine-id.
	MachineID string      `json:"machine_id"`
	Nspawn    proc        `json:"nspawn"`
	Leader    proc        `json:"leader"` // the container's PID 1
	Options   HostOptions `json:"options"`
	Console   string      `json:"console"`
	// Argv is the systemd-nspawn command line that boots the host, kept
	// to boot it again after a reboot.
	Argv []string `json:"argv,omitempty"`
}

// runState is one run of Up: its hosts and who owns it.
type runState struct {
	RunID string `json:"run_id"`
	// Owner is the process that ran Up. While it lives the run is in use;
	// once it is gone (a killed test) the run is a leftover.
	Owner proc `json:"owner"`
	// Detached runs (`testbed up`) outlive their owner: only Down, an up
	// with the same inventory, or Clean removes them.
	Detached  bool   `json:"detached"`
	Inventory string `json:"inventory"`
	// OwnInventory says Up made the inventory directory (the default one
	// under the run directory, or a --inventory that did not exist): Down
	// removes it whole. Otherwise only the run's state file goes from it.
	OwnInventory bool        `json:"own_inventory,omitempty"`
	RunDir       string      `json:"run_dir"`
	Created      time.Time   `json:"created"`
	Hosts        []hostState `json:"hosts"`
	// Store is the run's log store (Options.LogStore), nil without one.
	Store *storeState `json:"store,omitempty"`
}

// live reports whether the run is still wanted by someone.
func (r runState) live() bool { return r.Detached || r.Owner.alive() }

// Files in the run directory.
const (
	runsSubdir = "runs"
	lockName   = "lock"
	stateName  = "state.json"
)

// recordPath is where the run directory keeps r's record.
func recordPath(runDir, runID string) string {
	return filepath.Join(runDir, runsSubdir, runID+".json")
}

// writeJSON writes v to path through a temporary file and a rename, so a
// reader never sees half a record.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// readRun reads a run record or state.json.
func readRun(path string) (runState, error) {
	var r runState
	b, err := os.ReadFile(path)
	if err != nil {
		return r, fmt.Errorf("read run state: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("parse %s: %w", path, err)
	}
	return r, nil
}

// readRuns reads every record in the run directory. A record that cannot
// be parsed is returned by path in bad, for the caller to remove.
func readRuns(runDir string) (runs []runState, bad []string, err error) {
	dir := filepath.Join(runDir, runsSubdir)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list runs: %w", err)
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		r, err := readRun(p)
		if err != nil {
			bad = append(bad, p)
			continue
		}
		runs = append(runs, r)
	}
	return runs, bad, nil
}

// sweep removes what earlier runs left: runs whose owner died, detached
// runs that drop (as chosen by drop), with the inventories they made, then
// namespaces, links and nspawn processes with the testbed's prefix that no
// remaining run claims, and inventories under runDir that no run record
// names any more. keepInv (if not "") is the inventory of the run being
// made, which may be a dropped run's: it stays. The caller holds the run
// directory's lock, so no run is being recorded meanwhile; runs being
// booted are live and left alone.
func sweep(ctx context.Context, runDir, keepInv string, drop func(runState) bool, logf func(string, ...any)) error {
	runs, bad, err := readRuns(runDir)
	if err != nil {
		return err
	}
	for _, p := range bad {
		logf("testbed: removing unreadable run record %s", p)
		_ = os.Remove(p)
	}
	var errs []error
	keep := map[string]bool{} // names (netns, links, machines) of kept runs
	for _, r := range runs {
		if r.live() && !drop(r) {
			for _, h := range r.Hosts {
				keep[h.NetNS], keep[h.Link], keep[h.Machine] = true, true, true
			}
			continue
		}
		logf("testbed: removing run %s (inventory %s)", r.RunID, r.Inventory)
		if err := teardownRun(ctx, r); err != nil {
			errs = append(errs, fmt.Errorf("remove run %s: %w", r.RunID, err))
			continue
		}
		if r.Inventory == keepInv {
			r.OwnInventory = false
		}
		if err := forget(runDir, r); err != nil {
			errs = append(errs, fmt.Errorf("remove run %s: %w", r.RunID, err))
		}
	}
	if err := removeOrphanInventories(runDir, keepInv, logf); err != nil {
		errs = append(errs, err)
	}
	// Processes first: a namespace's processes keep it alive.
	ps, err := listProcs()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, p := range ps {
		if m := nspawnMachine(p); m != "" && !keep[m] {
			logf("testbed: stopping leftover nspawn %d (%s)", p.PID, m)
			if err := stopNspawn(ctx, p.proc, proc{}); err != nil {
				errs = append(errs, err)
			}
		}
	}
	names, err := ownNetns()
	if err != nil {
		errs = append(errs, err)
	}
	for _, ns := range names {
		if keep[ns] {
			continue
		}
		logf("testbed: removing leftover namespace %s", ns)
		if err := killInNetns(ns); err != nil {
			errs = append(errs, err)
		}
		if err := removeNetns(ctx, ns); err != nil {
			errs = append(errs, err)
		}
	}
	for _, m := range ownCgroups() {
		if !keep[m] {
			logf("testbed: removing leftover cgroups of %s", m)
			if err := removeCgroups(m); err != nil {
				errs = append(errs, err)
			}
		}
	}
	links, err := ownLinks()
	if err != nil {
		errs = append(errs, err)
	}
	for _, l := range links {
		if keep[l] || !linkExists(l) {
			continue
		}
		logf("testbed: removing leftover link %s", l)
		if _, err := run(ctx, "ip", "link", "del", l); err != nil && linkExists(l) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// forget removes run r's record and state file once everything it made
// is gone, and its inventory when the run made it (OwnInventory): it holds
// a copy of infersim (about 9 MB) and the hosts' console logs, and under
// /run, on tmpfs, that is memory.
func forget(runDir string, r runState) error {
	if err := os.Remove(recordPath(runDir, r.RunID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove record: %w", err)
	}
	if r.Inventory == "" {
		return nil
	}
	if r.OwnInventory {
		if err := os.RemoveAll(r.Inventory); err != nil {
			return fmt.Errorf("remove inventory: %w", err)
		}
		return nil
	}
	if err := os.Remove(filepath.Join(r.Inventory, stateName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove inventory state: %w", err)
	}
	return nil
}

// removeOrphanInventories removes the inventories under runDir that no
// run record names: those Up made by default (runDir/<run id>, holding a
// state.json) for runs whose record is gone, as every run removed before
// Down removed its inventory left them. A directory that does not look
// like one (another name, no state.json, a state of another run id) stays.
// The caller holds the run directory's lock.
func removeOrphanInventories(runDir, keepInv string, logf func(string, ...any)) error {
	runs, _, err := readRuns(runDir)
	if err != nil {
		return err
	}
	claimed := map[string]bool{keepInv: true}
	for _, r := range runs {
		claimed[r.Inventory] = true
	}
	ents, err := os.ReadDir(runDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", runDir, err)
	}
	var errs []error
	for _, e := range ents {
		dir := filepath.Join(runDir, e.Name())
		if !e.IsDir() || !isRunID(e.Name()) || claimed[dir] {
			continue
		}
		st, err := readRun(filepath.Join(dir, stateName))
		if err != nil || st.RunID != e.Name() {
			continue
		}
		logf("testbed: removing inventory %s of run %s, which no record names", dir, st.RunID)
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove inventory %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

// isRunID reports whether s has the shape newRunID gives: six lower-case
// hex digits.
func isRunID(s string) bool {
	if len(s) != 6 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// nspawnMachine returns the testbed machine name a systemd-nspawn process
// runs, or "" if p is no testbed nspawn.
func nspawnMachine(p procInfo) string {
	if p.Comm != "systemd-nspawn" {
		return ""
	}
	for _, a := range p.Args {
		if m, ok := strings.CutPrefix(a, "--machine="); ok && strings.HasPrefix(m, namePrefix+"-") {
			return m
		}
	}
	return ""
}

// killInNetns kills every process in the named namespace. Only called
// while the name still exists, so its identity is certain.
func killInNetns(name string) error {
	id, err := netnsIDOfFile(filepath.Join(netnsDir, name))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	ps, err := listProcs()
	if err != nil {
		return err
	}
	for _, p := range ps {
		if p.NetNS == id {
			if err := p.signal(syscall.SIGKILL); err != nil {
				return fmt.Errorf("namespace %s: %w", name, err)
			}
		}
	}
	return nil
}

// stopTimeout bounds a host's clean poweroff; past it the host is killed.
const stopTimeout = 20 * time.Second

// stopNspawn stops a container: SIGTERM makes nspawn power the container
// off cleanly; if that takes too long, SIGKILL to its PID 1 ends the whole
// PID namespace and SIGKILL to nspawn ends nspawn.
func stopNspawn(ctx context.Context, nspawn, leader proc) error {
	if leader.PID == 0 && nspawn.alive() {
		leader, _ = childOf(nspawn.PID)
	}
	if err := nspawn.signal(syscall.SIGTERM); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, stopTimeout)
	err := nspawn.waitGone(wctx)
	cancel()
	if err == nil && !leader.alive() {
		return nil
	}
	_ = leader.signal(syscall.SIGKILL)
	_ = nspawn.signal(syscall.SIGKILL)
	wctx, cancel = context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := nspawn.waitGone(wctx); err != nil {
		return fmt.Errorf("stop nspawn: %w", err)
	}
	if err := leader.waitGone(wctx); err != nil {
		return fmt.Errorf("stop container init: %w", err)
	}
	return nil
}

// teardownRun stops every host of r and removes its links and namespaces,
// hosts in parallel.
func teardownRun(ctx context.Context, r runState) error {
	errs := make([]error, len(r.Hosts))
	var wg sync.WaitGroup
	for i, h := range r.Hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = teardownHost(ctx, h)
		}()
	}
	wg.Wait()
	// The store goes after the hosts: their uploaders stop first.
	errs = append(errs, stopStore(ctx, r.Store))
	return errors.Join(errs...)
}

// teardownHost stops one host and removes its network.
func teardownHost(ctx context.Context, h hostState) error {
	var errs []error
	if err := stopNspawn(ctx, h.Nspawn, h.Leader); err != nil {
		errs = append(errs, fmt.Errorf("host %s: %w", h.Name, err))
	}
	// Anything still in the host's namespace (a container whose nspawn was
	// lost) goes too.
	if err := killInNetns(h.NetNS); err != nil {
		errs = append(errs, fmt.Errorf("host %s: %w", h.Name, err))
	}
	if err := teardownNet(ctx, h); err != nil {
		errs = append(errs, fmt.Errorf("host %s: %w", h.Name, err))
	}
	if err := removeCgroups(h.Machine); err != nil {
		errs = append(errs, fmt.Errorf("host %s: %w", h.Name, err))
	}
	return errors.Join(errs...)
}

// runLeftovers lists what of r still exists.
func runLeftovers(r runState) ([]string, error) {
	var out []string
	ps, err := listProcs()
	if err != nil {
		return nil, err
	}
	// A namespace's id is an inode number, which the kernel reuses once the
	// namespace is gone: an id that another run's namespace now has is
	// that run's, not a leftover of r.
	others := map[string]bool{}
	if names, err := ownNetns(); err == nil {
		for _, ns := range names {
			if id, err := netnsIDOfFile(filepath.Join(netnsDir, ns)); err == nil && !slices.ContainsFunc(r.Hosts, func(h hostState) bool { return h.NetNS == ns }) {
				others[id] = true
			}
		}
	}
	for _, h := range r.Hosts {
		if _, err := os.Stat(filepath.Join(netnsDir, h.NetNS)); err == nil {
			out = append(out, "netns "+h.NetNS)
		}
		if linkExists(h.Link) {
			out = append(out, "link "+h.Link)
		}
		for _, d := range machineCgroups(h.Machine) {
			out = append(out, "cgroup "+d)
		}
		for _, p := range ps {
			switch {
			case p.proc == h.Nspawn || nspawnMachine(p) == h.Machine:
				out = append(out, fmt.Sprintf("nspawn process %d (%s)", p.PID, h.Machine))
			case p.proc == h.Leader:
				out = append(out, fmt.Sprintf("container init %d (%s)", p.PID, h.Name))
			case h.NetNSID != "" && p.NetNS == h.NetNSID && !others[h.NetNSID]:
				out = append(out, fmt.Sprintf("process %d %s in %s's namespace", p.PID, p.Comm, h.Name))
			}
		}
	}
	out = append(out, storeLeftovers(r.Store)...)
	slices.Sort(out)
	return slices.Compact(out), nil
}
