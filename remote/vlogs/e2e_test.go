package vlogs

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// cutter is a TCP proxy to the store whose connections can be cut, as a
// network drop between the console and the store would.
type cutter struct {
	ln    net.Listener
	to    string
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newCutter(t *testing.T, to string) *cutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln, to: to}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", to)
			if err != nil {
				in.Close()
				continue
			}
			c.mu.Lock()
			c.conns = append(c.conns, in, out)
			c.mu.Unlock()
			c.wg.Add(2)
			go func() { defer c.wg.Done(); _, _ = io.Copy(out, in); out.Close() }()
			go func() { defer c.wg.Done(); _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		c.cut()
		c.wg.Wait()
	})
	return c
}

// active reports whether a connection goes through the proxy.
func (c *cutter) active() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.conns) > 0
}

// cut closes every connection through the proxy.
func (c *cutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cn := range c.conns {
		cn.Close()
	}
	c.conns = nil
}

// TestE2EResumeAfterCuts follows two test hosts' flood.service through
// the testbed's VictoriaLogs, the stream cut three times while the hosts
// print numbered lines: every line arrives once and in order, with a gap
// marker per cut; PID 1's start and end of the unit arrive as unit
// states read from the journal.
func TestE2EResumeAfterCuts(t *testing.T) {
	tb := testbed.StartWith(t, testbed.Options{Hosts: 2, LogStore: true})
	u, err := url.Parse(tb.LogStoreURL())
	if err != nil {
		t.Fatal(err)
	}
	px := newCutter(t, u.Host)
	src, err := New(Options{URL: "http://" + px.ln.Addr().String(), Unit: "flood.service"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	var mu sync.Mutex
	got := map[string][]string{}
	gaps := map[string]int{}
	var units []string
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, h := range tb.Hosts() {
		d := src.Host(h.Name, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = d.Run(rctx, func(ev event.Event) bool {
				mu.Lock()
				defer mu.Unlock()
				switch ev.Kind {
				case event.KindJournal:
					if strings.HasPrefix(ev.Journal.Message, "line ") {
						got[ev.Host] = append(got[ev.Host], ev.Journal.Message)
					}
				case event.KindGap:
					gaps[ev.Host]++
				case event.KindUnit:
					units = append(units, ev.Host+" "+ev.Unit.State()+" "+ev.Unit.Path)
				default:
				}
				return true
			})
		}()
	}
	for _, h := range tb.Hosts() {
		cmd := fmt.Sprintf("systemd-run --unit=flood.service sh -c 'i=1; while [ $i -le %d ]; do echo line $i; i=$((i+1)); [ $((i %% 50)) = 0 ] && sleep 0.05; done; true'", n)
		if out, err := tb.Run(ctx, h.Name, cmd); err != nil {
			t.Fatalf("%s: %v: %s", h.Name, err, out)
		}
	}
	// Three cuts, each once the stream is back from the one before.
	for i := 1; i <= 3; i++ {
		time.Sleep(time.Second)
		px.cut()
		for ctx.Err() == nil {
			mu.Lock()
			back := gaps["gpu1"] >= i && gaps["gpu2"] >= i
			mu.Unlock()
			if back && px.active() {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, h := range tb.Hosts() {
			if len(got[h.Name]) < n {
				return false
			}
		}
		return true
	}
	for !done() && ctx.Err() == nil {
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // a duplicate would arrive in this time
	stop()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, h := range tb.Hosts() {
		lines := got[h.Name]
		if len(lines) != n {
			t.Errorf("%s: %d lines, want %d", h.Name, len(lines), n)
		}
		count := map[string]int{}
		late, highest := 0, 0
		for _, l := range lines {
			count[l]++
			var k int
			if _, err := fmt.Sscanf(l, "line %d", &k); err == nil {
				if k < highest {
					late++ // after a later line
				}
				highest = max(highest, k)
			}
		}
		for i := 1; i <= n; i++ {
			if c := count[fmt.Sprintf("line %d", i)]; c != 1 {
				t.Errorf("%s: line %d delivered %d times, want once", h.Name, i, c)
			}
		}
		// Lines of one journald timestamp come from the store in any
		// order; the source puts them back in journal order.
		if late > 0 {
			t.Errorf("%s: %d of %d lines came after a later one", h.Name, late, n)
		}
		if gaps[h.Name] < 3 {
			t.Errorf("%s: %d gap markers, want one per cut (3)", h.Name, gaps[h.Name])
		}
	}
	joined := strings.Join(units, "\n")
	for _, h := range tb.Hosts() {
		for _, want := range []string{h.Name + " active/running journal", h.Name + " inactive/dead journal"} {
			if !strings.Contains(joined, want) {
				t.Errorf("unit states lack %q:\n%s", want, joined)
			}
		}
	}
	t.Logf("%d lines a host over 3 cuts; gaps %v", n, gaps)
}
