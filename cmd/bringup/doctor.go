package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"bringup/remote/event"
	"bringup/remote/sshx"
	"bringup/remote/systemd"
)

// checkStatus is the outcome of one doctor check.
type checkStatus int

const (
	checkOK checkStatus = iota
	checkWarn
	checkFail
	checkSkip
)

func (s checkStatus) mark() string {
	return [...]string{"✓", "!", "✗", "·"}[s]
}

// check is one line of `bringup doctor`.
type check struct {
	name   string
	status checkStatus
	detail string
	fix    string
}

// hostReport is everything doctor found out about one host.
type hostReport struct {
	name   string
	target string
	checks []check
}

func (r *hostReport) add(name string, s checkStatus, detail, fix string) {
	r.checks = append(r.checks, check{name, s, detail, fix})
}

func (r *hostReport) failed() bool {
	for _, c := range r.checks {
		if c.status == checkFail {
			return true
		}
	}
	return false
}

func (r *hostReport) print(w io.Writer) {
	fmt.Fprintf(w, "%s (%s)\n", r.name, r.target)
	for _, c := range r.checks {
		fmt.Fprintf(w, "  %s %-11s %s\n", c.status.mark(), c.name, c.detail)
		if c.fix != "" {
			fmt.Fprintf(w, "    %-11s fix: %s\n", "", c.fix)
		}
	}
}

func runDoctor(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "doctor", "bringup doctor [-H hosts | --config F] [--trust HOST] [HOST|GROUP...]")
	var ff fleetFlags
	ff.register(fs)
	trust := fs.String("trust", "", "fetch HOST's key and add it to known_hosts (check the fingerprint it prints)")
	timeout := fs.Duration("timeout", 20*time.Second, "time allowed for each host's checks")
	if code, stop := parseArgs(fs, args); stop {
		return code
	}
	names := fs.Args()
	if *trust != "" {
		names = []string{*trust}
	}
	cfg, hosts, err := ff.load(e, names)
	if err != nil {
		fmt.Fprintf(e.stderr, "bringup doctor: %v\n", err)
		return exitUsage
	}
	if *trust != "" {
		h := hosts[0]
		t := h.Target()
		sc, err := sshx.Resolve(ctx, t.Host, sshx.ResolveOptions{ConfigFile: cfg.SSHConfig})
		if err != nil {
			fmt.Fprintf(e.stderr, "bringup doctor: %s: %v\n", h.Name, err)
			return 1
		}
		overrideTarget(&sc, t.HostName, t.User, t.Port)
		fp, err := sshx.Trust(ctx, sc, sshx.DialOptions{Resolve: sshx.ResolveOptions{ConfigFile: cfg.SSHConfig}})
		if err != nil {
			fmt.Fprintf(e.stderr, "bringup doctor: trust %s: %v\n", h.Name, err)
			return 1
		}
		fmt.Fprintf(e.stdout, "%s: trusted %s\n", h.Name, fp)
		return 0
	}
	rs, closeKeys, err := resolve(ctx, e, cfg, hosts)
	if err != nil {
		fmt.Fprintf(e.stderr, "bringup doctor: %v\n", err)
		return exitUsage
	}
	defer closeKeys()
	code := 0
	for _, r := range rs {
		hctx, cancel := context.WithTimeout(ctx, *timeout)
		rep := doctorHost(hctx, r)
		cancel()
		rep.print(e.stdout)
		if rep.failed() {
			code = 1
		}
	}
	return code
}

func overrideTarget(sc *sshx.Config, hostName, user string, port int) {
	if hostName != "" {
		sc.HostName = hostName
	}
	if user != "" {
		sc.User = user
	}
	if port != 0 {
		sc.Port = port
	}
}

