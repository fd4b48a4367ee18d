package ui

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/startup"
)

// hostFilter is the fleet table's filter, as k9s has it: words separated
// by spaces that must all match. A bare word matches host names: a
// regular expression found anywhere in the name, in any case (gpu[12]),
// or when it is no regular expression, a substring (the filter says so); phase:P matches the startup phase (a phase's
// name, or the start of one: phase:graph), mode:M a kernel mode in force
// on disk (M, or KERNEL=M), state:S the unit's active or sub state, or
// the connection's state (state:failed, state:unreachable).
type hostFilter struct {
	text  string // as typed, trimmed
	terms []filterTerm
	// note says which words were no regular expression and are matched
	// as text; "" when none.
	note string
}

// filterTerm is one word of a filter.
type filterTerm struct {
	key    string // "" (a host name), "phase", "mode" or "state"
	value  string // lower case
	phases []startup.Phase
	name   *regexp.Regexp // a host name word as a regular expression; nil: a substring
}

// filterKeys are the keys a filter word may have, in the order help and
// completion give them.
func filterKeys() []string { return []string{"phase", "mode", "state"} }

// allPhases is every phase a host may be in: the path, then off it.
func allPhases() []startup.Phase {
	return startup.All()
}

// unitStates are the states completion offers for state: (any state
// matches; these are the ones people filter on).
func unitStates() []string {
	return []string{"failed", "active", "activating", "deactivating", "inactive", "running", "auto-restart", "dead", "up", "down", "unreachable"}
}

// kernelModeNames is every mode name of the catalog, once each, in order.
func kernelModeNames(cat kernels.Catalog) []string {
	var out []string
	for _, k := range cat.Kernels {
		for _, md := range k.Modes {
			if !slices.Contains(out, md.Name) {
				out = append(out, md.Name)
			}
		}
	}
	return out
}

// parseHostFilter reads a filter. names are the fleet's hosts: a word
// with a colon that is no filter key is a host name only when some host
// name holds it (user@host:port), else it is a mistake, reported.
func parseHostFilter(text string, names []string, cat kernels.Catalog) (hostFilter, error) {
	f := hostFilter{text: strings.TrimSpace(text)}
	for _, w := range strings.Fields(f.text) {
		t, err := parseFilterTerm(w, names, cat)
		if err != nil {
			return hostFilter{}, err
		}
		if t.key == "" {
			re, err := regexp.Compile("(?i)" + w)
			if err == nil {
				t.name = re
			} else if f.note == "" {
				f.note = fmt.Sprintf("%q is no regular expression (%s): matched as text", w, regexpWhy(err))
			}
		}
		f.terms = append(f.terms, t)
	}
	return f, nil
}

func parseFilterTerm(w string, names []string, cat kernels.Catalog) (filterTerm, error) {
	lw := strings.ToLower(w)
	key, value, ok := strings.Cut(lw, ":")
	if !ok || !slices.Contains(filterKeys(), key) {
		if ok && !slices.ContainsFunc(names, func(n string) bool { return strings.Contains(strings.ToLower(n), lw) }) {
			return filterTerm{}, fmt.Errorf("unknown filter term %q: use a host name or a phase:, mode: or state: term", w)
		}
		return filterTerm{value: lw}, nil
	}
	t := filterTerm{key: key, value: value}
	switch key {
	case "phase":
		all := allPhases()
		for _, p := range all {
			if string(p) == value {
				t.phases = []startup.Phase{p}
			}
		}
		if t.phases == nil && value != "" {
			for _, p := range all {
				if strings.HasPrefix(string(p), value) {
					t.phases = append(t.phases, p)
				}
			}
		}
		if t.phases == nil {
			return filterTerm{}, fmt.Errorf("unknown phase %q: %s", value, joinPhases(all))
		}
	case "mode":
		if err := checkFilterMode(value, cat); err != nil {
			return filterTerm{}, err
		}
	case "state":
		if value == "" {
			return filterTerm{}, fmt.Errorf("state: needs a unit state: %s", strings.Join(unitStates(), ", "))
		}
	}
	return t, nil
}

// checkFilterMode accepts a mode of the catalog, or KERNEL=MODE; with an
// empty catalog any mode goes.
func checkFilterMode(value string, cat kernels.Catalog) error {
	if len(cat.Kernels) == 0 && value != "" {
		return nil
	}
	if strings.Contains(value, "=") {
		_, _, err := cat.ParseAssignment(value)
		return err
	}
	names := kernelModeNames(cat)
	for _, n := range names {
		if strings.EqualFold(n, value) {
			return nil
		}
	}
	return fmt.Errorf("unknown mode %q: %s", value, strings.Join(names, ", "))
}

// regexpWhy is a regexp error's reason without the expression, which
// the note names already: "missing closing ]".
func regexpWhy(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return string(se.Code)
	}
	return err.Error()
}

func joinPhases(ps []startup.Phase) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

// active reports whether the filter hides anything at all.
func (f hostFilter) active() bool { return len(f.terms) > 0 }

// match reports whether h passes every term.
func (f hostFilter) match(h *remote.HostState) bool {
	for _, t := range f.terms {
		if !t.match(h) {
			return false
		}
	}
	return true
}

func (t filterTerm) match(h *remote.HostState) bool {
	switch t.key {
	case "":
		if t.name != nil {
			return t.name.MatchString(h.Name)
		}
		return strings.Contains(strings.ToLower(h.Name), t.value)
	case "phase":
		// A crash-looping host is failed, whatever run it is in.
		return slices.Contains(t.phases, h.Startup.Phase) || h.Startup.Loop != nil && slices.Contains(t.phases, startup.Failed)
	case "mode":
		return slices.ContainsFunc(h.Modes, func(m kernels.ActiveMode) bool {
			return strings.EqualFold(m.Mode, t.value) || strings.EqualFold(m.Kernel+"="+m.Mode, t.value)
		})
	case "state":
		for _, s := range []string{h.UnitState.ActiveState, h.UnitState.SubState, h.UnitState.LoadState, string(h.Conn.State)} {
			if s != "" && strings.EqualFold(s, t.value) {
				return true
			}
		}
	}
	return false
}

