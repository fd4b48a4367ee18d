// Package testbed boots real test hosts on one machine for bringup's
// end-to-end tests: each host is a Debian image booted with systemd-nspawn
// (a real systemd as PID 1, journald, D-Bus, sshd) in its own network
// namespace with its own address, running infersim as sglang.service (or,
// for HostOptions.Engine vllm, standing in for vLLM as vllm.service).
//
// Up builds (once, cached) the image, boots the hosts and writes an
// inventory directory (bringup config, ssh_config, known_hosts, key) so
// that plain `ssh -F INVENTORY/ssh_config gpu1` works; Down removes every
// namespace, link and process the run made, by the ids it recorded. Tests
// use Start, which ties a testbed to a test's lifetime.
//
// Everything the testbed makes in the machine's shared namespaces is named
// "brtb…" with the run's id; Up first sweeps what earlier, killed runs
// left behind. It needs root.
package testbed

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Defaults for Options.
const (
	// DefaultCacheDir keeps the image between runs (about 320 MB).
	DefaultCacheDir = "/var/cache/bringup-testbed"
	// DefaultRunDir keeps the records of live runs. It is under /run
	// because what they name (namespaces, processes) ends with the boot.
	DefaultRunDir = "/run/bringup-testbed"
	// DefaultBootTimeout bounds one host's boot, sshd to systemd ready.
	DefaultBootTimeout = 90 * time.Second
	// EnvCache overrides DefaultCacheDir.
	EnvCache = "BRINGUP_TESTBED_CACHE"
	// MaxHosts bounds Options.Hosts: the console is built for a few
	// hundred hosts (link names and addresses have room for far more).
	MaxHosts = 256
	// EnvInfersim names a prebuilt infersim binary to use instead of
	// building cmd/infersim.
	EnvInfersim = "BRINGUP_TESTBED_INFERSIM"
)

// Options configure Up.
type Options struct {
	// Hosts is how many hosts to boot, named gpu1…gpuN.
	Hosts int
	// Host gives host i's options (i from 0, for gpu<i+1>); nil means
	// defaults for all.
	Host func(i int) HostOptions
	// CacheDir holds the image; default $BRINGUP_TESTBED_CACHE or
	// DefaultCacheDir.
	CacheDir string
	// RunDir holds the records of runs; default DefaultRunDir. Every run
	// on a machine must use the same one: a sweep removes the testbed
	// namespaces, links and nspawn processes that no run recorded there
	// claims.
	RunDir string
	// InventoryDir receives the inventory; default RunDir/<run id>.
	InventoryDir string
	// Infersim is a prebuilt infersim binary (static: it runs inside the
	// hosts). Default $BRINGUP_TESTBED_INFERSIM, else built from
	// ModuleDir/cmd/infersim.
	Infersim string
	// ModuleDir is bringup's module root; default the module of the
	// current directory (`go env GOMOD`).
	ModuleDir string
	// Detach leaves the hosts running after this process exits (the
	// command line's up). Otherwise a run whose process died is a leftover
	// that the next Up removes.
	Detach bool
	// JournalRateLimit keeps journald's default rate limit on the hosts.
	// Off by default: tests that count lines must not lose any to it.
	JournalRateLimit bool
	// LogStore starts VictoriaLogs on the machine for the run and points
	// every host's systemd-journal-upload at it (LogStoreURL); Down stops
	// it and removes its data.
	LogStore bool
	// BootTimeout bounds each host's boot; default DefaultBootTimeout.
	BootTimeout time.Duration
	// Logf receives progress lines; default discards them.
	Logf func(format string, args ...any)
}

// Host is one booted test host.
type Host struct {
	Name     string // gpu1, …; also its ssh_config alias (root)
	Addr     string // its own address: sshd on :22, infersim on :30000
	SSHPort  int
	RootAddr string // the machine's end of its link
	NetNS    string // its network namespace under /run/netns
	Link     string // the machine's end of its veth pair
	Machine  string // its nspawn machine name
	Console  string // path of its console log
	Options  HostOptions
}

// DeployAlias is the ssh_config alias that logs in to h as user deploy.
func (h Host) DeployAlias() string { return h.Name + "-deploy" }

