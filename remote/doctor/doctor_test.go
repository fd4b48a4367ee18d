package doctor

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"bringup/remote/live"
	"bringup/remote/sshx"
)

// TestClassifyDialError checks that each way a dial can fail lands on the
// check that failed, with what the operator needs to see: a host that
// answered is reachable even when its key or certificate is refused.
func TestClassifyDialError(t *testing.T) {
	r := live.Options{Name: "gpu1", SSH: sshx.Config{User: "deploy"}}
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
