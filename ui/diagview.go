package ui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/charmbracelet/x/ansi"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/startup"
)

// diagModel is the diagnosis detail's state: the host whose diagnosis it
// shows whole (summary, hint, fix command, evidence, wrapped to the
// width) and how far it is scrolled. It opens over the table or the host
// view (e, or enter in the host view) and esc closes it.
type diagModel struct {
	keys          KeyMap
	width, height int // the body's cells and rows

	host string // the host explained
	top  int    // the first content row shown
}

// wheelRows is how far one turn of the mouse wheel scrolls.
const wheelRows = 3

// diagnosisOf is the diagnosis to explain for hs: its current one, or in
// a crash loop whose latest run has none (yet), the latest failed run's.
func diagnosisOf(hs *remote.HostState) *startup.Diagnosis {
	if hs == nil {
		return nil
	}
	if hs.Startup.Diag != nil {
		return hs.Startup.Diag
	}
	if hs.Startup.Loop == nil {
		return nil
	}
	for i := len(hs.Startup.Runs) - 1; i >= 0; i-- {
		if d := hs.Startup.Runs[i].Diag; d != nil {
			return d
		}
	}
	return nil
}

// open shows host's diagnosis from its first row.
func (d *diagModel) open(host string) { d.host, d.top = host, 0 }

// Update answers the detail's own keys (scrolling) and wheel, and its
// size; the reply says ignored for any other message. hs is the host's
// latest state.
func (d *diagModel) Update(msg tea.Msg, hs *remote.HostState, styles Styles) reply {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		d.width, d.height = msg.Width, msg.Height
		return reply{}
	case tea.MouseWheelMsg:
		switch msg.Button {
		case tea.MouseWheelUp:
			d.scroll(hs, styles, -wheelRows)
		case tea.MouseWheelDown:
			d.scroll(hs, styles, wheelRows)
		default: // sideways: nothing to scroll
		}
		return reply{}
	case tea.KeyPressMsg:
		k := d.keys
		page := max(1, d.height-2)
		switch {
		case key.Matches(msg, k.Up):
			d.scroll(hs, styles, -1)
		case key.Matches(msg, k.Down):
			d.scroll(hs, styles, 1)
		case key.Matches(msg, k.PageUp):
			d.scroll(hs, styles, -page)
		case key.Matches(msg, k.PageDown):
			d.scroll(hs, styles, page)
		case key.Matches(msg, k.Top):
			d.top = 0
		case key.Matches(msg, k.Bottom):
			d.scroll(hs, styles, len(d.content(hs, styles)))
		default:
			return reply{ignored: true}
		}
		return reply{}
	}
	return reply{ignored: true}
}

// scroll moves the view n rows, within the content.
func (d *diagModel) scroll(hs *remote.HostState, styles Styles, n int) {
	rows := len(d.content(hs, styles))
	d.top = max(0, min(d.top+n, rows-d.contentRows()))
}

// contentRows is the rows under the title.
func (d *diagModel) contentRows() int { return max(1, d.height-1) }

// View draws the detail in w×h: a title row that says which rows show,
// then the content from the scroll's place.
func (d *diagModel) View(w, h int, hs *remote.HostState, styles Styles) string {
	rows := d.content(hs, styles)
	avail := max(1, h-1)
	top := max(0, min(d.top, len(rows)-avail))
	title := styles.Title.Render(d.host) + " · diagnosis"
	if diag := diagnosisOf(hs); diag != nil {
		title += " · " + diag.Cause
	}
	if len(rows) > avail {
		title += fmt.Sprintf(" · rows %d–%d/%d", top+1, min(len(rows), top+avail), len(rows))
	}
	out := []string{clip(title, w)}
	out = append(out, rows[top:min(len(rows), top+avail)]...)
	return strings.Join(out, "\n")
}

