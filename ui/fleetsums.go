package ui

import (
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/ui/notify"
)

// fleetSums is what the header and the table's layout count over every
// host of a snapshot: the hosts by phase, those whose host key went
// unchecked, those with a startup history or a decode rate, the widest
// name. A frame reads them instead of looking at every host; a Delta
// batch updates them for the hosts it took anew (at 10 000 hosts a
// batch takes tens, and counting the fleet was a third of a frame).
type fleetSums struct {
	counts         notify.Counts
	risky          map[int]bool // hosts whose host key went unchecked, by index
	history, stats int          // hosts with a startup history; serving with a rate
	busy           int          // hosts with an action under way
	hostW          int          // the HOST column's width
	// index is each host's index by name (the first of a name), built
	// when first asked: a Delta's hosts are the last snapshot's.
	index map[string]int
}

// find is the index of the host named name in hosts (the snapshot the
// sums count), -1 when none is.
func (s *fleetSums) find(hosts []remote.HostState, name string) int {
	if s.index == nil {
		s.index = make(map[string]int, len(hosts))
		for i := range hosts {
			if _, ok := s.index[hosts[i].Name]; !ok {
				s.index[hosts[i].Name] = i
			}
		}
	}
	if i, ok := s.index[name]; ok && i < len(hosts) && hosts[i].Name == name {
		return i
	}
	return -1
}

// sumHosts counts hosts from scratch.
func sumHosts(hosts []remote.HostState) fleetSums {
	s := fleetSums{counts: notify.Counts{Hosts: len(hosts)}, risky: map[int]bool{}, hostW: 4}
	for i := range hosts {
		s.add(i, &hosts[i], 1)
		s.hostW = max(s.hostW, min(24, len(hosts[i].Name)))
	}
	return s
}

// update moves the sums from old to hosts, whose hosts are old's but
// for those taken anew (a Delta batch's Taken); their names are the
// same, so the width is too.
func (s *fleetSums) update(old, hosts []remote.HostState, taken []int) {
	for _, i := range taken {
		s.add(i, &old[i], -1)
		s.add(i, &hosts[i], 1)
	}
}

// add counts host i (h) in the sums n times (1, or -1 to take it out).
func (s *fleetSums) add(i int, h *remote.HostState, n int) {
	c := notify.Count([]remote.HostState{*h})
	s.counts.Serving += n * c.Serving
	s.counts.Failed += n * c.Failed
	s.counts.Starting += n * c.Starting
	s.counts.Other += n * c.Other
	if h.Conn.HostKeyRisk != 0 {
		if n > 0 {
			s.risky[i] = true
		} else {
			delete(s.risky, i)
		}
	}
	if h.Expected.Known() {
		s.history += n
	}
	if _, ok := servingStats(h); ok {
		s.stats += n
	}
	if busy(h.Action) {
		s.busy += n
	}
}

// hostKeyBadge is the header's host key badge (keyBadge) for hosts, the
// snapshot the sums count.
func (s *fleetSums) hostKeyBadge(hosts []remote.HostState) string {
	first := ""
	if len(s.risky) == 1 {
		for i := range s.risky {
			first = hosts[i].Name
		}
	}
	return keyBadge(len(s.risky), first)
}
