package sshx

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/bringup-dev/bringup/remote/testkit/e2e"
)

// These tests run a real OpenSSH sshd presenting a host certificate made by
// ssh-keygen, as an operator would make one, and compare every verdict with
// the real ssh client's.

// sshKeygen runs ssh-keygen with args.
func sshKeygen(t *testing.T, args ...string) {
	t.Helper()
	e2e.Require(t, e2e.Command("ssh-keygen"))
	if out, err := exec.Command("ssh-keygen", args...).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// hostCA is a certificate authority key made by ssh-keygen.
type hostCA struct {
	path string // private key; path+".pub" is the public key
	pub  ssh.PublicKey
}

func newHostCA(t *testing.T, name string) hostCA {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	sshKeygen(t, "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", path)
	b, err := os.ReadFile(path + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(b)
	if err != nil {
		t.Fatal(err)
	}
	return hostCA{path: path, pub: pub}
}

// line is the CA's "type base64" as known_hosts holds it.
func (ca hostCA) line() string { return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(ca.pub))) }

func (ca hostCA) fingerprint() string { return ssh.FingerprintSHA256(ca.pub) }

// certify signs d's ed25519 host key with ca (ssh-keygen -s CA -h -I
// test-host plus args, e.g. -n and -V) and restarts sshd with it as its
// HostCertificate.
func (d *testSSHD) certify(t *testing.T, ca hostCA, args ...string) *ssh.Certificate {
	t.Helper()
	pubPath := filepath.Join(d.dir, "host_ed25519.pub")
	if err := os.WriteFile(pubPath, ssh.MarshalAuthorizedKey(d.hostKeys[0].PublicKey()), 0o644); err != nil {
		t.Fatal(err)
	}
	sshKeygen(t, append(append([]string{"-q", "-s", ca.path, "-h", "-I", "test-host"}, args...), pubPath)...)
	certPath := filepath.Join(d.dir, "host_ed25519-cert.pub")
	b, err := os.ReadFile(certPath)
	if err != nil {
		t.Fatal(err)
	}
	k, _, _, _, err := ssh.ParseAuthorizedKey(b)
	if err != nil {
		t.Fatal(err)
	}
	cert, ok := k.(*ssh.Certificate)
	if !ok {
		t.Fatalf("%s holds a %T, not a certificate", certPath, k)
	}
	cfg, err := os.ReadFile(d.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(cfg, []byte("HostCertificate ")) {
		cfg = append(cfg, "HostCertificate "+certPath+"\n"...)
		if err := os.WriteFile(d.cfgPath, cfg, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d.stop()
	d.start()
	return cert
}

// hostPort is the known_hosts name of d: [127.0.0.1]:PORT.
func (d *testSSHD) hostPort() string { return fmt.Sprintf("[127.0.0.1]:%d", d.port) }

// opensshDial runs the real ssh client against d, strictly checking the
// known_hosts file kh, and returns its failure.
func opensshDial(t *testing.T, d *testSSHD, key clientKey, kh string) error {
	t.Helper()
	e2e.Require(t, e2e.Command("ssh")) // the control
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ssh", "-F", "/dev/null",
		"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile="+kh,
		"-o", "GlobalKnownHostsFile=/dev/null", "-o", "IdentitiesOnly=yes", "-o", "ConnectTimeout=10",
		"-i", key.path, "-p", strconv.Itoa(d.port), "root@127.0.0.1", "true").CombinedOutput()
	if err != nil {
		return fmt.Errorf("ssh: %w: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// refusedBeforeAuth dials cfg, which must fail, and checks that the client
// key was never used and sshd saw no authentication request.
func refusedBeforeAuth(t *testing.T, d *testSSHD, key clientKey, cfg Config) error {
	t.Helper()
	var uses atomic.Int32
	opts := dialOpts()
	opts.Signers = []ssh.Signer{countingSigner{key.signer, &uses}}
	c, err := Dial(ctxT(t, 20*time.Second), cfg, opts)
	if err == nil {
		c.Close()
		t.Fatal("dial succeeded, want a refusal")
	}
	if uses.Load() != 0 {
		t.Errorf("client key used %d times: auth was attempted", uses.Load())
	}
	if !IsPermanent(err) {
		t.Errorf("refusal %v is not permanent", err)
	}
	t.Logf("refused: %v", err)
	time.Sleep(200 * time.Millisecond) // let sshd flush its log
	log := d.log.String()
	if !strings.Contains(log, "Connection from 127.0.0.1") {
		t.Fatalf("sshd log does not show the connection: %s", log)
	}
	for _, bad := range []string{"userauth-request", "Accepted", "Failed publickey", "Postponed publickey"} {
		if strings.Contains(log, bad) {
			t.Errorf("sshd log shows %q: auth was attempted", bad)
		}
	}
	return err
}

func errContains(t *testing.T, err error, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
}

// TestHostCertificateAccepted: known_hosts holds only an @cert-authority
// line (exact [host]:port, wildcard, pattern list, hashed, or the bare host
// that ssh falls back to off port 22); the server must present its
// certificate and the dial succeed, as with ssh.
func TestHostCertificateAccepted(t *testing.T) {
	key := newClientKey(t)
	d := startSSHD(t, false, key.signer.PublicKey())
	ca := newHostCA(t, "ca")
	d.certify(t, ca, "-n", "127.0.0.1,gpu1.example.com")
	for _, tc := range []struct{ name, pattern string }{
		{"exact", d.hostPort()},
		{"wildcard", "*"},
		{"pattern list", "gpu*.example.com,[127.0.0.1]:*"},
		{"hashed", knownhosts.HashHostname(d.hostPort())},
		{"bare host", "127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := d.config(t, key, "# CA only\n@cert-authority "+tc.pattern+" "+ca.line()+" ca\n")
			kh, err := LoadKnownHosts(cfg.UserKnownHostsFiles, nil)
			if err != nil {
				t.Fatal(err)
			}
			algos := kh.HostKeyAlgorithms(lookupName(cfg))
			if len(algos) == 0 || !strings.Contains(algos[0], "-cert-v01@openssh.com") {
				t.Errorf("HostKeyAlgorithms = %v, want certificates first", algos)
			}
			c, err := Dial(ctxT(t, 20*time.Second), cfg, dialOpts())
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "exact" { // one session proves the login is whole
				execEcho(t, c)
			}
			c.Close()
			if err := opensshDial(t, d, key, cfg.UserKnownHostsFiles[0]); err != nil {
				t.Errorf("control: OpenSSH refuses what bringup accepted: %v", err)
			}
		})
	}
	time.Sleep(200 * time.Millisecond)
	if log := d.log.String(); !strings.Contains(log, "kex: host key algorithm: "+ssh.CertAlgoED25519v01) {
		t.Errorf("sshd did not present its certificate: %s", log)
	}
}

// TestHostCertificateUntrustedCA: a certificate from a CA that known_hosts
// does not trust for the host is refused before authentication, naming
// the CA presented and the trusted ones, even under accept-new; as with
// ssh, a pinned plain key still admits the host.
func TestHostCertificateUntrustedCA(t *testing.T) {
	key := newClientKey(t)
	d := startSSHD(t, false, key.signer.PublicKey())
	ca, rogue := newHostCA(t, "ca"), newHostCA(t, "rogue")
	d.certify(t, rogue, "-n", "127.0.0.1")
	content := "@cert-authority " + d.hostPort() + " " + ca.line() + "\n"
	cfg := d.config(t, key, content)
	cfg.StrictHostKeyChecking = "accept-new"
	err := refusedBeforeAuth(t, d, key, cfg)
	var hk *HostKeyError
	var ce *HostCertError
	if !errors.As(err, &hk) || !errors.As(err, &ce) || ce.Problem != CertUntrustedCA {
		t.Fatalf("want HostKeyError wrapping HostCertError untrusted-ca, got %v", err)
	}
	if ce.CAFingerprint != rogue.fingerprint() || len(ce.Trusted) != 1 || ce.Trusted[0].Fingerprint != ca.fingerprint() || ce.Trusted[0].Line != 1 {
		t.Errorf("got %+v", ce)
	}
	errContains(t, err, "gpu-test", d.hostPort(), "not signed by a trusted @cert-authority",
		rogue.fingerprint(), ca.fingerprint(), cfg.UserKnownHostsFiles[0]+":1",
		ssh.FingerprintSHA256(d.hostKeys[0].PublicKey()), "@cert-authority "+d.hostPort()+" <CA public key>")
	if b, _ := os.ReadFile(cfg.UserKnownHostsFiles[0]); string(b) != content {
		t.Errorf("accept-new learned a key from an untrusted certificate: %q", b)
	}
	if err := opensshDial(t, d, key, cfg.UserKnownHostsFiles[0]); err == nil {
		t.Error("control: OpenSSH accepts what bringup refused")
	}

	// The certificate's plain key pinned next to the CA line: accepted.
	cfg = d.config(t, key, content+d.knownHostsLine(0))
	c, err := Dial(ctxT(t, 20*time.Second), cfg, dialOpts())
	if err != nil {
		t.Fatalf("pinned plain key: %v", err)
	}
	c.Close()
	if err := opensshDial(t, d, key, cfg.UserKnownHostsFiles[0]); err != nil {
		t.Errorf("control: OpenSSH refuses the pinned plain key: %v", err)
	}
}

// TestHostCertificateInvalid: certificates from the trusted CA that are
// expired, not yet valid, for another host or for no host are refused
// before authentication with the reason in the message.
func TestHostCertificateInvalid(t *testing.T) {
	key := newClientKey(t)
	d := startSSHD(t, false, key.signer.PublicKey())
	ca := newHostCA(t, "ca")
	cfg := d.config(t, key, "@cert-authority * "+ca.line()+"\n")
	day := func(off time.Duration) string { return time.Now().Add(off).UTC().Format("20060102") }
	for _, tc := range []struct {
		name    string
		args    []string
		problem CertProblem
		want    []string
		openssh bool // OpenSSH accepts it
	}{
		{"expired", []string{"-n", "127.0.0.1", "-V", "20200101:20200102"}, CertExpired,
			[]string{"expired at 2020-01-02T00:00:00Z", "issue the host a fresh certificate"}, false},
		{"not yet valid", []string{"-n", "127.0.0.1", "-V", day(365*24*time.Hour) + ":" + day(730*24*time.Hour)}, CertNotYetValid,
			[]string{"not valid until", "clock"}, false},
		{"other host", []string{"-n", "gpu7.example.com,10.0.0.7"}, CertWrongPrincipal,
			[]string{`principals [gpu7.example.com,10.0.0.7] do not include "127.0.0.1"`, "-n 127.0.0.1"}, false},
		{"no principals", nil, CertNoPrincipals,
			[]string{"lists no principals", "-n 127.0.0.1"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d.certify(t, ca, tc.args...)
			err := refusedBeforeAuth(t, d, key, cfg)
			var ce *HostCertError
			if !errors.As(err, &ce) || ce.Problem != tc.problem {
				t.Fatalf("want HostCertError %s, got %v", tc.problem, err)
			}
			if ce.CAFingerprint != ca.fingerprint() || ce.KeyID != "test-host" {
				t.Errorf("got %+v", ce)
			}
			errContains(t, err, append(tc.want, "gpu-test", d.hostPort(), `key ID "test-host"`)...)
			oerr := opensshDial(t, d, key, cfg.UserKnownHostsFiles[0])
			if tc.openssh && oerr != nil {
				t.Errorf("control: OpenSSH was expected to accept (bringup is stricter here): %v", oerr)
			}
			if !tc.openssh && oerr == nil {
				t.Error("control: OpenSSH accepts what bringup refused")
			}
		})
	}
}

// TestHostCertificateRevokedCA: a certificate whose CA is @revoked is
// refused, saying that the CA is revoked and where.
func TestHostCertificateRevokedCA(t *testing.T) {
	key := newClientKey(t)
	d := startSSHD(t, false, key.signer.PublicKey())
	ca := newHostCA(t, "ca")
	d.certify(t, ca, "-n", "127.0.0.1")
	cfg := d.config(t, key, "@cert-authority * "+ca.line()+"\n@revoked * "+ca.line()+"\n")
	err := refusedBeforeAuth(t, d, key, cfg)
	var rv *RevokedHostKeyError
	if !errors.As(err, &rv) || !rv.CA || rv.Line != 2 || rv.Fingerprint != ca.fingerprint() {
		t.Fatalf("want RevokedHostKeyError for the CA at line 2, got %v", err)
	}
	errContains(t, err, "revoked certificate authority", ca.fingerprint(), cfg.UserKnownHostsFiles[0]+":2")
	if err := opensshDial(t, d, key, cfg.UserKnownHostsFiles[0]); err == nil {
		t.Error("control: OpenSSH accepts what bringup refused")
	}
}

// TestHostCertificateWithoutCA: a host that serves a certificate but that
// no @cert-authority line covers is handled by its plain key, as ssh does:
// unknown under StrictHostKeyChecking yes (naming the plain key's
// fingerprint, the CA and the lines that trust it for other names), learned
// under accept-new.
func TestHostCertificateWithoutCA(t *testing.T) {
	key := newClientKey(t)
	d := startSSHD(t, false, key.signer.PublicKey())
	ca := newHostCA(t, "ca")
	d.certify(t, ca, "-n", "127.0.0.1")
	hostFP := ssh.FingerprintSHA256(d.hostKeys[0].PublicKey())
	cfg := d.config(t, key, "")
	_, err := Dial(ctxT(t, 20*time.Second), cfg, dialOpts())
	var uh *UnknownHostError
	if !errors.As(err, &uh) || uh.Fingerprint != hostFP || uh.CertCA != ca.fingerprint() {
		t.Fatalf("want UnknownHostError for the plain key, got %v", err)
	}
	errContains(t, err, "presented a host certificate signed by CA "+ca.fingerprint(), "ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub")

	other := d.config(t, key, "@cert-authority gpu*.example.com "+ca.line()+"\n")
	_, err = Dial(ctxT(t, 20*time.Second), other, dialOpts())
	if !errors.As(err, &uh) || len(uh.CertCAAt) != 1 {
		t.Fatalf("want UnknownHostError naming the CA line for other names, got %v", err)
	}
	errContains(t, err, other.UserKnownHostsFiles[0]+":1 (gpu*.example.com)", "matches "+d.hostPort()+" or 127.0.0.1")
	if err := opensshDial(t, d, key, other.UserKnownHostsFiles[0]); err == nil {
		t.Error("control: OpenSSH accepts a host its CA line does not match")
	}

	cfg.StrictHostKeyChecking = "accept-new"
	c, err := Dial(ctxT(t, 20*time.Second), cfg, dialOpts())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if b, _ := os.ReadFile(cfg.UserKnownHostsFiles[0]); string(b) != d.knownHostsLine(0) {
		t.Errorf("known_hosts = %q, want the plain key", b)
	}
	cfg.StrictHostKeyChecking = "yes"
	if c, err = Dial(ctxT(t, 20*time.Second), cfg, dialOpts()); err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// TestCAHostWithoutCertificate: an @cert-authority host whose sshd has no
// certificate yet is refused as unknown, naming its plain key, not with
// "no common algorithm".
func TestCAHostWithoutCertificate(t *testing.T) {
	key := newClientKey(t)
	d := startSSHD(t, false, key.signer.PublicKey())
	cfg := d.config(t, key, "@cert-authority * "+newHostCA(t, "ca").line()+"\n")
	_, err := Dial(ctxT(t, 20*time.Second), cfg, dialOpts())
	var uh *UnknownHostError
	if !errors.As(err, &uh) || uh.Fingerprint != ssh.FingerprintSHA256(d.hostKeys[0].PublicKey()) {
		t.Fatalf("want UnknownHostError for the plain key, got %v", err)
	}
}

// TestTrustCertifiedHost: doctor --trust on a host with a valid certificate
// writes nothing (the CA vouches for it) and reports the certified key.
func TestTrustCertifiedHost(t *testing.T) {
	key := newClientKey(t)
	d := startSSHD(t, false, key.signer.PublicKey())
	ca := newHostCA(t, "ca")
	d.certify(t, ca, "-n", "127.0.0.1")
	content := "@cert-authority * " + ca.line() + "\n"
	cfg := d.config(t, key, content)
	fp, err := trust(ctxT(t, 20*time.Second), cfg, dialOpts(), "")
	if err != nil || fp != ssh.FingerprintSHA256(d.hostKeys[0].PublicKey()) {
		t.Fatalf("Trust = %s, %v", fp, err)
	}
	if b, _ := os.ReadFile(cfg.UserKnownHostsFiles[0]); string(b) != content {
		t.Errorf("Trust changed known_hosts: %q", b)
	}
}

// TestHashKnownHostsAppends: with HashKnownHosts yes in ssh_config (read by
// ssh -G and by the parser), accept-new and Trust append the entry hashed
// as |1|salt|hash, as ssh does; ssh-keygen -F finds it and later strict
// dials, bringup's and ssh's, accept it.
func TestHashKnownHostsAppends(t *testing.T) {
	key := newClientKey(t)
	d := startSSHD(t, false, key.signer.PublicKey())
	for _, resolver := range []string{"", "-"} {
		for _, learn := range []string{"accept-new", "trust"} {
			t.Run(fmt.Sprintf("%s/%s", map[string]string{"": "ssh -G", "-": "parser"}[resolver], learn), func(t *testing.T) {
				dir := t.TempDir()
				kh := filepath.Join(dir, "known_hosts")
				cfgFile := filepath.Join(dir, "config")
				conf := fmt.Sprintf("Host gpu-test\n  HostName 127.0.0.1\n  Port %d\n  User root\n  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking accept-new\n  HashKnownHosts yes\n",
					d.port, key.path, kh)
				if err := os.WriteFile(cfgFile, []byte(conf), 0o600); err != nil {
					t.Fatal(err)
				}
				ropts := ResolveOptions{ConfigFile: cfgFile, SSHPath: resolver}
				cfg, err := Resolve(context.Background(), "gpu-test", ropts)
				if err != nil {
					t.Fatal(err)
				}
				if !cfg.HashKnownHosts {
					t.Fatalf("%s: HashKnownHosts not set", cfg.Source)
				}
				// One reading of known_hosts shared by both dials, as a
				// fleet's are: the strict dial must see the learned key.
				opts := dialOpts()
				opts.KnownHosts = NewKnownHostsCache()
				if learn == "trust" {
					_, err = trust(ctxT(t, 20*time.Second), cfg, dialOpts(), "")
				} else if c, derr := Dial(ctxT(t, 20*time.Second), cfg, opts); derr == nil {
					c.Close()
				} else {
					err = derr
				}
				if err != nil {
					t.Fatal(err)
				}
				b, _ := os.ReadFile(kh)
				fields := strings.Fields(string(b))
				if strings.Count(string(b), "\n") != 1 || len(fields) != 3 || !strings.HasPrefix(fields[0], "|1|") || strings.Contains(string(b), "127.0.0.1") ||
					fields[1]+" "+fields[2] != strings.TrimSpace(string(ssh.MarshalAuthorizedKey(d.hostKeys[0].PublicKey()))) {
					t.Fatalf("known_hosts = %q, want one hashed entry with the host key", b)
				}
				if out, err := exec.Command("ssh-keygen", "-F", d.hostPort(), "-f", kh).CombinedOutput(); err != nil {
					t.Errorf("ssh-keygen -F does not find the hashed entry: %v %s", err, out)
				}
				cfg.StrictHostKeyChecking = "yes"
				c, err := Dial(ctxT(t, 20*time.Second), cfg, opts)
				if err != nil {
					t.Fatalf("strict dial after learning: %v", err)
				}
				c.Close()
				if b2, _ := os.ReadFile(kh); !bytes.Equal(b2, b) {
					t.Errorf("strict dial changed known_hosts: %q", b2)
				}
				if err := opensshDial(t, d, key, kh); err != nil {
					t.Errorf("control: OpenSSH refuses the hashed entry: %v", err)
				}
			})
		}
	}
}

// TestResolveHashKnownHosts: both resolvers read HashKnownHosts; the
// parser rejects a value ssh would reject.
func TestResolveHashKnownHosts(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		conf string
		want bool
	}{
		{"Host h\n  HashKnownHosts yes\n", true},
		{"Host h\n  HashKnownHosts no\nHost *\n  HashKnownHosts yes\n", false},
		{"Host h\n  Port 2222\n", false},
	} {
		f := filepath.Join(dir, "config")
		if err := os.WriteFile(f, []byte(tc.conf), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, resolver := range []string{"", "-"} {
			cfg, err := Resolve(context.Background(), "h", ResolveOptions{ConfigFile: f, SSHPath: resolver})
			if err != nil {
				t.Fatal(err)
			}
			if cfg.HashKnownHosts != tc.want {
				t.Errorf("%s: %q: HashKnownHosts = %v, want %v", cfg.Source, tc.conf, cfg.HashKnownHosts, tc.want)
			}
		}
	}
	f := filepath.Join(dir, "bad")
	if err := os.WriteFile(f, []byte("Host h\n  HashKnownHosts maybe\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Resolve(context.Background(), "h", ResolveOptions{ConfigFile: f, SSHPath: "-"})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Line != 2 {
		t.Errorf("want ConfigError at line 2, got %v", err)
	}
}

// TestBareHostEntryOffPort22: for a host off port 22 with nothing under
// [host]:port, ssh accepts an entry under the bare host name ("checking
// without port identifier"); so does bringup, ordering host key algorithms
// by it (the server also has an ECDSA key, which the library would prefer),
// and accept-new leaves the file alone.
func TestBareHostEntryOffPort22(t *testing.T) {
	key := newClientKey(t)
	d := startSSHD(t, true, key.signer.PublicKey())
	content := knownhostsLine("127.0.0.1", d.hostKeys[0].PublicKey())
	cfg := d.config(t, key, content)
	cfg.StrictHostKeyChecking = "accept-new"
	kh, err := LoadKnownHosts(cfg.UserKnownHostsFiles, nil)
	if err != nil {
		t.Fatal(err)
	}
	if algos := kh.HostKeyAlgorithms(lookupName(cfg)); len(algos) != 1 || algos[0] != ssh.KeyAlgoED25519 {
		t.Errorf("HostKeyAlgorithms = %v, want [ssh-ed25519]", algos)
	}
	c, err := Dial(ctxT(t, 20*time.Second), cfg, dialOpts())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if b, _ := os.ReadFile(cfg.UserKnownHostsFiles[0]); string(b) != content {
		t.Errorf("known_hosts changed: %q", b)
	}
	if err := opensshDial(t, d, key, cfg.UserKnownHostsFiles[0]); err != nil {
		t.Errorf("control: OpenSSH refuses the bare host entry: %v", err)
	}
}

// TestCertProblemReasons covers the refusals no test sshd can be made to
// present: a user certificate, critical options, a broken signature.
func TestCertProblemReasons(t *testing.T) {
	caSigner, err := ssh.NewSignerFromKey(newEd25519(t))
	if err != nil {
		t.Fatal(err)
	}
	hostSigner, err := ssh.NewSignerFromKey(newEd25519(t))
	if err != nil {
		t.Fatal(err)
	}
	cas := []caLine{{patterns: []string{"*"}, key: caSigner.PublicKey(), file: "kh", line: 1}}
	sign := func(edit func(*ssh.Certificate)) *ssh.Certificate {
		c := &ssh.Certificate{Key: hostSigner.PublicKey(), CertType: ssh.HostCert, KeyId: "h", ValidPrincipals: []string{"gpu1"},
			ValidBefore: ssh.CertTimeInfinity}
		edit(c)
		if err := c.SignCert(rand.Reader, caSigner); err != nil {
			t.Fatal(err)
		}
		return c
	}
	if p := certProblem("gpu1:22", sign(func(*ssh.Certificate) {}), cas, time.Now()); p != nil {
		t.Fatalf("valid certificate refused: %v", p)
	}
	tampered := sign(func(*ssh.Certificate) {})
	tampered.KeyId = "other"
	for _, tc := range []struct {
		cert *ssh.Certificate
		want CertProblem
		text string
	}{
		{sign(func(c *ssh.Certificate) { c.CertType = ssh.UserCert }), CertNotHostCert, "user certificate"},
		{sign(func(c *ssh.Certificate) { c.CriticalOptions = map[string]string{"force-command": "true"} }), CertCriticalOptions, "critical options force-command"},
		{tampered, CertInvalid, "does not verify"},
	} {
		p := certProblem("gpu1:22", tc.cert, cas, time.Now())
		if p == nil || p.Problem != tc.want {
			t.Errorf("%s: got %v", tc.want, p)
			continue
		}
		errContains(t, p, tc.text, ssh.FingerprintSHA256(caSigner.PublicKey()))
	}
}
