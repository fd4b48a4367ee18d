package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// TestStatusRefusedFast: status on a host whose SSH port refuses the
// dial says "connection refused" and exits 1 at once; it used to wait out
// its 15 s timeout and exit 2 ("timeout"), the reason only in the table.
func TestStatusRefusedFast(t *testing.T) {
	t.Parallel() // it waits on a dial, not the CPU
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: a dial is refused
	var out, errOut syncBuffer
	start := time.Now()
	code := run(context.Background(), testEnv(&out, &errOut), []string{"status", "-H", addr})
	took := time.Since(start)
	if code != exitFailed || !strings.Contains(out.String(), "connection refused") {
		t.Errorf("status -H %s: exit %d, want %d and \"connection refused\"\n%s%s", addr, code, exitFailed, out.String(), errOut.String())
	}
	if took > 2*time.Second {
		t.Errorf("status -H %s took %s, want under 2 s", addr, took.Round(time.Millisecond))
	}
}
