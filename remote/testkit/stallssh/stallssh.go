// Package stallssh is an SSH server on loopback, in the test's own
// process, that accepts the login and then never answers: channel opens
// (a session, a forwarded socket or port) wait for ever, as on a host
// whose sshd hangs after authentication (a PAM session module waiting on
// a hung logind, a full disk, a stopped child). Global requests
// (keepalives) are answered, so the transport looks alive: only a
// deadline on each channel and exec tells the stall. With AnswerPerLogin
// it opens the first channels of each login and then stalls, and it
// never answers a request on a channel it opened (an exec hangs).
package stallssh

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/ssh"
)

// Server is a running stalling SSH server.
type Server struct {
	// Addr is host:port on 127.0.0.1; Port its port.
	Addr string
	Port int
	// KeyFile is a private key the server accepts for any user;
	// KnownHosts a known_hosts file holding the server's key for
	// [127.0.0.1]:Port.
	KeyFile, KnownHosts string

	// AnswerPerLogin is how many channel opens of each login are
	// answered (opened) before the stall; set it before the first login.
	AnswerPerLogin int

	ln      net.Listener
	opened  atomic.Int64
	logins  atomic.Int64
	mu      sync.Mutex
	conns   []net.Conn
	pending []ssh.NewChannel // channels opened and never answered
	held    []any            // channels accepted and their requests, never read: an exec hangs
	wg      sync.WaitGroup
}

// Start starts a server that is stopped when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	dir := t.TempDir()
	hostSigner := signer(t)
	clientPriv := newKey(t)
	block, err := ssh.MarshalPrivateKey(clientPriv, "stallssh")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{KeyFile: filepath.Join(dir, "id_ed25519"), KnownHosts: filepath.Join(dir, "known_hosts")}
	if err := os.WriteFile(s.KeyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	clientSigner, err := ssh.NewSignerFromKey(clientPriv)
	if err != nil {
		t.Fatal(err)
	}
	want := clientSigner.PublicKey().Marshal()
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
		if string(k.Marshal()) == string(want) {
			return nil, nil
		}
		return nil, fmt.Errorf("unknown key")
	}}
	cfg.AddHostKey(hostSigner)
	s.ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Port = s.ln.Addr().(*net.TCPAddr).Port
	s.Addr = s.ln.Addr().String()
	line := fmt.Sprintf("[127.0.0.1]:%d %s\n", s.Port, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(hostSigner.PublicKey()))))
	if err := os.WriteFile(s.KnownHosts, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	s.wg.Add(1)
	go s.serve(cfg)
	t.Cleanup(s.stop)
	return s
}

// SSHConfig writes an ssh_config naming host alias → this server, with
// its key and known_hosts, and returns its path.
func (s *Server) SSHConfig(t testing.TB, alias string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ssh_config")
	text := fmt.Sprintf("Host %s\n  HostName 127.0.0.1\n  Port %d\n  User root\n  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile %s\n  StrictHostKeyChecking yes\n  IdentityAgent none\n",
		alias, s.Port, s.KeyFile, s.KnownHosts)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Logins is how many logins the server has accepted.
func (s *Server) Logins() int64 { return s.logins.Load() }

// Opened is how many channels the server was asked to open.
func (s *Server) Opened() int64 { return s.opened.Load() }

func (s *Server) serve(cfg *ssh.ServerConfig) {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			_, chans, reqs, err := ssh.NewServerConn(c, cfg)
			if err != nil {
				c.Close()
				return
			}
			s.logins.Add(1)
			go ssh.DiscardRequests(reqs) // keepalives answered: the transport is alive
			answered := 0
			for nc := range chans {
				s.opened.Add(1)
				if answered < s.AnswerPerLogin {
					answered++
					if ch, creqs, err := nc.Accept(); err == nil {
						s.mu.Lock()
						s.held = append(s.held, ch, creqs)
						s.mu.Unlock()
					}
					continue
				}
				s.mu.Lock()
				s.pending = append(s.pending, nc) // held: neither accepted nor rejected
				s.mu.Unlock()
			}
		}()
	}
}

func (s *Server) stop() {
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func newKey(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

func signer(t testing.TB) ssh.Signer {
	t.Helper()
	s, err := ssh.NewSignerFromKey(newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
