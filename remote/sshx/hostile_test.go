package sshx

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// TestDialErrorQuotingServerIsSanitised: a host certificate's principals
// are the server's own text, and the dial error quotes them when they do
// not name the host. Whatever the server put there, the error's text holds
// no escape sequence: doctor and the commands print it as it is.
func TestDialErrorQuotingServerIsSanitised(t *testing.T) {
	ca, host := newSigner(t), newSigner(t)
	cert := &ssh.Certificate{Key: host.PublicKey(), CertType: ssh.HostCert, KeyId: "evil",
		ValidPrincipals: []string{"other\x1b]0;pwned\x07\x1b[2J\u009b31m"}, ValidBefore: ssh.CertTimeInfinity}
	if err := cert.SignCert(rand.Reader, ca); err != nil {
		t.Fatal(err)
	}
	certSigner, err := ssh.NewCertSigner(cert, host)
	if err != nil {
		t.Fatal(err)
	}
	scfg := &ssh.ServerConfig{NoClientAuth: true}
	scfg.AddHostKey(certSigner)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	served := make(chan struct{})
	go func() {
		defer close(served)
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, _, _, _ = ssh.NewServerConn(c, scfg) // the client refuses the certificate
	}()
	defer func() { <-served }()

	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, []byte("@cert-authority * "+string(ssh.MarshalAuthorizedKey(ca.PublicKey()))), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = Dial(ctx, Config{Alias: "gpu1", HostName: "127.0.0.1", Port: l.Addr().(*net.TCPAddr).Port, User: "root",
		StrictHostKeyChecking: "yes", UserKnownHostsFiles: []string{kh}}, DialOptions{AgentSocket: "-", Signers: []ssh.Signer{newSigner(t)}})
	if err == nil {
		t.Fatal("dial succeeded")
	}
	msg := err.Error()
	t.Logf("dial error: %s", msg)
	var certErr *HostCertError
	if !strings.Contains(msg, "other␛]0;pwned␇␛[2J") || !errors.As(err, &certErr) {
		t.Fatalf("the error does not quote the principal (made visible) or lost its type: %q", msg)
	}
	if strings.ContainsAny(msg, "\x1b\x07\u009b") {
		t.Errorf("the dial error holds control characters: %q", msg)
	}
}
