package ui

import (
	"errors"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
)

// reconnect answers ctrl+r on the selected host.
func (m *Model) reconnect() tea.Cmd { return m.reconnectOn(m.keyHosts()) }

// reconnectOn asks the connections of hosts, stopped on a host-key or
// authentication failure the person has now fixed, to dial again. It
// changes nothing on the hosts, so read-only allows it.
func (m *Model) reconnectOn(hosts []string) tea.Cmd {
	for _, h := range hosts {
		if h == "" || m.hostState(h) == nil {
			return m.setStatus("no host selected", true)
		}
	}
	reconnect := m.caps.Reconnect
	if reconnect == nil {
		return m.setStatus("this fleet's connections cannot be restarted", true)
	}
	return func() tea.Msg {
		var errs []error
		for _, h := range hosts {
			if err := reconnect(h); err != nil {
				errs = append(errs, err)
			}
		}
		return reconnectIssued{hosts: hosts, errs: errs}
	}
}

// reconnected shows a reconnect's answer in the status line.
func (m *Model) reconnected(msg reconnectIssued) tea.Cmd {
	switch {
	case len(msg.errs) == 1 && len(msg.hosts) == 1:
		return m.setStatus(msg.errs[0].Error(), true)
	case len(msg.errs) > 0:
		return m.setStatus(fmt.Sprintf("reconnecting %d of %d hosts; %v", len(msg.hosts)-len(msg.errs), len(msg.hosts), errors.Join(msg.errs...)), true)
	}
	return m.setStatus(foldHosts(msg.hosts)+": reconnecting", false)
}

// issued reports an answer of Source.Do in the status line; a restart
// issued here makes the host view follow the new invocation.
func (m *Model) issued(msg actionIssued) tea.Cmd {
	if msg.action.Kind == remote.ActBench {
		if cmd := m.benchIssued(msg); cmd != nil || msg.err == nil {
			return cmd
		}
	}
	if msg.err != nil {
		return m.setStatus(fmt.Sprintf("%s: %s: %v", msg.host, msg.action, msg.err), true)
	}
	if msg.action.Kind == remote.ActRestart {
		m.followRestart[msg.host] = true
		if m.focus.view() == focusHost && m.host.name == msg.host {
			m.host.log.follow = true
		}
	}
	return m.setStatus(fmt.Sprintf("%s: %s issued (#%d)", msg.host, msg.action, msg.id), false)
}

// refuse reports why an action on hosts may not go on, or "" when it may:
// the one check behind every key and palette command that changes hosts.
func (m *Model) refuse(what string, hosts []string) string {
	switch {
	case m.src.ReadOnly():
		return "read-only: " + what + " is disabled"
	case len(hosts) == 0:
		return "no host selected"
	}
	for _, h := range hosts {
		if h == "" || m.hostState(h) == nil {
			return "no host selected"
		}
	}
	return ""
}

// target is the host a dialog on hosts names: the host itself, or the
// first one with the rest in the dialog's targets; and the unit they
// share ("the unit" when they differ).
func (m *Model) target(hosts []string) (host, unit string, modes []kernels.ActiveMode) {
	hs := m.hostState(hosts[0])
	host, unit, modes = hs.Name, hs.Unit, hs.Modes
	for _, h := range hosts[1:] {
		if o := m.hostState(h); o == nil || o.Unit != unit {
			unit = "the unit"
		}
	}
	if len(hosts) > 1 {
		modes = nil // no one host's current mode to mark
	}
	return host, unit, modes
}

// on sets the hosts a dialog acts on when they are more than its host.
func (d *dialog) on(hosts []string) *dialog {
	if len(hosts) > 1 {
		d.targets = hosts
	}
	return d
}

// startActionOn begins a's flow on hosts, for its key or its palette
// command. The actions that ask more than a yes are named here (a
// chooser, the preflight, a default kernel); every other one, a new one
// too, goes straight to its confirmation (remote.ActionSpec.Question).
func (m *Model) startActionOn(hosts []string, a remote.Action) tea.Cmd {
	switch a.Kind {
	case remote.ActSetMode:
		if a.Kernel == "" {
			return m.startModeOn(hosts, false)
		}
		return m.confirmModeOn(hosts, a.Kernel, a.Mode)
	case remote.ActUndoMode:
		return m.startModeOn(hosts, true)
	case remote.ActRestart:
		return m.startRestartOn(hosts)
	case remote.ActRedeploy:
		if ks := m.opts.Kernels.Kernels; a.Kernel == "" && len(ks) > 0 {
			a.Kernel = ks[0].Name
		}
	case remote.ActBench:
		return m.startBenchOn(hosts)
	default:
	}
	return m.confirmOn(hosts, a)
}

