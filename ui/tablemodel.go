package ui

import (
	"fmt"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/deployment"
)

// tableModel is the fleet table's state: the hosts of the latest
// snapshot, which of them the filter shows in which order, how they are
// grouped, the cursor and the marks. Its Update answers the table's own
// keys and UpdateFilter its filter prompt; View draws it. The root model
// hands it each snapshot (setHosts) and answers the keys it ignores.
type tableModel struct {
	keys    KeyMap
	styles  Styles
	catalog kernels.Catalog // the kernels the filter's mode: words name
	height  int             // rows of the table's body, for paging

	hosts []remote.HostState // every host, as the latest snapshot has them
	sums  fleetSums          // what the header and layout count over hosts

	// The filter (/): the filter in force, its prompt, why the text typed
	// does not parse yet, and the hosts it shows (indices of hosts, in
	// the sort order).
	filter      hostFilter
	filterInput textinput.Model
	filterErr   string
	filterNote  string // a word of the text typed is matched as text, not as a regexp
	rows        []int
	sort        tableSort // the rows' order (s cycles it)

	// The lines (host rows, and group summary rows when grouped), the
	// line the cursor is on, the groupings the config allows, which is
	// in force (0: none, k: groupings[k-1]), the groups it shows, and
	// which groups are expanded (by grouping and bucket key).
	lines     []tableLine
	cursor    int
	groupings []grouping
	groupBy   int
	groups    []groupRow
	expanded  map[string]bool

	marked map[string]bool // the hosts marked (space), shown or not

	// The deployments: the config's, and the command lines each host's
	// unit ran (execs, to see when they change) with what they make.
	declared    []deployment.Declared
	execs       map[string]string
	deployments []deployment.Deployment
	// autoGrouped: the table was put in the deployment grouping once,
	// when the first deployment was found; a person's t after that wins.
	autoGrouped bool
}

func newTableModel(keys KeyMap, catalog kernels.Catalog, groupings []grouping, height int) tableModel {
	in := textinput.New()
	in.Prompt = "/"
	in.Placeholder = "filter hosts: name or regexp, phase:failed mode:validate state:failed"
	in.CharLimit = 200
	return tableModel{
		keys:        keys,
		catalog:     catalog,
		height:      height,
		filterInput: in,
		groupings:   groupings,
		expanded:    map[string]bool{},
		marked:      map[string]bool{},
	}
}

// setHosts takes a new snapshot. The cursor follows its host, not its
// row: the first of keep still shown.
func (t *tableModel) setHosts(hosts []remote.HostState, keep ...string) {
	t.setSnapshot(remote.Batch{Hosts: hosts}, keep...)
}

// setSnapshot takes b's snapshot as setHosts does; when b is a Delta
// of the snapshot the table holds, what the table worked out from that
// one is updated for the hosts b took anew, not worked out again.
func (t *tableModel) setSnapshot(b remote.Batch, keep ...string) {
	old := t.hosts
	delta := b.Delta && len(old) == len(b.Hosts) && len(old) > 0
	t.hosts = b.Hosts
	if delta {
		t.sums.update(old, b.Hosts, b.Taken)
	} else {
		t.sums = sumHosts(b.Hosts)
		b.Taken = nil
	}
	t.findDeployments(delta, b.Taken)
	t.refilter(keep...)
}

// placeStates puts states, those of the hosts taken anew (indices into
// hosts), in place in hosts, the table's snapshot or a copy of it, and
// updates what the table worked out from it for those hosts alone.
func (t *tableModel) placeStates(hosts []remote.HostState, taken []int, states []remote.HostState, keep ...string) {
	t.hosts = hosts
	for k, i := range taken {
		t.sums.add(i, &hosts[i], -1)
		hosts[i] = states[k]
		t.sums.add(i, &hosts[i], 1)
	}
	t.findDeployments(true, taken)
	t.refilter(keep...)
}

// Update answers a key of the table's own (the cursor, the order, the
// grouping, the marks, esc on a filter) and the table's size (its body's
// rows); the reply says ignored for any other message.
func (t *tableModel) Update(msg tea.Msg) reply {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		t.height = msg.Height
		t.filterInput.SetWidth(max(10, msg.Width-4))
		return reply{}
	case tea.KeyPressMsg:
		return t.key(msg)
	}
	return reply{ignored: true}
}

