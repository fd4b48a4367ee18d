package ui

import (
	"fmt"
	"maps"
	"slices"

	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
)

// applyBatch takes the new snapshot and appends the batch's events to the
// hosts' rings. The cursor follows its host, not its row.
func (m *Model) applyBatch(b remote.Batch) tea.Cmd {
	sel, cur := m.selectedName(), m.table.cursorHost()
	local := m.localHashes
	if m.caps.LocalHashes != nil {
		m.localHashes = m.caps.LocalHashes()
	}
	if b.Hosts == nil && b.Delta && len(b.States) == len(b.Taken) && len(m.hosts) == len(m.table.hosts) && len(m.hosts) > 0 {
		m.applyStates(b, local, sel, cur)
	} else {
		m.keepDrifts(b, local)
		m.hosts, m.ownHosts = b.Hosts, false
		m.table.setSnapshot(b, sel, cur)
	}
	var statusCmd tea.Cmd
	var planCmds []tea.Cmd
	for _, ev := range b.Events {
		if ev.Kind == event.KindCommand {
			m.recordAction(ev)
			continue
		}
		l, ok := m.lineOf(ev)
		if !ok {
			continue
		}
		if j := ev.Journal; j != nil && j.InvocationID != "" && j.InvocationID != m.lastInvocation[ev.Host] {
			if m.lastInvocation[ev.Host] != "" {
				m.push(ev.Host, logLine{Time: ev.Time, Text: "new invocation " + shortID(j.InvocationID), Kind: lineMark})
				m.newInvocation(ev.Host)
			}
			m.lastInvocation[ev.Host] = j.InvocationID
		}
		if ev.Kind == event.KindAction && ev.Action != nil && m.benchEvent(ev) {
			continue // a request counted: the bar shows it, the log need not
		}
		m.push(ev.Host, l)
		if ev.Kind == event.KindAction && ev.Action != nil {
			m.recordAction(ev)
			if ev.Action.Stage == event.ActionDone || ev.Action.Stage == event.ActionFailed {
				statusCmd = m.setStatus(ev.Host+": "+actionText(*ev.Action), ev.Action.Stage == event.ActionFailed)
				planCmds = append(planCmds, m.actionEnded(ev))
			}
		}
	}
	m.trimLogs()
	if cmd := m.benchSettled(); cmd != nil {
		return tea.Batch(append(planCmds, cmd)...)
	}
	if len(planCmds) == 0 {
		return statusCmd
	}
	return tea.Batch(append(planCmds, statusCmd)...)
}

// applyStates takes a batch that carries only the states of the hosts
// taken anew (Batch.States) into the console's own snapshot, in place:
// the cost is theirs, not the fleet's. local is the local build's hashes
// before b.
func (m *Model) applyStates(b remote.Batch, local map[string]string, keep ...string) {
	if !m.ownHosts {
		first := &m.hosts[0]
		m.hosts, m.ownHosts = slices.Clone(m.hosts), true
		if m.driftsOf.first == first {
			m.driftsOf.first = &m.hosts[0] // the same states
		}
	}
	for k, i := range b.Taken {
		if i < 0 || i >= len(m.hosts) {
			b.Taken, b.States = nil, nil // not this snapshot's hosts: nothing to place
			break
		}
		if !maps.Equal(m.hosts[i].KernelHashes, b.States[k].KernelHashes) {
			m.driftsOf = driftCache{}
		}
	}
	if !maps.Equal(local, m.localHashes) {
		m.driftsOf = driftCache{}
	}
	m.table.placeStates(m.hosts, b.Taken, b.States, keep...)
}

// trimLogs keeps the hosts' logs within the memory budget; the open
// host's filter recounts its matches if its oldest lines went.
func (m *Model) trimLogs() {
	var phase map[string]startup.Phase // built only when over budget
	idle := func(host string) bool {
		if phase == nil {
			phase = map[string]startup.Phase{}
			for _, h := range m.hosts {
				phase[h.Name] = h.Startup.Phase
			}
		}
		return phase[host].Quiet() // not starting or failing now
	}
	if !slices.Contains(m.logs.trim(idle), m.host.name) {
		return
	}
	m.host.trimmed()
}

// push appends a line to host's ring, keeping the open filter's count.
func (m *Model) push(host string, l logLine) {
	_, old, evicted := m.logs.push(host, l)
	if m.focus.view() == focusHost && host == m.host.name {
		m.host.appended(old, evicted)
	}
}

// shortID is the start of an invocation id, enough to tell runs apart.
func shortID(id string) string { return id[:min(len(id), 12)] }

// actionText says where an action is: "restart done", "mode … failed: …".
func actionText(a event.ActionResult) string {
	if a.Bench != nil {
		return a.Name + " result: " + a.Bench.Summary()
	}
	s := a.Name + " " + string(a.Stage)
	if a.Percent > 0 && a.Stage == event.ActionProgress {
		s += fmt.Sprintf(" %d%%", a.Percent)
	}
	if a.Detail != "" {
		s += ": " + a.Detail
	}
	if a.Err != "" {
		s += ": " + a.Err
	}
	return s
}

// lineOf turns an event into a log line: journal messages, gaps and action
// results; other kinds live in the snapshot, not the log.
func (m *Model) lineOf(ev event.Event) (logLine, bool) {
	switch {
	case ev.Kind == event.KindJournal && ev.Journal != nil:
		k := lineJournal
		if ev.Journal.Priority <= 3 {
			k = lineErr
		}
		return logLine{Time: ev.Time, Text: ev.Journal.Message, Kind: k}, true
	case ev.Kind == event.KindGap && ev.Gap != nil && ev.Gap.Reason == event.GapHostKey:
		return logLine{Time: ev.Time, Text: ev.Gap.Message, Kind: lineGap}, true // a notice, not a loss
	case ev.Kind == event.KindGap && ev.Gap != nil:
		t := "gap: " + ev.Gap.Reason
		if ev.Gap.Count > 0 {
			t += fmt.Sprintf(" (%d lines lost)", ev.Gap.Count)
		}
		if ev.Gap.Message != "" {
			t += " · " + ev.Gap.Message
		}
		return logLine{Time: ev.Time, Text: t, Kind: lineGap}, true
	case ev.Kind == event.KindAction && ev.Action != nil:
		// The fleet stamps actions in host time; one without a stamp gets
		// the host-time clock's reading on arrival, to keep the pane in order.
		t := ev.Time
		if t.IsZero() {
			t = m.now
		}
		return logLine{Time: t, Text: fmt.Sprintf("#%d %s", ev.Action.ID, actionText(*ev.Action)), Kind: lineAction}, true
	}
	return logLine{}, false
}

// newInvocation is called when host's journal starts a new invocation:
// after a restart issued here, the open host view follows it from its
// first line, whatever the pane was doing.
func (m *Model) newInvocation(host string) {
	if !m.followRestart[host] {
		return
	}
	delete(m.followRestart, host)
	if m.focus.view() == focusHost && m.host.name == host {
		m.host.log.follow = true
	}
}
