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

	"github.com/bringup-dev/bringup/remote/backoff"
	"github.com/bringup-dev/bringup/remote/sanitize"
)

// State is the connection state of one host.
type State int

// Connection states reported through ConnOptions.OnState.
const (
	StateConnecting  State = iota // a dial is in progress
	StateUp                       // connected and authenticated
	StateDown                     // lost or failed; a retry is scheduled at retryAt
	StateUnreachable              // a permanent failure (a *StoppedError); waits for Retry
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
	// the cause for down and unreachable, and for connecting the last
	// attempt's failure (nil on the first): a host that stalls after the
	// login spends most of its time connecting, and must keep saying why.
	// retryAt is the next attempt for down.
	OnState func(st State, err error, retryAt time.Time)
	// Rand feeds the backoff jitter; nil = math/rand/v2.
	Rand func() float64
	// Now and Sleep are the clock; nil = the real one.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// AnswerWithin bounds how long the host may take to answer a
	// channel open or an exec request once logged in (0:
	// DefaultAnswerWithin); past it the host has stalled (StallError).
	AnswerWithin time.Duration
}

// Conn is the one managed SSH connection to a host: every exec session,
// journal stream, D-Bus socket and TCP probe is a channel on it.
type Conn struct {
	cfg  Config
	opts ConnOptions

	mu      sync.Mutex
	client  *ssh.Client
	gen     uint64
	ready   chan struct{} // closed and replaced whenever client, stopped or done changes
	stopped error         // the permanent failure Run waits on until Retry; nil while it dials or holds
	retry   chan struct{} // Retry's wake-up for a stopped Run (buffered 1)
	done    bool
	doneErr error
	// stall is the stall that ended a client (answered); execStall says
	// one was an exec's, so that the next connection is verified with one.
	stall     *clientStall
	execStall bool
}

// NewConn returns a Conn for cfg; call Run to connect.
func NewConn(cfg Config, opts ConnOptions) *Conn {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Sleep == nil {
		opts.Sleep = Sleep
	}
	return &Conn{cfg: cfg, opts: opts, ready: make(chan struct{}), retry: make(chan struct{}, 1)}
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

// wake tells waiters that something changed; c.mu must be held.
func (c *Conn) wake() {
	close(c.ready)
	c.ready = make(chan struct{})
}

// setClient publishes cl (nil when down) and wakes waiters.
func (c *Conn) setClient(cl *ssh.Client) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.client = cl
	if cl != nil {
		c.gen++
	}
	c.wake()
}

// setStopped records the permanent failure Run waits on (nil when it
// dials again) and wakes waiters.
func (c *Conn) setStopped(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = err
	c.wake()
}

func (c *Conn) finish(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done, c.doneErr = true, err
	c.client, c.stopped = nil, nil
	c.wake()
}

// Run keeps the connection up until ctx ends: dial, hold the client with
// keepalives, and after a failure or drop retry with jittered exponential
// backoff (reset after each successful connection). A permanent failure
// (host key, authentication, configuration; see IsPermanent) is reported
// as StateUnreachable and never retried on its own: Run waits until
// Retry says the person fixed the cause, then dials again. Agent keys are
// asked for at every dial (see Identities), so a key added to ssh-agent,
// or an agent restarted, counts on the next attempt. Run returns ctx's
// error.
func (c *Conn) Run(ctx context.Context) error {
	bo := backoff.New(c.opts.Rand)
	dopts := c.opts.Dial
	var last error // why the last attempt or connection ended
	for {
		if err := ctx.Err(); err != nil {
			c.finish(err)
			return err
		}
		c.report(StateConnecting, last, time.Time{})
		var err error
		if dopts.Signers == nil && dopts.Identities == nil {
			// Read (and ask passphrases) once, not on every reconnect.
			if dopts.Identities, err = LoadIdentities(c.cfg, dopts); err != nil {
				err = fmt.Errorf("dial %s: %w", c.cfg.Alias, err)
			}
		}
		var cl *ssh.Client
		received := new(Activity)
		if err == nil {
			do := dopts
			do.received = received
			cl, err = Dial(ctx, c.cfg, do)
		}
		if err == nil {
			// Up only once the host answers a session: one that
			// accepted the login and then stalls is not up.
			c.mu.Lock()
			withExec := c.execStall
			c.mu.Unlock()
			if err = c.verify(ctx, cl, withExec); err != nil {
				cl.Close()
				cl = nil
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				c.finish(ctx.Err())
				return ctx.Err()
			}
			if IsPermanent(err) {
				if serr := c.stop(ctx, err); serr != nil {
					c.finish(serr)
					return serr
				}
				bo.Reset()
				continue
			}
			if serr := c.backoff(ctx, bo, err); serr != nil {
				c.finish(serr)
				return serr
			}
			last = err
			continue
		}
		bo.Reset()
		c.setClient(cl)
		c.report(StateUp, nil, time.Time{})
		lost := c.hold(ctx, cl, received)
		c.setClient(nil)
		if ctx.Err() != nil {
			c.finish(ctx.Err())
			return ctx.Err()
		}
		if serr := c.backoff(ctx, bo, lost); serr != nil {
			c.finish(serr)
			return serr
		}
		last = lost
	}
}

