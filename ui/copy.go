package ui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/ui/notify"
)

// copyFix answers y: the selected host's fix command (the one `bringup
// watch` prints) goes to the clipboard.
func (m *Model) copyFix() tea.Cmd {
	hs := m.hostState(m.selectedName())
	switch {
	case hs == nil:
		return m.setStatus("no host selected", true)
	case hs.Startup.Diag == nil:
		return m.setStatus(hs.Name+": nothing to copy: no failure diagnosed", false)
	case hs.Startup.Diag.Fix == nil:
		return m.setStatus(hs.Name+": nothing to copy: the diagnosis has no fix command (see its hint)", false)
	}
	cmd := hs.Startup.Diag.Fix.Command(hs.Name)
	return m.copyText(cmd, "copied "+hs.Name+"'s fix command: "+cmd)
}

// copyEvidence answers Y: the selected host's evidence lines, as the
// diagnosis shows them (sanitised where they entered the fleet), one a
// line.
func (m *Model) copyEvidence() tea.Cmd {
	hs := m.hostState(m.selectedName())
	switch {
	case hs == nil:
		return m.setStatus("no host selected", true)
	case hs.Startup.Diag == nil || len(hs.Startup.Diag.Evidence) == 0:
		return m.setStatus(hs.Name+": nothing to copy: no evidence (no failure diagnosed)", false)
	}
	ev := hs.Startup.Diag.Evidence
	what := fmt.Sprintf("%d lines", len(ev))
	if len(ev) == 1 {
		what = "1 line"
	}
	return m.copyText(strings.Join(ev, "\n"), "copied "+hs.Name+"'s evidence: "+what)
}

// copyText puts text on the clipboard the way the signals reach the
// terminal (OSC 52 through tea.Raw, through tmux when inside it) and says
// so in the status line. Whether the terminal honours OSC 52 it cannot
// tell.
func (m *Model) copyText(text, status string) tea.Cmd {
	seq := notify.Encoder{Tmux: m.opts.Tmux}.Clipboard(text)
	return tea.Batch(tea.Raw(seq), m.setStatus(status+" (OSC 52)", false))
}
