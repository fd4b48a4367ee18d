package ui

import tea "charm.land/bubbletea/v2"

// reply is what a part of the console (the table, the host view) hands
// back from its Update to the root model, which owns the status line and
// the focus: a command to run, a line for the status bar, whether the
// message was the part's at all, and whether the prompt it had open
// closed.
type reply struct {
	cmd     tea.Cmd
	status  string // "" leaves the status line as it is
	isErr   bool
	ignored bool // not the part's message: the root model answers it
	closed  bool // the part's prompt closed: its layer comes off the focus
}

// take carries out r: the prompt's layer off the focus, the status line,
// the command.
func (m *Model) take(r reply) tea.Cmd {
	if r.closed {
		m.focus.pop()
	}
	if r.status == "" {
		return r.cmd
	}
	status := m.setStatus(r.status, r.isErr)
	if r.cmd == nil {
		return status
	}
	return tea.Batch(r.cmd, status)
}
