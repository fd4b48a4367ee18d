package sshx

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/bringup-dev/bringup/remote/timegrid"
)

// Keepalive defaults: bringup always sends keepalives (ssh's default is off)
// so a dead peer is noticed in about a minute, not after TCP's ~15 minutes.
const (
	DefaultAliveInterval = 15 * time.Second
	DefaultAliveCountMax = 3
)

// ErrPeerDead says keepalives went unanswered and the connection was closed.
var ErrPeerDead = errors.New("peer stopped answering keepalives")

// Keepalive sends keepalive@openssh.com requests every interval, as ssh's
// ServerAliveInterval does; any reply (even a failure reply) counts as alive.
// When more than countMax intervals pass without a reply it closes c and
// returns an error wrapping ErrPeerDead. It returns when ctx ends or c closes.
// The one request goroutine it may leave behind ends when c is closed.
func Keepalive(ctx context.Context, c *ssh.Client, interval time.Duration, countMax int) error {
	return KeepaliveIdle(ctx, c, interval, countMax, nil)
}

// KeepaliveIdle is Keepalive that, like ssh's ServerAliveInterval, sends
// a request only once nothing has been received for interval: lastRead
// says when the transport last delivered bytes (nil: never known, every
// interval sends). Bytes received prove the peer alive as a reply does.
// On a fleet whose streams bring a sample every few seconds this saves a
// round trip a host every interval (measured: 7 % of a quiet 256-host
// console's CPU).
func KeepaliveIdle(ctx context.Context, c *ssh.Client, interval time.Duration, countMax int, lastRead func() time.Time) error {
	if interval <= 0 {
		interval = DefaultAliveInterval
	}
	if countMax <= 0 {
		countMax = DefaultAliveCountMax
	}
	if lastRead == nil {
		lastRead = func() time.Time { return time.Time{} }
	}
	replies := make(chan error, 1)
	inflight := false
	misses := 0
	// Checks fall on timegrid's instants: one wake-up for every host's
	// check due in the same second, a keepalive at most a second late.
	grain := timegrid.For(interval)
	t := time.NewTimer(timegrid.Align(time.Now(), interval, grain))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-replies:
			inflight = false
			if err != nil {
				return fmt.Errorf("keepalive: %w", err)
			}
			misses = 0
		case <-t.C:
			send, wait := keepaliveDue(time.Since(lastRead()), interval)
			t.Reset(timegrid.Align(time.Now(), wait, grain))
			if !send {
				misses = 0 // bytes came: the peer is alive
				continue
			}
			if misses >= countMax {
				c.Close()
				return fmt.Errorf("%w: %d keepalives over %s unanswered", ErrPeerDead, misses, time.Duration(misses)*interval)
			}
			misses++
			if !inflight {
				inflight = true
				go func() {
					_, _, err := c.SendRequest("keepalive@openssh.com", true, nil)
					replies <- err
				}()
			}
		}
	}
}

// keepaliveDue decides, idle after the transport last delivered bytes,
// whether to send a keepalive now and how long to wait before deciding
// again: send after a whole quiet interval, else look again when it
// would be one.
func keepaliveDue(idle, interval time.Duration) (send bool, wait time.Duration) {
	if idle >= interval {
		return true, interval
	}
	return false, interval - idle
}

// Activity records when a connection last received bytes. The zero
// value is ready: it has received nothing yet.
type Activity struct{ last atomic.Int64 } // Unix nanoseconds

// Last is when bytes last arrived (the zero time before any did).
func (a *Activity) Last() time.Time {
	if n := a.last.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// activityConn stamps a on every read that delivers bytes.
type activityConn struct {
	net.Conn
	a *Activity
}

func (c *activityConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.a.last.Store(time.Now().UnixNano())
	}
	return n, err
}
