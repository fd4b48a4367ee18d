package live

import (
	"context"
	"sync"
	"time"
)

// TableFirst holds each host's journal follow, probe, clock and GPU
// sampler until every host of the fleet has had its unit state read (or
// its first dial failed), at most TableFirstWait after the host's own
// state. The table of every host's state is what a console shows first;
// a follow starts a shell and two journalctl on its host, the sampler
// nvidia-smi, the probe a connection to the service, and started as each
// host came up they took the CPU of the hosts still being reached. At 256
// test hosts on two cores the full table took 8.4-12.2 s with the follow
// started at once and 6.4-6.9 s with it held (README, Benchmarks). A run's
// lines then come after its state, which the phase engine reads as it
// reads a console opened on a host that already failed; the settle waits
// for the host's first line (startup.FirstLineExtra). A fleet of a few
// hosts waits for nothing: their states come within a moment of each
// other. A nil TableFirst holds no one.
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
