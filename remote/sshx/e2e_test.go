package sshx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/bringup-dev/bringup/remote/testkit/e2e"
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

// trust is `doctor --trust` in one call: fetch the key, write exactly it.
func trust(ctx context.Context, cfg Config, opts DialOptions, pin string) (string, error) {
	k, err := FetchHostKey(ctx, cfg, opts)
	if err != nil {
		return "", err
	}
	_, _, err = k.Write(pin)
	return k.Fingerprint, err
}

// TestAcceptNewAnnouncesLearnedKeys: under accept-new, a first contact
// through a jump host learns both keys and announces each, with the line
// it was written to; the next dial announces nothing.
func TestAcceptNewAnnouncesLearnedKeys(t *testing.T) {
	key := newClientKey(t)
	hop := startSSHD(t, false, key.signer.PublicKey())
	target := startSSHD(t, false, key.signer.PublicKey())
	dir := t.TempDir()
	kh := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(kh, []byte("# earlier line without a newline"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "config")
	mustWrite(t, cfgFile, []byte(fmt.Sprintf("Host hop1\n  HostName 127.0.0.1\n  Port %d\nHost target\n  HostName 127.0.0.1\n  Port %d\n  ProxyJump hop1\n"+
		"Host *\n  User root\n  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking accept-new\n",
		hop.port, target.port, key.path, kh)), 0o600)
	ropts := ResolveOptions{ConfigFile: cfgFile, SSHPath: "-"}
	cfg, err := Resolve(context.Background(), "target", ropts)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var learned []LearnedHostKey
	opts := dialOpts()
	opts.Resolve = ropts
	opts.OnNewHostKey = func(k LearnedHostKey) { mu.Lock(); learned = append(learned, k); mu.Unlock() }
	c, err := Dial(ctxT(t, 20*time.Second), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	mu.Lock()
	got := append([]LearnedHostKey(nil), learned...)
	mu.Unlock()
	want := []LearnedHostKey{
		{Host: "hop1", Addr: hop.hostPort(), KeyType: ssh.KeyAlgoED25519, Fingerprint: ssh.FingerprintSHA256(hop.hostKeys[0].PublicKey()), File: kh, Line: 2},
		{Host: "target", Addr: target.hostPort(), KeyType: ssh.KeyAlgoED25519, Fingerprint: ssh.FingerprintSHA256(target.hostKeys[0].PublicKey()), File: kh, Line: 3},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("announced %v\nwant      %v", got, want)
	}
	b, _ := os.ReadFile(kh)
	lines := strings.Split(string(b), "\n")
	if len(lines) != 4 || lines[1]+"\n" != hop.knownHostsLine(0) || lines[2]+"\n" != target.knownHostsLine(0) {
		t.Fatalf("known_hosts = %q: want the hop's key at line 2 and the target's at line 3", b)
	}
	msg := got[1].String()
	wantMsg := fmt.Sprintf("learned new host key for target: ssh-ed25519 %s, added to %s:3", want[1].Fingerprint, kh)
	if msg != wantMsg {
		t.Errorf("notice %q, want %q", msg, wantMsg)
	}
	learned = nil
	c, err = Dial(ctxT(t, 20*time.Second), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if len(learned) != 0 {
		t.Errorf("second dial announced %v", learned)
	}
}

// TestTrustWritesTheKeyShown: FetchHostKey writes nothing; Write records
// exactly the key fetched (with sshd gone by then: there is no second
// fetch); a pin that does not match writes nothing; a malformed pin is
// refused before anything.
func TestTrustWritesTheKeyShown(t *testing.T) {
	key := newClientKey(t)
	d := startSSHD(t, false, key.signer.PublicKey())
	cfg := d.config(t, key, "")
	kh := cfg.UserKnownHostsFiles[0]
	fp := ssh.FingerprintSHA256(d.hostKeys[0].PublicKey())

	k, err := FetchHostKey(ctxT(t, 20*time.Second), cfg, dialOpts())
	if err != nil {
		t.Fatal(err)
	}
	if k.Fingerprint != fp || k.KeyType != ssh.KeyAlgoED25519 || k.Known || k.Addr != d.hostPort() || k.Host != "gpu-test" {
		t.Fatalf("fetched %+v, want %s unknown", k, fp)
	}
	if b, _ := os.ReadFile(kh); len(b) != 0 {
		t.Fatalf("FetchHostKey wrote %q", b)
	}

	wrong := "SHA256:" + strings.Repeat("A", 43)
	_, _, err = k.Write(wrong)
	var mm *FingerprintMismatchError
	if !errors.As(err, &mm) || mm.Fingerprint != fp || mm.Pinned != wrong {
		t.Fatalf("wrong pin: %v, want FingerprintMismatchError", err)
	}
	for _, want := range []string{fp, wrong, "nothing written"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	for _, bad := range []string{"MD5:aa:bb", "SHA256:short", strings.TrimPrefix(fp, "SHA256:")} {
		if _, _, err := k.Write(bad); err == nil || errors.As(err, &mm) {
			t.Errorf("malformed pin %q: %v, want a format error", bad, err)
		}
	}
	if b, _ := os.ReadFile(kh); len(b) != 0 {
		t.Fatalf("known_hosts written despite a refused pin: %q", b)
	}

	d.stop() // whatever Write records, it cannot have fetched it again
	file, line, err := k.Write(fp)
	if err != nil || file != kh || line != 1 {
		t.Fatalf("Write(matching pin) = %s:%d, %v", file, line, err)
	}
	if b, _ := os.ReadFile(kh); string(b) != d.knownHostsLine(0) {
		t.Fatalf("known_hosts = %q, want exactly %q", b, d.knownHostsLine(0))
	}
	d.start()
	if k2, err := FetchHostKey(ctxT(t, 20*time.Second), cfg, dialOpts()); err != nil || !k2.Known {
		t.Fatalf("after Write: %+v, %v; want known", k2, err)
	}
	c, err := Dial(ctxT(t, 20*time.Second), cfg, dialOpts())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// TestTrustRefusesChangedKey: a host whose key differs from the known one
// is refused by FetchHostKey; nothing is offered to write.
func TestTrustRefusesChangedKey(t *testing.T) {
	key := newClientKey(t)
	d := startSSHD(t, false, key.signer.PublicKey())
	old, _ := ssh.NewSignerFromKey(newEd25519(t))
	content := knownhostsLine(d.hostPort(), old.PublicKey())
	cfg := d.config(t, key, content)
	k, err := FetchHostKey(ctxT(t, 20*time.Second), cfg, dialOpts())
	var ch *HostKeyChangedError
	if k != nil || !errors.As(err, &ch) {
		t.Fatalf("FetchHostKey = %+v, %v; want HostKeyChangedError", k, err)
	}
	if b, _ := os.ReadFile(cfg.UserKnownHostsFiles[0]); string(b) != content {
		t.Errorf("known_hosts changed: %q", b)
	}
}

func TestHostKeyRisks(t *testing.T) {
	cases := []struct {
		strict string
		files  []string
		want   []string
	}{
		{"yes", []string{"/root/.ssh/known_hosts"}, nil},
		{"accept-new", []string{"/root/.ssh/known_hosts"}, nil},
		{"no", []string{"/root/.ssh/known_hosts"}, []string{SettingStrictNo}},
		{"yes", []string{"/dev/null"}, []string{SettingKnownHostsNull}},
		{"no", []string{"/root/.ssh/known_hosts", "/dev/null"}, []string{SettingStrictNo, SettingKnownHostsNull}},
	}
	for _, c := range cases {
		var got []string
		for _, r := range (Config{StrictHostKeyChecking: c.strict, UserKnownHostsFiles: c.files}).HostKeyRisks() {
			got = append(got, r.Setting)
			if r.Why == "" {
				t.Errorf("%s: no reason", r.Setting)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s %v: risks %v, want %v", c.strict, c.files, got, c.want)
		}
	}
	// As ssh -G and the parser resolve them from an ssh_config.
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "config")
	mustWrite(t, cfgFile, []byte("Host lab\n  HostName 127.0.0.1\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n"), 0o600)
	for _, src := range []string{"-", ""} {
		t.Run(map[string]string{"-": "parser", "": "ssh -G"}[src], func(t *testing.T) {
			if src == "" {
				e2e.Require(t, e2e.Command("ssh"))
			}
			cfg, err := Resolve(context.Background(), "lab", ResolveOptions{ConfigFile: cfgFile, SSHPath: src})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(cfg.HostKeyRisks()); n != 2 {
				t.Errorf("%s: %d risks, want 2 (%+v)", cfg.Source, n, cfg)
			}
		})
	}
}

// countingJump is an in-process SSH jump host on loopback that counts the
// connections in their handshake (accepted, not yet authenticated: what
// sshd's MaxStartups counts) and keeps the peak. Authentication takes
// authDelay, so that concurrent dials overlap there.
type countingJump struct {
	l       net.Listener
	hostKey ssh.Signer
	inAuth  atomic.Int32
	peak    atomic.Int32
	served  atomic.Int32
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn
}

func startCountingJump(t *testing.T, user ssh.PublicKey, authDelay time.Duration) *countingJump {
	t.Helper()
	hk, err := ssh.NewSignerFromKey(newEd25519(t))
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	j := &countingJump{l: l, hostKey: hk}
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
		time.Sleep(authDelay)
		if !bytes.Equal(k.Marshal(), user.Marshal()) {
			return nil, errors.New("not authorised")
		}
		return &ssh.Permissions{}, nil
	}}
	cfg.AddHostKey(hk)
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			j.mu.Lock()
			j.conns = append(j.conns, nc)
			j.mu.Unlock()
			j.wg.Add(1)
			go func() {
				defer j.wg.Done()
				j.serve(nc, cfg)
			}()
		}
	}()
	t.Cleanup(j.stop)
	return j
}

func (j *countingJump) stop() {
	j.l.Close()
	j.mu.Lock()
	for _, c := range j.conns {
		c.Close()
	}
	j.mu.Unlock()
	j.wg.Wait()
}

// serve runs one connection: the handshake (counted), then direct-tcpip
// channels to wherever they ask, as sshd's ProxyJump support does.
func (j *countingJump) serve(nc net.Conn, cfg *ssh.ServerConfig) {
	defer nc.Close()
	n := j.inAuth.Add(1)
	for {
		p := j.peak.Load()
		if n <= p || j.peak.CompareAndSwap(p, n) {
			break
		}
	}
	sc, chans, reqs, err := ssh.NewServerConn(nc, cfg)
	j.inAuth.Add(-1)
	if err != nil {
		return
	}
	defer sc.Close()
	go ssh.DiscardRequests(reqs)
	for nch := range chans {
		if nch.ChannelType() != "direct-tcpip" {
			_ = nch.Reject(ssh.UnknownChannelType, "only direct-tcpip") // the client's error says it
			continue
		}
		var to struct {
			Host     string
			Port     uint32
			OrigHost string
			OrigPort uint32
		}
		if err := ssh.Unmarshal(nch.ExtraData(), &to); err != nil {
			_ = nch.Reject(ssh.ConnectionFailed, err.Error()) // the client's error says it
			continue
		}
		tc, err := net.Dial("tcp", net.JoinHostPort(to.Host, strconv.Itoa(int(to.Port))))
		if err != nil {
			_ = nch.Reject(ssh.ConnectionFailed, err.Error()) // the client's error says it
			continue
		}
		ch, creqs, err := nch.Accept()
		if err != nil {
			tc.Close()
			continue
		}
		j.served.Add(1)
		go ssh.DiscardRequests(creqs)
		j.wg.Add(2)
		// Each copy ends with its connection; only the end matters.
		go func() { defer j.wg.Done(); _, _ = io.Copy(tc, ch); tc.Close() }()
		go func() { defer j.wg.Done(); _, _ = io.Copy(ch, tc); ch.Close() }()
	}
}

func (j *countingJump) port() int { return j.l.Addr().(*net.TCPAddr).Port }

// TestJumpLimitBoundsDialsThroughOneJumpHost: 20 hosts (aliases of one
// real sshd) behind one jump host, dialled at once, sharing one JumpLimit
// of 8: the jump host never has more than 8 connections in their
// handshake, and every dial (through to the target's authentication)
// succeeds. The control run without the limit
// shows the same dials do pile up past 8.
func TestJumpLimitBoundsDialsThroughOneJumpHost(t *testing.T) {
	key := newClientKey(t)
	target := startSSHD(t, false, key.signer.PublicKey())
	jump := startCountingJump(t, key.signer.PublicKey(), 150*time.Millisecond)
	dir := t.TempDir()
	kh := filepath.Join(dir, "known_hosts")
	mustWrite(t, kh, []byte(target.knownHostsLine(0)+
		knownhostsLine(fmt.Sprintf("[127.0.0.1]:%d", jump.port()), jump.hostKey.PublicKey())), 0o600)
	cfgFile := filepath.Join(dir, "config")
	mustWrite(t, cfgFile, []byte(fmt.Sprintf("Host bastion\n  HostName 127.0.0.1\n  Port %d\n  User root\n  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n",
		jump.port(), key.path, kh)), 0o600)

	const hosts = 20
	dialAll := func(limit *JumpLimit) (peak int32, failed []error) {
		jump.peak.Store(0)
		var wg sync.WaitGroup
		errs := make(chan error, hosts)
		for i := range hosts {
			cfg := target.config(t, key, target.knownHostsLine(0))
			cfg.Alias = fmt.Sprintf("gpu%d", i+1)
			cfg.UserKnownHostsFiles = []string{kh}
			cfg.ProxyJump = []string{"bastion"}
			opts := dialOpts()
			opts.Resolve = ResolveOptions{ConfigFile: cfgFile, SSHPath: "-"}
			opts.JumpLimit = limit
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := Dial(ctxT(t, 60*time.Second), cfg, opts)
				if err != nil {
					errs <- fmt.Errorf("%s: %w", cfg.Alias, err)
					return
				}
				c.Close()
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			failed = append(failed, err)
		}
		return jump.peak.Load(), failed
	}

	peak, failed := dialAll(NewJumpLimit(DefaultJumpDials))
	if len(failed) > 0 {
		t.Fatalf("%d of %d dials failed, first: %v", len(failed), hosts, failed[0])
	}
	if peak > DefaultJumpDials || peak < 2 {
		t.Errorf("peak of %d connections in handshake at the jump host, want 2..%d", peak, DefaultJumpDials)
	}
	t.Logf("with the limit: peak %d in handshake at the jump host, %d channels through it", peak, jump.served.Load())

	peak, failed = dialAll(nil)
	if len(failed) > 0 {
		t.Fatalf("control: %d dials failed, first: %v", len(failed), failed[0])
	}
	t.Logf("control without a limit: peak %d", peak)
	if peak <= DefaultJumpDials {
		t.Errorf("control without a limit peaked at %d: the test cannot tell the limit works", peak)
	}
}

// TestJumpLimitWaitEndsWithContext: a dial waiting for a slot gives up
// when its context ends, naming the jump host; other jump hosts have
// their own slots.
func TestJumpLimitWaitEndsWithContext(t *testing.T) {
	l := NewJumpLimit(1)
	release, err := l.acquire(context.Background(), "10.0.0.1:22")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := l.acquire(ctx, "10.0.0.1:22"); !errors.Is(err, context.DeadlineExceeded) || !bytes.Contains([]byte(err.Error()), []byte("10.0.0.1:22")) {
		t.Errorf("waiting past the deadline: %v", err)
	}
	other, err := l.acquire(context.Background(), "10.0.0.2:22")
	if err != nil {
		t.Fatalf("another jump host: %v", err)
	}
	other()
	release()
	release() // twice is harmless
	again, err := l.acquire(context.Background(), "10.0.0.1:22")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again()
}
