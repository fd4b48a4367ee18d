package sshx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/bringup-dev/bringup/remote/sanitize"
	"golang.org/x/crypto/ssh/knownhosts"
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
	// Resolver, when set, resolves the hops instead (the fleet's one
	// reading of ssh_config, rather than an `ssh -G` per hop and dial).
	Resolver *Resolver
	// Signers, when set, are the only keys offered; otherwise Identities
	// with the agent's keys, asked at each dial (see Identities.Signers).
	Signers []ssh.Signer
	// Identities are the identity-file keys loaded before the dial (see
	// LoadIdentities); nil = loaded for each dial.
	Identities *Identities
	// Passphrase returns the passphrase of an encrypted identity file. Nil
	// means none can be asked for: such a file is a PassphraseError.
	Passphrase func(file string) ([]byte, error)
	// AgentSocket is the ssh-agent socket; "" = $SSH_AUTH_SOCK, "-" = no agent.
	AgentSocket string
	// NetDialer opens TCP connections; nil = a net.Dialer.
	NetDialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// OnNewHostKey is told of every host key StrictHostKeyChecking
	// accept-new (or no) added to known_hosts during the dial, a jump
	// host's included, so that trusting a key is never silent.
	OnNewHostKey func(LearnedHostKey)
	// KnownHosts, when set, shares one reading of the known_hosts files
	// between dials (share one between the hosts of a fleet); nil = read
	// at each dial.
	KnownHosts *KnownHostsCache
	// JumpLimit bounds the dials that run through each jump host at once;
	// share one between the hosts of a fleet. Nil = no bound.
	JumpLimit *JumpLimit

	// received, when set, is stamped whenever the final host's transport
	// delivers bytes: Conn's keepalives are sent only after a quiet
	// interval, as ssh's ServerAliveInterval is.
	received *Activity
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
func resolveHop(ctx context.Context, hop string, opts DialOptions) (Config, error) {
	h, err := ParseHop(hop)
	if err != nil {
		return Config{}, err
	}
	var cfg Config
	if opts.Resolver != nil {
		cfg, err = opts.Resolver.Resolve(ctx, h.Host)
	} else {
		cfg, err = Resolve(ctx, h.Host, opts.Resolve)
	}
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
		hop, err := resolveHop(ctx, last, opts)
		if err != nil {
			return nil, err
		}
		if len(rest) > 0 {
			hop.ProxyJump, hop.ProxyCommand = rest, ""
		}
		// Held until the handshake through the jump host is over (below).
		release, err := opts.JumpLimit.acquire(ctx, hop.Addr())
		if err != nil {
			return nil, err
		}
		defer release()
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
	if depth == 0 && opts.received != nil {
		nc = &activityConn{Conn: nc, a: opts.received}
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
	kh, err := opts.KnownHosts.Load(cfg.UserKnownHostsFiles, cfg.GlobalKnownHostsFiles)
	if err != nil {
		return nil, err
	}
	signers := opts.Signers
	if signers == nil && check == nil { // with a custom check (Trust) no auth happens
		ids := opts.Identities
		if ids == nil {
			if ids, err = LoadIdentities(cfg, opts); err != nil {
				return nil, err
			}
		}
		s, closeAgent, err := ids.Signers(agentSocket(opts))
		if err != nil {
			return nil, err
		}
		defer closeAgent() // the agent keys sign through it until auth ends
		signers = s
	}
	cb := kh.hostKeyCallback(cfg, opts.OnNewHostKey)
	if check != nil {
		cb = check(kh, cfg)
	}
	cb = pinAfterFirst(cb)
	// Once the host key is accepted, what fails is authentication: the
	// kex runs the callback on another goroutine, hence the atomic.
	var keyAccepted atomic.Bool
	cc := &ssh.ClientConfig{
		User: cfg.User,
		Auth: []ssh.AuthMethod{ssh.PublicKeys(signers...)},
		HostKeyCallback: func(host string, remote net.Addr, key ssh.PublicKey) error {
			err := cb(host, remote, key)
			keyAccepted.Store(err == nil)
			return err
		},
		HostKeyAlgorithms: kh.HostKeyAlgorithms(lookupName(cfg)),
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl) // not supported on jump channels; AfterFunc covers them
	}
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	conn, chans, reqs, err := ssh.NewClientConn(nc, cfg.Addr(), cc)
	interrupted := !stop()
	if err != nil {
		if keyAccepted.Load() && !interrupted && ctx.Err() == nil {
			if ae := authFailure(cfg, err); ae != nil {
				return nil, ae
			}
		}
		if IsPermanent(err) {
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
		under := nc
		if ac, ok := under.(*activityConn); ok {
			under = ac.Conn
		}
		if pc, ok := under.(*cmdConn); ok {
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

// pinAfterFirst checks the first host key with cb, then only that every
// later one (a re-key's) is the same key, and lets cb go: the callback
// holds the parsed known_hosts files, and the client keeps its callback
// for the connection's life (measured: 15 MB for 256 connections whose
// known_hosts lists all 256 hosts, growing with the square of the fleet).
// OpenSSH too refuses a host key that changes within a connection.
func pinAfterFirst(cb ssh.HostKeyCallback) ssh.HostKeyCallback {
	var (
		mu     sync.Mutex
		pinned []byte
	)
	return func(host string, remote net.Addr, key ssh.PublicKey) error {
		mu.Lock()
		defer mu.Unlock()
		if pinned != nil {
			if !bytes.Equal(key.Marshal(), pinned) {
				return fmt.Errorf("host key of %s changed within the connection (%s)", host, ssh.FingerprintSHA256(key))
			}
			return nil
		}
		if err := cb(host, remote, key); err != nil {
			return err
		}
		pinned, cb = key.Marshal(), nil
		return nil
	}
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

// ReadFrom reads r to its end through a small buffer: ssh.Session copies
// a stderr it is given with io.Copy, which without ReadFrom holds a
// 32 KiB buffer for the session's whole life (measured: 16 MiB of a
// 256-host console's heap, two long-lived sessions a host).
func (b *capBuffer) ReadFrom(r io.Reader) (int64, error) {
	return ReadSmall(r, b.Write)
}

// ReadSmall hands what r yields to write through a 512-byte buffer until
// r ends (io.EOF is the normal end, not an error): the ReadFrom of a
// writer that keeps a session's stderr, instead of io.Copy's 32 KiB.
func ReadSmall(r io.Reader, write func([]byte) (int, error)) (int64, error) {
	var buf [512]byte
	var n int64
	for {
		k, err := r.Read(buf[:])
		if k > 0 {
			_, _ = write(buf[:k]) // the buffers keep their start and never fail
			n += int64(k)
		}
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
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

// errKeyFetched ends a FetchHostKey handshake once the host key is in hand.
var errKeyFetched = errors.New("host key fetched")

// OfferedHostKey is the host key a server presented to FetchHostKey: what
// an operator checks before trusting it, and exactly what Write records.
type OfferedHostKey struct {
	Host        string // the alias
	Addr        string // the name known_hosts records it under, e.g. [10.0.0.1]:2222
	KeyType     string
	Fingerprint string // SHA256:..., of the plain key (for a certificate, of the key it certifies)
	// Known says known_hosts already trusts the key (a line for the host,
	// or an @cert-authority line that vouches for its certificate).
	Known bool

	key  ssh.PublicKey // the plain key Write records
	name string        // the lookup name
	cfg  Config
}

// FetchHostKey connects to cfg's host (through its jump hosts, which must
// already be trusted) and returns the host key it presents. It never
// authenticates and writes nothing. A key that differs from a known one,
// is revoked, or is a host certificate that an @cert-authority line should
// vouch for but does not, is refused with the same error a dial gets.
func FetchHostKey(ctx context.Context, cfg Config, opts DialOptions) (*OfferedHostKey, error) {
	ctx, cancel := withConnectTimeout(ctx, cfg)
	defer cancel()
	var offered *OfferedHostKey
	check := func(kh *KnownHosts, cfg Config) ssh.HostKeyCallback {
		name := lookupName(cfg)
		return func(_ string, _ net.Addr, key ssh.PublicKey) error {
			plain := key
			if cert, ok := key.(*ssh.Certificate); ok {
				plain = cert.Key
			}
			k := &OfferedHostKey{Host: cfg.Alias, Addr: knownhosts.Normalize(name), KeyType: plain.Type(),
				Fingerprint: ssh.FingerprintSHA256(plain), key: plain, name: name, cfg: cfg}
			err := kh.verify(cfg, name, key, nil)
			var unknown *UnknownHostError
			switch {
			case err == nil:
				k.Known = true
			case !errors.As(err, &unknown):
				return err
			}
			offered = k
			return errKeyFetched
		}
	}
	c, err := dialChain(ctx, cfg, opts, 0, check)
	if err == nil { // cannot happen: the check always ends the handshake
		c.Close()
	}
	if offered != nil {
		return offered, nil
	}
	return nil, sanitize.Error(fmt.Errorf("fetch host key of %s: %w", cfg.Alias, err))
}

// CheckFingerprint says whether fp is a fingerprint as ssh-keygen -lf
// prints it (SHA256:, then 43 base64 characters), the form a pin takes.
func CheckFingerprint(fp string) error {
	b64, ok := strings.CutPrefix(fp, "SHA256:")
	if !ok || len(b64) != 43 || strings.Trim(b64, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") != "" {
		return fmt.Errorf("fingerprint %q is not SHA256:<43 base64 characters> (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub on the host prints it)", fp)
	}
	return nil
}

// FingerprintMismatchError refuses to trust a host key that is not the one
// the operator pinned.
type FingerprintMismatchError struct {
	Host, Addr, KeyType, Fingerprint string // what the host presented
	Pinned                           string
}

func (e *FingerprintMismatchError) Error() string {
	return fmt.Sprintf("%s (%s) presented %s %s, not the pinned %s: nothing written (check the fingerprint on the host: ssh-keygen -lf %s)",
		e.Host, e.Addr, e.KeyType, e.Fingerprint, e.Pinned, hostKeyFile(e.KeyType))
}

// Write records exactly this key for its host in the first
// UserKnownHostsFile, unless known_hosts already trusts it (then it
// returns line 0). With pin set, a key whose fingerprint is not pin is
// refused with a FingerprintMismatchError and nothing is written. It
// returns where the key was recorded.
func (k *OfferedHostKey) Write(pin string) (file string, line int, err error) {
	if pin != "" {
		if err := CheckFingerprint(pin); err != nil {
			return "", 0, err
		}
		if pin != k.Fingerprint {
			return "", 0, &FingerprintMismatchError{Host: k.Host, Addr: k.Addr, KeyType: k.KeyType, Fingerprint: k.Fingerprint, Pinned: pin}
		}
	}
	if k.Known {
		return "", 0, nil
	}
	if len(k.cfg.UserKnownHostsFiles) == 0 {
		return "", 0, fmt.Errorf("trust %s: no UserKnownHostsFile to write to", k.Host)
	}
	file = k.cfg.UserKnownHostsFiles[0]
	line, err = appendKnownHost(file, k.name, k.key, k.cfg.HashKnownHosts)
	if err != nil {
		return "", 0, fmt.Errorf("trust %s: %w", k.Host, err)
	}
	return file, line, nil
}
