package sshx

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

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
	os.WriteFile(cfgFile, []byte(fmt.Sprintf("Host hop1\n  HostName 127.0.0.1\n  Port %d\nHost target\n  HostName 127.0.0.1\n  Port %d\n  ProxyJump hop1\n"+
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
	os.WriteFile(cfgFile, []byte("Host lab\n  HostName 127.0.0.1\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n"), 0o600)
	for _, src := range []string{"", "-"} {
		cfg, err := Resolve(context.Background(), "lab", ResolveOptions{ConfigFile: cfgFile, SSHPath: src})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(cfg.HostKeyRisks()); n != 2 {
			t.Errorf("%s: %d risks, want 2 (%+v)", cfg.Source, n, cfg)
		}
	}
}
