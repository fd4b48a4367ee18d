// Package ui is bringup's terminal UI (Bubble Tea v2): the fleet table, the
// host view with its phase timeline, diagnosis and log pane, the help
// overlay generated from the key map, and the confirmations that guard
// every action on a host.
//
// There is one tea.Model, *Model. Its parts (the table, the host view, the
// log pane, dialogs) are plain structs that render into a given width and
// height. The UI does no IO: batches arrive through a re-arming command
// that reads Source.Updates, and actions leave through Source.Do inside a
// command. Remote text is untrusted: it is measured and cut with the ansi
// package and never interpreted.
package ui

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
	"github.com/bringup-dev/bringup/ui/notify"
)

// Source is what the UI reads and acts through; *remote.Fleet satisfies it.
type Source interface {
	// Updates delivers batches; the UI stops reading when it is closed.
	Updates() <-chan remote.Batch
	// Do starts an action and returns its id; results come back as events.
	Do(host string, a remote.Action) (int, error)
	// ReadOnly reports whether actions that change hosts are refused.
	ReadOnly() bool
	// Capabilities are the optional features the source offers (the local
	// build's hashes, reconnecting, being told the open view, ...); the
	// UI asks once, in New, and does without each one that is nil.
	Capabilities() remote.Capabilities
}

// The fleet is the source the command layer passes.
var _ Source = (*remote.Fleet)(nil)

// Options configures the UI.
type Options struct {
	Title   string // shown in the header and the window title, e.g. "bringup demo · seed ×20"
	Kernels kernels.Catalog
	// Now is the host-time clock for "time in phase"; the demo passes the
	// simulator's scaled clock. Default: time.Now.
	Now      func() time.Time
	NoColor  bool // from NO_COLOR
	LogLines int  // lines kept per host (default 5000)
	// LogBudget bounds the bytes of log text (and ring buffers) kept for
	// all hosts together; over it the oldest lines of idle hosts go first,
	// with a marker line. Default: the source's (remote.Fleet.LogBudget),
	// else remote.DefaultLogBudget less the fleet's pending share.
	LogBudget int
	// Groups are the config's named lists of hosts: palette commands
	// take a group's name wherever they take hosts, and t groups the
	// table's rows by them.
	Groups map[string][]string
	// Labels are each host's labels from the config (rack: r12): t also
	// groups the table by each label key.
	Labels map[string]map[string]string
	// Position, when set, says where a replay stands ("▶ 10:41:03 of
	// 10:52:10"); the header shows it. It is called on every frame, so it
	// must only read a clock.
	Position func() string
	// Replay, when set, lets the keys pause a replay and change its speed;
	// without it those keys do nothing and are not listed.
	Replay Replay
	// Signals are the signals for a person not looking (bell, counts in
	// the window title, progress, desktop notes); the zero value gives
	// none. Tmux says the terminal is tmux (its passthrough is needed).
	Signals notify.Settings
	Tmux    bool
}

// Replay is the control of a replay's clock (*record.Clock is one). The
// UI calls it from Update, so each call must only change the clock: no IO.
type Replay interface {
	// TogglePause pauses a running replay or resumes a paused one and
	// reports whether it is now paused.
	TogglePause() bool
	// Faster doubles the speed (up to its bound) and returns the new one.
	Faster() float64
	// Slower halves the speed (down to its bound) and returns the new one.
	Slower() float64
}

// Timing of the UI's own loops.
const (
	tickEvery   = 500 * time.Millisecond // refreshes "time in phase"
	statusTTL   = 5 * time.Second        // a status message clears itself after this
	maxActions  = 500                    // entries kept in the log of remote commands
	defaultRing = 5000
)

// The messages the model sends itself.
type (
	batchMsg     remote.Batch
	sourceClosed struct{}
	tickMsg      struct{}
	statusExpiry struct{ seq int }
	// actionIssued is the answer of Source.Do: the action's id or why it
	// was refused. It carries its host and action, so it reads on its own.
	actionIssued struct {
		host   string
		action remote.Action
		id     int
		err    error
	}
)

