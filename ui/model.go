// Package ui is bringup's terminal UI (Bubble Tea v2): the fleet table, the
// host view with its phase timeline, diagnosis and log pane, the help
// overlay generated from the key map, and the confirmations that guard
// every action on a host.
//
// There is one tea.Model, *Model: it holds the snapshot, the logs, the
// focus and the status line, and composes the parts. The fleet table
// (tableModel) and the host view (hostModel) each keep their own state
// and have their own Update and View; the root model routes messages to
// them and carries out their replies (a status line, a prompt closed).
// The dialogs and overlays are plain structs that render into a given
// width and height. The Source's optional features come as one
// capability set (remote.Capabilities), asked once. The UI does no IO: batches arrive through a re-arming command
// that reads Source.Updates, and actions leave through Source.Do inside a
// command. Remote text is untrusted: it is measured and cut with the ansi
// package and never interpreted.
package ui

import (
	"errors"
	"fmt"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/ui/notify"
)

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

	width, height int
	now           time.Time
	streamEnded   bool // the source closed its channel

	hosts []remote.HostState // the latest snapshot
	// ownHosts: hosts is the console's own copy, written in place by the
	// batches of a fleet that hands out only what changed
	// (Batch.States); a whole batch's hosts are shared, so the first
	// such batch after one copies them.
	ownHosts bool
	logs     logStore // every host's log, under one budget
	// lastInvocation is, per host, the last invocation id its journal showed.
	lastInvocation map[string]string

	// The parts: the fleet table (its rows, cursor, filter, groups,
	// marks), the host view (the host it shows, its log pane), and the
	// layers that open over them.
	table          tableModel
	host           hostModel
	diag           diagModel  // the diagnosis detail (e)
	focus          focusStack // what has the keys, over what
	commandPalette cmdPalette // the `:` command palette
	dialog         *dialog    // the dialog focusDialog or focusRolloutForm shows
	// viewTold is the open host view last told to the source (caps.View).
	viewTold string

	status    string
	statusErr bool
	statusSeq int
	// remoteCommands is the log of what bringup did on the hosts (`@`).
	remoteCommands cmdLog

	// localHashes is the local build's hash per kernel, from the source;
	// nil when it cannot tell.
	localHashes map[string]string
	// driftsOf is drifts' answer for the snapshot it was computed on.
	driftsOf driftCache
	// followRestart holds the hosts restarted from here whose new
	// invocation the open host view should follow from its first line.
	followRestart map[string]bool
	// plans are the actions on deployments under way, step by step.
	plans plans
	// rollout is the rollout started here, running or settled; nil
	// before R.
	rollout *rolloutRun

	// signals remembers the signals given, so each is given once.
	signals notify.Tracker
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
	m := &Model{
		src:            src,
		caps:           caps,
		opts:           opts,
		keys:           DefaultKeyMap(),
		help:           help.New(),
		commandPalette: newCmdPalette(),
		width:          80,
		height:         24,
		now:            opts.Now(),
		logs:           newLogStore(opts.LogLines, opts.LogBudget),
		lastInvocation: map[string]string{},
		followRestart:  map[string]bool{},
		focus:          focusStack{focusTable},
		remoteCommands: cmdLog{follow: true},
	}
	if len(opts.Kernels.Kernels) == 0 {
		if caps.Kernels != nil {
			m.opts.Kernels = caps.Kernels()
		}
	}
	m.diag = diagModel{keys: m.keys, width: m.width, height: m.bodyHeight()}
	m.host = newHostModel(m.keys, &m.logs, m.bodyHeight())
	m.host.lanesOf = m.table.lanesOf
	m.table = newTableModel(m.keys, m.opts.Kernels, newGroupings(opts.Groups, opts.Labels), m.bodyHeight())
	m.table.declared = opts.Deployments
	m.setStyles(true)
	return m
}

// setStyles rebuilds every style for the background.
func (m *Model) setStyles(isDark bool) {
	m.styles = NewStyles(isDark, m.opts.NoColor)
	m.help.Styles = m.styles.Help
	m.table.styles = m.styles
	ts := textinput.DefaultStyles(isDark)
	ts.Cursor.Blink = false // a blinking cursor is a tick loop for nothing
	if m.opts.NoColor {
		ts = textinput.Styles{Cursor: textinput.CursorStyle{Shape: tea.CursorBlock}}
	}
	m.host.filterInput.SetStyles(ts)
	m.table.filterInput.SetStyles(ts)
	m.commandPalette.input.SetStyles(ts)
}

// Init asks for the background colour and starts the two loops: batches
// and the clock tick.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(tea.RequestBackgroundColor, waitBatch(m.src.Updates()), tick())
}

func tick() tea.Cmd {
	return tea.Tick(tickEvery, func(time.Time) tea.Msg { return tickMsg{} })
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
	switch m.focus.view() {
	case focusHost:
		return m.host.name
	case focusDiag:
		return m.diag.host
	default: // the table, the rollout: no one host's view
	}
	return ""
}

