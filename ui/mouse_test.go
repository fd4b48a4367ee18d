package ui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// click is a left click at screen row y (row 0 is the title line).
func click(m *Model, y int) {
	m.Update(tea.MouseClickMsg{X: 10, Y: y, Button: tea.MouseLeft})
}

func wheelMsg(down bool) tea.MouseWheelMsg {
	b := tea.MouseWheelUp
	if down {
		b = tea.MouseWheelDown
	}
	return tea.MouseWheelMsg{X: 10, Y: 5, Button: b}
}

// TestMouseClickSelectsThenOpens: the table's rows start on screen row 2
// (the title, then the column titles); a click selects gpu3, a second
// click on it opens its host view; clicks off the rows do nothing.
func TestMouseClickSelectsThenOpens(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	if v := m.View(); v.MouseMode != tea.MouseModeCellMotion {
		t.Fatalf("mouse mode %v, want cell motion (clicks and wheel)", v.MouseMode)
	}
	click(m, 1) // the column titles
	click(m, 9) // below the rows: the preview
	if got := m.table.cursorHost(); got != "gpu1" || m.focus.view() != focusTable {
		t.Fatalf("clicks off the rows: cursor on %s, view %s; want gpu1 on the table", got, m.focus.view())
	}
	click(m, 4)
	if got := m.table.cursorHost(); got != "gpu3" || m.focus.view() != focusTable {
		t.Fatalf("click on row 4: cursor on %s, view %s; want gpu3 selected on the table", got, m.focus.view())
	}
	if row := rowOf(render(m), "gpu3"); !strings.HasPrefix(row, "›") {
		t.Errorf("gpu3's row is not the cursor's: %q", row)
	}
	click(m, 4)
	if m.focus.view() != focusHost || m.host.name != "gpu3" {
		t.Fatalf("second click: view %s on %q, want gpu3's host view", m.focus.view(), m.host.name)
	}
	// A click in the host view, or over a dialog, selects nothing.
	click(m, 2)
	if m.focus.view() != focusHost {
		t.Errorf("click in the host view left it: %s", m.focus.view())
	}
}

// TestMouseWheel: the wheel moves the table's cursor, scrolls the
// journal (leaving follow), and scrolls the diagnosis detail.
func TestMouseWheel(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	m.Update(wheelMsg(true))
	m.Update(wheelMsg(true))
	if got := m.table.cursorHost(); got != "gpu3" {
		t.Fatalf("two wheel steps down: cursor on %s, want gpu3", got)
	}
	m.Update(wheelMsg(false))
	if got := m.table.cursorHost(); got != "gpu2" {
		t.Fatalf("a wheel step up: cursor on %s, want gpu2", got)
	}
	press(m, "j", "enter")
	if !m.host.log.follow {
		t.Fatal("the host view does not follow its log on opening")
	}
	before := render(m)
	m.Update(wheelMsg(false))
	if m.host.log.follow || render(m) == before {
		t.Errorf("wheel up in the host view: follow %v, screen changed %v; want the journal scrolled back", m.host.log.follow, render(m) != before)
	}
	m, _ = newTestModel(t, 60, 20)
	press(m, "j", "j", "e")
	top := m.diag.top
	m.Update(wheelMsg(true))
	if m.diag.top != top+wheelRows {
		t.Errorf("wheel down in the detail: top %d, want %d", m.diag.top, top+wheelRows)
	}
	m.Update(wheelMsg(false))
	if m.diag.top != top {
		t.Errorf("wheel up in the detail: top %d, want %d", m.diag.top, top)
	}
}

// TestMouseClickScrolledTable: with more hosts than rows, a click picks
// the row drawn there, counted from the table's scroll.
func TestMouseClickScrolledTable(t *testing.T) {
	m, _ := newTestModel(t, 80, 6) // title, 3 body rows (titles + 2 lines), footer
	press(m, "G")                  // gpu4: the table shows gpu3, gpu4
	click(m, 2)
	if got := m.table.cursorHost(); got != "gpu3" {
		t.Errorf("click on the first row of a scrolled table: cursor on %s, want gpu3\n%s", got, render(m))
	}
}

// TestMouseClickOnDiagnosisBox: in gpu3's host view the diagnosis box's
// rows open the detail; the rows above it do not.
func TestMouseClickOnDiagnosisBox(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {60, 20}, {160, 48}} {
		m, _ := newTestModel(t, size[0], size[1])
		press(m, "j", "j", "enter")
		ls := lines(render(m))
		top, bottom := -1, -1
		for i, l := range ls {
			if strings.HasPrefix(l, "╭") && top < 0 {
				top = i
			}
			if strings.HasPrefix(l, "╰") && bottom < 0 {
				bottom = i
			}
		}
		if top < 0 || bottom < 0 {
			t.Fatalf("%v: no diagnosis box:\n%s", size, strings.Join(ls, "\n"))
		}
		click(m, top-1)
		if m.focus.view() != focusHost {
			t.Fatalf("%v: a click above the box (row %d) left the host view for %s", size, top-1, m.focus.view())
		}
		click(m, bottom+1)
		if m.focus.view() != focusHost {
			t.Fatalf("%v: a click below the box (row %d) left the host view for %s", size, bottom+1, m.focus.view())
		}
		for _, y := range []int{top, bottom} {
			click(m, y)
			if m.focus.view() != focusDiag || m.diag.host != "gpu3" {
				t.Fatalf("%v: a click on the box's row %d: view %s, want gpu3's diagnosis", size, y, m.focus.view())
			}
			press(m, "esc")
		}
	}
}