// Model is the root model of the UI; the only tea.Model in the package.
type Model struct {
	src    Source
	caps   remote.Capabilities // what src offers beyond Source
	opts   Options
	keys   KeyMap
	styles Styles
	help   help.Model
	filter textinput.Model

	width, height int
	now           time.Time
	closed        bool // the source closed its channel

	hosts  []remote.HostState
	logs   logStore          // every host's log, under one budget
	inv    map[string]string // the last invocation id seen in each host's journal
	cursor int               // a line of lines, not an index of hosts
	marked map[string]bool

	// The table's filter (/): the filter in force, its prompt, why the
	// text typed does not parse yet, and the hosts it shows (indices of
	// hosts, in order).
	hf      hostFilter
	hfInput textinput.Model
	hfErr   string
	rows    []int

	// The table's lines (host rows, and group summary rows when grouped;
	// the cursor is a line of them), the groupings the config allows,
	// which is in force (0: none, k: groupings[k-1]), the groups it shows,
	// and which groups are expanded (by grouping and bucket key).
	lines     []tableLine
	groupings []grouping
	groupBy   int
	groups    []groupRow
	expanded  map[string]bool

	pal cmdPalette // the `:` command palette

	focus focusStack // what has the keys, over what
	open  string     // the host the host view shows
	// told is the open host view last told to the source (caps.View).
	told string
	lv   logView
	dlg  *dialog // the dialog focusDialog or focusRolloutForm shows

	// unfold shows every rank's copy of a line in the host view (z); by
	// default they fold into one row.
	unfold bool

	status    string
	statusErr bool
	statusSeq int
	cmds      cmdLog // the log of remote commands (`@`)

	// local is the local build's hash per kernel, from the source; nil
	// when it cannot tell.
	local map[string]string
	// watch holds the hosts restarted from here whose new invocation the
	// open host view should follow from its first line.
	watch map[string]bool
	// ro is the rollout started here, running or settled; nil before R.
	ro *rolloutRun

	// signals remembers the signals given, so each is given once.
	signals notify.Tracker
	// sort is the table's order (s cycles it).
	sort tableSort
	// bench is the smoke load started here while its overlay is open.
	bench *benchRun
}

// New returns the UI over src.
func New(src Source, opts Options) *Model {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.LogLines <= 0 {
		opts.LogLines = defaultRing
	}
	if opts.Title == "" {
		opts.Title = "bringup"
	}
	caps := src.Capabilities()
	if caps.LogBudget != nil && opts.LogBudget <= 0 {
		opts.LogBudget = caps.LogBudget()
	}
	if opts.LogBudget <= 0 {
		opts.LogBudget = remote.DefaultLogBudget - remote.DefaultLogBudget/remote.PendingShare
	}
	ti := textinput.New()
	ti.Prompt = "/"
	ti.Placeholder = "filter logs"
	ti.CharLimit = 200
	hfi := textinput.New()
	hfi.Prompt = "/"
	hfi.Placeholder = "filter hosts: name phase:failed mode:validate state:failed"
	hfi.CharLimit = 200
	m := &Model{
		src:     src,
		caps:    caps,
		opts:    opts,
		keys:    DefaultKeyMap(),
		help:    help.New(),
		filter:  ti,
		hfInput: hfi,
		pal:     newCmdPalette(),
		width:   80,
		height:  24,
		now:     opts.Now(),
		logs:    newLogStore(opts.LogLines, opts.LogBudget),
		inv:     map[string]string{},
		marked:  map[string]bool{},
		watch:   map[string]bool{},
		focus:   focusStack{focusTable},
		lv:      newLogView(),
		cmds:    cmdLog{follow: true},

		groupings: newGroupings(opts.Groups, opts.Labels),
		expanded:  map[string]bool{},
	}
	if len(opts.Kernels.Kernels) == 0 {
		if caps.Kernels != nil {
			m.opts.Kernels = caps.Kernels()
		}
	}
	m.setStyles(true)
	return m
}