func (t *tableModel) key(msg tea.KeyPressMsg) reply {
	k := t.keys
	switch {
	case key.Matches(msg, k.Back) && t.filter.active():
		t.filter = hostFilter{}
		t.refilter(t.cursorHost())
		return reply{status: "filter cleared"}
	case key.Matches(msg, k.Up):
		t.cursor = max(0, t.cursor-1)
	case key.Matches(msg, k.Down):
		t.cursor = max(0, min(len(t.lines)-1, t.cursor+1))
	case key.Matches(msg, k.First):
		t.cursor = 0
	case key.Matches(msg, k.Last):
		t.cursor = max(0, len(t.lines)-1)
	case key.Matches(msg, k.PageUp):
		t.cursor = max(0, t.cursor-t.pageRows())
	case key.Matches(msg, k.PageDown):
		t.cursor = max(0, min(len(t.lines)-1, t.cursor+t.pageRows()))
	case key.Matches(msg, k.NextFailed), key.Matches(msg, k.PrevFailed):
		dir := 1
		if key.Matches(msg, k.PrevFailed) {
			dir = -1
		}
		if !t.nextFailed(dir) {
			return reply{status: "no failed host shown"}
		}
	case key.Matches(msg, k.Sort):
		t.sort = (t.sort + 1) % sortCount
		t.refilter(t.cursorHost())
		return reply{status: "sorted: " + t.sort.String()}
	case key.Matches(msg, k.Group):
		return t.cycleGrouping()
	case key.Matches(msg, k.Expand) && t.onGroupRow():
		t.setExpanded(true)
	case key.Matches(msg, k.Collapse) && t.groupBy > 0:
		t.setExpanded(false)
	case key.Matches(msg, k.MarkAll):
		if n := t.selectAll(); n > 0 {
			return reply{status: fmt.Sprintf("%d hosts marked", n)}
		}
		return reply{status: "marks cleared"}
	case key.Matches(msg, k.Select) && t.onGroupRow():
		t.markGroup()
	case key.Matches(msg, k.Select):
		if n := t.cursorHost(); n != "" {
			t.marked[n] = !t.marked[n]
			if !t.marked[n] {
				delete(t.marked, n)
			}
		}
	case key.Matches(msg, k.Open) && t.onGroupRow():
		t.setExpanded(!t.expanded[t.groupKey(t.cursor)])
	default:
		return reply{ignored: true}
	}
	return reply{}
}

// View draws the table in at most h rows: its header and the lines
// that fit, the cursor's on screen; or why it shows no host. now is
// what time in phase is measured against; drift is each drifting host's
// badge.
func (t *tableModel) View(w, h int, now time.Time, drift map[string]string) string {
	switch {
	case len(t.hosts) == 0:
		return t.styles.Dim.Render("  waiting for hosts…")
	case len(t.rows) == 0:
		return t.styles.Dim.Render(clip(fmt.Sprintf("  no host matches the filter %q (esc clears it)", t.filter.text), w))
	}
	ft := fleetTable{hosts: t.hosts, sums: &t.sums, lines: t.lines, cursor: t.cursor, marked: t.marked, now: now, styles: t.styles, drift: drift}
	if g := t.grouping(); g != nil {
		ft.grouping, ft.groups, ft.groupNameW = g, t.groups, groupNameWidth(g, t.groups)
		ft.expanded = t.isOpen(g)
	}
	return ft.Render(w, t.viewRows(h))
}

// viewRows is the rows View takes of h: the header and every line, when
// they fit.
func (t *tableModel) viewRows(h int) int { return min(h, len(t.lines)+1) }

// preview is the host whose newest log lines show under the table, and
// the rule above them. selected is the host actions apply to; on a
// group's row it is the group's host that most needs a person (a closed
// rack with a failure shows the failure).
func (t *tableModel) preview(selected string) (host, title string) {
	title = fmt.Sprintf("── %s · newest lines (enter to open) ", selected)
	g := t.grouping()
	if g == nil || !t.onGroupRow() {
		return selected, title
	}
	gr := &t.groups[t.lines[t.cursor].group]
	host = t.hosts[neediest(t.hosts, gr.hosts)].Name
	verb := "expands"
	if t.expanded[t.groupKey(t.cursor)] {
		verb = "collapses"
	}
	return host, fmt.Sprintf("── %s · %s · newest lines (enter %s) ", g.buckets[gr.bucket].name, host, verb)
}
