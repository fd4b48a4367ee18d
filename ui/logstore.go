package ui

import (
	"slices"
	"time"
)

// logStore is every host's log, kept under one memory budget for the
// whole fleet: lines per host are capped (Options.LogLines), and the
// bytes all hosts hold together (text and ring buffers) by the budget.
// Over budget, the oldest lines of idle hosts go first (hosts that are
// not starting or failing now: their logs explain nothing that is
// happening), then, if that is not enough, the oldest of the others. Each
// host that lost lines shows a marker line in their place.
type logStore struct {
	rings  map[string]*ring
	lines  int // lines per host
	budget int // bytes for all hosts
	held   int // bytes all rings hold
}

// trimBatch is how many lines one trim takes from a host before it looks
// again for the host with the oldest line.
const trimBatch = 32

func newLogStore(lines, budget int) logStore {
	return logStore{rings: map[string]*ring{}, lines: lines, budget: budget}
}

// ring returns host's ring, creating it empty.
func (s *logStore) ring(host string) *ring {
	r, ok := s.rings[host]
	if !ok {
		r = newRing(s.lines)
		s.rings[host] = r
	}
	return r
}

// push appends l to host's ring (see ring.push).
func (s *logStore) push(host string, l logLine) (r *ring, old logLine, evicted bool) {
	r = s.ring(host)
	before := r.bytes()
	old, evicted = r.push(l)
	s.held += r.bytes() - before
	return r, old, evicted
}

// trim brings the bytes held back under the budget, with some room to
// spare (a sixteenth) so that the next lines do not trim again at once.
// idle says which hosts go first. It returns the hosts that lost lines.
func (s *logStore) trim(idle func(host string) bool) []string {
	if s.held <= s.budget {
		return nil
	}
	target := s.budget - s.budget/16
	var trimmed []string
	for _, idleOnly := range []bool{true, false} {
		for s.held > target {
			host, r := s.oldestHost(idle, idleOnly)
			if r == nil {
				break
			}
			// Lines to drop: enough for the target, at most trimBatch.
			k, freed := 0, 0
			for i := 0; k < trimBatch && freed < s.held-target && i < r.n; i++ {
				l := r.buf[(r.start+i)%len(r.buf)]
				if i == 0 && r.marked {
					continue
				}
				k++
				freed += len(l.Text) + lineSlot
			}
			s.held -= r.dropOldest(k)
			if !slices.Contains(trimmed, host) {
				trimmed = append(trimmed, host)
			}
		}
	}
	return trimmed
}

// oldestHost is the host (idle, when idleOnly) whose oldest line is the
// oldest of all, by the hosts' own timestamps.
func (s *logStore) oldestHost(idle func(string) bool, idleOnly bool) (string, *ring) {
	var (
		best   string
		bestR  *ring
		bestAt time.Time
	)
	for host, r := range s.rings {
		l, ok := r.oldest()
		if !ok || idleOnly && !idle(host) {
			continue
		}
		if bestR == nil || l.Time.Before(bestAt) || l.Time.Equal(bestAt) && host < best {
			best, bestR, bestAt = host, r, l.Time
		}
	}
	return best, bestR
}
