package ui

import (
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/rollout"
)

// rolloutRun is the rollout the console drives: the state machine, its
// driver (the loop `bringup rollout` runs too) and the lane under the
// cursor.
type rolloutRun struct {
	r      *rollout.Rollout
	d      *rollout.Driver
	cursor int
}

// rolloutIssued is the door's answer to a rollout's steps.
type rolloutIssued struct {
	d   *rollout.Driver
	res []rollout.Issued
}

// issue hands steps to the door in one command (a host's actions must
// reach the fleet in order); the driver counts them as outstanding.
func (m *Model) issue(steps []rollout.Step) tea.Cmd {
	if len(steps) == 0 || m.rollout == nil {
		return nil
	}
	src, d := m.src, m.rollout.d
	return func() tea.Msg { return rolloutIssued{d: d, res: rollout.DoSteps(src.Do, steps)} }
}

// rolloutHosts are the hosts R acts on: the marked ones, else all, in
// table order; of either, only those the table shows under its filter.
func (m *Model) rolloutHosts() []string {
	if marked := m.table.shownMarked(); len(marked) > 0 {
		return marked
	}
	return m.table.shown()
}

// startRollout answers R: the running rollout's view, or the dialog for a
// new one.
func (m *Model) startRollout() tea.Cmd { return m.startRolloutOn(m.rolloutHosts(), "", "") }

// startRolloutOn opens the rollout dialog for hosts, its mode set to
// kernel=mode when given; or shows the running rollout.
func (m *Model) startRolloutOn(hosts []string, kernel, mode string) tea.Cmd {
	if m.src.ReadOnly() {
		return m.setStatus("read-only: rollout is disabled", true)
	}
	if m.rollout != nil && !m.rollout.r.Settled() {
		m.showView(focusRollout)
		return nil
	}
	if len(hosts) == 0 {
		return m.setStatus("no hosts to roll out to", true)
	}
	unit := "the unit"
	if hs := m.hostState(hosts[0]); hs != nil && hs.Unit != "" {
		unit = hs.Unit
	}
	hosts = m.withDeployments(hosts) // a deployment is rolled out whole, as one step
	f := newRolloutForm(hosts, unit, m.opts.Kernels)
	f.deployments = m.table.deployments
	if i := slices.Index(f.modes, kernel+"="+mode); kernel != "" && i >= 0 {
		f.mode = i
	}
	if m.table.filter.active() {
		f.filter = m.table.filter.text
	}
	m.openDialog(&dialog{kind: dlgRollout, host: strings.Join(hosts, ", "), unit: unit, rollout: f})
	return nil
}

// rolloutFormKey edits the rollout dialog; enter runs the preflight for
// the target mode on every host, then asks to confirm.
func (m *Model) rolloutFormKey(msg tea.KeyPressMsg) tea.Cmd {
	k, d := m.keys, m.dialog
	f := d.rollout
	if f.confirming {
		switch {
		case d.checking != nil && msg.String() == "s":
			d.skipCaptureCheck()
		case d.checking != nil && key.Matches(msg, k.Confirm):
			return m.setStatus("waiting for the capture check ([s] skips it, recorded; [esc] back)", true)
		case key.Matches(msg, k.Confirm):
			m.closeDialog()
			return m.beginRollout(f, "", "", false)
		case key.Matches(msg, k.Cancel):
			f.confirming = false
			d.checking, d.checkNote = nil, ""
		}
		return nil
	}
	switch s := msg.String(); {
	case key.Matches(msg, k.Back):
		m.closeDialog()
		return m.setStatus("cancelled", false)
	case key.Matches(msg, k.Up):
		f.field = (f.field + numFields - 1) % numFields
	case key.Matches(msg, k.Down):
		f.field = (f.field + 1) % numFields
	case s == "left" || s == "h":
		f.change(-1)
	case s == "right" || s == "l" || s == "space":
		f.change(1)
	case s == "enter":
		if pe := m.rolloutPreflight(f.plan()); pe != nil {
			d := preflightDialog(pe.Host, f.unit, pe, len(f.hosts))
			d.rollout = f
			m.openDialog(d)
			return nil
		}
		f.confirming = true
		return m.startCaptureCheck(d)
	}
	return nil
}

