// Package systemd watches one systemd unit on a remote host and acts on it,
// all through the host's one SSH connection.
//
// State is read from the host's system bus, reached in one of three ways,
// tried in this order (Watch's "auto" path):
//
//   - "dbus": a direct-streamlocal channel to /run/dbus/system_bus_socket,
//     authenticated with D-Bus EXTERNAL and the remote user's uid;
//   - "stdio-bridge": `systemd-stdio-bridge` in an exec channel (what
//     `systemctl -H` uses), for hosts whose sshd refuses stream-local
//     forwarding (AllowStreamLocalForwarding no);
//   - "systemctl": `systemctl show` polled over exec, when D-Bus is unusable.
//
// On the bus paths the unit's PropertiesChanged signals are applied the
// moment they arrive, and a slow full re-read reconciles what a signal may
// have missed. Restarts are never counted from signals: consumers count them
// from NRestarts and InvocationID, which every event carries.
//
// Actions (Controller) go over D-Bus as root and through `sudo -n systemctl`
// otherwise; a sudo that wants a password is an error, never a prompt.
//
// Remote strings are decoded faithfully and never printed here: the fleet
// sanitises every event where it enters.
package systemd

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/bringup-dev/bringup/remote/sanitize"
)

// Dialer is the SSH connection to one host; *sshx.Conn satisfies it.
type Dialer interface {
	// DialUnix opens a direct-streamlocal channel to a unix socket on the host.
	DialUnix(ctx context.Context, path string) (net.Conn, error)
	// Exec runs cmd and returns its output and exit code; err is for
	// transport failures only.
	Exec(ctx context.Context, cmd string) (stdout, stderr []byte, exitCode int, err error)
	// Client returns the connected client, for sessions that need stdin
	// (systemd-stdio-bridge).
	Client(ctx context.Context) (*ssh.Client, error)
}

// The ways unit state is read, as reported in event.Unit.Path.
const (
	PathDBus        = "dbus"         // the system bus over a stream-local channel
	PathStdioBridge = "stdio-bridge" // the system bus through systemd-stdio-bridge
	PathSystemctl   = "systemctl"    // `systemctl show` polling
)

// SystemBusSocket is where the host's system bus listens.
const SystemBusSocket = "/run/dbus/system_bus_socket"

// remoteUID asks the host for the login user's uid (D-Bus EXTERNAL wants
// the remote uid, not ours).
func remoteUID(ctx context.Context, d Dialer, host string) (int, error) {
	out, errOut, code, err := d.Exec(ctx, "id -u")
	if err != nil {
		return 0, fmt.Errorf("%s: id -u: %w", host, err)
	}
	if code != 0 {
		return 0, fmt.Errorf("%s: id -u: exit %d: %s", host, code, trimOut(errOut))
	}
	uid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || uid < 0 {
		return 0, fmt.Errorf("%s: id -u: unexpected output %q", host, trimOut(out))
	}
	return uid, nil
}

// trimOut shortens remote output (stderr of systemctl, sudo or the stdio
// bridge) for an error message and passes it through the one sanitiser:
// error text is printed by doctor and the commands, and a host's escape
// sequence must not reach a terminal through it.
func trimOut(b []byte) string {
	s, _ := sanitize.Line(strings.TrimSpace(string(b)), 300)
	return s
}
