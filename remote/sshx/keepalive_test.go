package sshx

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

func TestKeepaliveDue(t *testing.T) {
	iv := 15 * time.Second
	for _, tc := range []struct {
		name string
		idle time.Duration
		send bool
		wait time.Duration
	}{
		{"nothing ever received", time.Since(time.Time{}), true, iv},
		{"quiet for the whole interval", iv, true, iv},
		{"quiet for longer", 40 * time.Second, true, iv},
		{"bytes 5 s ago: look again when the quiet would be whole", 5 * time.Second, false, 10 * time.Second},
		{"bytes just now", 0, false, iv},
	} {
		send, wait := keepaliveDue(tc.idle, iv)
		if send != tc.send || wait != tc.wait {
			t.Errorf("%s: send %v, wait %v; want %v, %v", tc.name, send, wait, tc.send, tc.wait)
		}
	}
}

// The activity clock moves on reads that deliver bytes, not on writes.
func TestActivityStampsReads(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	var act Activity
	c := &activityConn{Conn: a, a: &act}
	if !act.Last().IsZero() {
		t.Fatal("a fresh Activity has received something")
	}
	go func() { _, _ = b.Read(make([]byte, 2)) }()
	if _, err := c.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	if !act.Last().IsZero() {
		t.Fatal("a write stamped the activity")
	}
	before := time.Now()
	go func() { _, _ = b.Write([]byte("yo")) }()
	if _, err := c.Read(make([]byte, 2)); err != nil {
		t.Fatal(err)
	}
	if last := act.Last(); last.Before(before) || last.After(time.Now()) {
		t.Fatalf("read stamped %v, want between %v and now", last, before)
	}
}

// After the first host key passes the check, a re-key's key is only
// compared with it: the check (and the known_hosts it holds) is not
// asked again, and a different key is refused.
func TestPinAfterFirst(t *testing.T) {
	a, b := newClientKey(t), newClientKey(t)
	calls := 0
	cb := pinAfterFirst(func(string, net.Addr, ssh.PublicKey) error { calls++; return nil })
	addr := &net.TCPAddr{IP: net.IPv4(10, 213, 0, 2), Port: 22}
	if err := cb("gpu1:22", addr, a.signer.PublicKey()); err != nil || calls != 1 {
		t.Fatalf("first key: %v after %d checks", err, calls)
	}
	if err := cb("gpu1:22", addr, a.signer.PublicKey()); err != nil || calls != 1 {
		t.Fatalf("the same key again: %v after %d checks, want no new check", err, calls)
	}
	if err := cb("gpu1:22", addr, b.signer.PublicKey()); err == nil || !strings.Contains(err.Error(), "changed within the connection") {
		t.Fatalf("another key: %v, want it refused", err)
	}
	refused := pinAfterFirst(func(string, net.Addr, ssh.PublicKey) error { return errors.New("unknown host") })
	if err := refused("gpu1:22", addr, a.signer.PublicKey()); err == nil {
		t.Fatal("a key the check refused passed")
	}
	if err := refused("gpu1:22", addr, a.signer.PublicKey()); err == nil {
		t.Fatal("a refused key passed the second time: it must not be pinned")
	}
}
