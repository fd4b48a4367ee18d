package sshx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"

	"bringup/remote/sanitize"
)

// DefaultConnectTimeout bounds a whole dial (every hop, TCP and handshake)
// when neither the context nor ConnectTimeout sets a deadline.
const DefaultConnectTimeout = 15 * time.Second

// maxJumpDepth stops ProxyJump loops in a configuration.
const maxJumpDepth = 8

// DialOptions are the per-process settings of a dial.
type DialOptions struct {
	// Resolve resolves ProxyJump hops, so each hop's own User, IdentityFile
	// and known_hosts apply.
	Resolve ResolveOptions
	// Signers, when set, are the only keys offered (see LoadSigners);
	// otherwise keys are loaded for each dial.
	Signers []ssh.Signer
	// Passphrase returns the passphrase of an encrypted identity file. Nil
	// means none can be asked for: such a file is a PassphraseError.
	Passphrase func(file string) ([]byte, error)
	// AgentSocket is the ssh-agent socket; "" = $SSH_AUTH_SOCK, "-" = no agent.
	AgentSocket string
	// NetDialer opens TCP connections; nil = a net.Dialer.
	NetDialer func(ctx context.Context, network, addr string) (net.Conn, error)
}

// hostKeyCheck builds the host key callback of the final host of a dial;
// hops always use the normal strict check.
type hostKeyCheck func(kh *KnownHosts, cfg Config) ssh.HostKeyCallback

// Dial connects to cfg's host (through its ProxyJump chain or ProxyCommand)
// and authenticates. The whole dial is bounded by ctx's deadline, or by
// cfg.ConnectTimeout (default 15 s) when ctx has none; the handshake is
// bounded too, not only TCP connect. Closing the returned client closes
// every hop and proxy command under it.
func Dial(ctx context.Context, cfg Config, opts DialOptions) (*ssh.Client, error) {
	ctx, cancel := withConnectTimeout(ctx, cfg)
	defer cancel()
	c, err := dialChain(ctx, cfg, opts, 0, nil)
	if err != nil {
		// The SSH server's words (a disconnect message) end up in err.
		return nil, sanitize.Error(fmt.Errorf("dial %s: %w", cfg.Alias, err))
	}
	return c, nil
}

func withConnectTimeout(ctx context.Context, cfg Config) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	t := cfg.ConnectTimeout
	if t <= 0 {
		t = DefaultConnectTimeout
	}
	return context.WithTimeout(ctx, t)
}

// resolveHop resolves one ProxyJump element with its own configuration,
// letting an explicit user@ or :port override it as ssh -J does.
func resolveHop(ctx context.Context, hop string, opts ResolveOptions) (Config, error) {
	h, err := ParseHop(hop)
	if err != nil {
		return Config{}, err
	}
	cfg, err := Resolve(ctx, h.Host, opts)
	if err != nil {
		return Config{}, fmt.Errorf("jump host %s: %w", hop, err)
	}
	if h.User != "" {
		cfg.User = h.User
	}
	if h.Port != 0 {
		cfg.Port = h.Port
	}
	return cfg, nil
}

