package sshx

import (
	"errors"
	"io"
	"net"
	"runtime"
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

// A session's stderr buffer is filled through ReadFrom with a small
// buffer (io.Copy then holds no 32 KiB one for the session's life), and
// keeps its first max bytes however much comes.
func TestCapBufferReadsFromThroughASmallBuffer(t *testing.T) {
	b := &capBuffer{max: 100}
	src := strings.Repeat("0123456789", 5000) // 50 000 bytes
	// Read alone, as an SSH channel offers (a strings.Reader's WriteTo
	// would spare io.Copy its buffer by itself).
	n, err := io.Copy(b, struct{ io.Reader }{strings.NewReader(src)})
	if err != nil || n != int64(len(src)) {
		t.Fatalf("copied %d, %v; want %d, nil", n, err, len(src))
	}
	if string(b.b) != src[:100] {
		t.Errorf("kept %q, want the first 100 bytes", b.b)
	}
	// Bytes allocated a copy: the 512-byte buffer, not io.Copy's 32 KiB.
	r := strings.NewReader(src)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	const runs = 20
	for range runs {
		r.Reset(src)
		b.b = b.b[:0]
		_, _ = io.Copy(b, struct{ io.Reader }{r})
	}
	runtime.ReadMemStats(&m1)
	if per := (m1.TotalAlloc - m0.TotalAlloc) / runs; per > 4<<10 {
		t.Errorf("io.Copy into the buffer allocates %d bytes a copy, want under 4 KiB (no 32 KiB copy buffer)", per)
	}
}