// tellView tells the source the open host view when it changed.
func (m *Model) tellView() {
	v := m.viewed()
	if v == m.viewTold {
		return
	}
	m.viewTold = v
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
		body := tea.WindowSizeMsg{Width: m.width, Height: m.bodyHeight()}
		m.table.Update(body)
		m.host.Update(body, nil)
		m.diag.Update(body, nil, m.styles)
		m.commandPalette.input.SetWidth(max(10, m.width-4))
	case tea.BackgroundColorMsg:
		m.setStyles(msg.IsDark())
	case batchMsg:
		m.now = m.opts.Now()
		return m, tea.Batch(m.applyBatch(remote.Batch(msg)), m.observe(remote.Batch(msg)), m.signal(), waitBatch(m.src.Updates()))
	case rolloutIssued:
		return m, m.rolloutIssuedMsg(msg)
	case sourceClosed:
		m.streamEnded = true
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
	case stepIssued:
		return m, m.stepAnswered(msg)
	case captureChecked:
		return m, m.captureCheckDone(msg)
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
	case tea.MouseMsg:
		return m, m.mouse(msg)
	default:
		var cmd tea.Cmd
		switch m.focus.top() {
		case focusLogFilter:
			cmd = m.take(m.host.UpdateFilter(msg, m.hostState(m.host.name)))
		case focusHostFilter:
			cmd = m.take(m.table.UpdateFilter(msg))
		case focusPalette:
			m.commandPalette.input, cmd = m.commandPalette.input.Update(msg)
		default: // the other layers take only keys
		}
		return m, cmd
	}
	return m, nil
}

// setStatus shows a message in the status line; it clears itself unless a
// newer one replaced it.
func (m *Model) setStatus(s string, isErr bool) tea.Cmd {
	m.statusSeq++
	m.status, m.statusErr = s, isErr
	seq := m.statusSeq
	return tea.Tick(statusTTL, func(time.Time) tea.Msg { return statusExpiry{seq: seq} })
}

func (m *Model) ring(host string) *ring {
	return m.logs.ring(host)
}

// selectedName is the host actions apply to: the open host in the host
// view, the cursor row in the table.
func (m *Model) selectedName() string {
	switch m.focus.view() {
	case focusHost:
		return m.host.name
	case focusDiag:
		return m.diag.host
	case focusRollout:
		if lanes := m.rollout.r.Lanes(); m.rollout.cursor < len(lanes) {
			return lanes[m.rollout.cursor].Host
		}
	default: // the table: its cursor row
	}
	return m.table.cursorHost()
}

func (m *Model) hostState(name string) *remote.HostState {
	if i := m.table.sums.find(m.hosts, name); i >= 0 {
		return &m.hosts[i]
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
		return m.take(m.host.UpdateFilter(msg, m.hostState(m.host.name)))
	case focusHostFilter:
		return m.take(m.table.UpdateFilter(msg))
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
	case focusDiag:
		return m.viewKey(msg, m.diagKey)
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
		m.remoteCommands.follow = true
	case key.Matches(msg, k.Rollout):
		return m.startRollout()
	case key.Matches(msg, k.Reconnect):
		return m.reconnect()
	default:
		if kind, ok := k.changingAction(msg); ok {
			return m.startActionOn(m.keyHosts(), remote.Action{Kind: kind})
		}
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

func (m *Model) tableKey(msg tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	if key.Matches(msg, k.HostFilter) {
		m.focus.push(focusHostFilter)
		return m.table.openFilter()
	}
	if r := m.table.Update(msg); !r.ignored {
		return m.take(r)
	}
	switch {
	case key.Matches(msg, k.Open):
		if n := m.selectedName(); n != "" {
			m.openHost(n)
		}
	case key.Matches(msg, k.Explain):
		return m.openDiag()
	case key.Matches(msg, k.CopyFix):
		return m.copyFix()
	case key.Matches(msg, k.CopyEvidence):
		return m.copyEvidence()
	case key.Matches(msg, k.act(remote.ActBench)):
		return m.startBench()
	}
	return nil
}

// openHost switches to the host view of name.
func (m *Model) openHost(name string) {
	m.showView(focusHost)
	m.host.open(name)
}

func (m *Model) hostKey(msg tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	if key.Matches(msg, k.Back) {
		m.focus.pop()
		return nil
	}
	if r := m.host.Update(msg, m.hostState(m.host.name)); !r.ignored {
		return m.take(r)
	}
	switch {
	case key.Matches(msg, k.Explain, k.Open):
		return m.openDiag()
	case key.Matches(msg, k.CopyFix):
		return m.copyFix()
	case key.Matches(msg, k.CopyEvidence):
		return m.copyEvidence()
	case key.Matches(msg, k.act(remote.ActBench)):
		return m.startBench()
	case key.Matches(msg, k.Filter):
		m.focus.push(focusLogFilter)
		return m.host.openFilter()
	}
	return nil
}

// toggleFollow stops following the open host's log where it is, or
// follows again.
func (m *Model) toggleFollow() { m.host.toggleFollow(m.hostState(m.host.name)) }

// keyHosts is what an action key acts on: the selected host, or on a
// group's summary row the group's hosts the table shows (the dialog
// names them all before anything is done).
func (m *Model) keyHosts() []string {
	if m.focus.view() == focusTable && m.table.onGroupRow() {
		return m.table.groupHosts(m.table.lines[m.table.cursor].group)
	}
	return []string{m.selectedName()}
}