// Testbed is a running set of hosts. Its methods are safe for concurrent
// use.
type Testbed struct {
	runDir    string
	logf      func(string, ...any)
	signer    ssh.Signer
	hostKeyCB ssh.HostKeyCallback

	mu sync.Mutex // guards st, down and raised
	st runState
	// down is set once Down has removed everything.
	down bool

	// raised are the kernel limits Up raised for this run.
	raised []Limit

	// reapers wait for the nspawn processes this process started, so that
	// none stays a zombie; Down waits for them.
	reapers sync.WaitGroup
}

// Up boots a testbed as o says. On failure it removes whatever it made.
func Up(ctx context.Context, o Options) (_ *Testbed, err error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("testbed: needs root (network namespaces, systemd-nspawn)")
	}
	if o.Hosts < 1 || o.Hosts > MaxHosts {
		return nil, fmt.Errorf("testbed: %d hosts: want 1 to %d", o.Hosts, MaxHosts)
	}
	for _, tool := range []string{"systemd-nspawn", "ip", "chroot"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("testbed: %s not found (apt-get install systemd-container iproute2): %w", tool, err)
		}
	}
	o = withDefaults(o)
	logf := o.Logf
	start := time.Now()

	rootfs, err := ensureImage(ctx, o.CacheDir, logf)
	if err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	runID, err := newRunID()
	if err != nil {
		return nil, err
	}
	if o.InventoryDir == "" {
		o.InventoryDir = filepath.Join(o.RunDir, runID)
	}
	inv, err := filepath.Abs(o.InventoryDir)
	if err != nil {
		return nil, fmt.Errorf("testbed: inventory: %w", err)
	}
	if strings.ContainsAny(inv, ": \t\n") {
		// nspawn's --bind-ro takes SRC:DEST; ssh_config splits words.
		return nil, fmt.Errorf("testbed: inventory path %q must not hold ':' or spaces", inv)
	}
	// What the testbed makes it removes at Down; a directory that was
	// there before (a test's TempDir, one the person named again) is the
	// caller's, and only the run's own files go from it.
	_, statErr := os.Stat(inv)
	ownInv := errors.Is(statErr, os.ErrNotExist)
	if err := os.MkdirAll(filepath.Join(inv, "hosts"), 0o755); err != nil {
		return nil, fmt.Errorf("testbed: inventory: %w", err)
	}
	infersim, err := infersimBinary(ctx, o, inv)
	if err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}

	owner, err := procOf(os.Getpid())
	if err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	tb := &Testbed{runDir: o.RunDir, logf: logf, st: runState{
		RunID: runID, Owner: owner, Inventory: inv, OwnInventory: ownInv, RunDir: o.RunDir, Created: time.Now().UTC(),
	}}
	for i := range o.Hosts {
		var ho HostOptions
		if o.Host != nil {
			ho = o.Host(i)
		}
		name := fmt.Sprintf("gpu%d", i+1)
		tb.st.Hosts = append(tb.st.Hosts, hostState{
			Index: i, Name: name, NetNS: netnsName(runID, name), Link: linkName(runID, i),
			Machine: netnsName(runID, name), Options: ho,
			Console: filepath.Join(inv, "console-"+name+".log"),
		})
	}
	if err := tb.record(ctx, inv); err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	defer func() {
		if err != nil {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if derr := tb.Down(dctx); derr != nil {
				err = errors.Join(err, fmt.Errorf("clean up after failed up: %w", derr))
			}
		}
	}()

	rootKey, err := newKeyPair("bringup-testbed-" + runID)
	if err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	tb.signer = rootKey.Signer
	hostKeys := make([]keyPair, o.Hosts)
	for i, h := range tb.st.Hosts {
		if hostKeys[i], err = newKeyPair("root@" + h.Name); err != nil {
			return nil, fmt.Errorf("testbed: host %s: %w", h.Name, err)
		}
	}
	if err := writeInventory(inv, tb.st, rootKey, hostKeys); err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	if tb.hostKeyCB, err = knownhosts.New(filepath.Join(inv, "known_hosts")); err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}

	if o.LogStore {
		bin, err := storeBinary(ctx, o.CacheDir, logf)
		if err != nil {
			return nil, fmt.Errorf("testbed: %w", err)
		}
		// The store listens on the links' machine ends: they must exist
		// before it starts, and it must run before the uploaders do.
		for i := range tb.st.Hosts {
			tb.mu.Lock()
			h := tb.st.Hosts[i]
			tb.mu.Unlock()
			if err := setupNet(ctx, &h); err != nil {
				return nil, fmt.Errorf("testbed: %w", err)
			}
			tb.setHost(i, h)
		}
		if err := tb.startStore(ctx, bin, inv); err != nil {
			return nil, fmt.Errorf("testbed: %w", err)
		}
	}
	for i := range tb.st.Hosts {
		if err := tb.bootHost(ctx, i, rootfs, inv, hostKeys[i], rootKey.Public, infersim, o); err != nil {
			return nil, fmt.Errorf("testbed: %w", err)
		}
	}
	if err := tb.waitAll(ctx, o.BootTimeout); err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	if o.Detach {
		tb.mu.Lock()
		tb.st.Detached = true
		tb.mu.Unlock()
		if err := tb.save(); err != nil {
			return nil, fmt.Errorf("testbed: %w", err)
		}
	}
	logf("testbed: run %s: %d hosts up in %s (inventory %s)", runID, o.Hosts, time.Since(start).Round(10*time.Millisecond), inv)
	return tb, nil
}

