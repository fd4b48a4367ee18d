package ui

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/deployment"
	"github.com/bringup-dev/bringup/remote/sanitize"
	"github.com/bringup-dev/bringup/remote/startup"
)

// A grouping puts the fleet's hosts under summary rows, so that a fleet
// of a thousand hosts reads as a few dozen rows that expand: by the
// config's groups, or by the value of one host label (rack: r12). The
// groupings are built once, from Options; which hosts a group shows and
// what it counts are worked out again with the table's rows.
type grouping struct {
	by      string   // what the header and status say: "group", "rack"
	buckets []bucket // in the order they tie in: by name, the catch-all last
	// of is, per host name, the buckets holding it. Config groups may
	// overlap (a host in rack-a and in canary shows under both); a
	// label gives each host one bucket.
	of map[string][]int
	// rest is the bucket of the hosts in none, or -1 when there is none
	// yet; hosts the config does not know (a store may discover some)
	// land in it.
	rest int
	// deployments, when not nil, are the buckets' deployments (the
	// grouping by deployment): their rows show the deployment's verdict.
	// inline puts the hosts of the catch-all as plain rows after the
	// groups, not under a row of their own.
	deployments []deployment.Deployment
	inline      bool
}

// bucket is one group of a grouping.
type bucket struct {
	key  string // unique within its grouping (the catch-all's is "")
	name string // as the summary row shows it
}

// groupRow is a group as the table shows it now: its hosts that pass the
// filter, in the table's sort order, and their counts by phase.
type groupRow struct {
	bucket int
	hosts  []int // indices of tableModel.hosts
	counts [phaseSlots]int
	total  int // hosts of the bucket, shown or not
	worst  int // the attention rank of the host shown that most needs a person (0: one failed)
}

// tableLine is one line of the table under its header: a host row, or a
// group's summary row (host -1). group is the index of the groupRow the
// line is in, -1 when the table is not grouped.
type tableLine struct {
	group, host int
}

// phaseSlotOrder is the phases a summary row counts, in the order it
// names them: failures first (what a person looks for in a thousand hosts),
// then the startup path from its start, serving last, and hosts whose
// phase is not known yet.
var phaseSlotOrder = [...]startup.Phase{startup.Failed, startup.Unknown, startup.Stuck, startup.Restarting,
	startup.Stopped, startup.Starting, startup.Init, startup.Weights, startup.KVCache, startup.GraphCapture,
	startup.HTTP, startup.Warmup, startup.Serving, ""}

const phaseSlots = len(phaseSlotOrder)

// phaseSlot is where p is counted.
func phaseSlot(p startup.Phase) int {
	for i, q := range phaseSlotOrder {
		if q == p {
			return i
		}
	}
	return phaseSlots - 1 // a phase this table does not know counts as unknown yet
}

// newGroupings builds the ways to group hosts the config allows: by its
// groups (when it has some), then by each label key some host carries,
// in key order. The config checks its names; they pass the sanitiser
// all the same, since labels may one day come with hosts a store
// discovers. Each has a catch-all last, for the hosts in none of its
// groups.
func newGroupings(groups map[string][]string, labels map[string]map[string]string) []grouping {
	var out []grouping
	if len(groups) > 0 {
		names := make([]string, 0, len(groups))
		for g := range groups {
			names = append(names, g)
		}
		slices.SortFunc(names, naturalCompare)
		g := grouping{by: "group", of: map[string][]int{}, rest: -1}
		for _, n := range names {
			for _, h := range groups[n] {
				if !slices.Contains(g.of[h], len(g.buckets)) {
					g.of[h] = append(g.of[h], len(g.buckets))
				}
			}
			g.buckets = append(g.buckets, bucket{key: "=" + n, name: sanitize.String(n)})
		}
		out = append(out, g.withRest("(no group)"))
	}
	keys := map[string]map[string]bool{} // label key → values
	for _, ls := range labels {
		for k, v := range ls {
			if keys[k] == nil {
				keys[k] = map[string]bool{}
			}
			keys[k][v] = true
		}
	}
	keyNames := make([]string, 0, len(keys))
	for k := range keys {
		keyNames = append(keyNames, k)
	}
	slices.Sort(keyNames)
	for _, k := range keyNames {
		values := make([]string, 0, len(keys[k]))
		for v := range keys[k] {
			values = append(values, v)
		}
		slices.SortFunc(values, naturalCompare)
		g := grouping{by: sanitize.String(k), of: map[string][]int{}, rest: -1}
		index := map[string]int{}
		for i, v := range values {
			index[v] = i
			g.buckets = append(g.buckets, bucket{key: "=" + v, name: sanitize.String(v)})
		}
		for h, ls := range labels {
			if v, ok := ls[k]; ok {
				g.of[h] = []int{index[v]}
			}
		}
		out = append(out, g.withRest("(no "+sanitize.String(k)+")"))
	}
	return out
}

