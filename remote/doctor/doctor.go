// Package doctor checks, host by host, what bringup needs to follow and
// act on a host (ssh, host key, auth, sudo, systemd, journald, the unit,
// nvidia-smi) and says how to fix what fails.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/live"
	"github.com/bringup-dev/bringup/remote/sanitize"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/systemd"
)

// Status is the outcome of one doctor check.
type Status int

const (
	OK Status = iota
	Warn
	Fail
	Skip
)

func (s Status) Mark() string {
	return [...]string{"✓", "!", "✗", "·"}[s]
}

// Check is one line of `bringup doctor`.
type Check struct {
	Name   string
	Status Status
	Detail string
	Fix    string
}

// Report is everything doctor found out about one host.
type Report struct {
	Host   string
	Target string // user@address:port
	Checks []Check
}

// add records a check. Its text often quotes the host (stderr, an error
// from the SSH server, a unit property), so it passes through the one
// sanitiser here, where it leaves remote/: an escape sequence on a host
// never reaches the operator's terminal.
func (r *Report) add(name string, s Status, detail, fix string) {
	r.Checks = append(r.Checks, Check{name, s, sanitize.String(detail), sanitize.String(fix)})
}

// Failed reports whether a check failed.
func (r *Report) Failed() bool {
	for _, c := range r.Checks {
		if c.Status == Fail {
			return true
		}
	}
	return false
}

// doctorHost runs every check on one host, in order; a check that cannot
// run because an earlier one failed is marked skipped.
func Host(ctx context.Context, r live.Options) *Report {
	rep := &Report{Host: sanitize.String(r.Name), Target: sanitize.String(fmt.Sprintf("%s@%s", r.SSH.User, r.SSH.Addr()))}
	src := r.SSH.Source
	if src == "" {
		src = "resolved"
	}
	jump := ""
	if len(r.SSH.ProxyJump) > 0 {
		jump = ", via " + strings.Join(r.SSH.ProxyJump, " → ")
	}
	rep.add("ssh config", OK, fmt.Sprintf("%s: HostName %s, User %s, Port %d%s", src, r.SSH.HostName, r.SSH.User, r.SSH.Port, jump), "")
	if risks := r.SSH.HostKeyRisks(); len(risks) > 0 {
		var why []string
		for _, k := range risks {
			why = append(why, k.Setting+": "+k.Why)
		}
		rep.add("key policy", Warn, strings.Join(why, "; "),
			fmt.Sprintf("in ssh_config for %s set StrictHostKeyChecking accept-new (or yes) and a real UserKnownHostsFile, then bringup doctor --trust %s --fingerprint SHA256:… (from ssh-keygen -lf on the host)", r.Name, r.Name))
	}

	var learned []sshx.LearnedHostKey
	dial := r.Dial
	dial.OnNewHostKey = func(k sshx.LearnedHostKey) { learned = append(learned, k) }
	start := time.Now()
	client, err := sshx.Dial(ctx, r.SSH, dial)
	for _, k := range learned { // accept-new: say so, before what failed after it
		rep.add("host key", Warn, k.String(), "compare the fingerprint with ssh-keygen -lf on the host; remove the line if it differs")
	}
	if err != nil {
		classifyDialError(rep, r, err)
		for _, n := range []string{"sudo", "systemd", "journald", "unit", "nvidia-smi"} {
			rep.add(n, Skip, "not checked: no connection", "")
		}
		return rep
	}
	defer client.Close()
	rep.add("reachable", OK, fmt.Sprintf("connected in %v", time.Since(start).Round(time.Millisecond)), "")
	if !slices.ContainsFunc(learned, func(k sshx.LearnedHostKey) bool { return k.Host == r.SSH.Alias }) {
		rep.add("host key", OK, "matches known_hosts", "")
	}
	rep.add("auth", OK, "publickey as "+r.SSH.User, "")

	// The rest runs over a managed connection, as the console does.
	if err := sshx.WithConn(ctx, r.SSH, sshx.ConnOptions{Dial: r.Dial}, func(conn *sshx.Conn) error {
		checkOver(ctx, rep, r, conn)
		return nil
	}); errors.Is(err, sshx.ErrStalled) {
		rep.add("session", Fail, err.Error(), "sshd stops after the login: look at systemd-logind and the PAM session modules (journalctl -u systemd-logind), a full disk, the load; ssh -v "+r.SSH.Alias+" true shows where it stops")
		for _, n := range []string{"sudo", "systemd", "journald", "unit", "nvidia-smi"} {
			rep.add(n, Skip, "not checked: the host stalled after the login", "")
		}
	} else if err != nil {
		rep.add("sudo", Skip, "not checked: "+err.Error(), "")
	}
	return rep
}

