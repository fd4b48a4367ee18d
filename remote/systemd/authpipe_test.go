package systemd

import (
	"bufio"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// socketPair is two connected unix sockets: buffered, as the SSH
// channel is (net.Pipe is not, and both ends writing at once would wait
// for each other).
func socketPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) net.Conn {
		f := os.NewFile(uintptr(fd), "socketpair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	return conn(fds[0]), conn(fds[1])
}

// fakeBus is the bus's end of a pipe: it reads the client's exchange,
// answers with answer, then reads what follows and sends after.
func fakeBus(t *testing.T, srv net.Conn, answer, after string) <-chan string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		defer srv.Close()
		buf := make([]byte, len(authPipelined))
		if _, err := io.ReadFull(srv, buf); err != nil {
			got <- "read: " + err.Error()
			return
		}
		if string(buf) != authPipelined {
			got <- "exchange: " + string(buf)
			return
		}
		if _, err := io.WriteString(srv, answer+after); err != nil {
			got <- "write: " + err.Error()
			return
		}
		_ = srv.SetReadDeadline(time.Now().Add(5 * time.Second))
		rest, _ := bufio.NewReader(srv).ReadString('!')
		got <- rest
	}()
	return got
}

// TestPipelinedAuth: godbus's lock-step exchange is answered locally and
// never reaches the bus, which gets the pipelined one; what the client
// writes after BEGIN reaches the bus, and what the bus sends after its OK
// reaches the client. A bus that refuses is an error at the first read,
// naming its answer.
func TestPipelinedAuth(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		refused      string // in the error of the first read; "" = accepted
	}{
		{"challenge then OK (dbus-daemon)", "DATA\r\nOK 1234abcd\r\n", ""},
		{"OK at once, ERROR for the DATA", "OK 1234abcd\r\nERROR \"unexpected\"\r\n", ""},
		{"refused", "REJECTED EXTERNAL\r\n", `"REJECTED EXTERNAL"`},
		{"garbage after OK", "OK 1234abcd\r\nHELLO\r\n", `"HELLO" after OK`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cli, srv := socketPair(t)
			got := fakeBus(t, srv, tc.answer, "from the bus")
			p, err := newPipelinedAuth(cli)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			// godbus's Auth starts its reader on what follows, so the
			// same exchange by hand, as godbus writes it.
			for _, step := range []struct{ write, want string }{
				{"\x00", ""}, {"AUTH\r\n", "REJECTED EXTERNAL"}, {"AUTH EXTERNAL\r\n", "OK "},
			} {
				if _, err := io.WriteString(p, step.write); err != nil {
					t.Fatal(err)
				}
				if step.want == "" {
					continue
				}
				line, err := bufio.NewReader(io.LimitReader(p, 64)).ReadString('\n')
				if err != nil || !strings.HasPrefix(line, step.want) {
					t.Fatalf("after %q: %q, %v; want %q", step.write, line, err, step.want)
				}
			}
			if _, err := io.WriteString(p, "BEGIN\r\nto the bus!"); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 64)
			n, err := p.Read(buf)
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("read: %q, %v; want an error with %s", buf[:n], err, tc.refused)
				}
				return
			}
			if err != nil || string(buf[:n]) != "from the bus" {
				t.Fatalf("read: %q, %v", buf[:n], err)
			}
			if rest := <-got; rest != "to the bus!" {
				t.Fatalf("the bus got %q after the exchange", rest)
			}
		})
	}
}

// TestPipelinedAuthGodbus: godbus's own Auth completes against the local
// answers alone, before the bus has said anything.
func TestPipelinedAuthGodbus(t *testing.T) {
	cli, srv := socketPair(t)
	defer srv.Close()
	go func() { _, _ = io.Copy(io.Discard, srv) }() // a bus that never answers
	p, err := newPipelinedAuth(cli)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := dbus.NewConn(p)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	done := make(chan error, 1)
	go func() { done <- conn.Auth([]dbus.Auth{dbus.AuthExternal("")}) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Auth: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Auth waited for the bus")
	}
}
