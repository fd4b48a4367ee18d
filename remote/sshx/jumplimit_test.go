package sshx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

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
			nch.Reject(ssh.UnknownChannelType, "only direct-tcpip")
			continue
		}
		var to struct {
			Host     string
			Port     uint32
			OrigHost string
			OrigPort uint32
		}
		if err := ssh.Unmarshal(nch.ExtraData(), &to); err != nil {
			nch.Reject(ssh.ConnectionFailed, err.Error())
			continue
		}
		tc, err := net.Dial("tcp", net.JoinHostPort(to.Host, strconv.Itoa(int(to.Port))))
		if err != nil {
			nch.Reject(ssh.ConnectionFailed, err.Error())
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
		go func() { defer j.wg.Done(); io.Copy(tc, ch); tc.Close() }()
		go func() { defer j.wg.Done(); io.Copy(ch, tc); ch.Close() }()
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
	os.WriteFile(kh, []byte(target.knownHostsLine(0)+
		knownhostsLine(fmt.Sprintf("[127.0.0.1]:%d", jump.port()), jump.hostKey.PublicKey())), 0o600)
	cfgFile := filepath.Join(dir, "config")
	os.WriteFile(cfgFile, []byte(fmt.Sprintf("Host bastion\n  HostName 127.0.0.1\n  Port %d\n  User root\n  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n",
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