// checkOver runs the checks that need a connection (sudo, systemd,
// journald, the unit, nvidia-smi) over conn, adding them to rep.
func checkOver(ctx context.Context, rep *Report, r live.Options, conn *sshx.Conn) {
	exec := func(cmd string) (string, string, int, error) {
		out, errOut, code, err := conn.Exec(ctx, cmd)
		return strings.TrimSpace(string(out)), strings.TrimSpace(string(errOut)), code, err
	}
	unit := r.Unit

	uid, _, _, err := exec("id -u")
	switch {
	case err != nil:
		rep.add("sudo", Fail, "id -u: "+err.Error(), "")
	case uid == "0":
		rep.add("sudo", OK, "root: actions need no sudo", "")
	default:
		rep.Checks = append(rep.Checks, sudoCheck(exec, r))
	}

	// Which way unit state can be read: the first state event says.
	path, why, perr := unitPath(ctx, conn, r.Name, unit)
	because := ""
	if why != nil {
		because = ": " + why.Error()
	}
	switch {
	case perr != nil:
		rep.add("systemd", Fail, "cannot read unit state: "+perr.Error(), "check that systemd runs on the host and the user may use D-Bus or systemctl")
	case path == systemd.PathDBus:
		rep.add("systemd", OK, "unit state over D-Bus (stream-local forwarding)", "")
	case path == systemd.PathStdioBridge:
		rep.add("systemd", Warn, "unit state over systemd-stdio-bridge (stream-local forwarding refused"+because+")", "set AllowStreamLocalForwarding yes in sshd_config for the direct path")
	default:
		rep.add("systemd", Warn, "unit state by polling systemctl show (no D-Bus path"+because+")", "allow stream-local forwarding or systemd-stdio-bridge for instant state changes")
	}

	groups, _, _, _ := exec("id -Gn")
	journalGroup := uid == "0" || hasAnyField(groups, "systemd-journal", "adm", "wheel")
	out, serr, code, err := exec("journalctl -q -u " + sshx.ShellQuote(unit) + " -n 1 -o json --no-pager")
	switch {
	case err != nil:
		rep.add("journald", Fail, err.Error(), "")
	case !journalGroup:
		// journalctl succeeds but shows only the user's own messages: the
		// service's lines are not among them.
		rep.add("journald", Fail, fmt.Sprintf("%s is not in systemd-journal or adm: it cannot read %s's lines", r.SSH.User, unit),
			fmt.Sprintf("usermod -aG systemd-journal %s on the host", r.SSH.User))
	case code != 0 || strings.Contains(serr, "insufficient permissions") || strings.Contains(serr, "No journal files"):
		rep.add("journald", Fail, fmt.Sprintf("journalctl -u %s: %s", unit, firstLine(serr)), "add the user to the systemd-journal group (or adm)")
	case out == "":
		rep.add("journald", OK, fmt.Sprintf("readable; no entries for %s yet", unit), "")
	default:
		rep.add("journald", OK, fmt.Sprintf("journalctl -u %s readable", unit), "")
	}

	out, _, _, err = exec("systemctl show " + sshx.ShellQuote(unit) + " -p LoadState -p ActiveState -p SubState --value")
	if err != nil {
		rep.add("unit", Fail, err.Error(), "")
	} else {
		f := strings.Fields(out)
		switch {
		case len(f) < 3:
			rep.add("unit", Fail, fmt.Sprintf("unexpected answer from systemctl show: %q", out), "")
		case f[0] != "loaded":
			rep.add("unit", Fail, fmt.Sprintf("%s is %s", unit, f[0]), fmt.Sprintf("install %s on the host, or set unit: in the config / -u", unit))
		default:
			rep.add("unit", OK, fmt.Sprintf("%s loaded, %s/%s", unit, f[1], f[2]), "")
		}
	}

	out, serr, code, err = exec("nvidia-smi -L")
	switch {
	case err != nil:
		rep.add("nvidia-smi", Fail, err.Error(), "")
	case code == 127:
		rep.add("nvidia-smi", Warn, "not found on PATH: no GPU panel", "install the NVIDIA driver utilities, or put nvidia-smi on the login PATH")
	case code != 0:
		rep.add("nvidia-smi", Warn, fmt.Sprintf("exit %d: %s", code, firstLine(serr)), "")
	default:
		n := len(strings.Split(out, "\n"))
		rep.add("nvidia-smi", OK, strconv.Itoa(n)+" GPUs", "")
	}
}

