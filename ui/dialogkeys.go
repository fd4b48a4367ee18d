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
		if d.rollout != nil {
			return m.rolloutInMode(d.rollout, d.kernel, mode)
		}
		return m.restartInMode(d, mode)
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
		if d.checking != nil {
			if msg.String() == "s" {
				d.skipCaptureCheck()
				return nil
			}
			if key.Matches(msg, k.Confirm) && d.restarts() {
				return m.setStatus("waiting for the capture check ([s] skips it, recorded; [esc] cancels)", true)
			}
		}
		if key.Matches(msg, k.Confirm) {
			m.closeDialog()
			if d.rollbackTo != "" {
				return m.rollback(d.host)
			}
			if d.action.Kind == remote.ActBench {
				return m.beginBench(d.hostList(), d.action)
			}
			if d.thenRestart {
				return restartIn(m.src, d, d.action.Mode)
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

// restartInMode answers the preflight dialog p with a safe mode: its
// confirmation weighs the restart in it (the lint and the checks, in the
// background) and shows their verdict before the person confirms; with
// nothing to weigh it sets the mode and restarts at once.
func (m *Model) restartInMode(p *dialog, mode string) tea.Cmd {
	c := confirmDialog(p.host, p.unit, remote.Action{Kind: remote.ActSetMode, Kernel: p.kernel, Mode: mode}).on(p.targets)
	c.thenRestart, c.refused = true, p.refused
	if cmd := m.startCaptureCheck(c); cmd != nil {
		m.openDialog(c)
		return cmd
	}
	m.closeDialog()
	return restartIn(m.src, p, mode)
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
	cd := confirmDialog(d.host, d.unit, remote.Action{Kind: remote.ActSetMode, Kernel: d.kernel, Mode: c.value}).on(d.targets)
	m.openDialog(m.notePlan(cd, d.targets))
	return m.startCaptureCheck(cd)
}
