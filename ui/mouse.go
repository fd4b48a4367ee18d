package ui

import (
	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/remote"
)

// The mouse, as k9s and lazygit have it: a click on a table row selects
// it, a click on the selected row (so a double click too) opens it as
// enter does; a click on the host view's diagnosis box opens the
// diagnosis detail; the wheel moves the table's cursor, and scrolls the
// journal, the diagnosis detail and the log of remote commands. Layers
// that take text or ask a question (prompts, dialogs) ignore the mouse.
// It holds no state of its own: a second click is a click on the row
// the first one selected.

// headerRows is the screen rows above the view's body: the title line.
const headerRows = 1

// mouse answers a mouse message for what has focus.
func (m *Model) mouse(msg tea.MouseMsg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.MouseClickMsg:
		if msg.Button != tea.MouseLeft {
			return nil
		}
		switch m.focus.top() {
		case focusTable:
			return m.tableClick(msg.Y - headerRows)
		case focusHost:
			// A click on the diagnosis box opens it whole, as e does.
			if m.host.onDiagBox(msg.Y-headerRows, m.hostState(m.host.name)) {
				return m.openDiag()
			}
		default: // prompts, dialogs, overlays: keys only
		}
		return nil
	case tea.MouseWheelMsg:
		dir := 0
		switch msg.Button {
		case tea.MouseWheelUp:
			dir = -1
		case tea.MouseWheelDown:
			dir = 1
		default: // sideways: nothing scrolls sideways
			return nil
		}
		return m.wheel(msg, dir)
	}
	return nil
}

// wheel scrolls what has focus one wheel step in dir (-1 up, 1 down).
func (m *Model) wheel(msg tea.MouseWheelMsg, dir int) tea.Cmd {
	switch m.focus.top() {
	case focusTable:
		m.table.moveCursor(dir)
	case focusHost:
		m.host.wheel(dir, m.hostState(m.host.name))
	case focusDiag:
		return m.take(m.diag.Update(msg, m.hostState(m.diag.host), m.styles))
	case focusActions:
		m.remoteCommands.scroll(actionsRows(m.height), dir*wheelRows)
	default: // prompts, dialogs, overlays and the rollout view: no wheel
	}
	return nil
}

// tableClick answers a left click on row y of the body: a host or group
// row is selected, or opened when it was selected already.
func (m *Model) tableClick(y int) tea.Cmd {
	line, ok := m.table.lineAt(y, m.bodyHeight())
	if !ok {
		return nil
	}
	if line != m.table.cursor {
		m.table.cursor = line
		return nil
	}
	if m.table.onGroupRow() {
		m.table.setExpanded(!m.table.expanded[m.table.groupKey(line)])
		return nil
	}
	if n := m.table.cursorHost(); n != "" {
		m.openHost(n)
	}
	return nil
}

// lineAt is the table line drawn on row y of a body h rows high (row 0 is
// the column titles), as View scrolls it: the cursor's line on screen.
func (t *tableModel) lineAt(y, h int) (int, bool) {
	rows := t.viewRows(h) - 1
	if y < 1 || y > rows || len(t.rows) == 0 {
		return 0, false
	}
	first := 0
	if t.cursor >= rows {
		first = t.cursor - rows + 1
	}
	line := first + y - 1
	return line, line < len(t.lines)
}

// moveCursor moves the table's cursor n lines, within the table.
func (t *tableModel) moveCursor(n int) {
	t.cursor = max(0, min(len(t.lines)-1, t.cursor+n))
}

// wheel scrolls the journal one wheel step in dir; scrolling up stops
// following, as k does.
func (v *hostModel) wheel(dir int, hs *remote.HostState) {
	v.log.scroll(v.ring(), v.logHeight(hs), dir*wheelRows)
}

// onDiagBox reports whether row y of the view's body is on the
// diagnosis box of hs, the shown host.
func (v *hostModel) onDiagBox(y int, hs *remote.HostState) bool {
	if hs == nil {
		return false
	}
	top, end := layoutHost(hs, v.width, v.lanes().rows(), v.height).diagBoxRows(hs, v.width)
	return y >= top && y < end
}