// unitPath starts a unit watch and reports the path of its first event,
// and why the paths before it failed (nil when the first one worked).
func unitPath(ctx context.Context, conn *sshx.Conn, host, unit string) (path string, why, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	onPath := func(_ string, w error) { why = w }
	err = systemd.Watch(ctx, conn, systemd.WatchOptions{Host: host, Unit: unit, OnPath: onPath}, func(ev event.Event) bool {
		if ev.Unit != nil {
			path = ev.Unit.Path
		}
		return false // one event is enough
	})
	if path != "" {
		return path, why, nil
	}
	if err == nil {
		err = errors.New("no state read")
	}
	return "", nil, err
}

// classifyDialError turns a failed dial into the checks a person needs.
func classifyDialError(rep *Report, r live.Options, err error) {
	var unknown *sshx.UnknownHostError
	var changed *sshx.HostKeyChangedError
	var revoked *sshx.RevokedHostKeyError
	var cert *sshx.HostCertError
	var auth *sshx.AuthError
	switch {
	case errors.As(err, &unknown):
		rep.add("reachable", OK, "sshd answered", "")
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
		rep.add("host key", Fail, what,
			fmt.Sprintf("check the fingerprint, then: bringup doctor --trust %s (or StrictHostKeyChecking accept-new)", r.Name))
	case errors.As(err, &cert):
		rep.add("reachable", OK, "sshd answered", "")
		rep.add("host key", Fail, err.Error(), "")
	case errors.As(err, &changed):
		rep.add("reachable", OK, "sshd answered", "")
		var old []string
		for _, k := range changed.Old {
			old = append(old, fmt.Sprintf("%s %s (%s:%d)", k.KeyType, k.Fingerprint, k.File, k.Line))
		}
		rep.add("host key", Fail, fmt.Sprintf("CHANGED: now %s %s, known_hosts has %s", changed.NewKeyType, changed.NewFingerprint, strings.Join(old, ", ")),
			"someone may be intercepting the connection, or the host was reinstalled: confirm out of band, then remove the old line")
	case errors.As(err, &revoked):
		rep.add("reachable", OK, "sshd answered", "")
		what := "the host's key is @revoked in "
		if revoked.CA {
			what = "the host's certificate is signed by a CA that is @revoked in "
		}
		rep.add("host key", Fail, what+fmt.Sprintf("%s:%d", revoked.File, revoked.Line), "")
	case errors.As(err, &auth):
		rep.add("reachable", OK, "sshd answered", "")
		rep.add("host key", OK, "matches known_hosts", "")
		rep.add("auth", Fail, err.Error(), fmt.Sprintf("add your public key to ~%s/.ssh/authorized_keys on the host, or load the right key into ssh-agent", r.SSH.User))
	default:
		rep.add("reachable", Fail, err.Error(), "check the address, the network path (ProxyJump) and that sshd runs")
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

// Trust is `bringup doctor --trust`: it fetches the host key of cfg's host
// once, prints it on w, and records exactly that key in known_hosts (no
// second fetch that could bring another key). With pin (SHA256:…, as
// ssh-keygen -lf prints it on the host) a key with another fingerprint is
// refused and nothing is written. Keys accept-new learns for jump hosts
// on the way are printed too.
func Trust(ctx context.Context, w io.Writer, cfg sshx.Config, dial sshx.DialOptions, pin string) error {
	if pin != "" {
		if err := sshx.CheckFingerprint(pin); err != nil {
			return fmt.Errorf("--fingerprint: %w", err)
		}
	}
	if dial.OnNewHostKey == nil {
		dial.OnNewHostKey = func(k sshx.LearnedHostKey) { fmt.Fprintln(w, k.String()) }
	}
	k, err := sshx.FetchHostKey(ctx, cfg, dial)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s (%s) presents host key %s %s\n", k.Host, k.Addr, k.KeyType, k.Fingerprint)
	file, line, err := k.Write(pin)
	switch {
	case err != nil:
		return err
	case line == 0:
		fmt.Fprintf(w, "%s: known_hosts already trusts this key: nothing written\n", k.Host)
	case pin != "":
		fmt.Fprintf(w, "%s: matches the pinned fingerprint; added to %s:%d\n", k.Host, file, line)
	default:
		fmt.Fprintf(w, "%s: added to %s:%d (not pinned: compare the fingerprint above with ssh-keygen -lf on the host, or pass --fingerprint next time)\n", k.Host, file, line)
	}
	return nil
}
