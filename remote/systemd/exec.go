package systemd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/crypto/ssh"
)

// TermExecer is a Dialer that runs the commands ExecTerm runs itself (to
// log them, say); it must stop them the way ExecTerm does.
type TermExecer interface {
	ExecTerm(ctx context.Context, cmd string) (stdout, stderr []byte, exitCode int, err error)
}

// termGrace is how long a command that got SIGTERM has to end before its
// session is closed on it.
const termGrace = 2 * time.Second

// maxTermOutput bounds what ExecTerm keeps of each output stream.
const maxTermOutput = 64 << 10

// ExecTerm runs cmd in a session of its own on d's host, like Exec, but
// when ctx ends first the command gets SIGTERM, and its session is closed
// termGrace later if it is still running. `sudo -n systemctl restart`
// needs this: sudo relays SIGTERM to the systemctl it runs, which then
// stops waiting for its job, whereas a SIGKILL (sent as the login user)
// ends sudo only and leaves a root systemctl on the host, waiting for a
// job that may never end. err is for transport failures and ctx only.
func ExecTerm(ctx context.Context, d Dialer, cmd string) (stdout, stderr []byte, exitCode int, err error) {
	cl, err := d.Client(ctx)
	if err != nil {
		return nil, nil, -1, fmt.Errorf("exec %q: %w", cmd, err)
	}
	s, err := cl.NewSession()
	if err != nil {
		return nil, nil, -1, fmt.Errorf("exec %q: new session: %w", cmd, err)
	}
	defer s.Close()
	o, e := &limitedBuffer{max: maxTermOutput}, &limitedBuffer{max: maxTermOutput}
	s.Stdout, s.Stderr = o, e
	ran := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = s.Signal(ssh.SIGTERM)
		select {
		case <-ran:
		case <-time.After(termGrace):
			s.Close()
		}
	})
	err = s.Run(cmd)
	close(ran)
	stop()
	out, errOut := []byte(o.String()), []byte(e.String())
	var ee *ssh.ExitError
	switch {
	case ctx.Err() != nil:
		return out, errOut, -1, fmt.Errorf("exec %q: %w", cmd, ctx.Err())
	case err == nil:
		return out, errOut, 0, nil
	case errors.As(err, &ee):
		return out, errOut, ee.ExitStatus(), nil
	}
	return out, errOut, -1, fmt.Errorf("exec %q: %w", cmd, err)
}

// execTerm runs cmd through ExecTerm, or through d's own when it has one.
func execTerm(ctx context.Context, d Dialer, cmd string) ([]byte, []byte, int, error) {
	if t, ok := d.(TermExecer); ok {
		return t.ExecTerm(ctx, cmd)
	}
	return ExecTerm(ctx, d, cmd)
}
