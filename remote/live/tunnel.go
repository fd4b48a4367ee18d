package live

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/bringup-dev/bringup/remote/sshx"
)

// Tunnel carries TCP connections through one SSH host (a bastion) to
// addresses only it reaches, such as a log store: DialContext is an HTTP
// transport's. The SSH connection is the managed one every live host has
// (keepalive, reconnect with backoff, a refused key stops it); it is held
// while anyone holds the tunnel and closed after the last one.
type Tunnel struct {
	opts Options

	mu     sync.Mutex // guards users, conn, cancel, done
	users  int
	conn   *sshx.Conn
	cancel context.CancelFunc
	done   chan struct{}
}

// NewTunnel returns the tunnel through the host opts names (resolved as
// the fleet's hosts are). It connects only when held.
func NewTunnel(opts Options) *Tunnel { return &Tunnel{opts: opts} }

// ErrTunnelIdle is DialContext's error while nobody holds the tunnel.
var ErrTunnelIdle = errors.New("the tunnel is not running")

// Hold opens the tunnel's connection (in the background: DialContext
// waits for it) and returns the function that lets it go. Holds may
// overlap: the first one connects, the last one out closes the
// connection and waits for it to end.
func (t *Tunnel) Hold() (release func()) {
	t.mu.Lock()
	if t.users == 0 {
		ctx, cancel := context.WithCancel(context.Background())
		c := sshx.NewConn(t.opts.SSH, sshx.ConnOptions{Dial: t.opts.Dial})
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = c.Run(ctx) // its failures reach DialContext's callers
		}()
		t.conn, t.cancel, t.done = c, cancel, done
	}
	t.users++
	t.mu.Unlock()
	var once sync.Once
	return func() { once.Do(t.release) }
}

// release ends one Hold.
func (t *Tunnel) release() {
	t.mu.Lock()
	t.users--
	if t.users > 0 {
		t.mu.Unlock()
		return
	}
	cancel, done := t.cancel, t.done
	t.conn, t.cancel, t.done = nil, nil, nil
	t.mu.Unlock()
	cancel()
	<-done
}

// DialContext opens a connection to addr as the tunnel's host dials it
// (an SSH direct-tcpip channel). It waits for the SSH connection while it
// is being made; a refused key or host key fails at once.
func (t *Tunnel) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	t.mu.Lock()
	c := t.conn
	t.mu.Unlock()
	if c == nil {
		return nil, fmt.Errorf("via %s: %w", t.opts.Name, ErrTunnelIdle)
	}
	cl, err := c.Client(ctx)
	if err != nil {
		return nil, fmt.Errorf("via %s: %w", t.opts.Name, err)
	}
	nc, err := cl.DialContext(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("via %s: dial %s: %w", t.opts.Name, addr, err)
	}
	return nc, nil
}

// Name is the tunnel host's name as the user wrote it.
func (t *Tunnel) Name() string { return t.opts.Name }
