package ui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// footerRows is the status line and the short help.
const footerRows = 2

// View draws the screen: the header, the current view, the footer, and any
// modal on top. Every line fits the width, and there are exactly as many
// lines as the terminal has rows.
func (m *Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion // clicks and the wheel (mouse.go)
	v.WindowTitle = m.windowTitle()
	return v
}

// bodyHeight is the rows between the header and the footer.
func (m *Model) bodyHeight() int { return max(0, m.height-1-footerRows) }

func (m *Model) render() string {
	w, h := m.width, m.height
	var body string
	hs := m.hostState(m.host.name)
	switch v := m.focus.view(); {
	case v == focusHost && hs != nil:
		body = m.host.View(w, m.bodyHeight(), hs, m.now, m.styles, m.localHashes, m.focus.top() == focusLogFilter)
	case v == focusDiag:
		body = m.diag.View(w, m.bodyHeight(), m.hostState(m.diag.host), m.styles)
	case v == focusRollout:
		rv := rolloutView{ro: m.rollout, now: m.now, styles: m.styles}
		body = rv.Render(w, m.bodyHeight())
	default:
		body = m.renderTable(w, m.bodyHeight())
	}
	out := screen(m.header(w)+"\n"+screen(body, w, m.bodyHeight())+"\n"+m.footer(w), w, h)
	switch m.focus.top() {
	case focusDialog, focusRolloutForm:
		out = overlay(out, m.dialog.Render(w, m.styles), w, h)
	case focusHelp:
		out = overlay(out, m.helpBox(w, h), w, h)
	case focusActions:
		out = overlay(out, m.actionsBox(w, h), w, h)
	case focusCommands:
		out = overlay(out, m.commandsBox(w, h), w, h)
	case focusBench:
		out = overlay(out, m.benchBox(w), w, h)
	default: // a view or a prompt: no overlay
	}
	return screen(out, w, h)
}

// header is the title and the fleet's counts.
func (m *Model) header(w int) string {
	c := m.table.sums.counts // the window title counts the same way
	serving, failed, starting, other := c.Serving, c.Failed, c.Starting, c.Other
	s := m.styles
	hosts := fmt.Sprintf("%d hosts", len(m.hosts))
	if f := m.table.filterBadge(); f != "" {
		hosts = s.Badge.Render(f)
	}
	counts := fmt.Sprintf("%s · %s · %s · %s", hosts,
		s.PhaseServing.Render(fmt.Sprintf("%d serving", serving)),
		s.PhaseFailed.Render(fmt.Sprintf("%d failed", failed)),
		s.PhaseActive.Render(fmt.Sprintf("%d starting", starting)))
	if other > 0 {
		counts += fmt.Sprintf(" · %d other", other)
	}
	if all := len(m.table.marked); all > 0 {
		n := len(m.table.shownMarked())
		counts += fmt.Sprintf(" · %d selected", n)
		if all > n {
			counts += fmt.Sprintf(" +%d hidden", all-n)
		}
	}
	if b := m.driftBadge(); b != "" {
		counts += " · " + s.Warn.Render(b)
	}
	if b := m.table.sums.hostKeyBadge(m.hosts); b != "" {
		counts += " · " + s.Warn.Render(b)
	}
	if m.rollout != nil && !m.rollout.r.Settled() {
		counts += " · " + s.Badge.Render("rollout "+string(m.rollout.r.State().Status))
	}
	if m.opts.Position != nil {
		counts += " · " + s.Badge.Render(m.opts.Position())
	}
	if m.table.sort != sortConfig {
		counts += " · " + s.Badge.Render("sorted "+m.table.sort.String())
	}
	if b := m.table.groupBadge(); b != "" {
		counts += " · " + s.Badge.Render(b)
	}
	if m.src.ReadOnly() {
		counts += " · " + s.Badge.Render("read-only")
	}
	if m.streamEnded {
		counts += " · " + s.Badge.Render("stream ended")
	}
	title := s.Title.Render(m.opts.Title)
	gap := w - ansi.StringWidth(title) - ansi.StringWidth(counts)
	if gap < 2 {
		// Narrow pane: counts win over the title, since they change; the
		// title keeps what still fits of its start.
		room := w - ansi.StringWidth(counts) - 2
		if room < 12 {
			return clip(counts, w)
		}
		title = s.Title.Render(clip(m.opts.Title, room))
		gap = w - ansi.StringWidth(title) - ansi.StringWidth(counts)
	}
	return title + strings.Repeat(" ", gap) + counts
}

// keyBadge warns of n hosts whose ssh_config lets host keys in
// unchecked (StrictHostKeyChecking no, UserKnownHostsFile /dev/null),
// the one named first when it is one: `bringup doctor` says what to
// change.
func keyBadge(n int, first string) string {
	switch n {
	case 0:
		return ""
	case 1:
		return "⚠ host keys unchecked: " + first
	}
	return fmt.Sprintf("⚠ host keys unchecked: %d hosts", n)
}

// footer is the status line and the short help for the current state.
func (m *Model) footer(w int) string {
	top := m.focus.top()
	switch top {
	case focusPalette:
		return m.paletteFooter(w)
	case focusHostFilter:
		status := ""
		if m.status != "" {
			status = m.statusText(w)
		}
		return m.table.filterPromptView(w, status)
	default: // the status line
	}
	status := m.statusText(w)
	if m.status == "" {
		status = m.progressLine(w)
	}
	var hk helpKeys
	switch {
	case top.isDialog():
		hk = m.keys.dialogHelp(m.dialog.kind == dlgConfirm)
	case top == focusActions:
		hk = m.keys.actionsHelp()
	case top == focusBench:
		hk = m.keys.benchHelp()
	default:
		hk, _ = m.viewHelp()
		hk = m.replayHelp(hk)
	}
	return status + "\n" + m.help.ShortHelpView(hk.ShortHelp())
}

