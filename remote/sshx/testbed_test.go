package sshx

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// ip runs ip(8) and fails the test on error.
func ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// runOn runs cmd on the client and returns its trimmed output.
func runOn(t *testing.T, c *ssh.Client, cmd string) string {
	t.Helper()
	s, err := c.NewSession()
	if err != nil {
		t.Fatalf("session: %v", err)
	}
	defer s.Close()
	out, err := s.Output(cmd)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return strings.TrimSpace(string(out))
}

// TestTestbedProxyJumpAndHostKeys runs the SSH checks on real test hosts:
// a two-hop ProxyJump through gpu1 to gpu2 over a link only the two hosts
// share; an unknown host key refused with its fingerprint; a changed key
// refused with both fingerprints before any authentication.
func TestTestbedProxyJumpAndHostKeys(t *testing.T) {
	tb := testbed.Start(t, 2)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	g1, _ := tb.Host("gpu1")
	g2, _ := tb.Host("gpu2")

	// A private link between gpu1 and gpu2 (10.214.0.0/30): the machine
	// running the test has no route to it, so only a jump through gpu1
	// reaches gpu2 there.
	a, b := "bj"+tb.RunID()+"a", "bj"+tb.RunID()+"b"
	ip(t, "link", "add", a, "type", "veth", "peer", "name", b)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "exec", g1.NetNS, "ip", "link", "del", a).Run() })
	ip(t, "link", "set", a, "netns", g1.NetNS)
	ip(t, "link", "set", b, "netns", g2.NetNS)
	ip(t, "-n", g1.NetNS, "addr", "add", "10.214.0.1/30", "dev", a)
	ip(t, "-n", g2.NetNS, "addr", "add", "10.214.0.2/30", "dev", b)
	ip(t, "-n", g1.NetNS, "link", "set", a, "up")
	ip(t, "-n", g2.NetNS, "link", "set", b, "up")

	base, err := os.ReadFile(tb.SSHConfig())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "ssh_config")
	extra := "\nHost gpu2-jump\n  HostName 10.214.0.2\n  User root\n  ProxyJump gpu1\n  HostKeyAlias gpu2\n" +
		strings.Replace(string(base), "Host gpu1 gpu1-deploy gpu2", "Host gpu2-jump gpu1 gpu1-deploy gpu2", 1)
	if err := os.WriteFile(cfgFile, []byte(extra), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("two-hop ProxyJump", func(t *testing.T) {
		for _, src := range []string{"", "-"} { // ssh -G, then the parser
			cfg, err := Resolve(ctx, "gpu2-jump", ResolveOptions{ConfigFile: cfgFile, SSHPath: src})
			if err != nil {
				t.Fatalf("resolve (%q): %v", src, err)
			}
			if len(cfg.ProxyJump) != 1 || cfg.ProxyJump[0] != "gpu1" || cfg.HostName != "10.214.0.2" {
				t.Fatalf("resolved %+v", cfg)
			}
			c, err := Dial(ctx, cfg, DialOptions{Resolve: ResolveOptions{ConfigFile: cfgFile, SSHPath: src}, AgentSocket: "-"})
			if err != nil {
				t.Fatalf("dial through gpu1 (%s): %v", cfg.Source, err)
			}
			if got := runOn(t, c, "hostname"); got != "gpu2" {
				t.Errorf("landed on %q, want gpu2", got)
			}
			c.Close()
		}
		// Directly, the private address is unreachable from here.
		direct, err := Resolve(ctx, "gpu2-jump", ResolveOptions{ConfigFile: cfgFile})
		if err != nil {
			t.Fatal(err)
		}
		direct.ProxyJump = nil
		dctx, dcancel := context.WithTimeout(ctx, 3*time.Second)
		defer dcancel()
		if c, err := Dial(dctx, direct, DialOptions{AgentSocket: "-"}); err == nil {
			c.Close()
			t.Fatal("reached 10.214.0.2 without the jump: the test proves nothing")
		}
	})

	// known_hosts variants in a copy of the testbed's ssh_config.
	khLines, err := os.ReadFile(filepath.Join(tb.Inventory(), "known_hosts"))
	if err != nil {
		t.Fatal(err)
	}
	var g1Key, g2Key string
	var rest []string
	for _, l := range strings.Split(strings.TrimSpace(string(khLines)), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 3 && strings.HasPrefix(f[0], "gpu1,"):
			g1Key = f[1] + " " + f[2]
			rest = append(rest, l)
		case len(f) >= 3 && strings.HasPrefix(f[0], "gpu2,"):
			g2Key = f[1] + " " + f[2]
		default:
			rest = append(rest, l)
		}
	}
	g2Pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte(g2Key))
	if err != nil {
		t.Fatal(err)
	}
	g1Pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte(g1Key))
	if err != nil {
		t.Fatal(err)
	}
	withKnownHosts := func(t *testing.T, lines []string) Config {
		t.Helper()
		kh := filepath.Join(t.TempDir(), "known_hosts")
		if err := os.WriteFile(kh, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := Resolve(ctx, "gpu2", ResolveOptions{ConfigFile: tb.SSHConfig()})
		if err != nil {
			t.Fatal(err)
		}
		cfg.UserKnownHostsFiles = []string{kh}
		return cfg
	}
	// One long-lived root session counts sshd's authentication lines, so
	// that counting adds none of its own.
	admin, err := tb.Client(ctx, "gpu2", "root")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	authLines := func() int {
		out := runOn(t, admin, "journalctl -u ssh -o cat --no-pager | grep -cE 'Accepted|Failed publickey|Postponed' || true")
		var n int
		if _, err := fmt.Sscan(out, &n); err != nil {
			t.Fatalf("count of auth lines %q: %v", out, err)
		}
		return n
	}
	// counting signer: proves no authentication was attempted.
	signers, closeSigners, err := LoadSigners(withKnownHosts(t, rest), DialOptions{AgentSocket: "-"})
	if err != nil {
		t.Fatal(err)
	}
	defer closeSigners()
	var used atomic.Int32
	counter := countingSigner{Signer: signers[0], n: &used}

	t.Run("unknown host key", func(t *testing.T) {
		cfg := withKnownHosts(t, rest)
		before := authLines()
		_, err := Dial(ctx, cfg, DialOptions{Signers: []ssh.Signer{counter}, AgentSocket: "-"})
		var unknown *UnknownHostError
		if !errors.As(err, &unknown) {
			t.Fatalf("err = %v, want UnknownHostError", err)
		}
		if unknown.Fingerprint != ssh.FingerprintSHA256(g2Pub) || !strings.Contains(err.Error(), "bringup doctor --trust gpu2") {
			t.Errorf("err = %v; want fingerprint %s and the trust command", err, ssh.FingerprintSHA256(g2Pub))
		}
		if !IsPermanent(err) {
			t.Error("an unknown host key must not be retried")
		}
		if n := counter.n.Load(); n != 0 || authLines() != before {
			t.Errorf("authentication attempted: signer used %d times", n)
		}
	})
	t.Run("changed host key", func(t *testing.T) {
		cfg := withKnownHosts(t, append(rest, "gpu2,"+g2.Addr+" "+g1Key))
		before := authLines()
		_, err := Dial(ctx, cfg, DialOptions{Signers: []ssh.Signer{counter}, AgentSocket: "-"})
		var changed *HostKeyChangedError
		if !errors.As(err, &changed) {
			t.Fatalf("err = %v, want HostKeyChangedError", err)
		}
		if changed.NewFingerprint != ssh.FingerprintSHA256(g2Pub) || len(changed.Old) != 1 || changed.Old[0].Fingerprint != ssh.FingerprintSHA256(g1Pub) {
			t.Errorf("changed = %+v", changed)
		}
		msg := err.Error()
		if !strings.Contains(msg, ssh.FingerprintSHA256(g2Pub)) || !strings.Contains(msg, ssh.FingerprintSHA256(g1Pub)) {
			t.Errorf("message lacks a fingerprint: %s", msg)
		}
		if n := counter.n.Load(); n != 0 || authLines() != before {
			t.Errorf("authentication attempted: signer used %d times", n)
		}
	})
}
