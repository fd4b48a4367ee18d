package ui

import (
	"fmt"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
)

// preflightKey answers the preflight dialog: a capture-safe mode (set it,
// then restart), or the typed host count to go on anyway.
func (m *Model) preflightKey(msg tea.KeyPressMsg) tea.Cmd {
	k, d := m.keys, m.dialog
	switch s := msg.String(); {
	case len(s) == 1 && s[0] >= '0' && s[0] <= '9':
		if len(d.typed) < 6 {
			d.typed += s
		}
		d.cursor = len(d.choices)
	case s == "backspace":
		d.typed = d.typed[:max(0, len(d.typed)-1)]
	case key.Matches(msg, k.Cancel):
		m.closeDialog()
		return m.setStatus("cancelled", false)
	case key.Matches(msg, k.Up):
		d.move(-1)
	case key.Matches(msg, k.Down):
		d.move(1)
	case s == "enter" && d.cursor < len(d.choices):
		mode := d.choices[d.cursor].value
		m.closeDialog()
		if d.rollout != nil {
			return m.beginRollout(d.rollout, d.kernel, mode, false)
		}
		return restartIn(m.src, d, mode)
	case s == "enter":
		if !kernels.OverrideConfirmed(d.typed, d.hosts) {
			return m.setStatus(fmt.Sprintf("type %d, the number of hosts, to go on anyway", d.hosts), true)
		}
		m.closeDialog()
		if d.rollout != nil {
			return m.beginRollout(d.rollout, "", "", true)
		}
		return m.doPlanned(d.hostList(), remote.Action{Kind: remote.ActRestart, Force: true})
	}
	return nil
}

func (m *Model) dialogKey(msg tea.KeyPressMsg) tea.Cmd {
	k, d := m.keys, m.dialog
	if d.kind == dlgPreflight {
		return m.preflightKey(msg)
	}
	if key.Matches(msg, k.Cancel) {
		m.closeDialog()
		return m.setStatus("cancelled", false)
	}
	if d.kind == dlgConfirm {
		if key.Matches(msg, k.Confirm) {
			m.closeDialog()
			if d.rollbackTo != "" {
				return m.rollback(d.host)
			}
			if d.action.Kind == remote.ActBench {
				return m.beginBench(d.hostList(), d.action)
			}
			return m.doPlanned(d.hostList(), d.action)
		}
		return nil
	}
	switch s := msg.String(); {
	case key.Matches(msg, k.Up):
		d.move(-1)
	case key.Matches(msg, k.Down):
		d.move(1)
	case len(s) == 1 && s[0] >= '1' && s[0] <= '9' && int(s[0]-'1') < len(d.choices):
		d.cursor = int(s[0] - '1')
		return m.choose()
	case key.Matches(msg, k.Confirm):
		return m.choose()
	}
	return nil
}

// choose takes the chooser's cursor item: a kernel leads to its modes, a
// mode to the confirmation.
func (m *Model) choose() tea.Cmd {
	d := m.dialog
	if len(d.choices) == 0 {
		m.closeDialog()
		return nil
	}
	c := d.choices[d.cursor]
	if d.kind == dlgKernel && d.undo {
		m.openDialog(confirmDialog(d.host, d.unit, remote.Action{Kind: remote.ActUndoMode, Kernel: c.value}).on(d.targets))
		return nil
	}
	if d.kind == dlgKernel {
		k, _ := m.opts.Kernels.Kernel(c.value)
		var modes []kernels.ActiveMode
		if hs := m.hostState(d.host); hs != nil && len(d.targets) == 0 {
			modes = hs.Modes
		}
		m.openDialog(modeDialog(d.host, d.unit, k, modes).on(d.targets))
		return nil
	}
	m.openDialog(m.notePlan(confirmDialog(d.host, d.unit, remote.Action{Kind: remote.ActSetMode, Kernel: d.kernel, Mode: c.value}).on(d.targets), d.targets))
	return nil
}
