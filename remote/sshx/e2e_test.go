package sshx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"bringup/remote/testbed/e2e"
)

func execEcho(t *testing.T, c *ssh.Client) {
	t.Helper()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, err := s.Output("echo hi")
	if err != nil || string(out) != "hi\n" {
		t.Fatalf("echo hi = %q, %v", out, err)
	}
}

func TestDialKnownHostExec(t *testing.T) {
	key := newClientKey(t)
	d := startSSHD(t, false, key.signer.PublicKey())
	cfg := d.config(t, key, d.knownHostsLine(0))
	c, err := Dial(ctxT(t, 20*time.Second), cfg, dialOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	execEcho(t, c)
}

func TestUnknownHostRefusedWithFingerprint(t *testing.T) {
	key := newClientKey(t)
	d := startSSHD(t, false, key.signer.PublicKey())
	cfg := d.config(t, key, "")
	_, err := Dial(ctxT(t, 20*time.Second), cfg, dialOpts())
	var uh *UnknownHostError
	if !errors.As(err, &uh) {
		t.Fatalf("want UnknownHostError, got %v", err)
	}
	fp := ssh.FingerprintSHA256(d.hostKeys[0].PublicKey())
	if uh.Fingerprint != fp || uh.KeyType != ssh.KeyAlgoED25519 {
		t.Errorf("fingerprint %s %s, want %s", uh.KeyType, uh.Fingerprint, fp)
	}
	for _, want := range []string{fp, "bringup doctor --trust gpu-test", "accept-new", fmt.Sprintf("[127.0.0.1]:%d", d.port)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if !IsPermanent(err) {
		t.Error("unknown host must be permanent")
	}
	if b, _ := os.ReadFile(cfg.UserKnownHostsFiles[0]); len(b) != 0 {
		t.Errorf("known_hosts written under StrictHostKeyChecking yes: %q", b)
	}
}

// countingSigner counts every use of the client key, to prove that no
// authentication was attempted.
type countingSigner struct {
	ssh.Signer
	n *atomic.Int32
}

func (c countingSigner) PublicKey() ssh.PublicKey { c.n.Add(1); return c.Signer.PublicKey() }
func (c countingSigner) Sign(r io.Reader, b []byte) (*ssh.Signature, error) {
	c.n.Add(1)
	return c.Signer.Sign(r, b)
}

func TestChangedHostKeyRefusedBeforeAuth(t *testing.T) {
	key := newClientKey(t)
	d := startSSHD(t, false, key.signer.PublicKey())
	old, _ := ssh.NewSignerFromKey(newEd25519(t))
	cfg := d.config(t, key, "# comment\n"+knownhostsLine(fmt.Sprintf("[127.0.0.1]:%d", d.port), old.PublicKey()))
	err := refusedBeforeAuth(t, d, key, cfg)
	var ch *HostKeyChangedError
	if !errors.As(err, &ch) {
		t.Fatalf("want HostKeyChangedError, got %v", err)
	}
	oldFP, newFP := ssh.FingerprintSHA256(old.PublicKey()), ssh.FingerprintSHA256(d.hostKeys[0].PublicKey())
	if ch.NewFingerprint != newFP || len(ch.Old) != 1 || ch.Old[0].Fingerprint != oldFP || ch.Old[0].Line != 2 {
		t.Errorf("got %+v", ch)
	}
	errContains(t, err, oldFP, newFP, cfg.UserKnownHostsFiles[0]+":2")
}

func TestHashedKnownHostsEntry(t *testing.T) {
	key := newClientKey(t)
	d := startSSHD(t, false, key.signer.PublicKey())
	hashed := knownhosts.HashHostname(fmt.Sprintf("[127.0.0.1]:%d", d.port))
	cfg := d.config(t, key, knownhostsLine(hashed, d.hostKeys[0].PublicKey()))
	c, err := Dial(ctxT(t, 20*time.Second), cfg, dialOpts())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func TestRevokedHostKeyRefused(t *testing.T) {
	key := newClientKey(t)
	d := startSSHD(t, false, key.signer.PublicKey())
	kh := d.knownHostsLine(0) + "@revoked * " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(d.hostKeys[0].PublicKey()))) + "\n"
	cfg := d.config(t, key, kh)
	_, err := Dial(ctxT(t, 20*time.Second), cfg, dialOpts())
	var rv *RevokedHostKeyError
	if !errors.As(err, &rv) || rv.Line != 2 || !IsPermanent(err) {
		t.Fatalf("want RevokedHostKeyError at line 2, got %v", err)
	}
}

// TestKnownOtherKeyTypeNoFalseMismatch: the server offers ECDSA and
// ed25519 while known_hosts holds only one of them. x/crypto prefers ECDSA,
// so without HostKeyAlgorithms from known_hosts a known ed25519-only host
// looks changed (golang/go#29286); the control dial shows that.
func TestKnownOtherKeyTypeNoFalseMismatch(t *testing.T) {
	key := newClientKey(t)
	d := startSSHD(t, true, key.signer.PublicKey())
	for i, name := range []string{"ed25519 only", "ecdsa only"} {
		cfg := d.config(t, key, d.knownHostsLine(i))
		for j := 0; j < 3; j++ {
			c, err := Dial(ctxT(t, 20*time.Second), cfg, dialOpts())
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			c.Close()
		}
	}
	// Control: the plain knownhosts callback with the library's default
	// algorithm order reports a mismatch for the ed25519-only file.
	cfg := d.config(t, key, d.knownHostsLine(0))
	cb, err := knownhosts.New(cfg.UserKnownHostsFiles...)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ssh.Dial("tcp", d.addr(), &ssh.ClientConfig{User: "root", Auth: []ssh.AuthMethod{ssh.PublicKeys(key.signer)}, HostKeyCallback: cb, Timeout: 10 * time.Second})
	var ke *knownhosts.KeyError
	if !errors.As(err, &ke) || len(ke.Want) == 0 {
		t.Fatalf("control dial: want a false key mismatch, got %v", err)
	}
}

func TestAcceptNewWritesEntryOnce(t *testing.T) {
	key := newClientKey(t)
	d := startSSHD(t, false, key.signer.PublicKey())
	cfg := d.config(t, key, "# no newline at end")
	cfg.StrictHostKeyChecking = "accept-new"
	c, err := Dial(ctxT(t, 20*time.Second), cfg, dialOpts())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	b, _ := os.ReadFile(cfg.UserKnownHostsFiles[0])
	want := "# no newline at end\n" + d.knownHostsLine(0)
	if string(b) != want {
		t.Fatalf("known_hosts = %q, want %q", b, want)
	}
	if out, err := exec.Command("ssh-keygen", "-F", fmt.Sprintf("[127.0.0.1]:%d", d.port), "-f", cfg.UserKnownHostsFiles[0]).CombinedOutput(); err != nil {
		t.Errorf("ssh-keygen -F does not find the entry: %v %s", err, out)
	}
	cfg.StrictHostKeyChecking = "yes"
	c, err = Dial(ctxT(t, 20*time.Second), cfg, dialOpts())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if b2, _ := os.ReadFile(cfg.UserKnownHostsFiles[0]); string(b2) != want {
		t.Errorf("second dial changed known_hosts: %q", b2)
	}
}

func TestAcceptNewNeverOnMismatch(t *testing.T) {
	key := newClientKey(t)
	d := startSSHD(t, false, key.signer.PublicKey())
	old, _ := ssh.NewSignerFromKey(newEd25519(t))
	content := knownhostsLine(fmt.Sprintf("[127.0.0.1]:%d", d.port), old.PublicKey())
	cfg := d.config(t, key, content)
	cfg.StrictHostKeyChecking = "accept-new"
	_, err := Dial(ctxT(t, 20*time.Second), cfg, dialOpts())
	var ch *HostKeyChangedError
	if !errors.As(err, &ch) {
		t.Fatalf("want HostKeyChangedError, got %v", err)
	}
	if b, _ := os.ReadFile(cfg.UserKnownHostsFiles[0]); string(b) != content {
		t.Errorf("known_hosts changed on mismatch: %q", b)
	}
}

func TestTrustThenDial(t *testing.T) {
	key := newClientKey(t)
	d := startSSHD(t, false, key.signer.PublicKey())
	cfg := d.config(t, key, "")
	fp, err := trust(ctxT(t, 20*time.Second), cfg, dialOpts(), "")
	if err != nil || fp != ssh.FingerprintSHA256(d.hostKeys[0].PublicKey()) {
		t.Fatalf("Trust = %s, %v", fp, err)
	}
	if _, err := trust(ctxT(t, 20*time.Second), cfg, dialOpts(), ""); err != nil {
		t.Fatalf("second Trust: %v", err)
	}
	if b, _ := os.ReadFile(cfg.UserKnownHostsFiles[0]); strings.Count(string(b), "\n") != 1 {
		t.Errorf("known_hosts = %q, want one line", b)
	}
	c, err := Dial(ctxT(t, 20*time.Second), cfg, dialOpts())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// TestProxyJumpTwoHops dials a target sshd through a jump sshd, both on
// loopback, resolved from an ssh_config by ssh -G and by the parser.
func TestProxyJumpTwoHops(t *testing.T) {
	key := newClientKey(t)
	hop := startSSHD(t, false, key.signer.PublicKey())
	target := startSSHD(t, false, key.signer.PublicKey())
	dir := t.TempDir()
	kh := filepath.Join(dir, "known_hosts")
	mustWrite(t, kh, []byte(hop.knownHostsLine(0)+target.knownHostsLine(0)), 0o600)
	cfgFile := filepath.Join(dir, "config")
	mustWrite(t, cfgFile, []byte(fmt.Sprintf(`Host hop1
  HostName 127.0.0.1
  Port %d
Host target
  HostName 127.0.0.1
  Port %d
  ProxyJump hop1
Host *
  User root
  IdentityFile %s
  IdentitiesOnly yes
  UserKnownHostsFile %s
  StrictHostKeyChecking yes
`, hop.port, target.port, key.path, kh)), 0o600)
	for _, sshPath := range []string{"", "-"} {
		ropts := ResolveOptions{ConfigFile: cfgFile, SSHPath: sshPath}
		cfg, err := Resolve(context.Background(), "target", ropts)
		if err != nil {
			t.Fatal(err)
		}
		opts := dialOpts()
		opts.Resolve = ropts
		c, err := Dial(ctxT(t, 20*time.Second), cfg, opts)
		if err != nil {
			t.Fatalf("%s: %v", cfg.Source, err)
		}
		execEcho(t, c)
		c.Close()
	}
	// The jump host's key is checked too.
	mustWrite(t, kh, []byte(target.knownHostsLine(0)), 0o600)
	cfg, _ := Resolve(context.Background(), "target", ResolveOptions{ConfigFile: cfgFile, SSHPath: "-"})
	opts := dialOpts()
	opts.Resolve = ResolveOptions{ConfigFile: cfgFile, SSHPath: "-"}
	_, err := Dial(ctxT(t, 20*time.Second), cfg, opts)
	var uh *UnknownHostError
	if !errors.As(err, &uh) || uh.Host != "hop1" {
		t.Fatalf("want unknown jump host hop1, got %v", err)
	}
}

func TestProxyCommandSocat(t *testing.T) {
	start := time.Now()
	defer func() { t.Logf("took %s", time.Since(start)) }()
	e2e.Require(t, e2e.Command("socat"))
	key := newClientKey(t)
	d := startSSHD(t, false, key.signer.PublicKey())
	cfg := d.config(t, key, d.knownHostsLine(0))
	cfg.ProxyCommand = fmt.Sprintf("socat - TCP:127.0.0.1:%d", d.port)
	c, err := Dial(ctxT(t, 20*time.Second), cfg, dialOpts())
	if err != nil {
		t.Fatal(err)
	}
	execEcho(t, c)
	c.Close()
}

func TestProxyCommandConnKilledOnClose(t *testing.T) {
	nc, err := StartProxyCommand("cat")
	if err != nil {
		t.Fatal(err)
	}
	pid := nc.(*cmdConn).cmd.Process.Pid
	if _, err := nc.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(nc, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("read %q %v", buf, err)
	}
	nc.Close()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("proxy command %d still exists after Close: %v", pid, err)
	}
}

// TestHandshakeBoundedByDeadline: a server that accepts and never speaks,
// and a ProxyCommand that never answers, both fail within the timeout.
func TestHandshakeBoundedByDeadline(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var held []net.Conn
		for {
			c, err := l.Accept()
			if err != nil {
				for _, h := range held {
					h.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	defer wg.Wait()
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	key := newClientKey(t)
	base := Config{Alias: "silent", HostName: "127.0.0.1", Port: port, User: "root", IdentityFiles: []string{key.path},
		StrictHostKeyChecking: "yes", ConnectTimeout: 500 * time.Millisecond}
	for name, cfg := range map[string]Config{
		"blackhole":    base,
		"proxycommand": func() Config { c := base; c.ProxyCommand = "sleep 30"; return c }(),
	} {
		start := time.Now()
		_, err := Dial(context.Background(), cfg, dialOpts())
		el := time.Since(start)
		if err == nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: want deadline error, got %v", name, err)
		}
		if el > 2*time.Second {
			t.Errorf("%s: took %s", name, el)
		}
		if IsPermanent(err) {
			t.Errorf("%s: timeout must be retryable", name)
		}
	}
}
