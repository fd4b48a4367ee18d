package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/ssh"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/live"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// TestClassifyDialError checks that each way a dial can fail lands on the
// check that failed, with what the operator needs to see: a host that
// answered is reachable even when its key or certificate is refused.
func TestClassifyDialError(t *testing.T) {
	r := live.Options{Host: remote.Host{Name: "gpu1"}, SSH: sshx.Config{User: "deploy"}}
	certErr := &sshx.HostKeyError{Host: "gpu1", Addr: "gpu1:22", Err: &sshx.HostCertError{
		Problem: sshx.CertExpired, Principal: "gpu1", KeyType: "ssh-ed25519", Fingerprint: "SHA256:host",
	}}
	cases := []struct {
		name      string
		err       error
		reachable Status
		failed    string // the check that fails
		detail    string // in its detail
		fix       string // in its fix
	}{
		{"unknown", &sshx.UnknownHostError{Host: "gpu1", KeyType: "ssh-ed25519", Fingerprint: "SHA256:abc"},
			OK, "host key", "not in known_hosts: ssh-ed25519 SHA256:abc", "bringup doctor --trust gpu1"},
		{"unknown with a CA trusted elsewhere", &sshx.UnknownHostError{Host: "gpu1", KeyType: "ssh-ed25519", Fingerprint: "SHA256:abc",
			CertCA: "SHA256:ca", CertCAAt: []string{"/k:3 (*.other)"}},
			OK, "host key", "signed by CA SHA256:ca, trusted for other names at /k:3 (*.other)", "--trust gpu1"},
		{"changed", &sshx.HostKeyChangedError{Host: "gpu1", NewKeyType: "ssh-ed25519", NewFingerprint: "SHA256:new",
			Old: []sshx.KnownKey{{KeyType: "ssh-ed25519", Fingerprint: "SHA256:old", File: "/k", Line: 2}}},
			OK, "host key", "CHANGED: now ssh-ed25519 SHA256:new, known_hosts has ssh-ed25519 SHA256:old (/k:2)", "confirm out of band"},
		{"revoked key", &sshx.RevokedHostKeyError{Host: "gpu1", File: "/k", Line: 4},
			OK, "host key", "the host's key is @revoked in /k:4", ""},
		{"revoked CA", &sshx.RevokedHostKeyError{Host: "gpu1", CA: true, File: "/k", Line: 5},
			OK, "host key", "signed by a CA that is @revoked in /k:5", ""},
		{"bad certificate", fmt.Errorf("dial gpu1: %w", certErr),
			OK, "host key", certErr.Error(), ""},
		{"auth", &sshx.AuthError{Host: "gpu1", Err: errors.New("no key accepted")},
			OK, "auth", "", "~deploy/.ssh/authorized_keys"},
		{"network", errors.New("dial tcp 10.0.0.1:22: connect: no route to host"),
			Fail, "reachable", "no route to host", "check the address"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := &Report{Host: "gpu1"}
			classifyDialError(rep, r, c.err)
			if len(rep.Checks) == 0 || rep.Checks[0].Name != "reachable" || rep.Checks[0].Status != c.reachable {
				t.Fatalf("first check %+v, want reachable %v", rep.Checks, c.reachable)
			}
			last := rep.Checks[len(rep.Checks)-1]
			if last.Name != c.failed || last.Status != Fail {
				t.Fatalf("last check %+v, want %s failed", last, c.failed)
			}
			if !strings.Contains(last.Detail, c.detail) || !strings.Contains(last.Fix, c.fix) {
				t.Errorf("%s: detail %q fix %q; want %q in detail and %q in fix", c.failed, last.Detail, last.Fix, c.detail, c.fix)
			}
		})
	}
}

