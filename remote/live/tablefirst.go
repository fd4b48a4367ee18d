package live

import (
	"context"
	"sync"
	"time"
)

// TableFirst holds each host's probe and GPU sampler until every host of
// the fleet has had its unit state read (or its first dial failed), at
// most TableFirstWait after the host's own state. The table of every
// host's state is what a console shows first; the sampler starts
// nvidia-smi on its host (a shell and a process) and the probe opens a
// connection to the service, and started as each host came up they took
// the CPU of the hosts still being reached (at 256 test hosts the full
// table took 9.4-10.7 s with every stream starting at once, 5.0 s with
// none). The journal follow is not held: the phase engine reads a run's
// lines against its state as they come. A fleet of a few hosts waits for
// nothing: their states come within a moment of each other. A nil
// TableFirst holds no one.
type TableFirst struct {
	mu   sync.Mutex
	left int
	all  chan struct{} // closed when left reaches 0
}

// TableFirstWait is the longest a host that has its state waits for the
// rest of the fleet: a host slow to answer (or to time out) must not keep
// the others' logs back for long.
const TableFirstWait = 5 * time.Second

// NewTableFirst returns the gate of a fleet of n hosts, each to call
// arrived once.
func NewTableFirst(n int) *TableFirst {
	t := &TableFirst{left: n, all: make(chan struct{})}
	if n <= 0 {
		close(t.all)
	}
	return t
}

// arrived counts one host in. Each host calls it once (Host.arrive).
func (t *TableFirst) arrived() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.left == 0 {
		return
	}
	t.left--
	if t.left == 0 {
		close(t.all)
	}
}

// wait waits until every host has arrived or limit has passed, and
// reports false if ctx ended first.
func (t *TableFirst) wait(ctx context.Context, limit time.Duration) bool {
	if t == nil {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-t.all:
	case <-timer.C:
	case <-ctx.Done():
		return false
	}
	return true
}
