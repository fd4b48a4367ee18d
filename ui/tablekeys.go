package ui

import (
	"cmp"
	"slices"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/startup"
)

// tableSort is the order of the table's rows.
type tableSort int

// The orders s cycles through.
const (
	sortConfig tableSort = iota // as the config lists the hosts
	sortFailed                  // failed first, then unknown and stuck, starting, serving
	sortPhase                   // failed first, then the least advanced startup
	sortETA                     // failed first, then the soonest expected to serve
	sortCount
)

// String is the order's name in the status line and the header.
func (s tableSort) String() string {
	return [...]string{"config order", "failed first", "by phase", "by ETA"}[s]
}

// attention ranks a host by how much it needs a person: failed (a crash
// loop too, whatever run it is in) first, then unreachable or stuck, then
// starting, then serving.
func attention(h *remote.HostState) int {
	if h.Startup.Loop != nil {
		return startup.Failed.Attention()
	}
	return h.Startup.Phase.Attention()
}

// sortRows orders rows (indices into hosts) by s; ties keep the config's
// order, so the rows do not jump about between frames.
func sortRows(rows []int, hosts []remote.HostState, s tableSort) {
	if s == sortConfig {
		return
	}
	slices.SortStableFunc(rows, func(a, b int) int {
		ha, hb := &hosts[a], &hosts[b]
		if c := cmp.Compare(attention(ha), attention(hb)); c != 0 && (s == sortFailed || attention(ha) == 0 || attention(hb) == 0) {
			return c
		}
		switch s {
		case sortConfig, sortFailed, sortCount: // attention alone, then the config's order
		case sortPhase:
			return cmp.Compare(ha.Startup.Phase.Rank(), hb.Startup.Phase.Rank())
		case sortETA:
			switch ea, eb := ha.ETA, hb.ETA; {
			case ea.IsZero() != eb.IsZero():
				if ea.IsZero() {
					return 1 // no ETA after every ETA
				}
				return -1
			default:
				return ea.Compare(eb)
			}
		}
		return 0
	})
}

// pageRows is how many table lines the table shows at once.
func (t *tableModel) pageRows() int {
	return max(1, min(t.height, len(t.lines)+1)-1) // less the header row
}

// nextFailed moves the cursor to the next failed host shown after it (dir
// 1) or before it (dir -1), wrapping around; it reports whether there was
// one. In a grouped table the hosts of collapsed groups count too: the
// group of the host found opens.
func (t *tableModel) nextFailed(dir int) bool {
	if t.groupBy == 0 {
		n := len(t.lines)
		for i := 1; i <= n; i++ {
			r := ((t.cursor+dir*i)%n + n) % n
			if failing(&t.hosts[t.lines[r].host]) {
				t.cursor = r
				return true
			}
		}
		return false
	}
	// Every group's hosts in table order, as if all were expanded; a
	// group row stands just before its first host.
	type at struct{ group, host int }
	var seq []at
	from := -1
	for gi := range t.groups {
		if from < 0 && t.cursor < len(t.lines) && t.lines[t.cursor].group == gi && t.lines[t.cursor].host < 0 {
			from = len(seq) - 1 // the group row: before its first host
			if dir < 0 {
				from = len(seq)
			}
		}
		for _, i := range t.groups[gi].hosts {
			if from < 0 && t.cursor < len(t.lines) && t.lines[t.cursor] == (tableLine{group: gi, host: i}) {
				from = len(seq)
			}
			seq = append(seq, at{gi, i})
		}
	}
	n := len(seq)
	for i := 1; i <= n; i++ {
		r := ((from+dir*i)%n + n) % n
		if !failing(&t.hosts[seq[r].host]) {
			continue
		}
		key := t.bucketKey(seq[r].group)
		t.expanded[key] = true
		t.layout()
		t.cursor = max(0, t.lineOfHost(t.hosts[seq[r].host].Name, key))
		return true
	}
	return false
}

// selectAll marks every host shown, or, when all are marked already,
// unmarks them.
func (t *tableModel) selectAll() int {
	all := true
	for _, r := range t.rows {
		all = all && t.marked[t.hosts[r].Name]
	}
	for _, r := range t.rows {
		if all {
			delete(t.marked, t.hosts[r].Name)
		} else {
			t.marked[t.hosts[r].Name] = true
		}
	}
	if all {
		return 0
	}
	return len(t.rows)
}