// TestHostKeyPolicyWarned: StrictHostKeyChecking no and UserKnownHostsFile
// /dev/null are a warning with the fix, before any connection is tried.
func TestHostKeyPolicyWarned(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // nothing listens: the dial fails at once
	r := live.Options{Host: remote.Host{Name: "gpu1"}, SSH: sshx.Config{Alias: "gpu1", HostName: "127.0.0.1", Port: port, User: "root",
		StrictHostKeyChecking: "no", UserKnownHostsFiles: []string{"/dev/null"}}, Dial: sshx.DialOptions{AgentSocket: "-"}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rep := Host(ctx, r)
	var policy *Check
	for i, c := range rep.Checks {
		if c.Name == "key policy" {
			policy = &rep.Checks[i]
		}
	}
	if policy == nil || policy.Status != Warn {
		t.Fatalf("no key policy warning in %+v", rep.Checks)
	}
	for _, want := range []string{"StrictHostKeyChecking no", "UserKnownHostsFile /dev/null", "trusts whatever key"} {
		if !strings.Contains(policy.Detail, want) {
			t.Errorf("detail %q lacks %q", policy.Detail, want)
		}
	}
	if !strings.Contains(policy.Fix, "--trust gpu1 --fingerprint") {
		t.Errorf("fix %q", policy.Fix)
	}
	r.SSH.StrictHostKeyChecking, r.SSH.UserKnownHostsFiles = "accept-new", []string{"/root/.ssh/known_hosts"}
	for _, c := range Host(ctx, r).Checks {
		if c.Name == "key policy" {
			t.Errorf("accept-new with a real file flagged: %+v", c)
		}
	}
}

// TestTrustOnTestbed is `doctor --trust` against a real host: a wrong
// --fingerprint writes nothing; the right one writes exactly the key
// shown; a second run writes nothing more; doctor then passes the host
// key check.
func TestTrustOnTestbed(t *testing.T) {
	tb := testbed.Start(t, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cfg, err := sshx.Resolve(ctx, "gpu1", sshx.ResolveOptions{ConfigFile: tb.SSHConfig()})
	if err != nil {
		t.Fatal(err)
	}
	kh := filepath.Join(t.TempDir(), "known_hosts")
	cfg.UserKnownHostsFiles = []string{kh}
	pub, err := tb.HostKey("gpu1")
	if err != nil {
		t.Fatal(err)
	}
	fp := ssh.FingerprintSHA256(pub)
	dial := sshx.DialOptions{AgentSocket: "-"}

	var out bytes.Buffer
	wrong := "SHA256:" + strings.Repeat("x", 43)
	err = Trust(ctx, &out, cfg, dial, wrong)
	var mm *sshx.FingerprintMismatchError
	if !errors.As(err, &mm) {
		t.Fatalf("wrong pin: %v, want a FingerprintMismatchError", err)
	}
	if _, serr := os.Stat(kh); !errors.Is(serr, os.ErrNotExist) {
		t.Fatalf("known_hosts exists after a refused pin: %v", serr)
	}
	if !strings.Contains(out.String(), "presents host key ssh-ed25519 "+fp) {
		t.Errorf("the fetched key was not shown:\n%s", out.String())
	}

	out.Reset()
	if err := Trust(ctx, &out, cfg, dial, fp); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("gpu1: matches the pinned fingerprint; added to %s:1", kh); !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
	b, _ := os.ReadFile(kh)
	if f := strings.Fields(string(b)); len(f) != 3 || f[1]+" "+f[2] != strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))) {
		t.Fatalf("known_hosts = %q, want exactly gpu1's key", b)
	}

	out.Reset()
	if err := Trust(ctx, &out, cfg, dial, ""); err != nil || !strings.Contains(out.String(), "nothing written") {
		t.Errorf("second trust: %v\n%s", err, out.String())
	}
	if b2, _ := os.ReadFile(kh); !bytes.Equal(b, b2) {
		t.Errorf("second trust changed known_hosts: %q", b2)
	}
	rep := Host(ctx, live.Options{Host: remote.Host{Name: "gpu1", Unit: testbed.UnitName}, SSH: cfg, Dial: dial})
	for _, c := range rep.Checks {
		if c.Name == "host key" && c.Status != OK {
			t.Errorf("host key check after trust: %+v", c)
		}
	}
}

// TestReportHoldsNoControl: a check's text quotes the host (stderr, the
// SSH server's messages); the report holds it sanitised — no escape, bell
// or C1 character — and readable, so whoever prints it prints it safely.
func TestReportHoldsNoControl(t *testing.T) {
	evil := "\x1b]52;c;SGVsbG8=\x07 \x1b]0;pwned\x07 \x1b[2J \u009b31m \x9b"
	rep := &Report{Host: "gpu1"}
	rep.add("journald", Fail, "journalctl: "+evil, "fix "+evil)
	c := rep.Checks[0]
	for _, s := range []string{c.Detail, c.Fix} {
		if strings.ContainsAny(s, "\x1b\x07\u009b") || !utf8.ValidString(s) {
			t.Errorf("control characters kept: %q", s)
		}
	}
	if !strings.Contains(c.Detail, "journalctl: ␛]52;c;SGVsbG8=␇ ␛]0;pwned␇ ␛[2J") {
		t.Errorf("the host's text is not shown, made visible: %q", c.Detail)
	}
}