// rolloutInMode answers the rollout's preflight dialog with a safe mode:
// the form's mode becomes kernel=mode and its confirmation weighs it (the
// lint and the checks, in the background) before the person starts it;
// with nothing to weigh it starts at once.
func (m *Model) rolloutInMode(f *rolloutForm, kernel, mode string) tea.Cmd {
	i := slices.Index(f.modes, kernel+"="+mode)
	if i < 0 {
		m.closeDialog()
		return m.beginRollout(f, kernel, mode, false)
	}
	f.mode = i
	d := &dialog{kind: dlgRollout, host: strings.Join(f.hosts, ", "), unit: f.unit, rollout: f}
	cmd := m.startCaptureCheck(d)
	if cmd == nil {
		m.closeDialog()
		return m.beginRollout(f, kernel, mode, false)
	}
	f.confirming = true
	m.openDialog(d)
	return cmd
}

// rolloutPreflight checks every host of p against the capture-safety
// rule as it will start: in p's mode when p changes it, else in the mode
// on disk.
func (m *Model) rolloutPreflight(p rollout.Plan) *remote.PreflightError {
	if refused := remote.PreflightAll(m.statesOf(p.Hosts), m.opts.Kernels, p.Changes()); len(refused) > 0 {
		return refused[0]
	}
	return nil
}

// beginRollout starts the rollout the form describes, with the mode
// replaced by kernel=mode when given (a capture-safe mode picked in the
// preflight dialog), or forced past the preflight.
func (m *Model) beginRollout(f *rolloutForm, kernel, mode string, force bool) tea.Cmd {
	p := f.plan()
	if kernel != "" {
		p.Mode = &rollout.ModeChange{Kernel: kernel, Mode: mode}
	}
	p.Force, p.SkipCheck = force, f.skipCheck
	p.Now = m.opts.Now
	p.Before, p.SlowerBy = m.previousRates(p.Hosts)
	r, err := rollout.New(p, m.opts.Kernels)
	if err != nil {
		return m.setStatus(err.Error(), true)
	}
	m.rollout = &rolloutRun{r: r, d: rollout.NewDriver(r)}
	m.showView(focusRollout)
	return tea.Batch(m.setStatus("rollout started: "+p.String(), false), m.issue(m.rollout.d.Start(m.hosts)))
}

// rolloutIssuedMsg feeds the door's answer back to the driver, which then
// observes the batches it held meanwhile.
func (m *Model) rolloutIssuedMsg(msg rolloutIssued) tea.Cmd {
	if m.rollout == nil || m.rollout.d != msg.d {
		return nil // a rollout since replaced
	}
	cmds := []tea.Cmd{}
	for _, s := range msg.res {
		cmds = append(cmds, m.issued(actionIssued{host: s.Step.Host, action: s.Step.Action, id: s.ID, err: s.Err}))
	}
	before := m.rollout.r.State().Status
	steps := m.rollout.d.Answer(msg.res)
	return tea.Batch(append(cmds, m.statusChange(before), m.issue(steps))...)
}

// previousRates are the before rates of a rollout over hosts: each host's
// previous serving run, answered from memory by the source.
func (m *Model) previousRates(hosts []string) (map[string]rollout.Rate, float64) {
	previous, slowerBy := m.caps.PreviousRun, m.caps.SlowerBy
	if previous == nil || slowerBy == nil {
		return nil, 0
	}
	out := map[string]rollout.Rate{}
	for _, h := range hosts {
		hs := m.hostState(h)
		if hs == nil {
			continue
		}
		if rec, ok := previous(h, hs.Unit); ok {
			out[h] = rollout.Rate{Modes: rec.Modes, TPS: rec.DecodeTPS}
		}
	}
	return out, slowerBy()
}

