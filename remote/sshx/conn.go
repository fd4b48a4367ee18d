package sshx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"bringup/remote/backoff"
	"bringup/remote/sanitize"
)

// State is the connection state of one host.
type State int

// Connection states reported through ConnOptions.OnState.
const (
	StateConnecting  State = iota // a dial is in progress
	StateUp                       // connected and authenticated
	StateDown                     // lost or failed; a retry is scheduled at retryAt
	StateUnreachable              // a permanent failure; no automatic retry
)

func (s State) String() string {
	switch s {
	case StateConnecting:
		return "connecting"
	case StateUp:
		return "up"
	case StateDown:
		return "down"
	case StateUnreachable:
		return "unreachable"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// ConnOptions configure a managed connection.
type ConnOptions struct {
	Dial DialOptions
	// OnState is called (from Run's goroutine) on every state change; err is
	// the cause for down and unreachable, retryAt the next attempt for down.
	OnState func(st State, err error, retryAt time.Time)
	// Rand feeds the backoff jitter; nil = math/rand/v2.
	Rand func() float64
	// Now and Sleep are the clock; nil = the real one.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// Conn is the one managed SSH connection to a host: every exec session,
// journal stream, D-Bus socket and TCP probe is a channel on it.
type Conn struct {
	cfg  Config
	opts ConnOptions

	mu      sync.Mutex
	client  *ssh.Client
	gen     uint64
	ready   chan struct{} // closed and replaced whenever client or done changes
	done    bool
	doneErr error
}

// NewConn returns a Conn for cfg; call Run to connect.
func NewConn(cfg Config, opts ConnOptions) *Conn {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Sleep == nil {
		opts.Sleep = Sleep
	}
	return &Conn{cfg: cfg, opts: opts, ready: make(chan struct{})}
}

// Sleep waits for d or until ctx ends, whichever is first, and returns
// ctx's error in the second case: the wait between reconnect attempts.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Host is the alias of the connection's host.
func (c *Conn) Host() string { return c.cfg.Alias }

// Generation counts successful connections; it changes on every reconnect so
// stream owners can tell their channels belong to an old connection.
func (c *Conn) Generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

func (c *Conn) report(st State, err error, at time.Time) {
	if c.opts.OnState != nil {
		c.opts.OnState(st, err, at)
	}
}

// setClient publishes cl (nil when down) and wakes waiters.
func (c *Conn) setClient(cl *ssh.Client) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.client = cl
	if cl != nil {
		c.gen++
	}
	close(c.ready)
	c.ready = make(chan struct{})
}

func (c *Conn) finish(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done, c.doneErr = true, err
	c.client = nil
	close(c.ready)
	c.ready = make(chan struct{})
}

// Run keeps the connection up until ctx ends: dial, hold the client with
// keepalives, and after a failure or drop retry with jittered exponential
// backoff (reset after each successful connection). Permanent failures
// (host key, authentication, configuration; see IsPermanent) end Run with
// StateUnreachable and are never retried. Run returns ctx's error or the
// permanent one.
func (c *Conn) Run(ctx context.Context) error {
	bo := backoff.New(c.opts.Rand)
	dopts := c.opts.Dial
	var closeAgent func()
	defer func() {
		if closeAgent != nil {
			closeAgent()
		}
	}()
	for {
		if err := ctx.Err(); err != nil {
			c.finish(err)
			return err
		}
		c.report(StateConnecting, nil, time.Time{})
		var err error
		if dopts.Signers == nil {
			// Load (and ask passphrases) once, not on every reconnect.
			dopts.Signers, closeAgent, err = LoadSigners(c.cfg, dopts)
			if err != nil {
				dopts.Signers = nil
				err = fmt.Errorf("dial %s: %w", c.cfg.Alias, err)
			}
		}
		var cl *ssh.Client
		if err == nil {
			cl, err = Dial(ctx, c.cfg, dopts)
		}
		if err != nil {
			if ctx.Err() != nil {
				c.finish(ctx.Err())
				return ctx.Err()
			}
			if IsPermanent(err) {
				c.report(StateUnreachable, err, time.Time{})
				c.finish(err)
				return err
			}
			if serr := c.backoff(ctx, bo, err); serr != nil {
				c.finish(serr)
				return serr
			}
			continue
		}
		bo.Reset()
		c.setClient(cl)
		c.report(StateUp, nil, time.Time{})
		lost := c.hold(ctx, cl)
		c.setClient(nil)
		if ctx.Err() != nil {
			c.finish(ctx.Err())
			return ctx.Err()
		}
		if serr := c.backoff(ctx, bo, lost); serr != nil {
			c.finish(serr)
			return serr
		}
	}
}

// backoff reports down and sleeps until the next attempt.
func (c *Conn) backoff(ctx context.Context, bo *backoff.Backoff, cause error) error {
	d := bo.Next()
	c.report(StateDown, cause, c.opts.Now().Add(d))
	return c.opts.Sleep(ctx, d)
}

// hold runs keepalives on cl until it closes or ctx ends, and returns why
// the connection ended. It closes cl before returning.
func (c *Conn) hold(ctx context.Context, cl *ssh.Client) error {
	kctx, cancel := context.WithCancel(ctx)
	defer cancel()
	kaDone := make(chan error, 1)
	go func() { kaDone <- Keepalive(kctx, cl, c.cfg.ServerAliveInterval, c.cfg.ServerAliveCountMax) }()
	waitDone := make(chan error, 1)
	go func() { waitDone <- cl.Wait() }()
	var cause error
	select {
	case <-ctx.Done():
		cl.Close()
		_ = <-waitDone // the Close's doing: the cause is the context's
		cause = ctx.Err()
	case err := <-waitDone:
		cause = err
	}
	cancel()
	if kerr := <-kaDone; errors.Is(kerr, ErrPeerDead) {
		cause = kerr
	}
	cl.Close()
	if cause == nil {
		cause = io.EOF
	}
	return fmt.Errorf("connection to %s lost: %w", c.cfg.Alias, cause)
}

// Client waits until the host is connected (or ctx ends, or Run has
// stopped) and returns the current client.
func (c *Conn) Client(ctx context.Context) (*ssh.Client, error) {
	for {
		c.mu.Lock()
		cl, done, derr, ready := c.client, c.done, c.doneErr, c.ready
		c.mu.Unlock()
		if cl != nil {
			return cl, nil
		}
		if done {
			return nil, fmt.Errorf("%s: %w: %w", c.cfg.Alias, ErrNotConnected, derr)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: waiting for connection: %w", c.cfg.Alias, ctx.Err())
		case <-ready:
		}
	}
}

// current returns the connected client without waiting.
func (c *Conn) current() (*ssh.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client == nil {
		return nil, fmt.Errorf("%s: %w", c.cfg.Alias, ErrNotConnected)
	}
	return c.client, nil
}

// maxExecOutput caps what Exec keeps of each output stream.
const maxExecOutput = 16 << 20

// Exec runs cmd in a new session and returns its output and exit code. A
// non-zero exit is not an error; err is for transport failures. Ending ctx
// kills the remote command and closes the session.
func (c *Conn) Exec(ctx context.Context, cmd string) (stdout, stderr []byte, exitCode int, err error) {
	cl, err := c.current()
	if err != nil {
		return nil, nil, -1, err
	}
	s, err := cl.NewSession()
	if err != nil {
		return nil, nil, -1, fmt.Errorf("%s: new session: %w", c.cfg.Alias, err)
	}
	defer s.Close()
	o, e := &capBuffer{max: maxExecOutput}, &capBuffer{max: maxExecOutput}
	s.Stdout, s.Stderr = o, e
	stop := context.AfterFunc(ctx, func() {
		_ = s.Signal(ssh.SIGKILL)
		s.Close()
	})
	err = s.Run(cmd)
	stop()
	if ctx.Err() != nil {
		return []byte(o.String()), []byte(e.String()), -1, fmt.Errorf("%s: exec %q: %w", c.cfg.Alias, cmd, ctx.Err())
	}
	var ee *ssh.ExitError
	switch {
	case err == nil:
		return []byte(o.String()), []byte(e.String()), 0, nil
	case errors.As(err, &ee):
		return []byte(o.String()), []byte(e.String()), ee.ExitStatus(), nil
	default:
		return []byte(o.String()), []byte(e.String()), -1, fmt.Errorf("%s: exec %q: %w", c.cfg.Alias, cmd, err)
	}
}

// Stream starts a long-running cmd (for example journalctl -f) and returns
// its stdout. Closing the reader or ending ctx closes the session (sshd then
// hangs up on the command). wait returns when the command ends, with its
// error and the start of its stderr.
func (c *Conn) Stream(ctx context.Context, cmd string) (out io.ReadCloser, wait func() error, err error) {
	cl, err := c.current()
	if err != nil {
		return nil, nil, err
	}
	s, err := cl.NewSession()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: new session: %w", c.cfg.Alias, err)
	}
	r, err := s.StdoutPipe()
	if err != nil {
		s.Close()
		return nil, nil, fmt.Errorf("%s: stdout pipe: %w", c.cfg.Alias, err)
	}
	e := &capBuffer{max: 4096}
	s.Stderr = e
	if err := s.Start(cmd); err != nil {
		s.Close()
		return nil, nil, fmt.Errorf("%s: start %q: %w", c.cfg.Alias, cmd, err)
	}
	stop := context.AfterFunc(ctx, func() {
		_ = s.Signal(ssh.SIGTERM)
		s.Close()
	})
	wait = func() error {
		err := s.Wait()
		stop()
		s.Close()
		if err != nil {
			if msg := e.String(); msg != "" {
				return fmt.Errorf("%s: %q: %w (stderr: %s)", c.cfg.Alias, cmd, err, sanitize.String(string(bytes.TrimSpace([]byte(msg)))))
			}
			return fmt.Errorf("%s: %q: %w", c.cfg.Alias, cmd, err)
		}
		return nil
	}
	return &sessionReader{r: r, s: s}, wait, nil
}

// sessionReader closes its session when closed.
type sessionReader struct {
	r io.Reader
	s *ssh.Session
}

func (r *sessionReader) Read(p []byte) (int, error) { return r.r.Read(p) }
func (r *sessionReader) Close() error {
	_ = r.s.Signal(ssh.SIGTERM)
	return r.s.Close()
}

// DialUnix opens a direct-streamlocal channel to a unix socket on the host,
// for example /run/dbus/system_bus_socket. ctx bounds only the open.
func (c *Conn) DialUnix(ctx context.Context, path string) (net.Conn, error) {
	return c.dial(ctx, "unix", path)
}

// DialTCP opens a direct-tcpip channel to addr as seen from the host. ctx
// bounds only the open.
func (c *Conn) DialTCP(ctx context.Context, addr string) (net.Conn, error) {
	return c.dial(ctx, "tcp", addr)
}

func (c *Conn) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	cl, err := c.current()
	if err != nil {
		return nil, err
	}
	nc, err := cl.DialContext(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("%s: open %s %s: %w", c.cfg.Alias, network, addr, err)
	}
	return nc, nil
}