// withDefaults fills in o's empty fields.
func withDefaults(o Options) Options {
	if o.CacheDir == "" {
		o.CacheDir = os.Getenv(EnvCache)
	}
	if o.CacheDir == "" {
		o.CacheDir = DefaultCacheDir
	}
	if o.RunDir == "" {
		o.RunDir = DefaultRunDir
	}
	if o.Infersim == "" {
		o.Infersim = os.Getenv(EnvInfersim)
	}
	if o.BootTimeout == 0 {
		o.BootTimeout = DefaultBootTimeout
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}

// procSys is where the kernel's settings are (sysctl's tree).
const procSys = "/proc/sys"

// newRunID makes a short random id: short because it goes into interface
// names (15 bytes at most), random because runs in several processes
// start at once.
func newRunID() (string, error) {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("testbed: run id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// record sweeps leftovers, allocates the run's addresses and writes its
// record, all under the run directory's lock, so that concurrent runs
// neither take the same addresses nor sweep each other.
func (tb *Testbed) record(ctx context.Context, inv string) error {
	unlock, err := flock(ctx, filepath.Join(tb.runDir, lockName))
	if err != nil {
		return err
	}
	defer unlock()
	// A detached run with the same inventory is the one this up replaces;
	// one whose inventory is gone can no longer be reached or downed.
	drop := func(r runState) bool {
		if !r.Detached {
			return false
		}
		if r.Inventory == inv {
			return true
		}
		_, err := os.Stat(r.Inventory)
		return errors.Is(err, os.ErrNotExist)
	}
	if err := sweep(ctx, tb.runDir, inv, drop, tb.logf); err != nil {
		return fmt.Errorf("sweep leftovers: %w", err)
	}
	used, err := usedSlots(ctx)
	if err != nil {
		return err
	}
	runs, _, err := readRuns(tb.runDir)
	if err != nil {
		return err
	}
	hosts := len(tb.st.Hosts) // every live run's hosts share the limits
	for _, r := range runs {
		for _, h := range r.Hosts {
			used[h.Slot] = true
		}
		hosts += len(r.Hosts)
	}
	raised, err := raiseLimits(procSys, hosts)
	if err != nil {
		return fmt.Errorf("kernel limits: %w", err)
	}
	for _, l := range raised {
		tb.logf("testbed: raised %s from %d to %d (%d hosts on this machine)", l.Name, l.From, l.To, hosts)
	}
	tb.mu.Lock()
	tb.raised = raised
	tb.mu.Unlock()
	k := 0
	for i := range tb.st.Hosts {
		for k < slots && used[k] {
			k++
		}
		if k == slots {
			return fmt.Errorf("address plan: no free /30 left in %s", subnet)
		}
		h := &tb.st.Hosts[i]
		root, host := slotAddrs(k)
		h.Slot, h.RootAddr, h.Addr = k, root.String(), host.String()
		used[k] = true
	}
	return tb.saveLocked()
}

// save writes the run's state to its record and to the inventory.
func (tb *Testbed) save() error {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.saveLocked()
}

func (tb *Testbed) saveLocked() error {
	if err := writeJSON(recordPath(tb.runDir, tb.st.RunID), tb.st); err != nil {
		return err
	}
	return writeJSON(filepath.Join(tb.st.Inventory, stateName), tb.st)
}

// bootHost makes host i's network and files and starts its container.
func (tb *Testbed) bootHost(ctx context.Context, i int, rootfs, inv string, hostKey keyPair, rootPub []byte, infersim string, o Options) error {
	tb.mu.Lock()
	h := tb.st.Hosts[i]
	upload := ""
	if st := tb.st.Store; st != nil {
		upload = uploadConf(h.RootAddr, st.Port)
	}
	tb.mu.Unlock()
	if h.NetNSID == "" { // made already when a log store listens on it
		if err := setupNet(ctx, &h); err != nil {
			return err
		}
	}
	// The image's dbus package left a machine id that systemd would prefer
	// to nspawn's --uuid, giving every host the same one; bringup keys
	// hosts by it, so each gets its own. Bound over the dbus file only:
	// systemd copies it into an empty /etc/machine-id, and a bind over
	// /etc/machine-id itself would fail systemd-machine-id-commit.
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return fmt.Errorf("host %s: machine id: %w", h.Name, err)
	}
	id[6] = id[6]&0x0f | 0x40 // version 4, as systemd makes them
	id[8] = id[8]&0x3f | 0x80
	h.MachineID = hex.EncodeToString(id)
	tb.setHost(i, h)
	binds, err := writeHostFiles(filepath.Join(inv, "hosts", h.Name), h, h.Options, hostKey, rootPub, infersim, o.JournalRateLimit, upload)
	if err != nil {
		return err
	}
	args := []string{
		"--quiet", "--register=no", "--keep-unit", "--volatile=overlay", "--uuid=" + h.MachineID,
		"--directory=" + rootfs, "--boot", "--console=read-only",
		"--machine=" + h.Machine, "--hostname=" + h.Name,
		"--network-namespace-path=" + filepath.Join(netnsDir, h.NetNS),
	}
	for _, b := range binds {
		args = append(args, "--bind-ro="+b.Src+":"+b.Dest)
	}
	h.Argv = nspawnCommand(args)
	return tb.launch(i, h, os.O_TRUNC)
}

// launch starts systemd-nspawn for host i with its recorded command line,
// its console (opened with flag: truncated at the first boot, appended to
// after a reboot) taking the output, and records the process.
func (tb *Testbed) launch(i int, h hostState, flag int) error {
	console, err := os.OpenFile(h.Console, os.O_WRONLY|os.O_CREATE|flag, 0o644)
	if err != nil {
		return fmt.Errorf("host %s console: %w", h.Name, err)
	}
	defer console.Close() // the child has its own copy
	cmd := exec.Command(h.Argv[0], h.Argv[1:]...)
	cmd.Env = append(os.Environ(), "BRTB_MACHINE="+h.Machine)
	cmd.Stdout, cmd.Stderr = console, console
	// Its own session: the host must not get the terminal's signals, and
	// with Detach it outlives this process.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("host %s: start systemd-nspawn: %w", h.Name, err)
	}
	p, err := procOf(cmd.Process.Pid)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("host %s: %w", h.Name, err)
	}
	h.Nspawn = p
	tb.setHost(i, h)
	tb.reapers.Add(1)
	go func() {
		defer tb.reapers.Done()
		_ = cmd.Wait() // exit is seen through /proc; this only reaps
	}()
	return tb.save()
}

