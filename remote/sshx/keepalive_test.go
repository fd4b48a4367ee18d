package sshx

import (
	"net"
	"testing"
	"time"
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
