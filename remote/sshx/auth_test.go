package sshx

import (
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// serveAgent runs an in-process ssh-agent holding keys on a unix socket
// until the test ends.
func serveAgent(t *testing.T, keys ...any) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "agent.sock")
	startAgent(t, sock, keys...)
	return sock
}

func TestAgentAndIdentitiesOnly(t *testing.T) {
	agentKey := newEd25519(t)
	agentSigner, _ := ssh.NewSignerFromKey(agentKey)
	fileKey := newClientKey(t) // not authorised
	d := startSSHD(t, false, agentSigner.PublicKey())
	sock := serveAgent(t, agentKey)
	cfg := d.config(t, fileKey, d.knownHostsLine(0))
	opts := DialOptions{AgentSocket: sock}

	cfg.IdentitiesOnly = false
	c, err := Dial(ctxT(t, 20*time.Second), cfg, opts)
	if err != nil {
		t.Fatalf("agent auth: %v", err)
	}
	c.Close()

	cfg.IdentitiesOnly = true // the agent key is not an IdentityFile: not offered
	_, err = Dial(ctxT(t, 20*time.Second), cfg, opts)
	var ae *AuthError
	if !errors.As(err, &ae) || !IsPermanent(err) {
		t.Fatalf("IdentitiesOnly: want AuthError, got %v", err)
	}
}

func TestEncryptedIdentityFile(t *testing.T) {
	priv := newEd25519(t)
	block, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "enc", []byte("sesame"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "id_enc")
	mustWrite(t, path, pem.EncodeToMemory(block), 0o600)
	signer, _ := ssh.NewSignerFromKey(priv)
	d := startSSHD(t, false, signer.PublicKey())
	cfg := d.config(t, clientKey{path: path}, d.knownHostsLine(0))

	_, err = Dial(ctxT(t, 20*time.Second), cfg, dialOpts())
	var pe *PassphraseError
	if !errors.As(err, &pe) || pe.File != path || !IsPermanent(err) {
		t.Fatalf("want PassphraseError naming %s, got %v", path, err)
	}
	opts := dialOpts()
	asked := 0
	opts.Passphrase = func(file string) ([]byte, error) { asked++; return []byte("sesame"), nil }
	signers, closeAgent, err := LoadSigners(cfg, opts)
	if err != nil || asked != 1 || len(signers) != 1 {
		t.Fatalf("LoadSigners: %d signers, asked %d, %v", len(signers), asked, err)
	}
	defer closeAgent()
	opts.Signers = signers
	c, err := Dial(ctxT(t, 20*time.Second), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// setOptions appends lines to sshd_config and restarts sshd (the first
// value of a keyword wins: only keywords not set yet take effect).
func (d *testSSHD) setOptions(t *testing.T, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(d.cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	d.stop()
	d.start()
}

// startAgent serves an in-process ssh-agent holding keys on sock until
// the returned stop is called (or the test ends); stop removes the socket,
// as a stopped ssh-agent does.
func startAgent(t *testing.T, sock string, keys ...any) (stop func()) {
	t.Helper()
	kr := agent.NewKeyring()
	for _, k := range keys {
		if err := kr.Add(agent.AddedKey{PrivateKey: k}); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				agent.ServeAgent(kr, c) //nolint:errcheck // ends with the conn
			}()
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			l.Close()
			mu.Lock()
			for _, c := range conns {
				c.Close()
			}
			mu.Unlock()
			wg.Wait()
		})
	}
	t.Cleanup(stop)
	return stop
}

// nextState returns the next state other than connecting.
func nextState(t *testing.T, events chan stateEvent, within time.Duration) stateEvent {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case ev := <-events:
			if ev.st != StateConnecting {
				return ev
			}
		case <-timeout:
			t.Fatalf("no state but connecting within %s", within)
		}
	}
}

