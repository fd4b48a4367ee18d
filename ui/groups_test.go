package ui

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/startup"
)

// rackGroups puts h01..h12 of sizedFleet in three racks named so that
// only a natural order puts them right (rack-2 before rack-10), with
// h12 in no rack and h01 also in "canary".
func rackGroups() map[string][]string {
	return map[string][]string{
		"rack-2":  {"h01", "h02", "h03", "h04"},
		"rack-10": {"h05", "h06", "h07", "h08"},
		"rack-9":  {"h09", "h10", "h11"},
		"canary":  {"h01"},
	}
}

// describeLines is a grouped layout in short: "rack-2 4/4" for a summary
// row (shown/total), "  h01" for a host row under it.
func describeLines(g *grouping, hosts []remote.HostState, groups []groupRow, lines []tableLine) string {
	var out []string
	for _, l := range lines {
		if l.host < 0 {
			gr := groups[l.group]
			out = append(out, fmt.Sprintf("%s %d/%d", g.buckets[gr.bucket].name, len(gr.hosts), gr.total))
			continue
		}
		out = append(out, "  "+hosts[l.host].Name)
	}
	return strings.Join(out, "\n")
}

// TestGroupLines: the layout of a grouped table as a pure function of the
// grouping, the hosts, the filter's rows (in sort order) and which groups
// are open.
func TestGroupLines(t *testing.T) {
	labels := map[string]map[string]string{}
	for i := 1; i <= 12; i++ {
		if i <= 10 {
			labels[fmt.Sprintf("h%02d", i)] = map[string]string{"rack": fmt.Sprintf("r%d", 1+(i-1)/5*11)}
		}
	}
	byGroup := newGroupings(rackGroups(), nil)[0]
	byRack := newGroupings(nil, labels)[0]
	all := func(hosts []remote.HostState) []int {
		r := make([]int, len(hosts))
		for i := range r {
			r[i] = i
		}
		return r
	}
	cases := []struct {
		name  string
		g     grouping
		fleet remote.Batch
		rows  func([]remote.HostState) []int
		open  []string
		want  string
	}{
		{"collapsed: no failure, the groups in natural order, the catch-all last", byGroup, sizedFleet(12), all, nil,
			"canary 1/1\nrack-2 4/4\nrack-9 3/3\nrack-10 4/4\n(no group) 1/1"},
		{"a failed host puts its group first; more failed hosts first among them", byGroup, sizedFleet(12, 10, 6, 7), all, nil,
			"rack-10 4/4\nrack-9 3/3\ncanary 1/1\nrack-2 4/4\n(no group) 1/1"},
		{"a host in two groups shows under both", byGroup, sizedFleet(12), all, []string{"=canary", "=rack-2"},
			"canary 1/1\n  h01\nrack-2 4/4\n  h01\n  h02\n  h03\n  h04\nrack-9 3/3\nrack-10 4/4\n(no group) 1/1"},
		{"hosts keep the table's order inside a group", byGroup, sizedFleet(12), func(hs []remote.HostState) []int {
			r := all(hs)
			slices.Reverse(r)
			return r
		}, []string{"=rack-9"},
			"canary 1/1\nrack-2 4/4\nrack-9 3/3\n  h11\n  h10\n  h09\nrack-10 4/4\n(no group) 1/1"},
		{"the filter's rows only: emptied groups go, the others count what is shown", byGroup, sizedFleet(12), func([]remote.HostState) []int {
			return []int{2, 5, 8, 11} // h03 h06 h09 h12: the serving ones
		}, []string{"=rack-2"},
			"rack-2 1/4\n  h03\nrack-9 1/3\nrack-10 1/4\n(no group) 1/1"},
		{"by a label: one group per value, hosts without it last", byRack, sizedFleet(12, 11), all, nil,
			"(no rack) 2/2\nr1 5/5\nr12 5/5"},
		{"a host the config does not know goes to the catch-all", byGroup, func() remote.Batch {
			b := sizedFleet(12)
			b.Hosts = append(b.Hosts, remote.HostState{Name: "found-in-store", Startup: startup.Startup{Phase: startup.Serving}})
			return b
		}(), all, []string{""},
			"canary 1/1\nrack-2 4/4\nrack-9 3/3\nrack-10 4/4\n(no group) 2/2\n  h12\n  found-in-store"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := c.g
			groups, lines := groupLines(&g, c.fleet.Hosts, c.rows(c.fleet.Hosts), func(key string) bool { return slices.Contains(c.open, key) })
			if got := describeLines(&g, c.fleet.Hosts, groups, lines); got != c.want {
				t.Errorf("layout:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}

func TestGroupCounts(t *testing.T) {
	b := sizedFleet(8, 2, 5)
	b.Hosts[6].Startup.Phase = startup.Unknown
	b.Hosts[7].Startup.Phase = startup.GraphCapture
	g := newGroupings(map[string][]string{"all": {"h01", "h02", "h03", "h04", "h05", "h06", "h07", "h08"}}, nil)[0]
	groups, _ := groupLines(&g, b.Hosts, []int{0, 1, 2, 3, 4, 5, 6, 7}, func(string) bool { return false })
	tb := fleetTable{hosts: b.Hosts, styles: NewStyles(true, true), grouping: &g, groups: groups,
		expanded: func(string) bool { return false }, groupNameW: groupNameWidth(&g, groups)}
	want := "2 failed · 1 unknown · 2 weights · 1 graph-capture · 2 serving"
	if got := tb.countsText(&groups[0]); got != want {
		t.Errorf("counts %q, want %q", got, want)
	}
	row := tb.groupRowText(&groups[0], false, 120)
	if !strings.HasPrefix(row, "   ▸ all   8 hosts    2 failed") || width(row) != 120 {
		t.Errorf("summary row %q (%d cells)", row, width(row))
	}
	if row := tb.groupRowText(&groups[0], true, 30); width(row) != 30 || !strings.HasPrefix(row, "›  ▸ all") || !strings.HasSuffix(row, "…") {
		t.Errorf("narrow summary row %q (%d cells)", row, width(row))
	}
}

func TestNaturalCompare(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"rack-2", "rack-10", -1}, {"rack-10", "rack-9", 1}, {"r1", "r1", 0}, {"r01", "r1", 1},
		{"a", "b", -1}, {"rack", "rack-1", -1}, {"r2x", "r2y", -1}, {"99999999999999999999", "1", 1},
	} {
		if got := naturalCompare(c.a, c.b); got != c.want {
			t.Errorf("naturalCompare(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// groupedModel is the console over sizedFleet(12) with rackGroups and a
// rack label on every host.
func groupedModel(t testing.TB, w, h int, failed ...int) (*Model, *fakeSource) {
	t.Helper()
	labels := map[string]map[string]string{}
	for i := 1; i <= 12; i++ {
		labels[fmt.Sprintf("h%02d", i)] = map[string]string{"rack": fmt.Sprintf("r%d", (i+1)/2)}
	}
	src := newFake()
	m := New(src, Options{Title: "bringup", Kernels: kernels.DefaultCatalog(), Now: func() time.Time { return now }, NoColor: true,
		Groups: rackGroups(), Labels: labels})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: h})
	m.Update(batchMsg(sizedFleet(12, failed...)))
	return m, src
}

// TestGroupedTableFlow walks the grouped table as a person would: group,
// open a group, move into it, act on a host as ever, act on a whole
// group, collapse from inside, jump to a failed host in a closed group.
func TestGroupedTableFlow(t *testing.T) {
	m, src := groupedModel(t, 120, 40, 6)
	flatHeader := strings.Fields(lines(render(m))[0])
	press(m, "t")
	if m.table.groupBy != 1 || !strings.Contains(m.status, "grouped by group: 5 groups") {
		t.Fatalf("t: grouping %d, status %q", m.table.groupBy, m.status)
	}
	out := render(m)
	// The header counts the same hosts, plus the grouping's badge.
	if got := strings.Fields(lines(out)[0]); !slices.Equal(got[:len(flatHeader)], flatHeader) || !strings.Contains(lines(out)[0], "by group") {
		t.Errorf("header grouped %q, flat %q", lines(out)[0], strings.Join(flatHeader, " "))
	}
	// The failed host's rack leads; the cursor is on a group row (h01
	// was under it: canary and rack-2 come after rack-10 now).
	if l := lines(out)[2]; !strings.Contains(l, "▸ rack-10") || !strings.Contains(l, "1 failed") {
		t.Errorf("first group row %q", l)
	}
	if !m.table.onGroupRow() || m.selectedName() != "" {
		t.Fatalf("cursor not on a group row: %+v", m.table.lines[m.table.cursor])
	}
	press(m, "g", "enter") // open rack-10
	if got := describeLines(m.table.grouping(), m.hosts, m.table.groups, m.table.lines); !strings.HasPrefix(got, "rack-10 4/4\n  h05\n  h06\n  h07\n  h08\ncanary") {
		t.Fatalf("after enter:\n%s", got)
	}
	if !strings.Contains(render(m), "▾ rack-10") {
		t.Error("an open group shows ▸")
	}
	press(m, "j", "j") // h06, the failed one
	if m.selectedName() != "h06" {
		t.Fatalf("cursor on %q, want h06", m.selectedName())
	}
	// A host row acts as ever: r asks about h06 alone.
	drive(t, m, press(m, "x"))
	if m.dialog == nil || len(m.dialog.hostList()) != 1 || m.dialog.hostList()[0] != "h06" {
		t.Fatalf("x on h06: dialog %+v", m.dialog)
	}
	drive(t, m, press(m, "y"))
	if got := calls(src); len(got) != 1 || got[0].host != "h06" || got[0].a.Kind != remote.ActResetFailed {
		t.Fatalf("Do calls %+v", got)
	}
	press(m, "enter")
	if m.focus.view() != focusHost || m.host.name != "h06" {
		t.Fatalf("enter on h06: view %v, open %q", m.focus.view(), m.host.name)
	}
	press(m, "esc")
	if m.selectedName() != "h06" {
		t.Fatalf("back from the host view on %q", m.selectedName())
	}
	// ← from inside closes the group and rests on its row.
	press(m, "left")
	if !m.table.onGroupRow() || m.table.groupKey(m.table.cursor) != "group\x00=rack-10" || len(m.table.lines) != 5 {
		t.Fatalf("left: on %+v (%s), %d lines", m.table.lines[m.table.cursor], m.table.groupKey(m.table.cursor), len(m.table.lines))
	}
	// Space on a group row marks its hosts; again clears them.
	press(m, "space")
	if len(m.table.marked) != 4 || !m.table.marked["h05"] || !m.table.marked["h08"] || !strings.Contains(lines(render(m))[2], "●") {
		t.Fatalf("space on rack-10: marked %v", m.table.marked)
	}
	press(m, "space")
	if len(m.table.marked) != 0 {
		t.Fatalf("space again: marked %v", m.table.marked)
	}
	// An action key on a group row asks about the group's hosts, by name.
	press(m, "r")
	if m.dialog == nil || !slices.Equal(m.dialog.hostList(), []string{"h05", "h06", "h07", "h08"}) {
		t.Fatalf("r on rack-10: dialog %+v", m.dialog)
	}
	if out := render(m); !strings.Contains(out, "h[05-08]") {
		t.Errorf("the confirmation does not name the group's hosts:\n%s", out)
	}
	press(m, "esc")
	// n finds a failed host inside a closed group and opens it.
	press(m, "G", "n")
	if m.selectedName() != "h06" || !m.table.expanded["group\x00=rack-10"] {
		t.Fatalf("n: on %q, open %v", m.selectedName(), m.table.expanded)
	}
	press(m, "n") // the only failed host: wraps to itself
	if m.selectedName() != "h06" {
		t.Fatalf("n again: on %q", m.selectedName())
	}
	// t again groups by the rack label; the cursor stays on h06's group.
	press(m, "t")
	if m.table.groupBy != 2 || !strings.Contains(m.status, "grouped by rack") || !m.table.onGroupRow() ||
		!slices.Contains(m.table.groupHosts(m.table.lines[m.table.cursor].group), "h06") {
		t.Fatalf("t: by %d, status %q, cursor %+v", m.table.groupBy, m.status, m.table.lines[m.table.cursor])
	}
	press(m, "t")
	if m.table.groupBy != 0 || m.selectedName() != "h05" || len(m.table.lines) != 12 {
		t.Fatalf("t to ungrouped: by %d, on %q, %d lines", m.table.groupBy, m.selectedName(), len(m.table.lines))
	}
}

// TestGroupedFilterAndSort: the filter hides hosts, and with them the
// groups left empty; the counts are of what is shown; the sort orders
// hosts inside their group; a batch keeps the cursor on its host or its
// group row.
func TestGroupedFilterAndSort(t *testing.T) {
	m, _ := groupedModel(t, 120, 40, 2, 6)
	press(m, "t")
	press(m, append(append([]string{"/"}, typed("phase:failed")...), "enter")...)
	if got := describeLines(m.table.grouping(), m.hosts, m.table.groups, m.table.lines); got != "rack-2 1/4\nrack-10 1/4" { // one failed each: the bucket order

		t.Fatalf("phase:failed:\n%s", got)
	}
	if out := render(m); !strings.Contains(out, "1/4 hosts") || strings.Contains(out, "serving") && !strings.Contains(lines(out)[0], "serving") {
		t.Errorf("filtered counts:\n%s", out)
	}
	if !strings.Contains(lines(render(m))[0], "filter: phase:failed  2/12 hosts") {
		t.Errorf("header %q", lines(render(m))[0])
	}
	press(m, "esc")
	// Sort by ETA: inside rack-2, h01 (weights, ETA 11 min) comes after
	// h04 (ETA 8 min); the failed h02 leads.
	m.table.cursor = m.table.lineOfGroup("group\x00=rack-2")
	press(m, "enter", "s", "s", "s")
	if m.table.sort != sortETA {
		t.Fatalf("sort %v", m.table.sort)
	}
	var got []string
	for _, l := range m.table.lines {
		if l.host >= 0 && m.table.bucketKey(l.group) == "group\x00=rack-2" {
			got = append(got, m.hosts[l.host].Name)
		}
	}
	if strings.Join(got, " ") != "h02 h04 h01 h03" {
		t.Errorf("rack-2 by ETA: %v", got)
	}
	// A batch where h06 recovers: rack-10 falls behind canary, and the
	// cursor stays on rack-2's row, now the first.
	m.table.cursor = m.table.lineOfGroup("group\x00=rack-2")
	b := sizedFleet(12, 2)
	m.Update(batchMsg(b))
	if !m.table.onGroupRow() || m.table.groupKey(m.table.cursor) != "group\x00=rack-2" || m.table.cursor != 0 {
		t.Fatalf("after a batch: cursor %d on %s", m.table.cursor, m.table.groupKey(m.table.cursor))
	}
	// And on a host row it stays on its host in its group.
	press(m, "j")
	host := m.selectedName()
	m.Update(batchMsg(sizedFleet(12, 2, 9)))
	if m.selectedName() != host || m.table.groupKey(m.table.cursor) != "group\x00=rack-2" {
		t.Fatalf("after a batch: on %q in %s, want %q", m.selectedName(), m.table.groupKey(m.table.cursor), host)
	}
}

// TestGroupedCursorNeverOnNothing presses keys at random, batches
// arriving in between, and checks after each that the cursor is on a
// line, that a summary row's group has hosts, and that every host the
// filter shows is under some group.
func TestGroupedCursorNeverOnNothing(t *testing.T) {
	m, _ := groupedModel(t, 100, 20, 3)
	keys := []string{"j", "k", "g", "G", "t", "enter", "esc", "left", "right", "l", "h", "s", "n", "N", "space", "pgdown", "pgup", "A"}
	filters := []string{"phase:failed", "h1", "phase:serving", "h0", "nothing-matches"}
	rng := rand.New(rand.NewPCG(14, 4))
	for step := range 3000 {
		switch rng.IntN(40) {
		case 0:
			press(m, append(append([]string{"/"}, typed(filters[rng.IntN(len(filters))])...), "enter")...)
		case 1:
			var failed []int
			for range rng.IntN(4) {
				failed = append(failed, 1+rng.IntN(12))
			}
			m.Update(batchMsg(sizedFleet(12, failed...)))
		default:
			press(m, keys[rng.IntN(len(keys))])
		}
		if m.focus.top() != focusTable {
			press(m, "esc") // a dialog or the host view: back to the table
		}
		if len(m.table.rows) > 0 && (m.table.cursor < 0 || m.table.cursor >= len(m.table.lines)) {
			t.Fatalf("step %d: cursor %d of %d lines", step, m.table.cursor, len(m.table.lines))
		}
		seen := map[int]bool{}
		for _, l := range m.table.lines {
			if l.host >= 0 {
				seen[l.host] = true
			} else if len(m.table.groups[l.group].hosts) == 0 {
				t.Fatalf("step %d: an empty group row", step)
			}
		}
		if m.table.groupBy == 0 && len(seen) != len(m.table.rows) {
			t.Fatalf("step %d: %d host lines for %d rows", step, len(seen), len(m.table.rows))
		}
		if m.table.groupBy > 0 {
			in := 0
			for _, g := range m.table.groups {
				in += len(g.hosts)
			}
			if in < len(m.table.rows) {
				t.Fatalf("step %d: groups hold %d of %d hosts shown", step, in, len(m.table.rows))
			}
		}
	}
}

func TestGroupKeyWithoutGroups(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	press(m, "t")
	if m.table.groupBy != 0 || !strings.Contains(m.status, "no groups to group by") {
		t.Fatalf("t with no groups: by %d, status %q", m.table.groupBy, m.status)
	}
	press(m, "left", "right") // nothing to open or close; the cursor stays
	if m.selectedName() != "gpu1" {
		t.Fatalf("cursor on %q", m.selectedName())
	}
}

// setupRacks gives the fixture's four hosts two racks.
func setupRacks(_ *testing.T, m *Model, _ *fakeSource) {
	m.table.groupings = newGroupings(map[string][]string{"rack-a": {"gpu1", "gpu2"}, "rack-b": {"gpu3", "gpu4"}}, nil)
}

// TestGoldenGrouped renders the grouped table: the fixture's two racks
// collapsed and one open, and a fleet of 1 000 hosts in 32 racks (two
// with failures, one with an unreachable host) at the reference sizes.
// Regenerate with: go test ./ui -run TestGoldenGrouped -update
func TestGoldenGrouped(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {160, 48}, {60, 20}} {
		for _, sc := range []struct {
			name string
			keys []string
		}{{"racks", []string{"t"}}, {"racks-open", []string{"t", "enter"}}, {"racks-open-host", []string{"t", "enter", "j"}},
			{"racks-failed", []string{"t", "g"}}} { // rack-b's row shows its failed host's log
			t.Run(fmt.Sprintf("%s-%dx%d", sc.name, size[0], size[1]), func(t *testing.T) {
				m, src := newTestModel(t, size[0], size[1])
				setupRacks(t, m, src)
				press(m, sc.keys...)
				out := render(m)
				checkFits(t, out, size[0], size[1])
				golden.RequireEqual(t, []byte(out))
			})
		}
		t.Run(fmt.Sprintf("fleet1000-%dx%d", size[0], size[1]), func(t *testing.T) {
			m := fleet1000(t, size[0], size[1], true)
			press(m, "t")
			out := render(m)
			checkFits(t, out, size[0], size[1])
			golden.RequireEqual(t, []byte(out))
		})
	}
}

// fleet1000 is the console over 1 000 hosts (the fixture's four states
// in turn) in 32 racks by a rack label, with two failed hosts in r07 and
// r21 (besides the fixture's own failed one in each four) — failures are
// what a person looks for at this size.
func fleet1000(t testing.TB, w, h int, noColor bool) *Model {
	t.Helper()
	batch := fleetOf(1000, "node%04d")
	labels := map[string]map[string]string{}
	for i := range batch.Hosts {
		labels[batch.Hosts[i].Name] = map[string]string{"rack": fmt.Sprintf("r%02d", 1+i/32)}
		if batch.Hosts[i].Startup.Phase == startup.Failed && i/32 != 6 && i/32 != 20 {
			batch.Hosts[i].Startup.Phase = startup.Serving
			batch.Hosts[i].Startup.Diag = nil
		}
	}
	batch.Hosts[6*32+5].Startup.Phase = startup.Unknown
	src := newFake()
	m := New(src, Options{Title: "bringup · 1000 hosts", Kernels: kernels.DefaultCatalog(), Now: func() time.Time { return now },
		NoColor: noColor, Labels: labels})
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	m.Update(batchMsg(batch))
	return m
}

// TestGroupNamesReachTheScreenSanitised: a label value holding escapes
// (the config refuses one; a store's host might not) is shown with its
// control characters made visible, never sent to the terminal.
func TestGroupNamesReachTheScreenSanitised(t *testing.T) {
	src := newFake()
	m := New(src, Options{Title: "bringup", Now: func() time.Time { return now }, NoColor: true,
		Labels: map[string]map[string]string{"gpu1": {"rack": "r1\x1b]52;c;AAAA\a"}, "gpu2": {"ra\x1b[2Jck": "x"}}})
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 20})
	m.Update(batchMsg(fleetFixture()))
	for range 2 {
		press(m, "t")
		out := render(m)
		if strings.ContainsAny(out, "\x1b\a") {
			t.Fatalf("raw control characters on screen (grouped by %q):\n%q", m.table.groupBadge(), out)
		}
	}
	if !strings.Contains(render(m), "r1␛]52;c;AAAA␇") {
		t.Errorf("the escaped label is not shown visibly:\n%s", render(m))
	}
}

// TestPaletteGroupCommand: :group completes the groupings, names one
// directly, says which there are when given another, and :group off is
// the flat table again.
func TestPaletteGroupCommand(t *testing.T) {
	m, _ := groupedModel(t, 120, 30, 6)
	press(m, append([]string{":"}, typed("group r")...)...)
	press(m, "tab")
	if got := m.commandPalette.input.Value(); got != "group rack " {
		t.Fatalf("completion %q", got)
	}
	press(m, "enter")
	if m.table.groupBy != 2 || m.table.groupBadge() != "by rack" || !m.table.onGroupRow() {
		t.Fatalf(":group rack: by %d (%q), cursor %+v", m.table.groupBy, m.table.groupBadge(), m.table.lines[m.table.cursor])
	}
	press(m, append(append([]string{":"}, typed("group zone")...), "enter")...)
	if !m.statusErr || !strings.Contains(m.status, `unknown grouping "zone": group, rack, off`) || m.table.groupBy != 2 {
		t.Fatalf(":group zone: status %q, by %d", m.status, m.table.groupBy)
	}
	press(m, "esc")
	press(m, append(append([]string{":"}, typed("group off")...), "enter")...)
	if m.table.groupBy != 0 || len(m.table.lines) != 12 {
		t.Fatalf(":group off: by %d, %d lines", m.table.groupBy, len(m.table.lines))
	}
	press(m, append(append([]string{":"}, typed("group")...), "enter")...) // as t
	if m.table.groupBy != 1 {
		t.Fatalf(":group: by %d", m.table.groupBy)
	}
	m2, _ := newTestModel(t, 80, 24)
	press(m2, append(append([]string{":"}, typed("group")...), "enter")...)
	if !strings.Contains(m2.status, "no groups to group by") {
		t.Fatalf(":group without groups: %q", m2.status)
	}
}
