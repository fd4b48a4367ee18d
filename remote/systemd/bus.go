package systemd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/godbus/dbus/v5"
)

// D-Bus names of systemd's manager and unit objects.
const (
	busName       = "org.freedesktop.systemd1"
	managerPath   = dbus.ObjectPath("/org/freedesktop/systemd1")
	managerIface  = "org.freedesktop.systemd1.Manager"
	unitIface     = "org.freedesktop.systemd1.Unit"
	serviceIface  = "org.freedesktop.systemd1.Service"
	propsIface    = "org.freedesktop.DBus.Properties"
	propsChanged  = propsIface + ".PropertiesChanged"
	reloadingName = managerIface + ".Reloading"
)

// unknownUID is openBus's uid when the caller did not ask the host.
const unknownUID = -1

// openBus connects to the host's system bus by way of via (PathDBus or
// PathStdioBridge), authenticates as uid (unknownUID: as whoever the
// socket's credentials say) and, with hello, says Hello and waits for
// the answer; without, the caller sends it first among its own calls
// (subscribeUnit). ctx bounds the connection's whole life: when it ends,
// the connection closes.
func openBus(ctx context.Context, d Dialer, host string, uid int, via string, hello bool) (*dbus.Conn, error) {
	var (
		rwc io.ReadWriteCloser
		err error
	)
	switch via {
	case PathDBus:
		rwc, err = d.DialUnix(ctx, SystemBusSocket)
	case PathStdioBridge:
		rwc, err = startBridge(ctx, d)
	default:
		return nil, fmt.Errorf("%s: unknown bus path %q", host, via)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: system bus via %s: %w", host, via, err)
	}
	// EXTERNAL: the bus daemon takes the peer credentials of the socket,
	// which belong to the SSH user (godbus sends no identity of its own:
	// it answers the bus's DATA challenge with an empty one).
	// systemd-stdio-bridge's server end accepts ANONYMOUS on a pipe.
	as := ""
	if uid != unknownUID {
		as = strconv.Itoa(uid)
	}
	auths := []dbus.Auth{dbus.AuthExternal(as), dbus.AuthAnonymous()}
	if via == PathDBus && uid == unknownUID {
		// The bus's own socket, by its credentials: the exchange is sent
		// without waiting for the bus (pipelinedAuth).
		p, err := newPipelinedAuth(rwc)
		if err != nil {
			rwc.Close()
			return nil, fmt.Errorf("%s: system bus via %s: %w", host, via, err)
		}
		rwc, auths = p, []dbus.Auth{dbus.AuthExternal("")}
	}
	conn, err := dbus.NewConn(rwc, dbus.WithContext(ctx))
	if err != nil {
		rwc.Close()
		return nil, fmt.Errorf("%s: system bus via %s: %w", host, via, err)
	}
	if err := conn.Auth(auths); err != nil {
		conn.Close()
		who := ""
		if as != "" {
			who = " as uid " + as
		}
		return nil, fmt.Errorf("%s: system bus via %s: auth%s: %w%s", host, via, who, err, bridgeStderr(rwc))
	}
	if !hello {
		return conn, nil
	}
	if err := conn.Hello(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("%s: system bus via %s: hello: %w%s", host, via, err, bridgeStderr(rwc))
	}
	return conn, nil
}

// openBusAuto tries the stream-local channel, then the stdio bridge. It
// says which one it got and why the stream-local one failed (nil when it
// worked); the error joins both failures.
func openBusAuto(ctx context.Context, d Dialer, host string, uid int, hello bool) (conn *dbus.Conn, path string, why, err error) {
	conn, why = openBus(ctx, d, host, uid, PathDBus, hello)
	if why == nil {
		return conn, PathDBus, nil, nil
	}
	conn, err = openBus(ctx, d, host, uid, PathStdioBridge, hello)
	if err == nil {
		return conn, PathStdioBridge, why, nil
	}
	return nil, "", why, errors.Join(why, err)
}

// bridgeConn is systemd-stdio-bridge's stdin and stdout as one stream.
type bridgeConn struct {
	io.Reader
	io.WriteCloser
	close  func() error
	stderr *limitedBuffer
}

// Close closes the session, which ends the bridge.
func (b *bridgeConn) Close() error {
	b.WriteCloser.Close()
	return b.close()
}

// startBridge runs systemd-stdio-bridge in a new session of d's client.
func startBridge(ctx context.Context, d Dialer) (*bridgeConn, error) {
	cl, err := d.Client(ctx)
	if err != nil {
		return nil, err
	}
	s, err := cl.NewSession()
	if err != nil {
		return nil, fmt.Errorf("new session: %w", err)
	}
	in, err := s.StdinPipe()
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	out, err := s.StdoutPipe()
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	eb := &limitedBuffer{max: 2048}
	s.Stderr = eb
	if err := s.Start("systemd-stdio-bridge"); err != nil {
		s.Close()
		return nil, fmt.Errorf("start systemd-stdio-bridge: %w", err)
	}
	return &bridgeConn{Reader: out, WriteCloser: in, close: s.Close, stderr: eb}, nil
}

// bridgeStderr is what the bridge wrote to stderr, for an error message.
func bridgeStderr(rwc io.ReadWriteCloser) string {
	b, ok := rwc.(*bridgeConn)
	if !ok {
		return ""
	}
	if s := strings.TrimSpace(b.stderr.String()); s != "" {
		return " (systemd-stdio-bridge: " + trimOut([]byte(s)) + ")"
	}
	return ""
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

// ReadFrom reads r to its end through a small buffer, so that the
// session's io.Copy of the bridge's stderr does not hold a 32 KiB buffer
// for the connection's whole life (sshx.capBuffer says why).
func (l *limitedBuffer) ReadFrom(r io.Reader) (int64, error) {
	return sshx.ReadSmall(r, l.Write)
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.max - len(l.b); n > 0 {
		l.b = append(l.b, p[:min(n, len(p))]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}