// StoppedError is the state of a connection stopped on a permanent
// failure: the failure, and that only a retry by the person starts it
// again.
type StoppedError struct {
	Host string
	Err  error
}

func (e *StoppedError) Error() string {
	return fmt.Sprintf("%v (not retried automatically: fix the cause, then reconnect %s: ctrl+r in the console, or run the command again)", e.Err, e.Host)
}

func (e *StoppedError) Unwrap() error { return e.Err }

// stop reports the permanent failure err and waits for Retry (nil) or the
// end of ctx (its error).
func (c *Conn) stop(ctx context.Context, err error) error {
	stopped := &StoppedError{Host: c.cfg.Alias, Err: err}
	select { // a Retry from before this failure does not count
	case <-c.retry:
	default:
	}
	c.setStopped(stopped)
	c.report(StateUnreachable, stopped, time.Time{})
	defer c.setStopped(nil)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-c.retry:
		return nil
	}
}

// Retry asks a connection stopped on a permanent failure to dial again
// now, once the person has fixed the cause (trusted the key, loaded the
// right one into ssh-agent). It reports whether the connection was
// stopped; a connection that is up or retrying on its own is left alone.
func (c *Conn) Retry() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped == nil {
		return false
	}
	select {
	case c.retry <- struct{}{}:
	default: // one is pending already
	}
	return true
}

// backoff reports down and sleeps until the next attempt.
func (c *Conn) backoff(ctx context.Context, bo *backoff.Backoff, cause error) error {
	d := bo.Next()
	c.report(StateDown, cause, c.opts.Now().Add(d))
	return c.opts.Sleep(ctx, d)
}

// hold runs keepalives on cl until it closes or ctx ends, and returns why
// the connection ended. It closes cl before returning.
func (c *Conn) hold(ctx context.Context, cl *ssh.Client, received *Activity) error {
	kctx, cancel := context.WithCancel(ctx)
	defer cancel()
	kaDone := make(chan error, 1)
	go func() {
		kaDone <- KeepaliveIdle(kctx, cl, c.cfg.ServerAliveInterval, c.cfg.ServerAliveCountMax, received.Last)
	}()
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
	if stall := c.stallOf(cl); stall != nil {
		return stall // the Close was answered's: the stall is the cause
	}
	if cause == nil {
		cause = io.EOF
	}
	return fmt.Errorf("connection to %s lost: %w", c.cfg.Alias, cause)
}

// Client waits until the host is connected (or ctx ends, or Run has
// stopped on a permanent failure or returned) and returns the current
// client. A stopped connection's error wraps ErrNotConnected and the
// failure, at once: an action does not wait for a person to fix it.
func (c *Conn) Client(ctx context.Context) (*ssh.Client, error) {
	return c.wait(ctx, false)
}

// Await waits until the host is connected, through a permanent failure
// too (until a Retry mends it), and returns the client; it fails only when
// ctx ends or Run has returned. Streams that should resume whenever the
// connection comes back wait here.
func (c *Conn) Await(ctx context.Context) (*ssh.Client, error) {
	return c.wait(ctx, true)
}