// setStyles rebuilds every style for the background.
func (m *Model) setStyles(isDark bool) {
	m.styles = NewStyles(isDark, m.opts.NoColor)
	m.help.Styles = m.styles.Help
	ts := textinput.DefaultStyles(isDark)
	ts.Cursor.Blink = false // a blinking cursor is a tick loop for nothing
	if m.opts.NoColor {
		ts = textinput.Styles{Cursor: textinput.CursorStyle{Shape: tea.CursorBlock}}
	}
	m.filter.SetStyles(ts)
	m.hfInput.SetStyles(ts)
	m.pal.input.SetStyles(ts)
}

// Init asks for the background colour and starts the two loops: batches
// and the clock tick.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(tea.RequestBackgroundColor, waitBatch(m.src.Updates()), tick())
}

// waitBatch blocks on the source for one batch (the realtime-example
// pattern); Update re-arms it after each batch and stops when it closes.
func waitBatch(ch <-chan remote.Batch) tea.Cmd {
	return func() tea.Msg {
		b, ok := <-ch
		if !ok {
			return sourceClosed{}
		}
		return batchMsg(b)
	}
}

func tick() tea.Cmd {
	return tea.Tick(tickEvery, func(time.Time) tea.Msg { return tickMsg{} })
}

// doAction issues a through the source. Do does not block, but it is still
// kept out of Update: Update does no IO.
func doAction(src Source, host string, a remote.Action) tea.Cmd {
	return func() tea.Msg {
		id, err := src.Do(host, a)
		return actionIssued{host: host, action: a, id: id, err: err}
	}
}

// reconnectIssued is the answer of a reconnect: the hosts asked, and
// why some of them were not restarted.
type reconnectIssued struct {
	hosts []string
	errs  []error
}

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

// actionsIssued is the answer of a sequence of Do calls on one host.
type actionsIssued []actionIssued

// doActions issues as on host in order, in one command so that the
// order holds (the fleet runs a host's actions in the order given); it
// stops at the first refusal.
func doActions(src Source, host string, as ...remote.Action) tea.Cmd {
	return func() tea.Msg {
		var out actionsIssued
		for _, a := range as {
			id, err := src.Do(host, a)
			out = append(out, actionIssued{host: host, action: a, id: id, err: err})
			if err != nil {
				break
			}
		}
		return out
	}
}

// Update folds one message into the model, then tells the source which
// host's view is open if that changed.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	mm, cmd := m.update(msg)
	m.tellView()
	return mm, cmd
}

// viewed is the host whose view is shown, "" when none is.
func (m *Model) viewed() string {
	if m.focus.view() != focusHost {
		return ""
	}
	return m.open
}

// tellView tells the source the open host view when it changed.
func (m *Model) tellView() {
	v := m.viewed()
	if v == m.told {
		return
	}
	m.told = v
	if m.caps.View != nil {
		m.caps.View(v)
	}
}

// update is Update's work.
func (m *Model) update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = max(1, msg.Width), max(1, msg.Height)
		m.help.SetWidth(m.width)
		m.filter.SetWidth(max(10, m.width-20))
		m.hfInput.SetWidth(max(10, m.width-4))
		m.pal.input.SetWidth(max(10, m.width-4))
	case tea.BackgroundColorMsg:
		m.setStyles(msg.IsDark())
	case batchMsg:
		m.now = m.opts.Now()
		return m, tea.Batch(m.applyBatch(remote.Batch(msg)), m.observe(remote.Batch(msg)), m.signal(), waitBatch(m.src.Updates()))
	case rolloutIssued:
		return m, m.rolloutIssuedMsg(msg)
	case sourceClosed:
		m.closed = true
	case tickMsg:
		m.now = m.opts.Now()
		// An empty batch lets the rollout check its clock (a failure's
		// grace, the timeout) while the fleet is quiet.
		return m, tea.Batch(tick(), m.observe(remote.Batch{}), m.signal())
	case statusExpiry:
		if msg.seq == m.statusSeq {
			m.status, m.statusErr = "", false
		}
	case actionIssued:
		return m, m.issued(msg)
	case benchCancelled:
		if len(msg.errs) > 0 {
			return m, m.setStatus("stop: "+errors.Join(msg.errs...).Error(), true)
		}
		return m, nil
	case reconnectIssued:
		return m, m.reconnected(msg)
	case actionsIssued:
		var cmd tea.Cmd
		for _, a := range msg {
			cmd = m.issued(a)
		}
		return m, cmd
	case tea.KeyPressMsg:
		return m, m.handleKey(msg)
	default:
		var cmd tea.Cmd
		switch m.focus.top() {
		case focusLogFilter:
			m.filter, cmd = m.filter.Update(msg)
		case focusHostFilter:
			cmd = m.editHostFilter(msg)
		case focusPalette:
			m.pal.input, cmd = m.pal.input.Update(msg)
		default: // the other layers take only keys
		}
		return m, cmd
	}
	return m, nil
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
		m.watch[msg.host] = true
		if m.focus.view() == focusHost && m.open == msg.host {
			m.lv.follow = true
		}
	}
	return m.setStatus(fmt.Sprintf("%s: %s issued (#%d)", msg.host, msg.action, msg.id), false)
}