// observe hands a batch to the rollout's driver: while it runs, and once
// it settled too, since the new runs' decode rates come in after the
// hosts serve (no steps come of a settled rollout).
func (m *Model) observe(b remote.Batch) tea.Cmd {
	if m.rollout == nil {
		return nil
	}
	if b.Hosts == nil && b.Delta {
		// Only the hosts taken anew came: the rollout gets its own
		// hosts' states, copies (it may hold the batch a while), not
		// the fleet's (it folds only its own).
		for _, h := range m.rollout.r.Plan().Hosts {
			if hs := m.hostState(h); hs != nil {
				b.Hosts = append(b.Hosts, *hs)
			}
		}
	}
	before := m.rollout.r.State().Status
	steps := m.rollout.d.Observe(b)
	return tea.Batch(m.statusChange(before), m.issue(steps))
}

// statusChange reports the rollout's state when it is no longer before.
func (m *Model) statusChange(before rollout.Status) tea.Cmd {
	if st := m.rollout.r.State(); st.Status != before {
		return m.rolloutStatus(st)
	}
	return nil
}

// rolloutStatus reports the rollout's end in the status line; a halt puts
// the cursor on the halted host, ready for b.
func (m *Model) rolloutStatus(st rollout.State) tea.Cmd {
	switch st.Status {
	case rollout.Halted:
		for i, l := range m.rollout.r.Lanes() {
			if l.Host == st.Host {
				m.rollout.cursor = i
			}
		}
		return m.setStatus("rollout halted on "+st.Host+": b rolls it back, a ends the rollout", true)
	case rollout.Done:
		return m.setStatus("rollout done: every host serves", false)
	case rollout.Running, rollout.Aborted: // nothing to announce
	}
	return nil
}

// rolloutKey handles the rollout view.
func (m *Model) rolloutKey(msg tea.KeyPressMsg) tea.Cmd {
	k, ro := m.keys, m.rollout
	lanes := ro.r.Lanes()
	switch {
	case key.Matches(msg, k.Back):
		m.focus.pop()
	case key.Matches(msg, k.Up):
		ro.cursor = max(0, ro.cursor-1)
	case key.Matches(msg, k.Down):
		ro.cursor = max(0, min(len(lanes)-1, ro.cursor+1))
	case key.Matches(msg, k.Open):
		if ro.cursor < len(lanes) {
			m.openHost(lanes[ro.cursor].Host)
		}
	case key.Matches(msg, k.Abort):
		if ro.r.State().Status != rollout.Running {
			return m.setStatus("the rollout is not running", false)
		}
		ro.r.Abort()
		return m.setStatus("rollout aborted: hosts not reached are untouched; actions under way run to their end", false)
	case key.Matches(msg, k.Rollback):
		if m.src.ReadOnly() {
			return m.setStatus("read-only: rollback is disabled", true)
		}
		if ro.cursor >= len(lanes) {
			return nil
		}
		l := lanes[ro.cursor]
		if ro.r.State().Status == rollout.Running {
			return m.setStatus("rollback: the rollout is still running (a aborts it)", true)
		}
		to := ro.r.RollbackTo(l.Host)
		if to == nil {
			return m.setStatus("rollback "+l.Host+": the rollout changed no mode on it", true)
		}
		unit := "the unit"
		if hs := m.hostState(l.Host); hs != nil {
			unit = hs.Unit
		}
		m.openDialog(&dialog{kind: dlgConfirm, host: l.Host, unit: unit, kernel: to.Kernel,
			rollbackTo: to.Mode, action: remote.Action{Kind: remote.ActUndoMode, Kernel: to.Kernel}})
	}
	return nil
}

// rollback rolls host back after the confirmation.
func (m *Model) rollback(host string) tea.Cmd {
	if m.rollout == nil {
		return nil
	}
	steps, err := m.rollout.d.Rollback(host)
	if err != nil {
		return m.setStatus(err.Error(), true)
	}
	return tea.Batch(m.setStatus("rolling back "+host, false), m.issue(steps))
}
