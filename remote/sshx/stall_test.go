package sshx

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/testkit/stallssh"
)

// stallBound is the answer bound the stall tests run under.
const stallBound = 400 * time.Millisecond

// stallConn runs a Conn to srv, with the answer bound stallBound, until
// the test ends; its states arrive on the channel.
func stallConn(t *testing.T, srv *stallssh.Server) (*Conn, chan stateEvent) {
	t.Helper()
	cfg := Config{Alias: "gpu1", HostName: "127.0.0.1", Port: srv.Port, User: "root",
		IdentityFiles: []string{srv.KeyFile}, IdentitiesOnly: true,
		UserKnownHostsFiles: []string{srv.KnownHosts}, StrictHostKeyChecking: "yes", Source: "test"}
	events := make(chan stateEvent, 1024)
	c := NewConn(cfg, ConnOptions{
		Dial:         dialOpts(),
		AnswerWithin: stallBound,
		OnState: func(st State, err error, _ time.Time) {
			select {
			case events <- stateEvent{st, err}:
			default:
			}
		},
		Sleep: func(ctx context.Context, d time.Duration) error { return Sleep(ctx, min(d, 50*time.Millisecond)) },
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return c, events
}

// downWith waits for a down state whose error says want, failing on an
// up state first.
func downWith(t *testing.T, events chan stateEvent, want string, within time.Duration) {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case ev := <-events:
			switch {
			case ev.st == StateUp:
				t.Fatalf("reported up: a host that stalls after the login is not up")
			case ev.st == StateDown && ev.err != nil && strings.Contains(ev.err.Error(), want) && errors.Is(ev.err, ErrStalled):
				return
			case ev.st == StateDown || ev.st == StateUnreachable:
				t.Fatalf("%s with %v, want %q", ev.st, ev.err, want)
			}
		case <-timeout:
			t.Fatalf("no down state saying %q within %s", want, within)
		}
	}
}

// TestStalledHostIsNeverUp: a host that accepts the login and then
// answers no channel was reported up, its streams waiting for ever
// (watch showed it "stopped", status `up … stopped`). The connection is
// up only once a session opens; it goes down, again and again, saying
// the stall, and is never reported up.
func TestStalledHostIsNeverUp(t *testing.T) {
	srv := stallssh.Start(t)
	_, events := stallConn(t, srv)
	for range 3 {
		downWith(t, events, "gpu1 accepted the login but did not answer a session for 0.4 s", 10*time.Second)
	}
	if srv.Logins() < 3 {
		t.Errorf("%d logins: the connection was not dialled again", srv.Logins())
	}
}

// TestEveryOpenAndExecHasADeadline: on a connection that is up (its
// first session opened), a later session, exec, stream or forwarded
// channel that the host does not answer ends at the bound with a
// StallError naming what was not answered, and the connection goes down
// with it; ctx (here: 15 s) never has to end it.
func TestEveryOpenAndExecHasADeadline(t *testing.T) {
	for _, tt := range []struct {
		name    string
		answer  int // channel opens answered per login
		call    func(ctx context.Context, c *Conn) error
		want    string
		restart bool // the next connection is verified with an exec and stalls too
	}{
		{"exec, session never opens", 1, func(ctx context.Context, c *Conn) error {
			_, _, _, err := c.Exec(ctx, "id -u")
			return err
		}, "gpu1 accepted the login but did not answer a session for 0.4 s", false},
		{"exec, command never answered", 2, func(ctx context.Context, c *Conn) error {
			_, _, _, err := c.Exec(ctx, "id -u")
			return err
		}, "gpu1 accepted the login but did not answer a command for 0.4 s", true},
		{"stream", 1, func(ctx context.Context, c *Conn) error {
			_, _, err := c.Stream(ctx, "journalctl -f")
			return err
		}, "gpu1 accepted the login but did not answer a session for 0.4 s", false},
		{"stream, command never answered", 2, func(ctx context.Context, c *Conn) error {
			_, _, err := c.Stream(ctx, "journalctl -f")
			return err
		}, "gpu1 accepted the login but did not answer a command for 0.4 s", true},
		{"unix socket", 1, func(ctx context.Context, c *Conn) error {
			_, err := c.DialUnix(ctx, "/run/dbus/system_bus_socket")
			return err
		}, "gpu1 accepted the login but did not answer a channel to unix /run/dbus/system_bus_socket for 0.4 s", false},
		{"tcp", 1, func(ctx context.Context, c *Conn) error {
			_, err := c.DialTCP(ctx, "127.0.0.1:30000")
			return err
		}, "gpu1 accepted the login but did not answer a channel to tcp 127.0.0.1:30000 for 0.4 s", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := stallssh.Start(t)
			srv.AnswerPerLogin = tt.answer
			c, events := stallConn(t, srv)
			waitState(t, events, StateUp, 10*time.Second)
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			start := time.Now()
			err := tt.call(ctx, c)
			took := time.Since(start)
			if !errors.Is(err, ErrStalled) || err.Error() != tt.want {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if took < stallBound || took > stallBound+5*time.Second {
				t.Errorf("took %s, want about %s", took, stallBound)
			}
			downWith(t, events, tt.want, 5*time.Second)
			if tt.restart {
				// Sessions open, commands hang: the next connection is
				// not up either.
				downWith(t, events, "gpu1 accepted the login but did not answer a command for 0.4 s", 10*time.Second)
			}
		})
	}
}

// TestWithConnSaysTheStall: a command's one look at a host (doctor,
// init) that stalls after the login ends at the first stall with its
// StallError, not at the command's deadline with "new session: EOF".
func TestWithConnSaysTheStall(t *testing.T) {
	srv := stallssh.Start(t)
	cfg := Config{Alias: "gpu1", HostName: "127.0.0.1", Port: srv.Port, User: "root",
		IdentityFiles: []string{srv.KeyFile}, IdentitiesOnly: true,
		UserKnownHostsFiles: []string{srv.KnownHosts}, StrictHostKeyChecking: "yes", Source: "test"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	called := false
	err := WithConn(ctx, cfg, ConnOptions{Dial: dialOpts(), AnswerWithin: stallBound}, func(*Conn) error {
		called = true
		return nil
	})
	if called || !errors.Is(err, ErrStalled) || err.Error() != "gpu1 accepted the login but did not answer a session for 0.4 s" {
		t.Fatalf("called %v, error %v; want the stall", called, err)
	}
	if took := time.Since(start); took > stallBound+5*time.Second {
		t.Errorf("took %s", took)
	}
}