// startModeOn opens the kernel chooser, or the mode chooser when there is
// only one kernel. With undo it leads to the undo confirmation instead:
// put back the drop-in the last mode change replaced.
func (m *Model) startModeOn(hosts []string, undo bool) tea.Cmd {
	what := "changing the kernel mode"
	if undo {
		what = "undoing a mode change"
	}
	if why := m.refuse(what, hosts); why != "" {
		return m.setStatus(why, true)
	}
	host, unit, modes := m.target(hosts)
	switch ks := m.opts.Kernels.Kernels; {
	case len(ks) == 0:
		return m.setStatus("no kernels configured", true)
	case len(ks) == 1 && undo:
		m.openDialog(confirmDialog(host, unit, remote.Action{Kind: remote.ActUndoMode, Kernel: ks[0].Name}).on(hosts))
	case len(ks) == 1:
		m.openDialog(modeDialog(host, unit, ks[0], modes).on(hosts))
	default:
		d := kernelDialog(host, unit, m.opts.Kernels).on(hosts)
		d.undo = undo
		m.openDialog(d)
	}
	return nil
}

// confirmModeOn asks before setting kernel to mode on hosts: the
// confirmation the mode chooser leads to.
func (m *Model) confirmModeOn(hosts []string, kernel, mode string) tea.Cmd {
	if why := m.refuse("changing the kernel mode", hosts); why != "" {
		return m.setStatus(why, true)
	}
	host, unit, _ := m.target(hosts)
	d := confirmDialog(host, unit, remote.Action{Kind: remote.ActSetMode, Kernel: kernel, Mode: mode}).on(hosts)
	m.openDialog(d)
	return m.startCaptureCheck(d)
}

// startRestartOn runs the capture-safety preflight on the snapshot before
// asking: a restart refused on any of hosts opens the preflight dialog
// instead of the confirmation.
func (m *Model) startRestartOn(hosts []string) tea.Cmd {
	if why := m.refuse("restart", hosts); why != "" {
		return m.setStatus(why, true)
	}
	host, unit, _ := m.target(hosts)
	if pe, refused := m.preflight(hosts); pe != nil {
		d := preflightDialog(pe.Host, unit, pe, len(hosts)).on(hosts)
		if len(hosts) > 1 {
			who := foldHosts(refused)
			if width(who) > 40 {
				who = fmt.Sprintf("the %d refused hosts", len(refused))
			}
			d.refused = refused
			d.reason = foldHosts(refused) + ": " + pe.Reason
			for i := range d.choices {
				d.choices[i].label = fmt.Sprintf("set %s to %s on %s, then restart all %d", pe.Kernel, d.choices[i].value, who, len(hosts))
			}
		}
		m.openDialog(d)
		return nil
	}
	d := confirmDialog(host, unit, remote.Action{Kind: remote.ActRestart}).on(hosts)
	d.note = m.startupNote(hosts)
	m.openDialog(m.notePlan(d, hosts))
	return m.startCaptureCheck(d)
}

// startupNote says how long hosts usually take from a restart to serving,
// from their startup history; "" when none has any.
func (m *Model) startupNote(hosts []string) string {
	var longest time.Duration
	runs, known := 0, 0
	for _, h := range hosts {
		hs := m.hostState(h)
		if hs == nil || !hs.Expected.Known() {
			continue
		}
		known++
		if hs.Expected.Total > longest {
			longest, runs = hs.Expected.Total, hs.Expected.Runs
		}
	}
	switch {
	case known == 0:
		return ""
	case len(hosts) == 1:
		return fmt.Sprintf("It usually serves again after %s (from %d %s)", approxLeft(longest), runs, plural(runs, "run", "runs"))
	}
	return fmt.Sprintf("They usually serve again after %s (the slowest host's median)", approxLeft(longest))
}

// preflight checks a restart of each of hosts: the first refusal, and the
// hosts refused for the same kernel.
func (m *Model) preflight(hosts []string) (*remote.PreflightError, []string) {
	refusals := remote.PreflightAll(m.statesOf(hosts), m.opts.Kernels, nil)
	if len(refusals) == 0 {
		return nil, nil
	}
	first := refusals[0]
	var refused []string
	for _, pe := range refusals {
		if pe.Kernel == first.Kernel {
			refused = append(refused, pe.Host)
		}
	}
	return first, refused
}

// statesOf is the latest state of each of hosts the console knows.
func (m *Model) statesOf(hosts []string) []remote.HostState {
	out := make([]remote.HostState, 0, len(hosts))
	for _, h := range hosts {
		if hs := m.hostState(h); hs != nil {
			out = append(out, *hs)
		}
	}
	return out
}

// confirmOn opens the confirmation for a on hosts.
func (m *Model) confirmOn(hosts []string, a remote.Action) tea.Cmd {
	if why := m.refuse(string(a.Kind), hosts); why != "" {
		return m.setStatus(why, true)
	}
	host, unit, _ := m.target(hosts)
	m.openDialog(m.notePlan(confirmDialog(host, unit, a).on(hosts), hosts))
	return nil
}
