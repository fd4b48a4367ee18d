package live

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/sshx"
)

func TestDecideOnDemand(t *testing.T) {
	now := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	idle := 20 * time.Second
	for _, tc := range []struct {
		name string
		d    demand
		want step
	}{
		{"nothing wants it, closed", demand{}, step{}},
		{"view opens", demand{viewed: true}, step{open: true, sample: true}},
		{"view open, sampling", demand{viewed: true, open: true, sampling: true}, step{}},
		{"an action, closed", demand{users: 1}, step{open: true}},
		{"an action on the open view's connection", demand{viewed: true, users: 1, open: true, sampling: true}, step{}},
		{"view closes: stop sampling, start the idle time",
			demand{open: true, sampling: true}, step{unsample: true, markIdle: true, wakeAt: now.Add(idle)}},
		{"idle for half the time", demand{open: true, idleFrom: now.Add(-idle / 2)}, step{wakeAt: now.Add(idle / 2)}},
		{"idle for the time: close", demand{open: true, idleFrom: now.Add(-idle)}, step{close: true}},
		{"idle long ago: close", demand{open: true, idleFrom: now.Add(-time.Hour)}, step{close: true}},
		{"view opened again while idle: keep, sample", demand{viewed: true, open: true, idleFrom: now.Add(-time.Hour)}, step{sample: true}},
		{"action ended, view closed", demand{open: true}, step{markIdle: true, wakeAt: now.Add(idle)}},
	} {
		if got := decide(tc.d, now, idle); got != tc.want {
			t.Errorf("%s: decide(%+v) = %+v, want %+v", tc.name, tc.d, got, tc.want)
		}
	}
}

func TestChangesEnvironment(t *testing.T) {
	for _, k := range append(remote.AllActionKinds(), remote.ActBench) {
		want := k == remote.ActSetMode || k == remote.ActUndoMode || k == remote.ActDaemonReload
		if got := changesEnvironment(k); got != want {
			t.Errorf("%s: %v, want %v", k, got, want)
		}
	}
}

// TestOnDemandSetPaceRecordsView: the view's demand reaches the policy
// through SetPace without blocking, and nothing is open before it.
func TestOnDemandSetPaceRecordsView(t *testing.T) {
	o := NewOnDemand(Options{Host: remote.Host{Name: "gpu1"}}, 0)
	if o.idle != DefaultIdle {
		t.Errorf("idle %v, want %v", o.idle, DefaultIdle)
	}
	o.SetPace(remote.Pace{Viewed: true})
	o.SetPace(remote.Pace{Viewed: true, Steady: true})
	o.mu.Lock()
	d, read := o.d, o.readWant
	o.mu.Unlock()
	if !d.viewed || d.open || !read {
		t.Errorf("after the view opened: demand %+v, read asked %v; want viewed, not yet open, a read asked", d, read)
	}
	o.SetPace(remote.Pace{})
	o.mu.Lock()
	d = o.d
	o.mu.Unlock()
	if d.viewed {
		t.Errorf("after the view closed: %+v", d)
	}
}

// TestOnDemandOpensForTheViewAndClosesWhenIdle drives Run against a TCP
// listener standing in for sshd (it accepts and says nothing, so each
// dial is one connection held open until the client closes it): nothing
// dials until the view opens; the view opens one connection (its samplers
// and its reading of the unit share it); closing the view keeps it for
// the idle time, then closes it; Run's end leaves none.
func TestOnDemandOpensForTheViewAndClosesWhenIdle(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	const idle = 500 * time.Millisecond
	o := NewOnDemand(Options{Host: remote.Host{Name: "gpu1"}, NoGPU: true,
		SSH: sshx.Config{Alias: "gpu1", HostName: "127.0.0.1", Port: port, User: "root", StrictHostKeyChecking: "yes"}}, idle)
	// The view's reading of the unit holds the connection until it ends;
	// against this sshd that says nothing, it ends at its time limit.
	o.readTimeout = idle / 5
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx, func(event.Event) bool { return true }) }()

	select {
	case c := <-accepted:
		t.Fatalf("a connection before anything needed one: %v", c.RemoteAddr())
	case <-time.After(300 * time.Millisecond):
	}
	o.SetPace(remote.Pace{Viewed: true})
	var c net.Conn
	select {
	case c = <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("no connection after the view opened")
	}
	defer c.Close()
	closed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, c) // returns when the client closes
		close(closed)
	}()
	o.SetPace(remote.Pace{})
	viewClosed := time.Now()
	select {
	case <-closed:
		t.Fatal("the connection closed as the view did, before the idle time")
	case <-time.After(idle / 5):
	}
	select {
	case <-closed:
		if d := time.Since(viewClosed); d < idle {
			t.Errorf("closed %v after the view, before the idle time %v", d, idle)
		}
	case <-time.After(idle + 5*time.Second):
		t.Fatal("the connection stayed open long after the idle time")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	select {
	case c := <-accepted:
		if c != nil {
			t.Errorf("another connection: %v", c.RemoteAddr())
		}
	default:
	}
}
