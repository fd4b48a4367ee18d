package sshx

import (
	"encoding/pem"
	"errors"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// serveAgent runs an in-process ssh-agent holding keys on a unix socket.
func serveAgent(t *testing.T, keys ...any) string {
	t.Helper()
	kr := agent.NewKeyring()
	for _, k := range keys {
		if err := kr.Add(agent.AddedKey{PrivateKey: k}); err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(t.TempDir(), "agent.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				agent.ServeAgent(kr, c) //nolint:errcheck // ends with the conn
			}()
		}
	}()
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