// setStatus shows a message in the status line; it clears itself unless a
// newer one replaced it.
func (m *Model) setStatus(s string, isErr bool) tea.Cmd {
	m.statusSeq++
	m.status, m.statusErr = s, isErr
	seq := m.statusSeq
	return tea.Tick(statusTTL, func(time.Time) tea.Msg { return statusExpiry{seq: seq} })
}

// applyBatch takes the new snapshot and appends the batch's events to the
// hosts' rings. The cursor follows its host, not its row.
func (m *Model) applyBatch(b remote.Batch) tea.Cmd {
	sel, cur := m.selectedName(), m.cursorHost()
	if m.caps.LocalHashes != nil {
		m.local = m.caps.LocalHashes()
	}
	m.hosts = b.Hosts
	m.refilter(sel, cur)
	var statusCmd tea.Cmd
	for _, ev := range b.Events {
		if ev.Kind == event.KindCommand {
			m.recordAction(ev)
			continue
		}
		l, ok := m.lineOf(ev)
		if !ok {
			continue
		}
		if j := ev.Journal; j != nil && j.InvocationID != "" && j.InvocationID != m.inv[ev.Host] {
			if m.inv[ev.Host] != "" {
				m.push(ev.Host, logLine{Time: ev.Time, Text: "new invocation " + shortID(j.InvocationID), Kind: lineMark})
				m.newInvocation(ev.Host)
			}
			m.inv[ev.Host] = j.InvocationID
		}
		if ev.Kind == event.KindAction && ev.Action != nil && m.benchEvent(ev) {
			continue // a request counted: the bar shows it, the log need not
		}
		m.push(ev.Host, l)
		if ev.Kind == event.KindAction && ev.Action != nil {
			m.recordAction(ev)
			if ev.Action.Stage == event.ActionDone || ev.Action.Stage == event.ActionFailed {
				statusCmd = m.setStatus(ev.Host+": "+actionText(*ev.Action), ev.Action.Stage == event.ActionFailed)
			}
		}
	}
	m.trimLogs()
	if cmd := m.benchSettled(); cmd != nil {
		return cmd
	}
	return statusCmd
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
		switch phase[host] {
		case startup.Serving, startup.Stopped, startup.Unknown, "":
			return true // not starting or failing now
		case startup.Starting, startup.Init, startup.Weights, startup.KVCache, startup.GraphCapture,
			startup.HTTP, startup.Warmup, startup.Failed, startup.Restarting, startup.Stuck:
		}
		return false
	}
	if !slices.Contains(m.logs.trim(idle), m.open) {
		return
	}
	r := m.ring(m.open)
	m.lv.synced(r)
	if m.lv.query != "" {
		cur, expanded := m.lv.cur, m.lv.expanded
		m.lv.setQuery(m.lv.query, r)
		if cur >= r.first() {
			m.lv.cur, m.lv.expanded = cur, expanded
		}
	}
}

