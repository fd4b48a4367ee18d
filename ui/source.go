package ui

import (
	"slices"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/deployment"
	"github.com/bringup-dev/bringup/ui/notify"
)

// Source is what the UI reads and acts through; *fleet.Fleet satisfies it
// (fleet_source_test.go checks, so that the UI links only the contract).
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
	// with a marker line. Default: the source's (Capabilities.LogBudget),
	// else remote.DefaultLogBudget less the fleet's pending share.
	LogBudget int
	// Groups are the config's named lists of hosts: palette commands
	// take a group's name wherever they take hosts, and t groups the
	// table's rows by them.
	Groups map[string][]string
	// Labels are each host's labels from the config (rack: r12): t also
	// groups the table by each label key.
	Labels map[string]map[string]string
	// Deployments are the config's deployments (hosts that serve one
	// model together, rank 0 first); the units' command lines add those
	// they say. Each is one row of the table, grouped by deployment.
	Deployments []deployment.Declared
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
				remote.Action{Kind: remote.ActRestart, SkipCheck: d.checkSkipped}))
			continue
		}
		cmds = append(cmds, doAction(src, h, remote.Action{Kind: remote.ActRestart, SkipCheck: d.checkSkipped}))
	}
	return tea.Batch(cmds...)
}
