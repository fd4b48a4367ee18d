package ui

import (
	"slices"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/remote"
)

// KeyMap is every key the UI answers to. Help is generated from it, so a
// binding that is not here does not exist, and one that is here is listed.
type KeyMap struct {
	Up, Down   key.Binding
	Open, Back key.Binding
	Select     key.Binding
	Help, Quit key.Binding

	// ActionKeys are the actions' keys, from their specs (remote.Specs),
	// in the table's order: a changing one acts on the selected host (or
	// a group's hosts) in every view; the bench key (a smoke load on the
	// selected or marked serving hosts) in the table and the host view.
	ActionKeys []ActionKey

	Rollout               key.Binding // a gated rollout over the marked hosts
	Actions               key.Binding // the log of remote commands
	Reconnect             key.Binding // dial a host stopped on a host-key or auth failure again
	CopyFix, CopyEvidence key.Binding // the selected host's fix command, its evidence, to the clipboard
	// Explain opens the selected host's diagnosis whole (d is redeploy's).
	Explain key.Binding
	// StopBench stops the smoke load under way (its overlay).
	StopBench key.Binding

	// Rollback and Abort answer a halted rollout in the rollout view.
	Rollback, Abort key.Binding

	Filter, NextMatch, PrevMatch  key.Binding
	HostFilter                    key.Binding // / on the table: filter the hosts
	Palette                       key.Binding // : the command palette
	Follow, Wrap                  key.Binding
	Fold                          key.Binding // fold the ranks' copies of a line into one row, or unfold
	PageUp, PageDown, Top, Bottom key.Binding
	// On the table: first and last host, sort, next/previous failed
	// host, mark every host shown.
	First, Last, Sort, NextFailed, PrevFailed, MarkAll key.Binding
	// Group cycles the table's grouping (the config's groups, each label
	// key, none); Expand and Collapse open and close a group's rows.
	Group, Expand, Collapse key.Binding

	Confirm, Cancel key.Binding

	// Pause, Faster and Slower control a replay; they exist only when
	// Options.Replay is set.
	Pause, Faster, Slower key.Binding
}

// DefaultKeyMap follows k9s and lazygit: vim motions, esc goes back, q
// quits, single letters act on the selected host. ctrl+b is left to tmux.
func DefaultKeyMap() KeyMap {
	b := func(keys []string, k, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(k, desc))
	}
	return KeyMap{
		Up:     b([]string{"k", "up"}, "↑/k", "up"),
		Down:   b([]string{"j", "down"}, "↓/j", "down"),
		Open:   b([]string{"enter"}, "enter", "open host"),
		Back:   b([]string{"esc"}, "esc", "back"),
		Select: b([]string{"space"}, "space", "select host"),
		Help:   b([]string{"?"}, "?", "help"),
		Quit:   b([]string{"q", "ctrl+c"}, "q", "quit"),

		ActionKeys: actionKeys(remote.Specs()),
		Rollout:    b([]string{"R"}, "R", "rollout (marked/all)"),
		Actions:    b([]string{"@"}, "@", "remote commands"),
		Reconnect:  b([]string{"ctrl+r"}, "ctrl+r", "reconnect"),

		StopBench: b([]string{"esc", "ctrl+c"}, "esc/ctrl+c", "stop the bench"),

		CopyFix:      b([]string{"y"}, "y", "copy fix command"),
		CopyEvidence: b([]string{"Y"}, "Y", "copy evidence"),
		Explain:      b([]string{"e"}, "e", "explain diagnosis"),

		Rollback: b([]string{"b"}, "b", "roll back halted host"),
		Abort:    b([]string{"a"}, "a", "abort rollout"),

		Filter:     b([]string{"/"}, "/", "filter logs"),
		NextMatch:  b([]string{"n"}, "n", "next match"),
		PrevMatch:  b([]string{"N"}, "N", "prev match"),
		HostFilter: b([]string{"/"}, "/", "filter hosts"),
		Palette:    b([]string{":"}, ":", "commands"),
		Follow:     b([]string{"f"}, "f", "follow on/off"),
		Wrap:       b([]string{"w"}, "w", "wrap on/off"),
		Fold:       b([]string{"z"}, "z", "fold ranks on/off"),
		PageUp:     b([]string{"pgup", "ctrl+u"}, "pgup", "page up"),
		PageDown:   b([]string{"pgdown", "ctrl+d"}, "pgdn", "page down"),
		Top:        b([]string{"g", "home"}, "g", "oldest line"),
		Bottom:     b([]string{"G", "end"}, "G", "newest line"),
		First:      b([]string{"g", "home"}, "g/G", "first/last"),
		Last:       b([]string{"G", "end"}, "G", "last host"),
		Sort:       b([]string{"s"}, "s", "sort"),
		NextFailed: b([]string{"n"}, "n/N", "next failed"),
		PrevFailed: b([]string{"N"}, "N", "prev failed host"),
		MarkAll:    b([]string{"A"}, "A", "mark all"),
		Group:      b([]string{"t"}, "t", "group rows (tree)"),
		Expand:     b([]string{"right", "l"}, "→/l", "expand group"),
		Collapse:   b([]string{"left", "h"}, "←/h", "collapse group"),

		Confirm: b([]string{"y", "enter"}, "y/enter", "confirm"),
		Cancel:  b([]string{"n", "esc"}, "n/esc", "cancel"),

		Pause:  b([]string{"p"}, "p", "pause/resume replay"),
		Faster: b([]string{">", "+"}, ">/+", "replay faster"),
		Slower: b([]string{"<", "-"}, "</-", "replay slower"),
	}
}