// doctorHost runs every check on one host, in order; a check that cannot
// run because an earlier one failed is marked skipped.
func doctorHost(ctx context.Context, r resolved) *hostReport {
	rep := &hostReport{name: r.host.Name, target: fmt.Sprintf("%s@%s", r.ssh.User, r.ssh.Addr())}
	src := r.ssh.Source
	if src == "" {
		src = "resolved"
	}
	jump := ""
	if len(r.ssh.ProxyJump) > 0 {
		jump = ", via " + strings.Join(r.ssh.ProxyJump, " → ")
	}
	rep.add("ssh config", checkOK, fmt.Sprintf("%s: HostName %s, User %s, Port %d%s", src, r.ssh.HostName, r.ssh.User, r.ssh.Port, jump), "")

	start := time.Now()
	client, err := sshx.Dial(ctx, r.ssh, r.dial)
	if err != nil {
		classifyDialError(rep, r, err)
		for _, n := range []string{"sudo", "systemd", "journald", "unit", "nvidia-smi"} {
			rep.add(n, checkSkip, "not checked: no connection", "")
		}
		return rep
	}
	defer client.Close()
	rep.add("reachable", checkOK, fmt.Sprintf("connected in %v", time.Since(start).Round(time.Millisecond)), "")
	rep.add("host key", checkOK, "matches known_hosts", "")
	rep.add("auth", checkOK, "publickey as "+r.ssh.User, "")

	// The rest runs over a managed connection, as the console does.
	conn := sshx.NewConn(r.ssh, sshx.ConnOptions{Dial: r.dial})
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = conn.Run(cctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	if _, err := conn.Client(ctx); err != nil {
		rep.add("sudo", checkSkip, "not checked: "+err.Error(), "")
		return rep
	}
	exec := func(cmd string) (string, string, int, error) {
		out, errOut, code, err := conn.Exec(ctx, cmd)
		return strings.TrimSpace(string(out)), strings.TrimSpace(string(errOut)), code, err
	}
	unit := r.host.Unit

	uid, _, _, err := exec("id -u")
	switch {
	case err != nil:
		rep.add("sudo", checkFail, "id -u: "+err.Error(), "")
	case uid == "0":
		rep.add("sudo", checkOK, "root: actions need no sudo", "")
	default:
		_, serr, code, err := exec("sudo -n true")
		switch {
		case err == nil && code == 0:
			rep.add("sudo", checkOK, fmt.Sprintf("%s has passwordless sudo: actions go through sudo -n", r.ssh.User), "")
		case strings.Contains(serr, "password is required"):
			rep.add("sudo", checkWarn, fmt.Sprintf("sudo on %s needs a password: actions (mode, redeploy, restart, reset-failed) will need sudo", r.host.Name),
				"allow NOPASSWD for systemctl and the kernel directory, or connect as root")
		default:
			rep.add("sudo", checkWarn, fmt.Sprintf("%s may not use sudo: actions (mode, redeploy, restart, reset-failed) will need sudo", r.ssh.User),
				"add a NOPASSWD sudoers rule for this user, or connect as root; watching works without it")
		}
	}

	// Which way unit state can be read: the first state event says.
	path, perr := unitPath(ctx, conn, r.host.Name, unit)
	switch {
	case perr != nil:
		rep.add("systemd", checkFail, "cannot read unit state: "+perr.Error(), "check that systemd runs on the host and the user may use D-Bus or systemctl")
	case path == systemd.PathDBus:
		rep.add("systemd", checkOK, "unit state over D-Bus (stream-local forwarding)", "")
	case path == systemd.PathStdioBridge:
		rep.add("systemd", checkWarn, "unit state over systemd-stdio-bridge (stream-local forwarding refused)", "set AllowStreamLocalForwarding yes in sshd_config for the direct path")
	default:
		rep.add("systemd", checkWarn, "unit state by polling systemctl show (no D-Bus path)", "allow stream-local forwarding or systemd-stdio-bridge for instant state changes")
	}

	groups, _, _, _ := exec("id -Gn")
	journalGroup := uid == "0" || hasAnyField(groups, "systemd-journal", "adm", "wheel")
	out, serr, code, err := exec("journalctl -q -u " + sshx.ShellQuote(unit) + " -n 1 -o json --no-pager")
	switch {
	case err != nil:
		rep.add("journald", checkFail, err.Error(), "")
	case !journalGroup:
		// journalctl succeeds but shows only the user's own messages: the
		// service's lines are not among them.
		rep.add("journald", checkFail, fmt.Sprintf("%s is not in systemd-journal or adm: it cannot read %s's lines", r.ssh.User, unit),
			fmt.Sprintf("usermod -aG systemd-journal %s on the host", r.ssh.User))
	case code != 0 || strings.Contains(serr, "insufficient permissions") || strings.Contains(serr, "No journal files"):
		rep.add("journald", checkFail, fmt.Sprintf("journalctl -u %s: %s", unit, firstLine(serr)), "add the user to the systemd-journal group (or adm)")
	case out == "":
		rep.add("journald", checkOK, fmt.Sprintf("readable; no entries for %s yet", unit), "")
	default:
		rep.add("journald", checkOK, fmt.Sprintf("journalctl -u %s readable", unit), "")
	}

	out, _, _, err = exec("systemctl show " + sshx.ShellQuote(unit) + " -p LoadState -p ActiveState -p SubState --value")
	if err != nil {
		rep.add("unit", checkFail, err.Error(), "")
	} else {
		f := strings.Fields(out)
		switch {
		case len(f) < 3:
			rep.add("unit", checkFail, fmt.Sprintf("unexpected answer from systemctl show: %q", out), "")
		case f[0] != "loaded":
			rep.add("unit", checkFail, fmt.Sprintf("%s is %s", unit, f[0]), fmt.Sprintf("install %s on the host, or set unit: in the config / -u", unit))
		default:
			rep.add("unit", checkOK, fmt.Sprintf("%s loaded, %s/%s", unit, f[1], f[2]), "")
		}
	}

	out, serr, code, err = exec("nvidia-smi -L")
	switch {
	case err != nil:
		rep.add("nvidia-smi", checkFail, err.Error(), "")
	case code == 127:
		rep.add("nvidia-smi", checkWarn, "not found on PATH: no GPU panel", "install the NVIDIA driver utilities, or put nvidia-smi on the login PATH")
	case code != 0:
		rep.add("nvidia-smi", checkWarn, fmt.Sprintf("exit %d: %s", code, firstLine(serr)), "")
	default:
		n := len(strings.Split(out, "\n"))
		rep.add("nvidia-smi", checkOK, strconv.Itoa(n)+" GPUs", "")
	}
	return rep
}

// unitPath starts a unit watch and reports the path of its first event.
func unitPath(ctx context.Context, conn *sshx.Conn, host, unit string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var path string
	err := systemd.Watch(ctx, conn, systemd.WatchOptions{Host: host, Unit: unit}, func(ev event.Event) bool {
		if ev.Unit != nil {
			path = ev.Unit.Path
		}
		return false // one event is enough
	})
	if path != "" {
		return path, nil
	}
	if err == nil {
		err = errors.New("no state read")
	}
	return "", err
}

// classifyDialError turns a failed dial into the checks a person needs.
func classifyDialError(rep *hostReport, r resolved, err error) {
	var unknown *sshx.UnknownHostError
	var changed *sshx.HostKeyChangedError
	var revoked *sshx.RevokedHostKeyError
	var cert *sshx.HostCertError
	var auth *sshx.AuthError
	switch {
	case errors.As(err, &unknown):
		rep.add("reachable", checkOK, "sshd answered", "")
		what := fmt.Sprintf("not in known_hosts: %s %s", unknown.KeyType, unknown.Fingerprint)
		if unknown.CertCA != "" {
			// A certificate from a CA known_hosts trusts only for other
			// names: the operator needs to see which CA and where.
			what += fmt.Sprintf(" (a certificate signed by CA %s", unknown.CertCA)
			if len(unknown.CertCAAt) > 0 {
				what += ", trusted for other names at " + strings.Join(unknown.CertCAAt, ", ")
			}
			what += ")"
		}
		rep.add("host key", checkFail, what,
			fmt.Sprintf("check the fingerprint, then: bringup doctor --trust %s (or StrictHostKeyChecking accept-new)", r.host.Name))
	case errors.As(err, &cert):
		rep.add("reachable", checkOK, "sshd answered", "")
		rep.add("host key", checkFail, err.Error(), "")
	case errors.As(err, &changed):
		rep.add("reachable", checkOK, "sshd answered", "")
		var old []string
		for _, k := range changed.Old {
			old = append(old, fmt.Sprintf("%s %s (%s:%d)", k.KeyType, k.Fingerprint, k.File, k.Line))
		}
		rep.add("host key", checkFail, fmt.Sprintf("CHANGED: now %s %s, known_hosts has %s", changed.NewKeyType, changed.NewFingerprint, strings.Join(old, ", ")),
			"someone may be intercepting the connection, or the host was reinstalled: confirm out of band, then remove the old line")
	case errors.As(err, &revoked):
		rep.add("reachable", checkOK, "sshd answered", "")
		what := "the host's key is @revoked in "
		if revoked.CA {
			what = "the host's certificate is signed by a CA that is @revoked in "
		}
		rep.add("host key", checkFail, what+fmt.Sprintf("%s:%d", revoked.File, revoked.Line), "")
	case errors.As(err, &auth):
		rep.add("reachable", checkOK, "sshd answered", "")
		rep.add("host key", checkOK, "matches known_hosts", "")
		rep.add("auth", checkFail, err.Error(), fmt.Sprintf("add your public key to ~%s/.ssh/authorized_keys on the host, or load the right key into ssh-agent", r.ssh.User))
	default:
		rep.add("reachable", checkFail, err.Error(), "check the address, the network path (ProxyJump) and that sshd runs")
	}
}

// hasAnyField reports whether the space-separated list has any of want.
func hasAnyField(list string, want ...string) bool {
	for _, f := range strings.Fields(list) {
		for _, w := range want {
			if f == w {
				return true
			}
		}
	}
	return false
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