// refilter recomputes the rows the table shows and its lines. The cursor
// stays on the first of keep that is still shown (in the group it was
// in, when the table is grouped), else on the group row it was on, else
// on the line it was on.
func (t *tableModel) refilter(keep ...string) {
	prev := t.cursor
	prevGroup, onGroup := t.groupKey(prev), t.onGroupRow()
	t.rows = t.rows[:0]
	for i := range t.hosts {
		if t.filter.match(&t.hosts[i]) {
			t.rows = append(t.rows, i)
		}
	}
	sortRows(t.rows, t.hosts, t.sort)
	t.layout()
	t.cursor = max(0, min(prev, len(t.lines)-1))
	for _, name := range keep {
		if i := t.lineOfHost(name, prevGroup); i >= 0 {
			t.cursor = i
			return
		}
	}
	if onGroup {
		if i := t.lineOfGroup(prevGroup); i >= 0 {
			t.cursor = i
		}
	}
}

// cursorHost is the host on the table's cursor line; "" on a group's
// summary row.
func (t *tableModel) cursorHost() string {
	if t.cursor < len(t.lines) {
		if l := t.lines[t.cursor]; l.host >= 0 {
			return t.hosts[l.host].Name
		}
	}
	return ""
}

// shown is the names of the hosts the table shows, in order.
func (t *tableModel) shown() []string {
	out := make([]string, len(t.rows))
	for r, i := range t.rows {
		out[r] = t.hosts[i].Name
	}
	return out
}

// shownMarked is the marked hosts among those shown, in table order:
// what "marked" means to every action.
func (t *tableModel) shownMarked() []string {
	var out []string
	for _, n := range t.shown() {
		if t.marked[n] {
			out = append(out, n)
		}
	}
	return out
}

// hostNames is every host of the fleet, in order.
func (t *tableModel) hostNames() []string {
	out := make([]string, len(t.hosts))
	for i := range t.hosts {
		out[i] = t.hosts[i].Name
	}
	return out
}

// setFilter parses and applies text as the table's filter.
func (t *tableModel) setFilter(text string) error {
	f, err := parseHostFilter(text, t.hostNames(), t.catalog)
	if err != nil {
		return err
	}
	t.filter = f
	t.refilter(t.cursorHost())
	return nil
}

// openFilter answers / on the table: the prompt, holding the filter in
// force. The console puts the prompt's layer over the table.
func (t *tableModel) openFilter() tea.Cmd {
	t.filterErr, t.filterNote = "", t.filter.note
	t.filterInput.SetValue(t.filter.text)
	t.filterInput.CursorEnd()
	return t.filterInput.Focus()
}

// UpdateFilter answers what is typed at the filter prompt while it is
// open: the table follows as it is typed. A word that does not parse
// (yet) leaves the last filter that did in force and says why beside the
// prompt; enter on it says so in the status line and keeps the prompt.
// esc clears the filter. The reply says when the prompt closed.
func (t *tableModel) UpdateFilter(msg tea.Msg) reply {
	if k, ok := msg.(tea.KeyPressMsg); ok {
		switch k.String() {
		case "esc":
			t.closeFilter()
			t.filter = hostFilter{}
			t.refilter(t.cursorHost())
			return reply{status: "filter cleared", closed: true}
		case "enter":
			if err := t.setFilter(t.filterInput.Value()); err != nil {
				return reply{status: err.Error(), isErr: true}
			}
			t.closeFilter()
			if !t.filter.active() {
				return reply{status: "filter cleared", closed: true}
			}
			return reply{status: t.filter.note, closed: true}
		}
	}
	return reply{cmd: t.editFilter(msg)}
}

// editFilter hands msg (a key, a paste) to the prompt and applies what it
// then holds, when that parses.
func (t *tableModel) editFilter(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	t.filterInput, cmd = t.filterInput.Update(msg)
	t.filterErr = ""
	if err := t.setFilter(t.filterInput.Value()); err != nil {
		t.filterErr = err.Error()
	}
	t.filterNote = t.filter.note
	return cmd
}

func (t *tableModel) closeFilter() {
	t.filterErr, t.filterNote = "", ""
	t.filterInput.Blur()
}

// filterBadge is the header's account of the filter: "filter: TEXT  N/M
// hosts", or "" with no filter.
func (t *tableModel) filterBadge() string {
	if !t.filter.active() {
		return ""
	}
	return fmt.Sprintf("filter: %s  %d/%d hosts", t.filter.text, len(t.rows), len(t.hosts))
}

// filterPromptView is the footer while the filter prompt is open: why
// the text does not parse, else status (the status line drawn, "" when
// it shows nothing), else what words there are; then the prompt.
func (t *tableModel) filterPromptView(w int, status string) string {
	s := t.styles
	var top string
	switch {
	case t.filterErr != "":
		top = s.StatusErr.Render(clip(t.filterErr, w))
	case status != "":
		top = status
	case t.filterNote != "":
		top = s.Warn.Render(clip(t.filterNote, w))
	default:
		top = s.Dim.Render(clip("words: a name or regexp, phase:failed, mode:validate, state:failed · enter keeps · esc clears", w))
	}
	return top + "\n" + clip(t.filterInput.View(), w)
}