// content is the detail's rows at the model's width: every part wrapped,
// none cut.
func (d *diagModel) content(hs *remote.HostState, s Styles) []string {
	w := max(10, d.width)
	diag := diagnosisOf(hs)
	if diag == nil {
		return []string{"", s.Dim.Render(clip("  no failure diagnosed on "+d.host+" (esc goes back)", w))}
	}
	var out []string
	para := func(text string, indent string, st func(string) string) {
		for _, l := range wrapWords(text, w-width(indent)) {
			out = append(out, indent+st(l))
		}
	}
	plain := func(s string) string { return s }
	out = append(out, "")
	para("✗ "+diag.Summary, "", func(l string) string { return s.DiagSummary.Render(l) })
	meta := "cause " + diag.Cause
	if diag.Phase != "" {
		meta += " · in " + string(diag.Phase)
	}
	if !diag.Time.IsZero() {
		meta += " at " + diag.Time.Format("15:04:05")
	}
	if diag.KernelMode != "" {
		meta += " · mode " + diag.KernelMode
	}
	if l := hs.Startup.Loop; l != nil {
		meta += " · " + loopPhase(l)
	}
	para(meta, "", func(l string) string { return s.Dim.Render(l) })
	if diag.Secondary {
		para("a line still to come may name the root cause: this one rests on a wrapper or an error no rule knows", "", func(l string) string { return s.Dim.Render(l) })
	}
	out = append(out, "", "hint")
	para(hintText(diag), "  ", func(l string) string { return s.DiagHint.Render(l) })
	out = append(out, "", "fix command (y copies)")
	if diag.Fix != nil {
		para(diag.Fix.Command(d.host), "  ", plain)
	} else {
		para("none: the hint says what to do", "  ", func(l string) string { return s.Dim.Render(l) })
	}
	out = append(out, "", fmt.Sprintf("evidence, %d lines, the root cause first (Y copies)", len(diag.Evidence)))
	for i, e := range diag.Evidence {
		st := s.Evidence
		if i == 0 {
			st = s.EvidenceFirst
		}
		for j, l := range wrapWords(e, w-6) {
			lead := "│ "
			if j > 0 {
				lead = "│   " // a wrapped line's rest, set in under its start
			}
			out = append(out, "  "+st.Render(lead+l))
		}
	}
	return out
}

// openDiag answers e (and enter in the host view): the detail of the
// selected host's diagnosis, over the view.
func (m *Model) openDiag() tea.Cmd {
	name := m.selectedName()
	hs := m.hostState(name)
	if hs == nil {
		return m.setStatus("no host selected", true)
	}
	if diagnosisOf(hs) == nil {
		return m.setStatus(name+": no failure diagnosed", false)
	}
	m.diag.open(name)
	m.showView(focusDiag)
	return nil
}

// diagKey answers a key in the detail: esc goes back to the view under
// it; y and Y copy as in the other views.
func (m *Model) diagKey(msg tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	switch {
	case key.Matches(msg, k.Back):
		m.focus.pop()
		return nil
	case key.Matches(msg, k.CopyFix):
		return m.copyFix()
	case key.Matches(msg, k.CopyEvidence):
		return m.copyEvidence()
	}
	return m.take(m.diag.Update(msg, m.hostState(m.diag.host), m.styles))
}

// wrapWords wraps plain text to w cells at its spaces only, so that a
// flag (--disable-cuda-graph) or a KERNEL=MODE stays whole on one row; a
// word longer than a row is cut across rows. The text's indent (a
// traceback's) stays on its first row.
func wrapWords(text string, w int) []string {
	w = max(1, w)
	indent := text[:len(text)-len(strings.TrimLeft(text, " "))]
	if width(indent) >= w/2 {
		indent = ""
	}
	var out []string
	line, empty := indent, true
	for _, word := range strings.Fields(text) {
		sep := " "
		if empty {
			sep = ""
		}
		if width(line)+len(sep)+width(word) <= w {
			line, empty = line+sep+word, false
			continue
		}
		if !empty {
			out, line = append(out, line), ""
		}
		for width(line)+width(word) > w { // longer than a row: cut it
			head := ansi.Cut(word, 0, w-width(line))
			out, line, word = append(out, line+head), "", word[len(head):]
		}
		line, empty = line+word, word == ""
	}
	if !empty || len(out) == 0 {
		out = append(out, line)
	}
	return out
}