// viewHelp is the keys of the view under any layer, and the view's name.
func (m *Model) viewHelp() (helpKeys, string) {
	switch m.focus.view() {
	case focusHost:
		return m.keys.hostHelp(), "host"
	case focusRollout:
		return m.keys.rolloutHelp(), "rollout"
	case focusDiag:
		return m.keys.diagHelp(), "diagnosis"
	default: // the table's
	}
	return m.keys.tableHelp(), "fleet"
}

// replayHelp is hk with the replay's keys when there is a replay to
// control.
func (m *Model) replayHelp(hk helpKeys) helpKeys {
	if m.opts.Replay == nil {
		return hk
	}
	return m.keys.withReplay(hk)
}

// statusText is the status message, styled as an error or not, cut to w.
func (m *Model) statusText(w int) string {
	st := m.styles.Status
	if m.statusErr {
		st = m.styles.StatusErr
	}
	return st.Render(clip(m.status, w))
}

// renderTable is the fleet table and, in the rows left, the newest log
// lines of the host under the cursor.
func (m *Model) renderTable(w, h int) string {
	out := m.table.View(w, h, m.now, m.hostDrifts())
	if len(m.table.rows) == 0 {
		return out // no host, or none the filter shows: nothing to preview
	}
	logH := h - m.table.viewRows(h) - 2
	name, title := m.table.preview(m.selectedName())
	if logH < 3 || name == "" {
		return out
	}
	lv := newLogView()
	tail, _ := lv.render(m.ring(name), w, logH, m.styles)
	return out + "\n\n" + m.styles.Rule.Render(clip(title, w)+strings.Repeat("─", max(0, w-ansi.StringWidth(title)))) + "\n" + tail
}

// helpBox is the full help for the current view, from the key map, and
// a legend of the marks the view's rows carry. When the rows are short,
// the blank lines go first, then the legend's last rows.
func (m *Model) helpBox(w, h int) string {
	hk, what := m.viewHelp()
	hk = m.replayHelp(hk)
	hm := m.help
	hm.SetWidth(0)
	// As many columns as fit: a narrow pane gets the same keys in fewer,
	// longer columns, never fewer keys.
	groups := hk.FullHelp()
	table := hm.FullHelpView(groups)
	for k := len(groups) - 1; k >= 1 && width(strings.Split(table, "\n")[0]) > w-4; k-- {
		table = hm.FullHelpView(regroup(groups, k))
	}
	tableRows := strings.Split(table, "\n")
	legend := legendRows(what, max(40, width(tableRows[0])))
	title := m.styles.DialogTitle.Render("keys · " + what)
	foot := m.styles.Dim.Render("? or esc to close · :help lists the commands")
	room := h - 2 // the box's borders
	blank := []string{""}
	if 1+len(tableRows)+len(legend)+1+3 > room {
		blank = nil
	}
	legend = legend[:max(0, min(len(legend), room-2-len(tableRows)-3*len(blank)))]
	body := append([]string{title}, blank...)
	body = append(body, tableRows...)
	if len(legend) > 0 {
		body = append(body, blank...)
		for _, l := range legend {
			body = append(body, m.styles.Dim.Render(l))
		}
	}
	body = append(append(body, blank...), foot)
	return m.box(strings.Join(body, "\n"), w, h)
}

// legendRows are the marks the view's rows carry, most telling first,
// as many to a row of w cells as fit.
func legendRows(view string, w int) []string {
	var items []string
	if view == "fleet" || view == "host" || view == "diagnosis" {
		items = append(items, "validate! mode not capture-safe", "on↻ restart pending (mode changed on disk)", "on? mode not in the catalog")
	}
	if view == "fleet" {
		items = append(items, "› cursor", "● marked", "~ an estimate (ETA, memory)")
	}
	items = append(items, "mouse: click selects, click again opens, wheel scrolls")
	var rows []string
	for _, it := range items {
		if n := len(rows); n > 0 && width(rows[n-1])+3+width(it) <= w {
			rows[n-1] += " · " + it
			continue
		}
		rows = append(rows, wrapWords(it, w)...)
	}
	return rows
}

// regroup spreads the bindings of groups over k columns, in order.
func regroup(groups [][]key.Binding, k int) [][]key.Binding {
	var all []key.Binding
	for _, g := range groups {
		all = append(all, g...)
	}
	per := (len(all) + k - 1) / k
	out := make([][]key.Binding, 0, k)
	for len(all) > 0 {
		n := min(per, len(all))
		out = append(out, all[:n])
		all = all[n:]
	}
	return out
}

// box frames an overlay's body, cutting it to the screen.
func (m *Model) box(body string, w, h int) string {
	lines := strings.Split(body, "\n")
	bw := 0
	for _, l := range lines {
		bw = max(bw, ansi.StringWidth(l))
	}
	bw = min(w, bw+4)
	if len(lines) > h-2 {
		lines = lines[:max(1, h-2)]
	}
	for i, l := range lines {
		lines[i] = clip(l, bw-4)
	}
	return frame(lines, bw, m.styles.DialogBorder)
}
