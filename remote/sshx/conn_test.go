package sshx

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

type stateEvent struct {
	st  State
	err error
}

func runConn(t *testing.T, cfg Config) (*Conn, chan stateEvent, chan error) {
	t.Helper()
	return runConnWith(t, cfg, dialOpts())
}

// runConnWith runs a Conn dialling with opts until the test ends; its
// states arrive on events; it retries after 50 ms at most.
func runConnWith(t *testing.T, cfg Config, opts DialOptions) (*Conn, chan stateEvent, chan error) {
	t.Helper()
	events := make(chan stateEvent, 256)
	c := NewConn(cfg, ConnOptions{
		Dial:    opts,
		OnState: func(st State, err error, _ time.Time) { events <- stateEvent{st, err} },
		Sleep: func(ctx context.Context, d time.Duration) error {
			return Sleep(ctx, min(d, 50*time.Millisecond)) // keep the test fast
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		_ = <-done // Run's end after the cancel
	})
	return c, events, done
}

func waitState(t *testing.T, events chan stateEvent, want State, within time.Duration) stateEvent {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case ev := <-events:
			if ev.st == want {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s within %s", want, within)
		}
	}
}

func TestConnHelpersKeepaliveReconnect(t *testing.T) {
	key := newClientKey(t)
	d := startSSHD(t, false, key.signer.PublicKey())
	cfg := d.config(t, key, d.knownHostsLine(0))
	cfg.ServerAliveInterval, cfg.ServerAliveCountMax = 300*time.Millisecond, 2
	c, events, _ := runConn(t, cfg)
	if _, _, _, err := c.Exec(context.Background(), "true"); err != nil && !errors.Is(err, ErrNotConnected) {
		t.Fatal(err)
	}
	waitState(t, events, StateUp, 10*time.Second)
	if _, err := c.Client(ctxT(t, time.Second)); err != nil || c.Generation() != 1 {
		t.Fatalf("Client: %v gen %d", err, c.Generation())
	}
	ctx := ctxT(t, 20*time.Second)

	out, errOut, code, err := c.Exec(ctx, "echo hi; echo oops >&2; exit 3")
	if err != nil || string(out) != "hi\n" || string(errOut) != "oops\n" || code != 3 {
		t.Fatalf("Exec = %q %q %d %v", out, errOut, code, err)
	}
	r, wait, err := c.Stream(ctx, "for i in 1 2 3; do echo $i; done")
	if err != nil {
		t.Fatal(err)
	}
	all, _ := io.ReadAll(r)
	if err := wait(); err != nil || string(all) != "1\n2\n3\n" {
		t.Fatalf("Stream = %q, %v", all, err)
	}
	// A follower ended by its context.
	sctx, scancel := context.WithCancel(ctx)
	r, wait, err = c.Stream(sctx, "while :; do echo tick; sleep 0.05; done")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(r, buf); err != nil || string(buf) != "tick\n" {
		t.Fatalf("follow read %q %v", buf, err)
	}
	scancel()
	waitErr := make(chan error, 1)
	go func() { waitErr <- wait() }()
	select {
	case _ = <-waitErr: // ended, as it must; its error is the cancel's
	case <-time.After(5 * time.Second):
		t.Fatal("Stream did not end with its context")
	}
	r.Close()

	tc, err := c.DialTCP(ctx, d.addr())
	if err != nil {
		t.Fatal(err)
	}
	banner := make([]byte, 8)
	if _, err := io.ReadFull(tc, banner); err != nil || string(banner) != "SSH-2.0-" {
		t.Fatalf("DialTCP banner %q %v", banner, err)
	}
	tc.Close()

	sock := filepath.Join(t.TempDir(), "echo.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	go func() {
		conn, err := ul.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = io.Copy(conn, conn) // an echo: the reads below check what came back
	}()
	uc, err := c.DialUnix(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := uc.Write([]byte("dbus")); err != nil {
		t.Fatalf("DialUnix write: %v", err)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(uc, got); err != nil || string(got) != "dbus" {
		t.Fatalf("DialUnix echo %q %v", got, err)
	}
	uc.Close()

	// Freeze the per-connection sshd processes: keepalives go unanswered and
	// the connection is declared dead within interval × (count+1).
	if n := d.signalChildren(syscall.SIGSTOP); n == 0 {
		t.Fatal("no sshd child to freeze")
	}
	start := time.Now()
	ev := waitState(t, events, StateDown, 5*time.Second)
	if el := time.Since(start); el > 900*time.Millisecond+500*time.Millisecond {
		t.Errorf("dead peer noticed after %s", el)
	}
	if !errors.Is(ev.err, ErrPeerDead) {
		t.Errorf("down cause = %v, want ErrPeerDead", ev.err)
	}
	if _, _, _, err := c.Exec(ctx, "true"); err != nil && !strings.Contains(err.Error(), "gpu-test") {
		t.Errorf("error does not name the host: %v", err)
	}
	d.signalChildren(syscall.SIGKILL)
	d.signalChildren(syscall.SIGCONT)
	waitState(t, events, StateUp, 10*time.Second)
	if c.Generation() != 2 {
		t.Errorf("generation %d after reconnect, want 2", c.Generation())
	}

	// sshd goes away and comes back on the same port.
	d.stop()
	waitState(t, events, StateDown, 5*time.Second)
	if _, _, _, err := c.Exec(ctx, "true"); !errors.Is(err, ErrNotConnected) {
		t.Errorf("Exec while down: %v", err)
	}
	d.start()
	waitState(t, events, StateUp, 15*time.Second)
	if out, _, _, err := c.Exec(ctx, "echo back"); err != nil || string(out) != "back\n" {
		t.Fatalf("after restart: %q %v", out, err)
	}
	if c.Generation() != 3 {
		t.Errorf("generation %d, want 3", c.Generation())
	}
}

func TestConnAuthFailureNotRetried(t *testing.T) {
	key := newClientKey(t)
	other := newClientKey(t)
	d := startSSHD(t, false, other.signer.PublicKey()) // our key is not authorised
	cfg := d.config(t, key, d.knownHostsLine(0))
	c, events, _ := runConn(t, cfg)
	ev := waitState(t, events, StateUnreachable, 15*time.Second)
	var ae *AuthError
	if !errors.As(ev.err, &ae) || !IsPermanent(ev.err) {
		t.Fatalf("unreachable because %v, want a permanent AuthError", ev.err)
	}
	time.Sleep(time.Second) // a retry loop would dial again within 50 ms
	close(events)
	connecting, unreachable := 1, 1 // the ones waitState took
	for ev := range events {
		switch ev.st {
		case StateConnecting:
			connecting++
		case StateUnreachable:
			unreachable++
		case StateDown, StateUp:
			t.Errorf("unexpected state %s", ev.st)
		}
	}
	if connecting != 1 || unreachable != 1 {
		t.Errorf("dial attempts %d, unreachable %d; want 1 and 1", connecting, unreachable)
	}
	if _, err := c.Client(ctxT(t, time.Second)); !errors.Is(err, ErrNotConnected) || !errors.As(err, &ae) {
		t.Errorf("Client after permanent failure: %v", err)
	}
}

func TestConnUnreachableHostRetriesWithBackoff(t *testing.T) {
	key := newClientKey(t)
	port := freePort(t) // nothing listens
	cfg := Config{Alias: "gone", HostName: "127.0.0.1", Port: port, User: "root", IdentityFiles: []string{key.path},
		UserKnownHostsFiles: []string{filepath.Join(t.TempDir(), "kh")}, StrictHostKeyChecking: "yes"}
	_, events, _ := runConn(t, cfg)
	downs := 0
	for downs < 3 {
		ev := waitState(t, events, StateDown, 5*time.Second)
		if ev.err == nil || IsPermanent(ev.err) {
			t.Fatalf("down cause %v", ev.err)
		}
		downs++
	}
}
