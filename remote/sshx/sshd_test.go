package sshx

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/bringup-dev/bringup/remote/testkit/e2e"
)

// testSSHD is a real OpenSSH sshd on 127.0.0.1 run from a temp dir.
type testSSHD struct {
	t        *testing.T
	dir      string
	port     int
	cfgPath  string
	hostKeys []ssh.Signer
	log      sshdLog
	cmd      *exec.Cmd
}

// sshdLog is sshd's -E log file (with -e, debug lines would leak into
// sessions' stderr).
type sshdLog string

func (l sshdLog) String() string {
	b, _ := os.ReadFile(string(l))
	return string(b)
}

// keyFiles writes a private key for signer-compatible use and returns its
// path and ssh signer.
func writeKey(t *testing.T, dir, name string, priv any) (string, ssh.Signer) {
	t.Helper()
	block, err := ssh.MarshalPrivateKey(priv, name)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return path, s
}

func newEd25519(t *testing.T) ed25519.PrivateKey {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

// mustWrite writes a file the test needs, failing t when it cannot.
func mustWrite(t testing.TB, path string, data []byte, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, perm); err != nil {
		t.Fatal(err)
	}
}

// clientKey is the user key every test sshd accepts.
type clientKey struct {
	path   string
	signer ssh.Signer
}

func newClientKey(t *testing.T) clientKey {
	p, s := writeKey(t, t.TempDir(), "id_ed25519", newEd25519(t))
	return clientKey{path: p, signer: s}
}

// startSSHD starts sshd with an ed25519 host key (and an ECDSA one when
// withECDSA), accepting the given client keys. Every test that starts it
// is an end-to-end test (see package e2e).
func startSSHD(t *testing.T, withECDSA bool, accept ...ssh.PublicKey) *testSSHD {
	t.Helper()
	// sshd runs as root here: its privilege separation needs it.
	e2e.Require(t, e2e.Root(), e2e.File("/usr/sbin/sshd"))
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // privilege separation dir
		t.Fatal(err)
	}
	d := &testSSHD{t: t, dir: t.TempDir()}
	d.log = sshdLog(filepath.Join(d.dir, "sshd.log"))
	var hostKeyLines []string
	p, s := writeKey(t, d.dir, "host_ed25519", newEd25519(t))
	d.hostKeys = append(d.hostKeys, s)
	hostKeyLines = append(hostKeyLines, "HostKey "+p)
	if withECDSA {
		ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		p, s := writeKey(t, d.dir, "host_ecdsa", ek)
		d.hostKeys = append(d.hostKeys, s)
		hostKeyLines = append(hostKeyLines, "HostKey "+p)
	}
	var ak bytes.Buffer
	for _, k := range accept {
		ak.Write(ssh.MarshalAuthorizedKey(k))
	}
	akPath := filepath.Join(d.dir, "authorized_keys")
	if err := os.WriteFile(akPath, ak.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	d.port = freePort(t)
	cfg := strings.Join(append(hostKeyLines,
		"ListenAddress 127.0.0.1",
		"AuthorizedKeysFile "+akPath,
		"StrictModes no",
		"UsePAM no",
		"PidFile none",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PermitRootLogin prohibit-password",
		"AllowTcpForwarding yes",
		"AllowStreamLocalForwarding yes",
		"LogLevel DEBUG1",
		"MaxStartups 100",
	), "\n") + "\n"
	d.cfgPath = filepath.Join(d.dir, "sshd_config")
	if err := os.WriteFile(d.cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d.start()
	t.Cleanup(d.stop)
	return d
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (d *testSSHD) start() {
	d.t.Helper()
	cmd := exec.Command("/usr/sbin/sshd", "-D", "-E", string(d.log), "-f", d.cfgPath, "-p", strconv.Itoa(d.port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.cmd = cmd
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.Dial("tcp", d.addr())
		if err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	d.t.Fatalf("sshd did not listen on %s: %s", d.addr(), d.log.String())
}

// stop kills sshd and every per-connection child (each child runs in its
// own session, so the listener's process group is not enough).
func (d *testSSHD) stop() {
	if d.cmd == nil {
		return
	}
	for _, pid := range descendants(d.cmd.Process.Pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGCONT)
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	_ = d.cmd.Wait()
	d.cmd = nil
}

// signalChildren sends sig to the per-connection sshd processes only (the
// listener keeps accepting).
func (d *testSSHD) signalChildren(sig syscall.Signal) int {
	n := 0
	for _, pid := range descendants(d.cmd.Process.Pid) {
		if syscall.Kill(pid, sig) == nil {
			n++
		}
	}
	return n
}

func descendants(root int) []int {
	ents, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndex(s, ")")
		f := strings.Fields(s[i+1:])
		if len(f) > 2 {
			pp, _ := strconv.Atoi(f[1])
			parent[pid] = pp
		}
	}
	var out []int
	var walk func(int)
	walk = func(p int) {
		for c, pp := range parent {
			if pp == p {
				out = append(out, c)
				walk(c)
			}
		}
	}
	walk(root)
	return out
}

func (d *testSSHD) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(d.port)) }

// knownHostsLine is a plain known_hosts line for this sshd's key i.
func (d *testSSHD) knownHostsLine(i int) string {
	return knownhostsLine(fmt.Sprintf("[127.0.0.1]:%d", d.port), d.hostKeys[i].PublicKey())
}

func knownhostsLine(name string, k ssh.PublicKey) string {
	return name + " " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k))) + "\n"
}

// config returns a Config for this sshd with the given known_hosts content.
func (d *testSSHD) config(t *testing.T, key clientKey, knownHosts string) Config {
	t.Helper()
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, []byte(knownHosts), 0o600); err != nil {
		t.Fatal(err)
	}
	return Config{
		Alias: "gpu-test", HostName: "127.0.0.1", Port: d.port, User: "root",
		IdentityFiles: []string{key.path}, IdentitiesOnly: true,
		UserKnownHostsFiles: []string{kh}, StrictHostKeyChecking: "yes",
		ServerAliveCountMax: 3, Source: "test",
	}
}

func dialOpts() DialOptions { return DialOptions{AgentSocket: "-"} }

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