// withRest adds the catch-all bucket for hosts in no other.
func (g grouping) withRest(name string) grouping {
	g.rest = len(g.buckets)
	g.buckets = append(g.buckets, bucket{key: "", name: name})
	return g
}

// naturalCompare orders names with their numbers as numbers: rack-2
// before rack-10, as a person counts racks.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := leadingDigits(a), leadingDigits(b)
		if da > 0 && db > 0 {
			na, _ := strconv.ParseUint(strings.TrimLeft(a[:da], "0")+"0", 10, 64)
			nb, _ := strconv.ParseUint(strings.TrimLeft(b[:db], "0")+"0", 10, 64)
			if c := cmp.Compare(na, nb); c != 0 {
				return c
			}
			if c := cmp.Compare(da, db); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func leadingDigits(s string) int {
	n := 0
	for n < len(s) && n < 18 && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// groupLines lays out the table grouped by g: rows are the hosts the
// filter shows, in the sort order; each bucket with a host among them is
// one summary row, failures first (the group holding the host that most
// needs a person, then the most failed hosts, then the bucket order),
// followed by its hosts in that order when open(bucket key) says it is
// expanded. Buckets the filter empties are left out.
func groupLines(g *grouping, hosts []remote.HostState, rows []int, open func(key string) bool) ([]groupRow, []tableLine) {
	all := make([]groupRow, len(g.buckets))
	for i := range all {
		all[i].bucket, all[i].worst = i, 3
	}
	rest := []int{g.rest}
	of := make([][]int, len(hosts)) // each host's buckets: one lookup a host
	for i := range hosts {
		bs, ok := g.of[hosts[i].Name]
		if !ok {
			bs = rest
		}
		of[i] = bs
		for _, b := range bs {
			all[b].total++
		}
	}
	for _, i := range rows {
		slot, att := phaseSlot(hosts[i].Startup.Phase), attention(&hosts[i])
		for _, b := range of[i] {
			all[b].hosts = append(all[b].hosts, i)
			all[b].counts[slot]++
			all[b].worst = min(all[b].worst, att)
		}
	}
	groups := make([]groupRow, 0, len(all))
	var loose []int
	for _, gr := range all {
		switch {
		case g.inline && gr.bucket == g.rest:
			loose = gr.hosts
		case len(gr.hosts) > 0:
			groups = append(groups, gr)
		}
	}
	slices.SortStableFunc(groups, func(a, b groupRow) int {
		if c := cmp.Compare(a.worst, b.worst); c != 0 {
			return c
		}
		return cmp.Compare(b.counts[0], a.counts[0]) // more failed first
	})
	lines := make([]tableLine, 0, len(groups))
	for gi := range groups {
		lines = append(lines, tableLine{group: gi, host: -1})
		if open(g.buckets[groups[gi].bucket].key) {
			for _, i := range groups[gi].hosts {
				lines = append(lines, tableLine{group: gi, host: i})
			}
		}
	}
	for _, i := range loose {
		lines = append(lines, tableLine{group: -1, host: i})
	}
	return groups, lines
}

// neediest is the one of hosts (indices, not empty) that most needs a
// person: the first failed, else the first unreachable or stuck, and so on.
func neediest(all []remote.HostState, hosts []int) int {
	best := hosts[0]
	for _, i := range hosts[1:] {
		if attention(&all[i]) < attention(&all[best]) {
			best = i
		}
	}
	return best
}

// flatLines is the table not grouped: one line per row.
func flatLines(rows []int, lines []tableLine) []tableLine {
	lines = lines[:0]
	for _, i := range rows {
		lines = append(lines, tableLine{group: -1, host: i})
	}
	return lines
}

// countsText is a summary row's counts, failures first: "1 failed · 2
// graph-capture · 28 serving"; each part with the ink of its phase.
func (t *fleetTable) countsText(gr *groupRow) string {
	// Appended by hand: 32 summary rows a frame at 1 000 hosts made
	// fmt.Sprintf the row's largest cost.
	buf := make([]byte, 0, 96)
	for slot, n := range gr.counts {
		if n == 0 {
			continue
		}
		if len(buf) > 0 {
			buf = append(buf, " · "...)
		}
		p := phaseSlotOrder[slot]
		name := string(p)
		if p == "" {
			name = "no phase yet"
		}
		k := t.styles.table.phaseInk(t.styles, p)
		buf = append(buf, k.pre...)
		buf = strconv.AppendInt(buf, int64(n), 10)
		buf = append(buf, ' ')
		buf = append(buf, name...)
		buf = append(buf, k.post...)
	}
	return string(buf)
}

// groupRowText draws a group's summary row: "▸ rack-a  32 hosts  1
// failed · 28 serving" (▾ when expanded; "3/32 hosts" when the filter
// hides some of them).
func (t *fleetTable) groupRowText(gr *groupRow, onCursor bool, w int) string {
	name := t.grouping.buckets[gr.bucket].name
	arrow := "▸"
	if t.expanded(t.grouping.buckets[gr.bucket].key) {
		arrow = "▾"
	}
	cur, mark := " ", " "
	if onCursor {
		cur = "›"
	}
	n := 0
	for _, i := range gr.hosts {
		if t.marked[t.hosts[i].Name] {
			n++
		}
	}
	switch {
	case n > 0 && n == len(gr.hosts):
		mark = t.styles.table.mark.paint("●")
	case n > 0:
		mark = t.styles.table.mark.paint("◐")
	}
	dep, isDep := t.grouping.deploymentOf(gr.bucket)
	count := strconv.Itoa(len(gr.hosts)) + " hosts"
	switch {
	case isDep:
		count = strconv.Itoa(len(dep.Nodes)) + " nodes"
	case len(gr.hosts) < gr.total:
		count = strconv.Itoa(len(gr.hosts)) + "/" + strconv.Itoa(gr.total) + " hosts"
	case len(gr.hosts) == 1:
		count = "1 host"
	}
	head := cur + mark + " " + arrow + " " + fit(name, t.groupNameW) + "  " + pad(count, 9) + "  "
	text := ""
	if isDep {
		text = t.deploymentText(dep)
	} else {
		text = t.countsText(gr)
	}
	line := fit(head+text, w)
	if onCursor {
		return t.styles.Selected.Render(line)
	}
	return line
}

// groupNameWidth is the width the summary rows give group names: the
// longest shown, capped so the counts keep their room.
func groupNameWidth(g *grouping, groups []groupRow) int {
	w := 4
	for _, gr := range groups {
		w = max(w, min(24, width(g.buckets[gr.bucket].name)))
	}
	return w
}

// grouping is the grouping in force, nil when the table is not grouped.
func (t *tableModel) grouping() *grouping {
	if t.groupBy <= 0 || t.groupBy > len(t.groupings) {
		return nil
	}
	return &t.groupings[t.groupBy-1]
}

// layout rebuilds the table's lines from its rows.
func (t *tableModel) layout() {
	g := t.grouping()
	if g == nil {
		t.groups = t.groups[:0]
		t.lines = flatLines(t.rows, t.lines)
		return
	}
	t.groups, t.lines = groupLines(g, t.hosts, t.rows, t.isOpen(g))
}

// isOpen says, for g's buckets by key, whether the group is expanded.
func (t *tableModel) isOpen(g *grouping) func(key string) bool {
	return func(key string) bool { return t.expanded[g.by+"\x00"+key] }
}

// bucketKey is the key of group row gi in tableModel.expanded: it says which
// grouping, so each grouping keeps its own groups open.
func (t *tableModel) bucketKey(gi int) string {
	g := t.grouping()
	if g == nil || gi < 0 || gi >= len(t.groups) {
		return ""
	}
	return g.by + "\x00" + g.buckets[t.groups[gi].bucket].key // as isOpen reads it
}

// groupKey is the key of the group line i is in; "" when there is none.
func (t *tableModel) groupKey(i int) string {
	if i < 0 || i >= len(t.lines) {
		return ""
	}
	return t.bucketKey(t.lines[i].group)
}

// onGroupRow reports whether the table's cursor is on a group's summary
// row.
func (t *tableModel) onGroupRow() bool {
	return t.cursor < len(t.lines) && t.lines[t.cursor].host < 0
}

// lineOfHost is the line showing host name, in the group keyed group
// when the host shows in several; -1 when no line shows it.
func (t *tableModel) lineOfHost(name, group string) int {
	found := -1
	for r, l := range t.lines {
		if l.host < 0 || t.hosts[l.host].Name != name {
			continue
		}
		if group == "" || t.bucketKey(l.group) == group {
			return r
		}
		if found < 0 {
			found = r
		}
	}
	return found
}

// lineOfGroup is the summary row of the group keyed key, or -1.
func (t *tableModel) lineOfGroup(key string) int {
	for r, l := range t.lines {
		if l.host < 0 && t.bucketKey(l.group) == key {
			return r
		}
	}
	return -1
}

// groupHosts is the names of group row gi's hosts the table shows, in
// table order.
func (t *tableModel) groupHosts(gi int) []string {
	out := make([]string, len(t.groups[gi].hosts))
	for j, i := range t.groups[gi].hosts {
		out[j] = t.hosts[i].Name
	}
	return out
}

// setExpanded opens or closes the group the cursor is in. Closing from
// one of its hosts puts the cursor on the group's row, so it never rests
// on a line that went away.
func (t *tableModel) setExpanded(open bool) {
	key := t.groupKey(t.cursor)
	if key == "" {
		return
	}
	if open {
		t.expanded[key] = true
	} else {
		delete(t.expanded, key)
	}
	t.layout()
	if i := t.lineOfGroup(key); i >= 0 && !open {
		t.cursor = i
	}
}

// markGroup answers space on a group row: marks every host it shows, or
// clears them when all are marked already.
func (t *tableModel) markGroup() {
	names := t.groupHosts(t.lines[t.cursor].group)
	all := true
	for _, n := range names {
		all = all && t.marked[n]
	}
	for _, n := range names {
		if all {
			delete(t.marked, n)
		} else {
			t.marked[n] = true
		}
	}
}

// cycleGrouping answers t: the next grouping the config allows (its
// groups, then each label key), then none again. The cursor stays on its
// host when a line shows it, else on its host's group.
func (t *tableModel) cycleGrouping() reply {
	if len(t.groupings) == 0 {
		return reply{status: "no groups to group by: add groups: or host labels: to the config"}
	}
	return t.setGrouping((t.groupBy+1)%(len(t.groupings)+1), t.anchor())
}

// groupTableBy answers :group BY: the grouping named by (its by), or
// none for "off". The palette has checked the name.
func (t *tableModel) groupTableBy(by string) reply {
	k := 0
	for i, g := range t.groupings {
		if g.by == by {
			k = i + 1
		}
	}
	return t.setGrouping(k, t.anchor())
}

// anchor is the host the cursor should stay with when the grouping
// changes: its host, or on a group's row the group's first host.
func (t *tableModel) anchor() string {
	if t.onGroupRow() {
		if hs := t.groups[t.lines[t.cursor].group].hosts; len(hs) > 0 {
			return t.hosts[hs[0]].Name
		}
	}
	return t.cursorHost()
}

// setGrouping puts grouping k in force (0: none), keeping the cursor on
// host when a line shows it, else on its group's row.
func (t *tableModel) setGrouping(k int, host string) reply {
	t.groupBy = k
	t.refilter(host)
	g := t.grouping()
	if g == nil {
		return reply{status: "ungrouped"}
	}
	if t.cursorHost() != host {
		for r, l := range t.lines {
			if l.host < 0 && slices.ContainsFunc(t.groups[l.group].hosts, func(i int) bool { return t.hosts[i].Name == host }) {
				t.cursor = r
				break
			}
		}
	}
	return reply{status: fmt.Sprintf("grouped by %s: %d groups (enter/→ expands, ← collapses, t next)", g.by, len(t.groups))}
}

// groupBadge is the header's note of the grouping: "by rack".
func (t *tableModel) groupBadge() string {
	if g := t.grouping(); g != nil {
		return "by " + g.by
	}
	return ""
}
