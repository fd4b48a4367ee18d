package ui

import (
	"errors"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/startup"
)

// benchRun is the smoke load started here (b, :bench): per host, the
// action's id once the fleet took it, the requests done so far, and how
// it ended. The overlay shows it until every host's bench has ended; the
// UI itself sends nothing: the fleet runs the load (remote/live, through
// the host's SSH tunnel) and reports it as action events.
type benchRun struct {
	hosts    []string
	requests int // N of each host
	conc     int
	ids      map[string]int
	done     map[string]int
	ended    map[string]string // host → the end in words ("" while running)
	stopping bool
}

// running reports whether some host's bench has not ended.
func (b *benchRun) running() bool {
	for _, h := range b.hosts {
		if _, ok := b.ended[h]; !ok {
			return true
		}
	}
	return false
}

// benchHosts is what b acts on: the marked hosts on the table, else the
// selected host.
func (m *Model) benchHosts() []string {
	if m.focus.view() == focusTable && len(m.table.marked) > 0 {
		var hs []string
		for _, h := range m.hosts {
			if m.table.marked[h.Name] {
				hs = append(hs, h.Name)
			}
		}
		return hs
	}
	return m.keyHosts()
}

// startBench answers b.
func (m *Model) startBench() tea.Cmd { return m.startBenchOn(m.benchHosts()) }

// startBenchOn asks before a smoke load on hosts: each must serve (a load
// on a starting or failed service measures nothing), and one load runs
// at a time. It changes nothing on the hosts, so read-only allows it.
func (m *Model) startBenchOn(hosts []string) tea.Cmd {
	if len(hosts) == 0 {
		return m.setStatus("no host selected", true)
	}
	for _, h := range hosts {
		hs := m.hostState(h)
		if h == "" || hs == nil {
			return m.setStatus("no host selected", true)
		}
		if hs.Startup.Phase != startup.Serving {
			return m.setStatus(fmt.Sprintf("%s: not serving (phase %s): a smoke load needs a serving host", h, hs.Startup.Phase), true)
		}
	}
	if m.bench != nil && m.bench.running() {
		return m.setStatus("a bench is running (esc stops it)", true)
	}
	host, unit, _ := m.target(hosts)
	a := remote.Action{Kind: remote.ActBench, Requests: event.BenchRequests, Concurrency: event.BenchConcurrency}
	d := confirmDialog(host, unit, a).on(hosts)
	d.note = fmt.Sprintf("Esc or ctrl+c stops it; never more than %d requests go to a host", a.Requests)
	m.openDialog(d)
	return nil
}

// beginBench opens the overlay over a confirmed bench on hosts and
// issues it on each.
func (m *Model) beginBench(hosts []string, a remote.Action) tea.Cmd {
	m.bench = &benchRun{hosts: hosts, requests: a.Requests, conc: a.Concurrency,
		ids: map[string]int{}, done: map[string]int{}, ended: map[string]string{}}
	m.focus.push(focusBench)
	return doOn(m.src, hosts, a)
}

// benchIssued takes the fleet's answer for one host: the action's id, or
// why it refused (that host's bench has then ended).
func (m *Model) benchIssued(msg actionIssued) tea.Cmd {
	b := m.bench
	if b == nil {
		return nil
	}
	if msg.err != nil {
		b.ended[msg.host] = "not started: " + msg.err.Error()
		return m.benchSettled()
	}
	b.ids[msg.host] = msg.id
	return nil
}

// benchEvent folds an action event into the bench run when it is one of
// its hosts' and reports whether it is a count the log need not show
// (one per request or so; the bar shows them).
func (m *Model) benchEvent(ev event.Event) (count bool) {
	a, b := ev.Action, m.bench
	count = a.Stage == event.ActionProgress && a.Total > 0 && a.Bench == nil
	if b == nil || b.ids[ev.Host] != a.ID || a.ID == 0 {
		return count
	}
	if a.Total > 0 {
		b.done[ev.Host] = a.Done
	}
	switch a.Stage {
	case event.ActionDone:
		b.ended[ev.Host] = "done"
	case event.ActionFailed:
		b.ended[ev.Host] = "failed: " + a.Err
	case event.ActionStarted, event.ActionProgress:
	}
	return count
}