// push appends a line to host's ring, keeping the open filter's count.
func (m *Model) push(host string, l logLine) {
	r, old, evicted := m.logs.push(host, l)
	if m.focus.view() == focusHost && host == m.open {
		m.lv.pushed(r.at(r.total-1), old, evicted)
		m.lv.synced(r)
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

func (m *Model) ring(host string) *ring {
	return m.logs.ring(host)
}

// selectedName is the host actions apply to: the open host in the host
// view, the cursor row in the table.
func (m *Model) selectedName() string {
	switch m.focus.view() {
	case focusHost:
		return m.open
	case focusRollout:
		if lanes := m.ro.r.Lanes(); m.ro.cursor < len(lanes) {
			return lanes[m.ro.cursor].Host
		}
	default: // the table: its cursor row
	}
	return m.cursorHost()
}

func (m *Model) hostState(name string) *remote.HostState {
	for i := range m.hosts {
		if m.hosts[i].Name == name {
			return &m.hosts[i]
		}
	}
	return nil
}

// handleKey routes a key to what has focus.
func (m *Model) handleKey(msg tea.KeyPressMsg) tea.Cmd {
	if m.focus.top() == focusBench {
		return m.benchKey(msg) // ctrl+c stops the load, not the console
	}
	if msg.String() == "ctrl+c" {
		return tea.Quit
	}
	switch m.focus.top() {
	case focusLogFilter:
		return m.filterKey(msg)
	case focusHostFilter:
		return m.hostFilterKey(msg)
	case focusPalette:
		return m.paletteKey(msg)
	case focusDialog:
		return m.dialogKey(msg)
	case focusRolloutForm:
		return m.rolloutFormKey(msg)
	case focusHelp, focusCommands, focusActions:
		return m.overlayKey(msg)
	case focusRollout:
		return m.viewKey(msg, m.rolloutKey)
	case focusHost:
		return m.viewKey(msg, m.hostKey)
	default:
		return m.viewKey(msg, m.tableKey)
	}
}

// isReplayKey reports whether msg controls the replay. The help lists
// these keys, so they work in the overlays as well as in the views.
func (m *Model) isReplayKey(msg tea.KeyPressMsg) bool {
	k := m.keys
	return m.opts.Replay != nil && key.Matches(msg, k.Pause, k.Faster, k.Slower)
}

// overlayKey answers the help, the palette's commands and the log of
// remote commands; : swaps the overlay for the palette.
func (m *Model) overlayKey(msg tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	switch {
	case m.isReplayKey(msg):
		return m.replayKey(msg)
	case key.Matches(msg, k.Palette):
		m.focus.pop()
		return m.openPalette()
	case m.focus.top() == focusActions:
		return m.actionsKey(msg)
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case key.Matches(msg, k.Back, k.Help, k.Actions):
		m.focus.pop()
	}
	return nil
}

// viewKey answers the keys every view shares, then hands the rest to the
// view's own handler.
func (m *Model) viewKey(msg tea.KeyPressMsg, viewOwn func(tea.KeyPressMsg) tea.Cmd) tea.Cmd {
	k := m.keys
	switch {
	case m.isReplayKey(msg):
		return m.replayKey(msg)
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case key.Matches(msg, k.Palette):
		return m.openPalette()
	case key.Matches(msg, k.Help):
		m.focus.push(focusHelp)
	case key.Matches(msg, k.Actions):
		m.focus.push(focusActions)
		m.cmds.follow = true
	case key.Matches(msg, k.Mode):
		return m.startMode(false)
	case key.Matches(msg, k.Undo):
		return m.startMode(true)
	case key.Matches(msg, k.Restart):
		return m.startRestart()
	case key.Matches(msg, k.Rollout):
		return m.startRollout()
	case key.Matches(msg, k.ResetFailed):
		return m.confirm(remote.Action{Kind: remote.ActResetFailed})
	case key.Matches(msg, k.Reconnect):
		return m.reconnect()
	case key.Matches(msg, k.Redeploy):
		a := remote.Action{Kind: remote.ActRedeploy}
		if len(m.opts.Kernels.Kernels) > 0 {
			a.Kernel = m.opts.Kernels.Kernels[0].Name
		}
		return m.confirm(a)
	default:
		return viewOwn(msg)
	}
	return nil
}

// replayKey pauses or resumes the replay, or changes its speed; the
// header's position shows the result, and the status line says it.
func (m *Model) replayKey(msg tea.KeyPressMsg) tea.Cmd {
	r, k := m.opts.Replay, m.keys
	switch {
	case key.Matches(msg, k.Pause):
		if r.TogglePause() {
			return m.setStatus("replay paused (p resumes)", false)
		}
		return m.setStatus("replay resumed", false)
	case key.Matches(msg, k.Faster):
		return m.setStatus(fmt.Sprintf("replay ×%g", r.Faster()), false)
	default:
		return m.setStatus(fmt.Sprintf("replay ×%g", r.Slower()), false)
	}
}

// actionsKey scrolls the log of remote commands, or closes it.
func (m *Model) actionsKey(msg tea.KeyPressMsg) tea.Cmd {
	k, l := m.keys, &m.cmds
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

// newInvocation is called when host's journal starts a new invocation:
// after a restart issued here, the open host view follows it from its
// first line, whatever the pane was doing.
func (m *Model) newInvocation(host string) {
	if !m.watch[host] {
		return
	}
	delete(m.watch, host)
	if m.focus.view() == focusHost && m.open == host {
		m.lv.follow = true
	}
}

func (m *Model) tableKey(msg tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	switch {
	case key.Matches(msg, k.HostFilter):
		return m.openHostFilter()
	case key.Matches(msg, k.Back) && m.hf.active():
		m.hf = hostFilter{}
		m.refilter(m.cursorHost())
		return m.setStatus("filter cleared", false)
	case key.Matches(msg, k.Up):
		m.cursor = max(0, m.cursor-1)
	case key.Matches(msg, k.Down):
		m.cursor = max(0, min(len(m.lines)-1, m.cursor+1))
	case key.Matches(msg, k.First):
		m.cursor = 0
	case key.Matches(msg, k.Last):
		m.cursor = max(0, len(m.lines)-1)
	case key.Matches(msg, k.PageUp):
		m.cursor = max(0, m.cursor-m.pageRows())
	case key.Matches(msg, k.PageDown):
		m.cursor = max(0, min(len(m.lines)-1, m.cursor+m.pageRows()))
	case key.Matches(msg, k.NextFailed), key.Matches(msg, k.PrevFailed):
		dir := 1
		if key.Matches(msg, k.PrevFailed) {
			dir = -1
		}
		if !m.nextFailed(dir) {
			return m.setStatus("no failed host shown", false)
		}
	case key.Matches(msg, k.Sort):
		m.sort = (m.sort + 1) % sortCount
		m.refilter(m.cursorHost())
		return m.setStatus("sorted: "+m.sort.String(), false)
	case key.Matches(msg, k.Group):
		return m.cycleGrouping()
	case key.Matches(msg, k.Expand) && m.onGroupRow():
		m.setExpanded(true)
	case key.Matches(msg, k.Collapse) && m.groupBy > 0:
		m.setExpanded(false)
	case key.Matches(msg, k.MarkAll):
		if n := m.selectAll(); n > 0 {
			return m.setStatus(fmt.Sprintf("%d hosts marked", n), false)
		}
		return m.setStatus("marks cleared", false)
	case key.Matches(msg, k.Select) && m.onGroupRow():
		m.markGroup()
	case key.Matches(msg, k.Select):
		if n := m.selectedName(); n != "" {
			m.marked[n] = !m.marked[n]
			if !m.marked[n] {
				delete(m.marked, n)
			}
		}
	case key.Matches(msg, k.Open) && m.onGroupRow():
		m.setExpanded(!m.expanded[m.groupKey(m.cursor)])
	case key.Matches(msg, k.Open):
		if n := m.selectedName(); n != "" {
			m.openHost(n)
		}
	case key.Matches(msg, k.CopyFix):
		return m.copyFix()
	case key.Matches(msg, k.CopyEvidence):
		return m.copyEvidence()
	case key.Matches(msg, k.Bench):
		return m.startBench()
	}
	return nil
}

// openHost switches to the host view, following the log, keeping the
// filter query (and recounting it for this host).
func (m *Model) openHost(name string) {
	m.showView(focusHost)
	m.open = name
	q, wrap := m.lv.query, m.lv.wrap
	m.lv = newLogView()
	m.lv.wrap = wrap
	m.lv.setQuery(q, m.ring(name))
	m.lv.setFold(!m.unfold, m.ring(name))
}

// logHeight is the log pane's height in the host view right now.
func (m *Model) logHeight() int {
	hs := m.hostState(m.open)
	if hs == nil {
		return 1
	}
	return max(1, layoutHost(hs, m.bodyHeight()).logH)
}

func (m *Model) hostKey(msg tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	r := m.ring(m.open)
	h := m.logHeight()
	switch {
	case key.Matches(msg, k.Back):
		m.focus.pop()
	case key.Matches(msg, k.Up):
		m.lv.scroll(r, h, -1)
	case key.Matches(msg, k.Down):
		m.lv.scroll(r, h, 1)
	case key.Matches(msg, k.PageUp):
		m.lv.scroll(r, h, -max(1, h-1))
	case key.Matches(msg, k.PageDown):
		m.lv.scroll(r, h, max(1, h-1))
	case key.Matches(msg, k.Top):
		m.lv.follow, m.lv.top = false, r.first()
	case key.Matches(msg, k.Bottom):
		m.lv.follow = true
	case key.Matches(msg, k.Follow):
		m.toggleFollow()
	case key.Matches(msg, k.Wrap):
		m.lv.wrap = !m.lv.wrap
	case key.Matches(msg, k.Fold):
		return m.toggleFold()
	case key.Matches(msg, k.CopyFix):
		return m.copyFix()
	case key.Matches(msg, k.CopyEvidence):
		return m.copyEvidence()
	case key.Matches(msg, k.Bench):
		return m.startBench()
	case key.Matches(msg, k.Filter):
		m.focus.push(focusLogFilter)
		m.filter.SetValue(m.lv.query)
		m.filter.CursorEnd()
		return m.filter.Focus()
	case key.Matches(msg, k.NextMatch):
		return m.nextMatch(1)
	case key.Matches(msg, k.PrevMatch):
		return m.nextMatch(-1)
	}
	return nil
}

// toggleFold folds the ranks' copies of a line into one row, or shows
// each again; the choice holds for every host view until changed. The
// view keeps its place: the row on top stays on top.
func (m *Model) toggleFold() tea.Cmd {
	m.unfold = !m.unfold
	r := m.ring(m.open)
	m.lv.setFold(!m.unfold, r)
	if m.unfold {
		m.lv.expanded = -1
		return m.setStatus("unfolded: every rank's line", false)
	}
	return m.setStatus("folded: the ranks' copies of a line as one row (z unfolds)", false)
}

// toggleFollow stops following the log where it is, or follows again.
func (m *Model) toggleFollow() {
	if m.lv.follow {
		m.lv.top, m.lv.follow = m.lv.start(m.ring(m.open), m.logHeight()), false
	} else {
		m.lv.follow = true
	}
}

// nextMatch jumps to the next (dir 1) or previous (dir -1) match, starting
// from the current match, or from the screen when there is none.
func (m *Model) nextMatch(dir int) tea.Cmd {
	if m.lv.query == "" {
		return m.setStatus("no filter: press / to set one", false)
	}
	r, h := m.ring(m.open), m.logHeight()
	from := m.lv.cur
	if from < r.first() {
		from = m.lv.start(r, h) - 1
		if dir < 0 || m.lv.follow {
			from = m.lv.end(r, h)
		}
	}
	seq, wrapped, ok := m.lv.find(r, from, dir)
	if !ok {
		return m.setStatus(fmt.Sprintf("no match for %q", m.lv.query), false)
	}
	m.lv.jump(r, h, seq)
	if wrapped {
		return m.setStatus("search wrapped", false)
	}
	return nil
}

func (m *Model) filterKey(msg tea.KeyPressMsg) tea.Cmd {
	switch msg.String() {
	case "esc":
		m.focus.pop()
		m.filter.Blur()
		return nil
	case "enter":
		m.focus.pop()
		m.filter.Blur()
		m.lv.setQuery(strings.TrimSpace(m.filter.Value()), m.ring(m.open))
		if m.lv.query == "" {
			return m.setStatus("filter cleared", false)
		}
		// Start from the newest line when following, as a log reader
		// wants the latest match first.
		return m.nextMatch(-1)
	}
	var cmd tea.Cmd
	m.filter, cmd = m.filter.Update(msg)
	return cmd
}

// keyHosts is what an action key acts on: the selected host, or on a
// group's summary row the group's hosts the table shows (the dialog
// names them all before anything is done).
func (m *Model) keyHosts() []string {
	if m.focus.view() == focusTable && m.onGroupRow() {
		return m.groupHosts(m.lines[m.cursor].group)
	}
	return []string{m.selectedName()}
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

// startMode answers m and u on the selected host.
func (m *Model) startMode(undo bool) tea.Cmd { return m.startModeOn(m.keyHosts(), undo) }

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
	m.openDialog(confirmDialog(host, unit, remote.Action{Kind: remote.ActSetMode, Kernel: kernel, Mode: mode}).on(hosts))
	return nil
}

// startRestart answers r on the selected host.
func (m *Model) startRestart() tea.Cmd { return m.startRestartOn(m.keyHosts()) }

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
	m.openDialog(d)
	return nil
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

// doOn issues a on each of hosts.
func doOn(src Source, hosts []string, a remote.Action) tea.Cmd {
	cmds := make([]tea.Cmd, len(hosts))
	for i, h := range hosts {
		cmds[i] = doAction(src, h, a)
	}
	return tea.Batch(cmds...)
}

// restartIn sets the preflight dialog's kernel to mode on the hosts it
// refused, then restarts every host it is about.
func restartIn(src Source, d *dialog, mode string) tea.Cmd {
	refused := d.refused
	if len(refused) == 0 {
		refused = d.hostList()
	}
	var cmds []tea.Cmd
	for _, h := range d.hostList() {
		if slices.Contains(refused, h) {
			cmds = append(cmds, doActions(src, h,
				remote.Action{Kind: remote.ActSetMode, Kernel: d.kernel, Mode: mode},
				remote.Action{Kind: remote.ActRestart}))
			continue
		}
		cmds = append(cmds, doAction(src, h, remote.Action{Kind: remote.ActRestart}))
	}
	return tea.Batch(cmds...)
}

// preflightKey answers the preflight dialog: a capture-safe mode (set it,
// then restart), or the typed host count to go on anyway.
func (m *Model) preflightKey(msg tea.KeyPressMsg) tea.Cmd {
	k, d := m.keys, m.dlg
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
		return doOn(m.src, d.hostList(), remote.Action{Kind: remote.ActRestart, Force: true})
	}
	return nil
}

// confirm opens the confirmation for a on the selected host.
func (m *Model) confirm(a remote.Action) tea.Cmd { return m.confirmOn(m.keyHosts(), a) }

// confirmOn opens the confirmation for a on hosts.
func (m *Model) confirmOn(hosts []string, a remote.Action) tea.Cmd {
	if why := m.refuse(string(a.Kind), hosts); why != "" {
		return m.setStatus(why, true)
	}
	host, unit, _ := m.target(hosts)
	m.openDialog(confirmDialog(host, unit, a).on(hosts))
	return nil
}

func (m *Model) dialogKey(msg tea.KeyPressMsg) tea.Cmd {
	k, d := m.keys, m.dlg
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
			return doOn(m.src, d.hostList(), d.action)
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
	d := m.dlg
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
	m.openDialog(confirmDialog(d.host, d.unit, remote.Action{Kind: remote.ActSetMode, Kernel: d.kernel, Mode: c.value}).on(d.targets))
	return nil
}