// Reboot reboots host name as a person would (systemctl reboot), boots it
// again from the same image with the same identity (machine id, keys,
// address) once systemd-nspawn has let it go, and waits until it runs. A
// host booted with --volatile=overlay comes back with a fresh journal and
// a new boot ID, its unit not started (unless HostOptions.Enable).
func (tb *Testbed) Reboot(ctx context.Context, name string) error {
	h, err := tb.Host(name)
	if err != nil {
		return err
	}
	tb.mu.Lock()
	i := slices.IndexFunc(tb.st.Hosts, func(s hostState) bool { return s.Name == name })
	hs := tb.st.Hosts[i]
	tb.mu.Unlock()
	// A host that cannot be reached is not rebooted: say so rather than
	// wait for a reboot that was never asked for.
	c, err := tb.dial(ctx, h, "root")
	if err != nil {
		return fmt.Errorf("reboot %s: %w", name, err)
	}
	// The connection ends with the host: an error here is the reboot.
	_, _ = runOn(ctx, c, "systemctl reboot")
	_ = c.Close()
	for hs.Nspawn.alive() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("host %s: still up after systemctl reboot: %w", name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := tb.launch(i, hs, os.O_APPEND); err != nil {
		return err
	}
	if _, err := tb.waitBooted(ctx, h); err != nil {
		return fmt.Errorf("host %s after reboot: %w", name, err)
	}
	tb.mu.Lock()
	hs = tb.st.Hosts[i]
	tb.mu.Unlock()
	if leader, err := childOf(hs.Nspawn.PID); err == nil {
		hs.Leader = leader
		tb.setHost(i, hs)
	}
	return tb.save()
}

// setHost replaces host i's state.
func (tb *Testbed) setHost(i int, h hostState) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.st.Hosts[i] = h
}