// dialChain opens the transport for cfg (direct TCP, ProxyCommand, or a
// channel through the last jump host, whose own transport is the rest of the
// chain as with ssh -J) and runs the handshake over it.
func dialChain(ctx context.Context, cfg Config, opts DialOptions, depth int, check hostKeyCheck) (*ssh.Client, error) {
	if depth > maxJumpDepth {
		return nil, &ConfigError{File: "ProxyJump", Line: 0, Msg: fmt.Sprintf("jump chain to %s deeper than %d hops (a loop?)", cfg.Alias, maxJumpDepth)}
	}
	var (
		nc    net.Conn
		under *ssh.Client
		err   error
	)
	switch {
	case len(cfg.ProxyJump) > 0:
		last, rest := cfg.ProxyJump[len(cfg.ProxyJump)-1], cfg.ProxyJump[:len(cfg.ProxyJump)-1]
		hop, err := resolveHop(ctx, last, opts.Resolve)
		if err != nil {
			return nil, err
		}
		if len(rest) > 0 {
			hop.ProxyJump, hop.ProxyCommand = rest, ""
		}
		under, err = dialChain(ctx, hop, opts, depth+1, nil)
		if err != nil {
			return nil, fmt.Errorf("jump host %s: %w", hop.Alias, err)
		}
		nc, err = under.DialContext(ctx, "tcp", cfg.Addr())
		if err != nil {
			under.Close()
			return nil, fmt.Errorf("open %s through jump host %s: %w", cfg.Addr(), hop.Alias, err)
		}
	case cfg.ProxyCommand != "":
		nc, err = StartProxyCommand(cfg.ProxyCommand)
		if err != nil {
			return nil, err
		}
	default:
		d := opts.NetDialer
		if d == nil {
			var nd net.Dialer
			d = nd.DialContext
		}
		nc, err = d(ctx, "tcp", cfg.Addr())
		if err != nil {
			return nil, fmt.Errorf("connect %s: %w", cfg.Addr(), err)
		}
	}
	c, err := handshake(ctx, nc, cfg, opts, check)
	if err != nil {
		nc.Close()
		if under != nil {
			under.Close()
		}
		return nil, err
	}
	if under != nil {
		// Owned by c: ends when c closes, taking the jump host with it.
		go func() {
			c.Wait() //nolint:errcheck // only the end matters
			under.Close()
		}()
	}
	return c, nil
}

// handshake runs the SSH handshake on nc, bounded by ctx: a deadline on the
// socket where supported, and closing nc when ctx ends (channels through a
// jump host have no deadlines).
func handshake(ctx context.Context, nc net.Conn, cfg Config, opts DialOptions, check hostKeyCheck) (*ssh.Client, error) {
	kh, err := LoadKnownHosts(cfg.UserKnownHostsFiles, cfg.GlobalKnownHostsFiles)
	if err != nil {
		return nil, err
	}
	signers := opts.Signers
	if signers == nil && check == nil { // with a custom check (Trust) no auth happens
		s, closeAgent, err := LoadSigners(cfg, opts)
		if err != nil {
			return nil, err
		}
		defer closeAgent()
		signers = s
	}
	cb := kh.hostKeyCallback(cfg)
	if check != nil {
		cb = check(kh, cfg)
	}
	cc := &ssh.ClientConfig{
		User:              cfg.User,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(signers...)},
		HostKeyCallback:   cb,
		HostKeyAlgorithms: kh.HostKeyAlgorithms(lookupName(cfg)),
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl) // not supported on jump channels; AfterFunc covers them
	}
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	conn, chans, reqs, err := ssh.NewClientConn(nc, cfg.Addr(), cc)
	interrupted := !stop()
	if err != nil {
		if IsPermanent(err) {
			if strings.Contains(err.Error(), "unable to authenticate") {
				return nil, &AuthError{Host: cfg.Alias, Err: err}
			}
			return nil, err
		}
		// A handshake cut short is the context's doing: only that is
		// wrapped (an auth error it interrupted must not read as
		// permanent); the handshake's own error is text.
		if interrupted || ctx.Err() != nil {
			return nil, fmt.Errorf("ssh handshake with %s: %w (%s)", cfg.Addr(), context.Cause(ctx), err.Error())
		}
		if errors.Is(err, os.ErrDeadlineExceeded) { // the socket deadline fired just before ctx's
			return nil, fmt.Errorf("ssh handshake with %s: %w (%s)", cfg.Addr(), context.DeadlineExceeded, err.Error())
		}
		if pc, ok := nc.(*cmdConn); ok {
			if s := pc.stderrText(); s != "" {
				return nil, fmt.Errorf("ssh handshake with %s via ProxyCommand: %w (stderr: %s)", cfg.Addr(), err, s)
			}
		}
		return nil, fmt.Errorf("ssh handshake with %s: %w", cfg.Addr(), err)
	}
	if interrupted {
		conn.Close()
		return nil, fmt.Errorf("ssh handshake with %s: %w", cfg.Addr(), ctx.Err())
	}
	_ = nc.SetDeadline(time.Time{})
	return ssh.NewClient(conn, chans, reqs), nil
}