// ActionKey is an action's key in the console.
type ActionKey struct {
	Kind remote.ActionKind
	key.Binding
}

// actionKeys are the keys of the specs that have one, in their order.
func actionKeys(specs []remote.ActionSpec) []ActionKey {
	var out []ActionKey
	for _, s := range specs {
		if s.Key != nil {
			out = append(out, ActionKey{s.Kind, key.NewBinding(key.WithKeys(s.Key.Key), key.WithHelp(s.Key.Key, s.Key.Help))})
		}
	}
	return out
}

// act is the key of an action of kind; a binding that matches nothing
// when it has none.
func (k KeyMap) act(kind remote.ActionKind) key.Binding {
	for _, a := range k.ActionKeys {
		if a.Kind == kind {
			return a.Binding
		}
	}
	return key.NewBinding(key.WithDisabled())
}

// changingAction is the changing action whose key msg is.
func (k KeyMap) changingAction(msg tea.KeyPressMsg) (remote.ActionKind, bool) {
	for _, a := range k.ActionKeys {
		if a.Kind.Changes() && key.Matches(msg, a.Binding) {
			return a.Kind, true
		}
	}
	return "", false
}

// changing is every binding that changes a host; each one refuses in
// read-only mode.
func (k KeyMap) changing() []key.Binding {
	var out []key.Binding
	for _, a := range k.ActionKeys {
		if a.Kind.Changes() {
			out = append(out, a.Binding)
		}
	}
	return append(out, k.Rollout)
}

// actionHelp is the keys of kinds, in the help's order, then the key of
// every other changing action (a new action's key is listed without an
// edit here).
func (k KeyMap) actionHelp(kinds ...remote.ActionKind) []key.Binding {
	var out []key.Binding
	for _, kind := range kinds {
		out = append(out, k.act(kind))
	}
	for _, a := range k.ActionKeys {
		if a.Kind.Changes() && !slices.Contains(kinds, a.Kind) {
			out = append(out, a.Binding)
		}
	}
	return out
}

// changingHelp is the changing actions' keys in the help: the mode's,
// then the unit's, then the files'.
func (k KeyMap) changingHelp() []key.Binding {
	return k.actionHelp(remote.ActSetMode, remote.ActUndoMode, remote.ActRestart, remote.ActResetFailed, remote.ActRedeploy)
}

