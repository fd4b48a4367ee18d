package sshx

import (
	"context"
	"fmt"
	"sync"
)

// DefaultJumpDials is how many dials a fleet runs through one jump host at
// once: below sshd's MaxStartups default (10:30:100), past which sshd
// starts dropping unauthenticated connections at random.
const DefaultJumpDials = 8

// JumpLimit bounds how many dials run through each jump host at once. A
// dial through a ProxyJump host holds one of that host's slots from the
// connection to the jump host until the handshake through it is over, so
// a fleet behind one bastion never has more than the limit of
// unauthenticated connections open to it (or through it) at a time. One
// JumpLimit is shared by every host of a fleet; hosts behind different
// jump hosts do not wait for each other.
type JumpLimit struct {
	max   int
	mu    sync.Mutex
	slots map[string]chan struct{} // per jump host address; one entry per jump host in the config
}

// NewJumpLimit returns a limit of n concurrent dials per jump host (n < 1
// means DefaultJumpDials).
func NewJumpLimit(n int) *JumpLimit {
	if n < 1 {
		n = DefaultJumpDials
	}
	return &JumpLimit{max: n, slots: map[string]chan struct{}{}}
}

// acquire waits for a slot of the jump host at addr, or until ctx ends;
// release gives it back. A nil limit does not wait.
func (l *JumpLimit) acquire(ctx context.Context, addr string) (release func(), err error) {
	if l == nil {
		return func() {}, nil
	}
	l.mu.Lock()
	sem, ok := l.slots[addr]
	if !ok {
		sem = make(chan struct{}, l.max)
		l.slots[addr] = sem
	}
	l.mu.Unlock()
	select {
	case sem <- struct{}{}:
		var once sync.Once
		return func() { once.Do(func() { <-sem }) }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for one of %d dial slots through jump host %s: %w", l.max, addr, context.Cause(ctx))
	}
}
