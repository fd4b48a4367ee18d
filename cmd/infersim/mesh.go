package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// mesh is one node's links to the other nodes of its multi-node
// deployment: rank 0 listens on the --dist-init-addr port, the others
// dial it and say their rank; once all have come, rank 0 says go. The
// links stay open, and one that ends says a peer died: rank 0 hears of
// any node, the others of rank 0, which in turn dies of the loss.
type mesh struct {
	ln    net.Listener
	conns []net.Conn
	// lost is signalled once when a link ends (a peer died).
	lost chan struct{}
	wg   sync.WaitGroup
}

// errRendezvous says the nodes did not all come within the wait.
var errRendezvous = errors.New("the other nodes did not all come to the rendezvous")

// joinMesh meets the other nodes: rank of nodes, at addr (HOST:PORT;
// rank 0 listens on its port on every address), within wait.
func joinMesh(ctx context.Context, rank, nodes int, addr string, wait time.Duration) (*mesh, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	m := &mesh{lost: make(chan struct{}, 1)}
	var err error
	if rank == 0 {
		err = m.lead(ctx, nodes, addr)
	} else {
		err = m.follow(ctx, rank, addr)
	}
	if err != nil {
		m.close()
		return nil, err
	}
	for _, c := range m.conns {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			_, _ = io.Copy(io.Discard, c) // until the peer's end closes, or ours
			select {
			case m.lost <- struct{}{}:
			default:
			}
		}()
	}
	return m, nil
}

// lead is rank 0's side: accept nodes-1 peers, then say go to each.
func (m *mesh) lead(ctx context.Context, nodes int, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("dist-init-addr %q: %w", addr, err)
	}
	var lc net.ListenConfig
	if m.ln, err = lc.Listen(ctx, "tcp", ":"+port); err != nil {
		return fmt.Errorf("rendezvous: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { m.ln.Close() })
	defer stop()
	for len(m.conns) < nodes-1 {
		c, err := m.ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return errRendezvous
			}
			return fmt.Errorf("rendezvous: %w", err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		l, err := bufio.NewReader(c).ReadString('\n')
		_ = c.SetReadDeadline(time.Time{})
		if _, ok := strings.CutPrefix(l, "rank "); err != nil || !ok {
			c.Close() // not a node of ours
			continue
		}
		m.conns = append(m.conns, c)
	}
	for _, c := range m.conns {
		if _, err := io.WriteString(c, "go\n"); err != nil {
			return fmt.Errorf("rendezvous: %w", err)
		}
	}
	return nil
}

// follow is another rank's side: dial rank 0 until it answers, say the
// rank, wait for go.
func (m *mesh) follow(ctx context.Context, rank int, addr string) error {
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			stop := context.AfterFunc(ctx, func() { c.Close() })
			_, err = io.WriteString(c, "rank "+strconv.Itoa(rank)+"\n")
			var l string
			if err == nil {
				l, err = bufio.NewReader(c).ReadString('\n')
			}
			stop()
			if err == nil && l == "go\n" {
				m.conns = append(m.conns, c)
				return nil
			}
			c.Close()
		}
		select {
		case <-ctx.Done():
			return errRendezvous
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// close ends the links and waits for their readers.
func (m *mesh) close() {
	if m == nil {
		return
	}
	if m.ln != nil {
		m.ln.Close()
	}
	for _, c := range m.conns {
		c.Close()
	}
	m.wg.Wait()
}