// TestTooManyAuthFailuresIsPermanent: sshd with MaxAuthTries 1 and an
// agent holding several keys, the authorised one last: sshd hangs up after
// the first refused key ("Too many authentication failures"). That is an
// AuthError; the managed connection stops instead of retrying (each retry
// would count against this machine in sshd's penalties), Client says why
// at once, and Retry, after the agent was restarted with the right key,
// connects.
func TestTooManyAuthFailuresIsPermanent(t *testing.T) {
	good := newEd25519(t)
	goodSigner, _ := ssh.NewSignerFromKey(good)
	d := startSSHD(t, false, goodSigner.PublicKey())
	d.setOptions(t, "MaxAuthTries 1")
	sock := filepath.Join(t.TempDir(), "agent.sock")
	stopAgent := startAgent(t, sock, newEd25519(t), newEd25519(t), good)
	cfg := d.config(t, clientKey{}, d.knownHostsLine(0))
	cfg.IdentityFiles, cfg.IdentitiesOnly = nil, false
	opts := DialOptions{AgentSocket: sock}

	_, err := Dial(ctxT(t, 20*time.Second), cfg, opts)
	var ae *AuthError
	if !errors.As(err, &ae) || !IsPermanent(err) || !strings.Contains(err.Error(), "Too many authentication failures") {
		t.Fatalf("Dial = %v, want a permanent AuthError carrying sshd's reason", err)
	}
	if !strings.Contains(err.Error(), "ssh-add") || !strings.Contains(err.Error(), "IdentitiesOnly yes") {
		t.Errorf("error does not say what to do: %v", err)
	}

	c, events, _ := runConnWith(t, cfg, opts)
	ev := nextState(t, events, 20*time.Second)
	var stopped *StoppedError
	if ev.st != StateUnreachable || !errors.As(ev.err, &ae) || !errors.As(ev.err, &stopped) {
		t.Fatalf("first state %s (%v), want unreachable with an AuthError", ev.st, ev.err)
	}
	if !strings.Contains(ev.err.Error(), "not retried automatically") || !strings.Contains(ev.err.Error(), "then reconnect gpu-test") {
		t.Errorf("state does not say how to retry: %v", ev.err)
	}
	select { // the retry loop would dial again within 50 ms
	case ev := <-events:
		t.Fatalf("after a permanent auth failure: %s (%v)", ev.st, ev.err)
	case <-time.After(2 * time.Second):
	}
	if n := strings.Count(d.log.String(), "Too many authentication failures"); n != 2 {
		t.Errorf("sshd refused %d times, want 2 (the Dial and one attempt of the Conn)", n)
	}
	start := time.Now()
	if _, err := c.Client(ctxT(t, 10*time.Second)); !errors.Is(err, ErrNotConnected) || !errors.As(err, &ae) || time.Since(start) > time.Second {
		t.Errorf("Client on a stopped connection: %v after %s; want ErrNotConnected with the AuthError at once", err, time.Since(start))
	}

	// The person fixes it: an agent holding the right key, on the same
	// socket; then retries.
	stopAgent()
	startAgent(t, sock, good)
	awaited := make(chan error, 1)
	go func() { _, err := c.Await(ctxT(t, 20*time.Second)); awaited <- err }()
	if !c.Retry() {
		t.Fatal("Retry: the connection was not stopped")
	}
	if ev := nextState(t, events, 20*time.Second); ev.st != StateUp {
		t.Fatalf("after Retry: %s (%v), want up", ev.st, ev.err)
	}
	if err := <-awaited; err != nil {
		t.Errorf("Await across the stop: %v", err)
	}
	if c.Retry() {
		t.Error("Retry on a connection that is up reported stopped")
	}
}

// TestAgentRestartUsedOnNextDial: the connection comes up with the key of
// one ssh-agent; that agent stops and another starts on the same socket
// with another key; after the connection drops, the reconnect signs with
// the new agent's key.
func TestAgentRestartUsedOnNextDial(t *testing.T) {
	k1, k2 := newEd25519(t), newEd25519(t)
	s1, _ := ssh.NewSignerFromKey(k1)
	s2, _ := ssh.NewSignerFromKey(k2)
	d := startSSHD(t, false, s1.PublicKey(), s2.PublicKey())
	sock := filepath.Join(t.TempDir(), "agent.sock")
	stopAgent := startAgent(t, sock, k1)
	cfg := d.config(t, clientKey{}, d.knownHostsLine(0))
	cfg.IdentityFiles, cfg.IdentitiesOnly = nil, false
	_, events, _ := runConnWith(t, cfg, DialOptions{AgentSocket: sock})
	if ev := nextState(t, events, 20*time.Second); ev.st != StateUp {
		t.Fatalf("first dial: %s (%v)", ev.st, ev.err)
	}
	accepted := func(s ssh.Signer) int {
		n := 0
		for _, l := range strings.Split(d.log.String(), "\n") {
			if strings.HasPrefix(l, "Accepted publickey for root") && strings.HasSuffix(strings.TrimSpace(l), ssh.FingerprintSHA256(s.PublicKey())) {
				n++
			}
		}
		return n
	}
	if accepted(s1) != 1 {
		t.Fatalf("first key accepted %d times:\n%s", accepted(s1), d.log)
	}

	stopAgent()
	startAgent(t, sock, k2)
	d.signalChildren(9) // drop the connection
	if ev := nextState(t, events, 10*time.Second); ev.st != StateDown {
		t.Fatalf("after the drop: %s (%v), want down", ev.st, ev.err)
	}
	if ev := nextState(t, events, 20*time.Second); ev.st != StateUp {
		t.Fatalf("reconnect with the restarted agent: %s (%v), want up", ev.st, ev.err)
	}
	if accepted(s2) != 1 {
		t.Errorf("second agent's key accepted %d times, want 1:\n%s", accepted(s2), d.log)
	}
}