// waitAll waits until every host's systemd is up, hosts in parallel.
func (tb *Testbed) waitAll(ctx context.Context, timeout time.Duration) error {
	hosts := tb.Hosts()
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			start := time.Now()
			state, err := tb.waitBooted(hctx, h)
			if err != nil {
				errs[i] = fmt.Errorf("host %s: %w\nconsole (%s):\n%s", h.Name, err, h.Console, tail(h.Console, 20))
				return
			}
			tb.logf("testbed: %s (%s) %s after %s", h.Name, h.Addr, state, time.Since(start).Round(10*time.Millisecond))
			tb.mu.Lock()
			hs := tb.st.Hosts[i]
			tb.mu.Unlock()
			if leader, err := childOf(hs.Nspawn.PID); err == nil {
				hs.Leader = leader
				tb.setHost(i, hs)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return tb.save()
}

// waitBooted waits for sshd, then for systemd to finish booting, and
// returns systemd's state. "degraded" is an error: a unit failed, and a
// test host must come up clean.
func (tb *Testbed) waitBooted(ctx context.Context, h Host) (string, error) {
	var c *ssh.Client
	for {
		var err error
		c, err = tb.dial(ctx, h, "root")
		if err == nil {
			break
		}
		var netErr net.Error
		if !errors.As(err, &netErr) && !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.EHOSTUNREACH) && !isHandshakeEOF(err) {
			// A host key or auth failure: retrying would not help.
			return "", err
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("sshd did not answer: %w (last: %w)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	defer c.Close()
	out, err := runOn(ctx, c, "systemctl is-system-running --wait")
	state := strings.TrimSpace(out)
	if state == "running" {
		return state, nil
	}
	failed, _ := runOn(ctx, c, "systemctl --failed --no-legend --plain")
	return state, fmt.Errorf("systemd is %q, not running (failed units: %s): %w", state, strings.TrimSpace(failed), err)
}

// isHandshakeEOF reports an SSH handshake cut short: sshd accepting
// before it is ready, as it does while the host boots.
func isHandshakeEOF(err error) bool {
	return err != nil && (errors.Is(err, syscall.ECONNRESET) || strings.Contains(err.Error(), "EOF"))
}

// Hosts lists the testbed's hosts in order.
func (tb *Testbed) Hosts() []Host {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	out := make([]Host, len(tb.st.Hosts))
	for i, h := range tb.st.Hosts {
		out[i] = Host{
			Name: h.Name, Addr: h.Addr, SSHPort: 22, RootAddr: h.RootAddr, NetNS: h.NetNS,
			Link: h.Link, Machine: h.Machine, Console: h.Console, Options: h.Options,
		}
	}
	return out
}

// Host returns the host named name.
func (tb *Testbed) Host(name string) (Host, error) {
	for _, h := range tb.Hosts() {
		if h.Name == name {
			return h, nil
		}
	}
	return Host{}, fmt.Errorf("testbed: no host %q", name)
}

// HostKey is the host key the inventory's known_hosts records for host
// (its alias first on the line): what a test compares a fetched or learned
// key with.
func (tb *Testbed) HostKey(host string) (ssh.PublicKey, error) {
	b, err := os.ReadFile(filepath.Join(tb.st.Inventory, knownHostsName))
	if err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && strings.HasPrefix(f[0], host+",") {
			k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(f[1] + " " + f[2]))
			if err != nil {
				return nil, fmt.Errorf("testbed: key of %s: %w", host, err)
			}
			return k, nil
		}
	}
	return nil, fmt.Errorf("testbed: no key for %q in %s", host, knownHostsName)
}

// Raised lists the kernel limits Up raised so that the hosts boot (none
// when the machine's were high enough).
func (tb *Testbed) Raised() []Limit {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return slices.Clone(tb.raised)
}

// RunID is the run's id, part of every name the run made.
func (tb *Testbed) RunID() string { return tb.st.RunID }

// Inventory is the inventory directory: config.yaml, ssh_config,
// known_hosts, id_ed25519, state.json and the hosts' console logs.
func (tb *Testbed) Inventory() string { return tb.st.Inventory }

// SSHConfig is the path of the inventory's ssh_config.
func (tb *Testbed) SSHConfig() string { return filepath.Join(tb.st.Inventory, "ssh_config") }

// Client opens an SSH connection to host (a name such as "gpu1") as user
// (root or deploy), checking the host key against the inventory's
// known_hosts. The caller closes it.
func (tb *Testbed) Client(ctx context.Context, host, user string) (*ssh.Client, error) {
	h, err := tb.Host(host)
	if err != nil {
		return nil, err
	}
	return tb.dial(ctx, h, user)
}

// dial connects and handshakes under ctx: ssh.Dial would bound only the
// TCP connect.
func (tb *Testbed) dial(ctx context.Context, h Host, user string) (*ssh.Client, error) {
	addr := net.JoinHostPort(h.Addr, strconv.Itoa(h.SSHPort))
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ssh %s@%s: %w", user, h.Name, err)
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(30 * time.Second)
	}
	_ = conn.SetDeadline(deadline)
	cfg := &ssh.ClientConfig{
		User:            user,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(tb.signer)},
		HostKeyCallback: tb.hostKeyCB,
		Timeout:         30 * time.Second,
	}
	cc, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("ssh %s@%s: %w", user, h.Name, err)
	}
	_ = conn.SetDeadline(time.Time{})
	return ssh.NewClient(cc, chans, reqs), nil
}

