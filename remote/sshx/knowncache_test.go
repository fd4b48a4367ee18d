package sshx

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// newSigner is a fresh ed25519 key.
func newSigner(t testing.TB) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newPublicKey(t testing.TB) ssh.PublicKey { return newSigner(t).PublicKey() }

// knownLines is a known_hosts text of n hosts gpu0..gpu<n-1>, port 22.
func knownLines(t testing.TB, n int) string {
	t.Helper()
	var s string
	for i := range n {
		s += knownhosts.Line([]string{fmt.Sprintf("gpu%d", i)}, newPublicKey(t)) + "\n"
	}
	return s
}

// TestKnownHostsCacheRereadsWhatChanged: the cache answers with the same
// reading while the files are as read, and reads again after each way a
// file changes under a running fleet: a key appended (accept-new, doctor
// --trust), the file replaced with one of the same size (an editor's
// rename), a file that was missing created, and a file removed.
func TestKnownHostsCacheRereadsWhatChanged(t *testing.T) {
	dir := t.TempDir()
	user := filepath.Join(dir, "known_hosts")
	global := filepath.Join(dir, "ssh_known_hosts") // missing at first
	write := func(file, text string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(user, knownLines(t, 3))
	c := NewKnownHostsCache()
	load := func() *KnownHosts {
		t.Helper()
		kh, err := c.Load([]string{user}, []string{global})
		if err != nil {
			t.Fatal(err)
		}
		return kh
	}
	first := load()
	if again := load(); again != first {
		t.Fatal("unchanged files read again")
	}

	steps := []struct {
		name   string
		change func()
		known  string // a host the new reading must know
	}{
		{"key appended", func() {
			if _, err := appendKnownHost(user, "gpu-new:22", newPublicKey(t), false); err != nil {
				t.Fatal(err)
			}
		}, "gpu-new:22"},
		{"replaced, same size", func() {
			b, err := os.ReadFile(user)
			if err != nil {
				t.Fatal(err)
			}
			tmp := user + ".tmp"
			write(tmp, string(b))
			if err := os.Rename(tmp, user); err != nil {
				t.Fatal(err)
			}
		}, "gpu-new:22"},
		{"missing file created", func() {
			write(global, knownhosts.Line([]string{"gpu-global"}, newPublicKey(t))+"\n")
		}, "gpu-global:22"},
		{"file removed", func() {
			if err := os.Remove(global); err != nil {
				t.Fatal(err)
			}
		}, "gpu0:22"},
	}
	prev := first
	for _, s := range steps {
		s.change()
		kh := load()
		if kh == prev {
			t.Fatalf("%s: the old reading was kept", s.name)
		}
		if len(kh.Known(s.known)) != 1 {
			t.Errorf("%s: the new reading does not know %s", s.name, s.known)
		}
		if again := load(); again != kh {
			t.Errorf("%s: read again with nothing changed", s.name)
		}
		prev = kh
	}
	if len(prev.Known("gpu-global:22")) != 0 {
		t.Error("a removed file's hosts are still known")
	}
}

// TestKnownHostsCacheNil: a nil cache reads at every call, as a dial
// without one always did.
func TestKnownHostsCacheNil(t *testing.T) {
	user := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(user, []byte(knownLines(t, 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	var c *KnownHostsCache
	a, err := c.Load([]string{user}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Load([]string{user}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a == b || len(b.Known("gpu1:22")) != 1 {
		t.Fatalf("nil cache: same reading %v, knows gpu1 %v", a == b, len(b.Known("gpu1:22")) == 1)
	}
}

// BenchmarkKnownHostsPerDial is what each dial of a 256-host fleet spends
// on known_hosts: reading the file (the obvious way, ssh's) against the
// fleet's shared cache, side by side.
func BenchmarkKnownHostsPerDial(b *testing.B) {
	user := filepath.Join(b.TempDir(), "known_hosts")
	if err := os.WriteFile(user, []byte(knownLines(b, 256)), 0o600); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name  string
		cache *KnownHostsCache
	}{{"read", nil}, {"cached", NewKnownHostsCache()}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.cache.Load([]string{user}, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
