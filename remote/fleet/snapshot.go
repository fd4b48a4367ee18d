package fleet

import (
	"slices"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
)

// snapshots is the fold's last snapshot of every host and the hosts that
// must be taken anew for the next: those with an event or tick change
// since (mark), and those whose snapshot the clock alone changes (timed).
// A batch's snapshot then costs one copy of the last one plus the stale
// hosts, instead of a look at every host (measured: the fold's per-batch
// snapshot was a fifth of a quiet 256-host console's CPU).
type snapshots struct {
	last  []remote.HostState
	stale []int // indices into hosts, each listed once (hostFold.listed)
	taken []int // the hosts the last take took anew
	delta bool  // the last take's hosts were those of the one before
	// deltas: a batch hands out only the hosts taken anew
	// (Options.Deltas); last is then the fold's own, written in place,
	// and a whole batch gets a copy of it.
	deltas bool
}

// mark lists host i (h) to be taken anew at the next snapshot.
func (s *snapshots) mark(i int, h *hostFold) {
	h.snapOK = false
	if !h.listed {
		h.listed = true
		s.stale = append(s.stale, i)
	}
}

// take returns the snapshot of every host at host time now (wall is the
// local clock that Provisional failures are timed on) and the hosts it
// took anew. The slice is new (the consumer keeps the last one; with
// deltas, the last one is the fold's own and is written in place); a
// host not taken anew is its last snapshot, its slices and maps shared.
func (s *snapshots) take(hosts []*hostFold, now, wall time.Time) ([]remote.HostState, []int) {
	var out []remote.HostState
	switch s.delta = len(s.last) == len(hosts); {
	case s.delta && s.deltas:
		out = s.last // never handed out (hand)
	case s.delta:
		out = slices.Clone(s.last)
	default:
		out = make([]remote.HostState, len(hosts))
	}
	s.taken = append(s.taken[:0], s.stale...)
	keep := s.stale[:0]
	for _, i := range s.taken {
		h := hosts[i]
		out[i] = h.take(now, wall)
		if h.listed = h.timed; h.timed {
			keep = append(keep, i)
		}
	}
	s.stale, s.last = keep, out
	return out, s.taken
}

// stamp sets b's Delta and Taken for the snapshot just taken (delta: its
// hosts are those of the last one; taken: the hosts it took anew). When
// b is merged with a batch never handed out (merged), the hosts that
// batch took anew count as well: the consumer's last batch is older.
func stamp(b *remote.Batch, merged, delta bool, taken []int) {
	if !merged {
		b.Delta, b.Taken = delta, nil
	}
	b.Delta = b.Delta && delta
	if !b.Delta {
		b.Taken = nil
		return
	}
	b.Taken = append(b.Taken, taken...)
	slices.Sort(b.Taken)
	b.Taken = slices.Compact(b.Taken)
}

// hand makes b, stamped, what a fold with Options.Deltas hands out: a
// Delta carries the states of the hosts taken anew, any other batch a
// copy of every host's (the fold goes on writing its own in place).
func (s *snapshots) hand(b *remote.Batch) {
	if !s.deltas {
		return
	}
	if !b.Delta {
		b.Hosts, b.States = slices.Clone(s.last), nil
		return
	}
	b.Hosts = nil
	b.States = make([]remote.HostState, len(b.Taken))
	for k, i := range b.Taken {
		b.States[k] = s.last[i]
	}
}

// provisional says whether a host's failure was provisional at the last
// take (such a host is timed, so it is on the stale list).
func (s *snapshots) provisional(hosts []*hostFold) bool {
	return slices.ContainsFunc(s.stale, func(i int) bool { return hosts[i].settle.Pending() })
}

// settled says whether a provisional failure's wait is over at wall.
func (s *snapshots) settled(hosts []*hostFold, wall time.Time) bool {
	return slices.ContainsFunc(s.stale, func(i int) bool { return hosts[i].settle.Due(wall) })
}

// wake is when the first provisional failure's wait is over, as its
// settler says now; zero when none is provisional.
func (s *snapshots) wake(hosts []*hostFold) time.Time {
	var first time.Time
	for _, i := range s.stale {
		if st := &hosts[i].settle; st.Pending() && (first.IsZero() || st.Wake().Before(first)) {
			first = st.Wake()
		}
	}
	return first
}

// take is h's snapshot at host time now, taken anew; wall is the local
// clock that Provisional failures are timed on. The GPU history is shared
// (apply never writes over a sample a snapshot holds: gpuAppend).
func (h *hostFold) take(now, wall time.Time) remote.HostState {
	s := h.state
	s.Startup = h.tracker.State()
	s.Provisional, _ = h.settle.Provisional(s.Startup, h.state.UnitState.InvocationID, wall)
	s.GPU = h.state.GPU[:len(h.state.GPU):len(h.state.GPU)]
	s.Modes = append([]kernels.ActiveMode(nil), h.state.Modes...)
	if h.state.Action != nil {
		a := *h.state.Action
		s.Action = &a
	}
	timed := h.derive(&s, now)
	h.snap, h.snapOK, h.timed = s, true, timed || s.Provisional
	return s
}

// gpuAppend appends sample to the GPU history gs, keeping its last keep
// samples, without ever writing over a sample already in gs: snapshots
// share the history's backing array. Samples go into spare room at the
// end; when there is none the last keep-1 move to a new array with room
// for as many again, so a sample costs amortised O(1) instead of a copy
// of the whole history per snapshot.
func gpuAppend(gs []event.GPU, sample event.GPU, keep int) []event.GPU {
	if len(gs) == cap(gs) && len(gs) >= keep {
		n := make([]event.GPU, keep-1, 2*keep)
		copy(n, gs[len(gs)-(keep-1):])
		gs = n
	}
	gs = append(gs, sample)
	if n := len(gs) - keep; n > 0 {
		gs = gs[n:]
	}
	return gs
}
