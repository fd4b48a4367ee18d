package ui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/remote/event"
)

// actionEntry is one line of the log of remote commands: an action's
// progress (res) or one command or D-Bus call made for it (cmd non-nil).
type actionEntry struct {
	time time.Time
	host string
	res  event.ActionResult
	cmd  *event.Command
}

// cmdLog is the bounded log of what bringup did on the hosts, in time
// order, with a count of the entries that fell off its start.
type cmdLog struct {
	entries []actionEntry
	dropped int
	top     int  // index of the first entry shown when not following
	follow  bool // keep the newest entry at the bottom
}

// add inserts e in time order (entries mostly arrive in order, so this is
// a short walk from the end) and drops the oldest beyond maxActions.
func (l *cmdLog) add(e actionEntry) {
	i := len(l.entries)
	for i > 0 && !e.time.IsZero() && l.entries[i-1].time.After(e.time) {
		i--
	}
	l.entries = slices.Insert(l.entries, i, e)
	if n := len(l.entries) - maxActions; n > 0 {
		l.entries = append(l.entries[:0], l.entries[n:]...)
		l.dropped += n
		l.top = max(0, l.top-n)
	}
}

// start is the index of the first entry shown in a pane of h rows.
func (l *cmdLog) start(h int) int {
	hi := max(0, len(l.entries)-h)
	if l.follow {
		return hi
	}
	return min(max(0, l.top), hi)
}

// scroll moves the pane by n entries; reaching the bottom follows again.
func (l *cmdLog) scroll(h, n int) {
	l.top = l.start(h) + n
	l.follow = l.top >= len(l.entries)-h
	l.top = l.start(h)
}

// recordAction adds an action result or a command event to the log.
func (m *Model) recordAction(ev event.Event) {
	e := actionEntry{time: ev.Time, host: ev.Host}
	switch {
	case ev.Kind == event.KindAction && ev.Action != nil:
		e.res = *ev.Action
	case ev.Kind == event.KindCommand && ev.Command != nil:
		c := *ev.Command
		e.cmd = &c
	default:
		return
	}
	if e.time.IsZero() {
		e.time = m.now
	}
	m.remoteCommands.add(e)
}

// commandText is one command's line after its time and host: via, the
// command, its outcome and how long it took.
func commandText(c event.Command) (text string, failed bool) {
	out := fmt.Sprintf("%-5s %s", c.Via, c.Text)
	var res []string
	switch {
	case c.Err != "":
		res, failed = append(res, "error: "+c.Err), true
	case c.Via == "exec" || c.Exit != 0:
		res = append(res, fmt.Sprintf("exit %d", c.Exit))
		failed = c.Exit != 0
	}
	if c.Result != "" {
		res = append(res, c.Result)
	}
	if c.Duration > 0 {
		res = append(res, fmtMillis(c.Duration))
	}
	if len(res) > 0 {
		out += " → " + strings.Join(res, " · ")
	}
	return out, failed
}

// fmtMillis prints a command's duration: 85ms, 1.2s, then as fmtDur.
func fmtMillis(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return fmtDur(d)
}

// actionsRows is the rows the log of remote commands shows in an h-row
// screen: the box's border, title, blank, footer lines taken off.
func actionsRows(h int) int { return max(1, h-6) }

// actionsBox is the log of remote commands: every action's progress and
// every command and D-Bus call made for it, with its result, in time
// order; scrollable.
func (m *Model) actionsBox(w, h int) string {
	bw := min(w, 160)
	iw := max(1, bw-4)
	s := m.styles
	l := &m.remoteCommands
	title := fmt.Sprintf("remote commands · %d", len(l.entries))
	if l.dropped > 0 {
		title += fmt.Sprintf(" · %d older dropped", l.dropped)
	}
	lines := []string{s.DialogTitle.Render(clip(title, iw)), ""}
	rows := actionsRows(h)
	if len(l.entries) == 0 {
		lines = append(lines, s.Dim.Render("none yet"))
	}
	hostW := 4
	for _, e := range l.entries {
		hostW = max(hostW, min(16, len(e.host)))
	}
	first := l.start(rows)
	for _, e := range l.entries[first:min(len(l.entries), first+rows)] {
		var text string
		failed := false
		if e.cmd != nil {
			text, failed = commandText(*e.cmd)
			text = "  " + text
		} else {
			text = fmt.Sprintf("#%-3d %s", e.res.ID, actionText(e.res))
			failed = e.res.Stage == event.ActionFailed
		}
		line := fmt.Sprintf("%s %s %s", e.time.Format("15:04:05"), fit(e.host, hostW), text)
		st := s.Status
		switch {
		case failed:
			st = s.StatusErr
		case e.cmd != nil:
			st = s.Dim
		}
		lines = append(lines, st.Render(clip(precut(line, iw), iw)))
	}
	for len(lines) < rows+2 && len(l.entries) > rows {
		lines = append(lines, "")
	}
	pos := "end"
	if !l.follow && first+rows < len(l.entries) {
		pos = fmt.Sprintf("%d newer ↓", len(l.entries)-first-rows)
	}
	lines = append(lines, s.Dim.Render(clip("j/k pgup/pgdn g/G scroll · "+pos+" · @ or esc to close", iw)))
	return frame(lines, bw, s.DialogBorder)
}

// actionsKey scrolls the log of remote commands, or closes it.
func (m *Model) actionsKey(msg tea.KeyPressMsg) tea.Cmd {
	k, l := m.keys, &m.remoteCommands
	h := actionsRows(m.height)
	switch {
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case key.Matches(msg, k.Back, k.Help, k.Actions):
		m.focus.pop()
	case key.Matches(msg, k.Up):
		l.scroll(h, -1)
	case key.Matches(msg, k.Down):
		l.scroll(h, 1)
	case key.Matches(msg, k.PageUp):
		l.scroll(h, -max(1, h-1))
	case key.Matches(msg, k.PageDown):
		l.scroll(h, max(1, h-1))
	case key.Matches(msg, k.Top):
		l.follow, l.top = false, 0
	case key.Matches(msg, k.Bottom):
		l.follow = true
	}
	return nil
}