// Run runs cmd on host as root and returns its standard output. A
// command that fails returns its output with an error carrying its
// standard error.
func (tb *Testbed) Run(ctx context.Context, host, cmd string) (string, error) {
	c, err := tb.Client(ctx, host, "root")
	if err != nil {
		return "", err
	}
	defer c.Close()
	out, err := runOn(ctx, c, cmd)
	if err != nil {
		return out, fmt.Errorf("%s: %w", host, err)
	}
	return out, nil
}

// runOn runs cmd in a new session of c; ctx's end closes the session.
func runOn(ctx context.Context, c *ssh.Client, cmd string) (string, error) {
	s, err := c.NewSession()
	if err != nil {
		return "", fmt.Errorf("%q: new session: %w", cmd, err)
	}
	defer s.Close()
	var stdout, stderr bytes.Buffer
	s.Stdout, s.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	go func() { done <- s.Run(cmd) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		s.Close()
		_ = <-done // the Close's doing: the error is the context's
		err = ctx.Err()
	}
	if err != nil {
		return stdout.String(), fmt.Errorf("%q: %w: %s", cmd, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// Down stops every host and removes every namespace and link of the run,
// by the ids it recorded, then its record. After a failure it may be
// called again; after a success it does nothing.
func (tb *Testbed) Down(ctx context.Context) error {
	tb.mu.Lock()
	if tb.down {
		tb.mu.Unlock()
		return nil
	}
	st := tb.st
	tb.mu.Unlock()

	err := teardownRun(ctx, st)
	waited := make(chan struct{})
	go func() { tb.reapers.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-ctx.Done():
		err = errors.Join(err, fmt.Errorf("wait for nspawn to exit: %w", ctx.Err()))
	}
	if err == nil {
		left, lerr := runLeftovers(st)
		switch {
		case lerr != nil:
			err = lerr
		case len(left) > 0:
			err = fmt.Errorf("left behind: %s", strings.Join(left, ", "))
		}
	}
	if err == nil {
		err = forget(tb.runDir, st)
	}
	if err != nil {
		err = fmt.Errorf("testbed: down run %s: %w", st.RunID, err)
	}
	if err == nil {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		tb.down = true
	}
	return err
}

// Leftovers lists what of this run still exists: namespaces, links,
// nspawn processes, and processes in its hosts' namespaces. Empty after a
// successful Down.
func (tb *Testbed) Leftovers() ([]string, error) {
	tb.mu.Lock()
	st := tb.st
	tb.mu.Unlock()
	return runLeftovers(st)
}
