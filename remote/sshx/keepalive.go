package sshx

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/crypto/ssh"
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
	if interval <= 0 {
		interval = DefaultAliveInterval
	}
	if countMax <= 0 {
		countMax = DefaultAliveCountMax
	}
	replies := make(chan error, 1)
	inflight := false
	misses := 0
	t := time.NewTicker(interval)
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