func (c *Conn) wait(ctx context.Context, throughStop bool) (*ssh.Client, error) {
	for {
		c.mu.Lock()
		cl, done, derr, stopped, ready := c.client, c.done, c.doneErr, c.stopped, c.ready
		c.mu.Unlock()
		switch {
		case cl != nil:
			return cl, nil
		case done:
			return nil, fmt.Errorf("%s: %w: %w", c.cfg.Alias, ErrNotConnected, derr)
		case stopped != nil && !throughStop:
			return nil, fmt.Errorf("%s: %w: %w", c.cfg.Alias, ErrNotConnected, stopped)
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
		if c.stopped != nil {
			return nil, fmt.Errorf("%s: %w: %w", c.cfg.Alias, ErrNotConnected, c.stopped)
		}
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
	return c.ExecInput(ctx, cmd, nil)
}

// ExecInput is Exec with stdin as the command's standard input (nil: none),
// read until the command exits. Privileged steps take their content this
// way, so that no argument grows with it.
func (c *Conn) ExecInput(ctx context.Context, cmd string, stdin io.Reader) (stdout, stderr []byte, exitCode int, err error) {
	cl, err := c.current()
	if err != nil {
		return nil, nil, -1, err
	}
	s, err := c.newSession(ctx, cl)
	if err != nil {
		return nil, nil, -1, err
	}
	defer s.Close()
	o, e := &capBuffer{max: maxExecOutput}, &capBuffer{max: maxExecOutput}
	s.Stdin, s.Stdout, s.Stderr = stdin, o, e
	if err := c.start(ctx, cl, s, "exec", cmd); err != nil {
		return nil, nil, -1, err
	}
	stop := context.AfterFunc(ctx, func() {
		_ = s.Signal(ssh.SIGKILL)
		s.Close()
	})
	err = s.Wait()
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
	s, err := c.newSession(ctx, cl)
	if err != nil {
		return nil, nil, err
	}
	r, err := s.StdoutPipe()
	if err != nil {
		s.Close()
		return nil, nil, fmt.Errorf("%s: stdout pipe: %w", c.cfg.Alias, err)
	}
	e := &capBuffer{max: 4096}
	s.Stderr = e
	if err := c.start(ctx, cl, s, "start", cmd); err != nil {
		s.Close()
		return nil, nil, err
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

// newSession opens a session on cl within the connection's bound.
func (c *Conn) newSession(ctx context.Context, cl *ssh.Client) (*ssh.Session, error) {
	s, err := answered(ctx, c, cl, "a session", cl.NewSession, func(s *ssh.Session) { s.Close() })
	if err != nil && !errors.Is(err, ErrStalled) {
		return nil, fmt.Errorf("%s: new session: %w", c.cfg.Alias, err)
	}
	return s, err
}

// start sends cmd's exec request on s and waits for its answer within
// the connection's bound (the command then runs as long as it runs);
// verb names the request in an error ("exec", "start").
func (c *Conn) start(ctx context.Context, cl *ssh.Client, s *ssh.Session, verb, cmd string) error {
	_, err := answered(ctx, c, cl, "a command", func() (struct{}, error) { return struct{}{}, s.Start(cmd) }, func(struct{}) {})
	switch {
	case errors.Is(err, ErrStalled):
		c.mu.Lock()
		c.execStall = true
		c.mu.Unlock()
		return err
	case err != nil:
		return fmt.Errorf("%s: %s %q: %w", c.cfg.Alias, verb, cmd, err)
	}
	return nil
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
	nc, err := answered(ctx, c, cl, "a channel to "+network+" "+addr, func() (net.Conn, error) {
		return cl.Dial(network, addr)
	}, func(nc net.Conn) { nc.Close() })
	if errors.Is(err, ErrStalled) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%s: open %s %s: %w", c.cfg.Alias, network, addr, err)
	}
	return nc, nil
}

// WithConn runs f over a managed connection to cfg opened for it, and
// closes the connection when f returns: a command's one look at a host
// (doctor, init). When the host is not reached before ctx ends, the error
// carries the last attempt's cause (connection refused, no route), not
// only the deadline; a host that stalls after the login ends the wait at
// once with its StallError, a one-look command has no time to wait out.
func WithConn(ctx context.Context, cfg Config, opts ConnOptions, f func(*Conn) error) error {
	var mu sync.Mutex
	var last error
	wctx, stalled := context.WithCancelCause(ctx)
	defer stalled(nil)
	onState := opts.OnState
	opts.OnState = func(st State, err error, retryAt time.Time) {
		if err != nil {
			mu.Lock()
			last = err
			mu.Unlock()
		}
		if st == StateDown && errors.Is(err, ErrStalled) {
			stalled(err)
		}
		if onState != nil {
			onState(st, err, retryAt)
		}
	}
	conn := NewConn(cfg, opts)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = conn.Run(rctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	if _, err := conn.Client(wctx); err != nil {
		if cause := context.Cause(wctx); errors.Is(cause, ErrStalled) && ctx.Err() == nil {
			return cause
		}
		mu.Lock()
		cause := last
		mu.Unlock()
		if cause != nil && ctx.Err() != nil {
			return fmt.Errorf("%w (last attempt: %w)", err, cause)
		}
		return err
	}
	return f(conn)
}