// cmdConn is a net.Conn over a ProxyCommand's stdin and stdout.
type cmdConn struct {
	cmd    *exec.Cmd
	r      io.ReadCloser
	w      io.WriteCloser
	stderr *capBuffer
	once   sync.Once
	err    error
}

// StartProxyCommand runs command with /bin/sh (as ssh runs ProxyCommand)
// and returns its stdin/stdout as a net.Conn. Closing the conn kills the
// command's process group and reaps it.
func StartProxyCommand(command string) (net.Conn, error) {
	cmd := exec.Command("/bin/sh", "-c", "exec "+command)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	w, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("proxycommand: %w", err)
	}
	r, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("proxycommand: %w", err)
	}
	eb := &capBuffer{max: 4096}
	cmd.Stderr = eb
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("proxycommand %q: %w", command, err)
	}
	return &cmdConn{cmd: cmd, r: r, w: w, stderr: eb}, nil
}

func (c *cmdConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *cmdConn) Write(p []byte) (int, error) { return c.w.Write(p) }

// Close kills the proxy command (its whole process group) and waits for it.
func (c *cmdConn) Close() error {
	c.once.Do(func() {
		c.w.Close()
		if c.cmd.Process != nil {
			_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		}
		_ = c.cmd.Wait() // killed: the exit status says nothing
	})
	return c.err
}

// stderrText is the ProxyCommand's stderr for an error message, through the
// one sanitiser: it relays what the far side said.
func (c *cmdConn) stderrText() string { return sanitize.String(strings.TrimSpace(c.stderr.String())) }

func (c *cmdConn) LocalAddr() net.Addr              { return pipeAddr{} }
func (c *cmdConn) RemoteAddr() net.Addr             { return pipeAddr{} }
func (c *cmdConn) SetDeadline(time.Time) error      { return os.ErrNoDeadline }
func (c *cmdConn) SetReadDeadline(time.Time) error  { return os.ErrNoDeadline }
func (c *cmdConn) SetWriteDeadline(time.Time) error { return os.ErrNoDeadline }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "proxycommand" }

// capBuffer keeps the first max bytes written to it.
type capBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - len(b.b); room > 0 {
		if len(p) < room {
			room = len(p)
		}
		b.b = append(b.b, p[:room]...)
	}
	return len(p), nil
}

func (b *capBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.b)
}

// errTrusted ends a Trust handshake once the host key has been handled.
var errTrusted = errors.New("host key recorded")

// Trust connects to cfg's host (through its jump hosts, which must already
// be trusted), fetches its host key and appends it to the first
// UserKnownHostsFile unless it is already known. It refuses a key that
// differs from a known one or is revoked, and a host certificate that an
// @cert-authority line should vouch for but does not. It never
// authenticates. The fingerprint is of the host key (for a certificate, of
// the key it certifies). It is the work behind `bringup doctor --trust HOST`.
func Trust(ctx context.Context, cfg Config, opts DialOptions) (fingerprint string, err error) {
	ctx, cancel := withConnectTimeout(ctx, cfg)
	defer cancel()
	var fp string
	check := func(kh *KnownHosts, cfg Config) ssh.HostKeyCallback {
		name := lookupName(cfg)
		return func(_ string, _ net.Addr, key ssh.PublicKey) error {
			if cert, ok := key.(*ssh.Certificate); ok {
				fp = ssh.FingerprintSHA256(cert.Key)
			} else {
				fp = ssh.FingerprintSHA256(key)
			}
			if err := kh.verify(cfg, name, key, true); err != nil {
				return err
			}
			return errTrusted
		}
	}
	c, err := dialChain(ctx, cfg, opts, 0, check)
	if err == nil {
		c.Close()
		return fp, nil
	}
	if errors.Is(err, errTrusted) {
		return fp, nil
	}
	return fp, sanitize.Error(fmt.Errorf("trust %s: %w", cfg.Alias, err))
}