// helpKeys is the help.KeyMap for one state of the UI.
type helpKeys struct {
	short []key.Binding
	full  [][]key.Binding
}

func (h helpKeys) ShortHelp() []key.Binding  { return h.short }
func (h helpKeys) FullHelp() [][]key.Binding { return h.full }

// tableHelp is the help on the fleet table.
func (k KeyMap) tableHelp() helpKeys {
	return helpKeys{
		short: []key.Binding{k.Help, k.HostFilter, k.Palette, k.Open,
			k.act(remote.ActSetMode), k.act(remote.ActRestart), k.act(remote.ActResetFailed), k.act(remote.ActRedeploy), k.Select, k.Quit},
		full: [][]key.Binding{
			{k.Up, k.Down, k.First, k.PageDown, k.Sort, k.NextFailed, k.Open},
			{k.Group, k.Expand, k.Collapse, k.Select, k.MarkAll, k.HostFilter, k.Palette},
			{k.Explain, k.CopyFix, k.CopyEvidence, k.Help, k.Quit},
			append(k.changingHelp(), k.Rollout, k.act(remote.ActBench), k.Actions, k.Reconnect),
		},
	}
}

// hostHelp is the help in the host view.
func (k KeyMap) hostHelp() helpKeys {
	return helpKeys{
		short: []key.Binding{k.Help, k.Back, k.Explain, k.Filter, k.NextMatch, k.Follow, k.Wrap, k.act(remote.ActSetMode), k.act(remote.ActRestart)},
		full: [][]key.Binding{
			{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Explain},
			{k.Filter, k.NextMatch, k.PrevMatch, k.Follow, k.Wrap, k.Fold, k.CopyFix, k.CopyEvidence, k.Back},
			append(k.changingHelp(), k.act(remote.ActBench), k.Actions, k.Reconnect, k.Palette, k.Help, k.Quit),
		},
	}
}

// diagHelp is the help in the diagnosis detail.
func (k KeyMap) diagHelp() helpKeys {
	return helpKeys{
		short: []key.Binding{k.Help, k.Back, k.Up, k.Down, k.CopyFix, k.CopyEvidence, k.act(remote.ActSetMode), k.act(remote.ActRestart)},
		full: [][]key.Binding{
			{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Back},
			{k.CopyFix, k.CopyEvidence, k.Palette, k.Help, k.Quit},
			k.changingHelp(),
		},
	}
}

// rolloutHelp is the help in the rollout view.
func (k KeyMap) rolloutHelp() helpKeys {
	return helpKeys{
		short: []key.Binding{k.Help, k.Back, k.Rollback, k.Abort, k.Actions, k.Quit},
		full: [][]key.Binding{
			{k.Up, k.Down, k.Open, k.Back},
			{k.Rollback, k.Abort, k.Actions, k.Palette, k.Help, k.Quit},
		},
	}
}

// withReplay adds the replay's keys to h: first in the short help, so a
// narrow footer keeps them, and as a column of the full help.
func (k KeyMap) withReplay(h helpKeys) helpKeys {
	replay := []key.Binding{k.Pause, k.Faster, k.Slower}
	short := append([]key.Binding{h.short[0]}, replay...)
	return helpKeys{
		short: append(short, h.short[1:]...),
		full:  append(slices.Clone(h.full), replay),
	}
}

// actionsHelp is the help in the log of remote commands.
func (k KeyMap) actionsHelp() helpKeys {
	return helpKeys{short: []key.Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Back}}
}

// benchHelp is the help while a smoke load's overlay is open.
func (k KeyMap) benchHelp() helpKeys { return helpKeys{short: []key.Binding{k.StopBench}} }

// dialogHelp is the help while a chooser or confirmation is open.
func (k KeyMap) dialogHelp(confirm bool) helpKeys {
	if confirm {
		return helpKeys{short: []key.Binding{k.Confirm, k.Cancel}}
	}
	choose := key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter/1-9", "choose"))
	return helpKeys{short: []key.Binding{k.Up, k.Down, choose, k.Back}}
}

var _ help.KeyMap = helpKeys{}