// benchSettled closes the overlay once every host's bench has ended and
// says how they went in the status line; the host view keeps each
// result (HostState.Bench) and the log a line with it.
func (m *Model) benchSettled() tea.Cmd {
	b := m.bench
	if b == nil || b.running() {
		return nil
	}
	if m.focus.top() == focusBench {
		m.focus.pop()
	}
	var parts []string
	failed := false
	for _, h := range b.hosts {
		hs := m.hostState(h)
		switch {
		case hs != nil && hs.Bench != nil && hs.Bench.Action == b.ids[h]:
			parts = append(parts, h+": bench "+hs.Bench.Summary())
			failed = failed || hs.Bench.Errors > 0 || hs.Bench.Interrupted
		default:
			parts = append(parts, h+": bench "+b.ended[h])
			failed = failed || b.ended[h] != "done"
		}
	}
	m.bench = nil
	return m.setStatus(strings.Join(parts, "; "), failed)
}

// benchCancelled is the answer of the overlay's stop: why a host's bench
// could not be cancelled (it may have just ended).
type benchCancelled struct{ errs []error }

// benchKey answers the overlay: esc or ctrl+c stops every host's bench
// (the fleet cancels the action; what was measured until then is still
// reported). Other keys wait for the load to end.
func (m *Model) benchKey(msg tea.KeyPressMsg) tea.Cmd {
	switch msg.String() {
	case "esc", "ctrl+c":
	default:
		return nil
	}
	b := m.bench
	cancel := m.caps.Cancel
	if cancel == nil {
		return m.setStatus("this fleet cannot stop an action under way", true)
	}
	b.stopping = true
	type job struct {
		host string
		id   int
	}
	var jobs []job
	for _, h := range b.hosts {
		if _, ended := b.ended[h]; !ended {
			jobs = append(jobs, job{h, b.ids[h]})
		}
	}
	return func() tea.Msg {
		var errs []error
		for _, j := range jobs {
			if err := cancel(j.host, j.id); err != nil && !errors.Is(err, remote.ErrNoSuchAction) {
				errs = append(errs, err)
			}
		}
		return benchCancelled{errs: errs}
	}
}

// benchBox is the overlay: each host's bar of requests done of N, or how
// its bench ended.
func (m *Model) benchBox(w int) string {
	b, s := m.bench, m.styles
	bw := min(w, 90)
	iw := max(1, bw-4)
	title := fmt.Sprintf("bench · %d requests, %d at a time, to /v1/completions", b.requests, b.conc)
	lines := []string{s.DialogTitle.Render(clip(title, iw)), ""}
	hostW := 4
	for _, h := range b.hosts {
		hostW = max(hostW, min(16, width(h)))
	}
	barW := max(6, min(30, iw-hostW-20))
	for _, h := range b.hosts {
		line := fit(h, hostW) + " "
		switch end, ok := b.ended[h]; {
		case ok && end != "done":
			line += s.StatusErr.Render(end)
		case ok:
			line += "done"
		default:
			done := b.done[h]
			line += bar(float64(done)/float64(max(1, b.requests)), barW, s) + fmt.Sprintf(" %d/%d requests", done, b.requests)
		}
		lines = append(lines, clip(line, iw))
	}
	foot := "[esc/ctrl+c] stop · the result goes to the host view and its log"
	if b.stopping {
		foot = "stopping… (what was measured is kept)"
	}
	lines = append(lines, "", s.Dim.Render(clip(foot, iw)))
	return frame(lines, bw, s.DialogBorder)
}

// benchRow is the host view's line on the latest bench: what it
// measured, at what concurrency, when, under which modes.
func (v *hostView) benchRow() string {
	b := v.hs.Bench
	line := "  bench " + b.Summary()
	if len(b.Modes) > 0 {
		line += " · " + history.ModesKey(b.Modes)
	}
	return line + " · " + b.Time.Format("15:04:05")
}
