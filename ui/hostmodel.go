package ui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/remote"
)

// hostModel is the host view's state: which host it shows, where its log
// pane stands (scroll, follow, wrap, the log filter and its matches, the
// ranks' lines folded or not) and the log filter's prompt. Its Update
// answers the view's own keys and UpdateFilter the prompt; View draws it.
// Both are given the host's latest state (nil when the snapshot has none);
// the log lines it reads from the store it shares with the root model.
type hostModel struct {
	keys   KeyMap
	logs   *logStore // every host's log; the root model appends to it
	width  int       // cells of the view's body
	height int       // rows of the view's body

	name        string  // the host shown
	log         logView // the log pane's place, filter and fold
	filterInput textinput.Model
	// unfold shows every rank's copy of a line (z); by default they fold
	// into one row. It holds for every host opened until changed.
	unfold bool
	// lanesOf is the deployment a host is a node of, for the lanes that
	// show its nodes side by side (the table's; nil: none).
	lanesOf func(host string) (laneSet, bool)
}

// lanes is the shown host's deployment's lanes; nil when it is in none.
func (v *hostModel) lanes() *laneSet {
	if v.lanesOf == nil {
		return nil
	}
	ls, ok := v.lanesOf(v.name)
	if !ok {
		return nil
	}
	return &ls
}

func newHostModel(keys KeyMap, logs *logStore, height int) hostModel {
	in := textinput.New()
	in.Prompt = "/"
	in.Placeholder = "filter logs"
	in.CharLimit = 200
	return hostModel{keys: keys, logs: logs, width: 80, height: height, log: newLogView(), filterInput: in}
}

// ring is the shown host's log.
func (v *hostModel) ring() *ring { return v.logs.ring(v.name) }

// open shows host name, following its log, keeping the filter query
// (recounted for this host), the wrap and the fold.
func (v *hostModel) open(name string) {
	v.name = name
	q, wrap := v.log.query, v.log.wrap
	v.log = newLogView()
	v.log.wrap = wrap
	v.log.setQuery(q, v.ring())
	v.log.setFold(!v.unfold, v.ring())
}

// logHeight is the log pane's height right now, for hs the shown host.
func (v *hostModel) logHeight(hs *remote.HostState) int {
	if hs == nil {
		return 1
	}
	return max(1, layoutHost(hs, v.width, v.lanes().rows(), v.height).logH)
}

// Update answers a key of the view's own (scrolling and searching the
// log, follow, wrap, fold) and the view's size (its body's rows); the
// reply says ignored for any other message. hs is the shown host's
// latest state.
func (v *hostModel) Update(msg tea.Msg, hs *remote.HostState) reply {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		v.width, v.height = msg.Width, msg.Height
		v.filterInput.SetWidth(max(10, msg.Width-20))
		return reply{}
	case tea.KeyPressMsg:
		return v.key(msg, hs)
	}
	return reply{ignored: true}
}

func (v *hostModel) key(msg tea.KeyPressMsg, hs *remote.HostState) reply {
	k := v.keys
	r := v.ring()
	h := v.logHeight(hs)
	switch {
	case key.Matches(msg, k.Up):
		v.log.scroll(r, h, -1)
	case key.Matches(msg, k.Down):
		v.log.scroll(r, h, 1)
	case key.Matches(msg, k.PageUp):
		v.log.scroll(r, h, -max(1, h-1))
	case key.Matches(msg, k.PageDown):
		v.log.scroll(r, h, max(1, h-1))
	case key.Matches(msg, k.Top):
		v.log.follow, v.log.top = false, r.first()
	case key.Matches(msg, k.Bottom):
		v.log.follow = true
	case key.Matches(msg, k.Follow):
		v.toggleFollow(hs)
	case key.Matches(msg, k.Wrap):
		v.log.wrap = !v.log.wrap
	case key.Matches(msg, k.Fold):
		return v.toggleFold()
	case key.Matches(msg, k.NextMatch):
		return v.nextMatch(1, hs)
	case key.Matches(msg, k.PrevMatch):
		return v.nextMatch(-1, hs)
	default:
		return reply{ignored: true}
	}
	return reply{}
}

// toggleFold folds the ranks' copies of a line into one row, or shows
// each again; the choice holds for every host view until changed. The
// view keeps its place: the row on top stays on top.
func (v *hostModel) toggleFold() reply {
	v.unfold = !v.unfold
	v.log.setFold(!v.unfold, v.ring())
	if v.unfold {
		v.log.expanded = -1
		return reply{status: "unfolded: every rank's line"}
	}
	return reply{status: "folded: the ranks' copies of a line as one row (z unfolds)"}
}

// toggleFollow stops following the log where it is, or follows again.
func (v *hostModel) toggleFollow(hs *remote.HostState) {
	if v.log.follow {
		v.log.top, v.log.follow = v.log.start(v.ring(), v.logHeight(hs)), false
	} else {
		v.log.follow = true
	}
}

// nextMatch jumps to the next (dir 1) or previous (dir -1) match, starting
// from the current match, or from the screen when there is none.
func (v *hostModel) nextMatch(dir int, hs *remote.HostState) reply {
	if v.log.query == "" {
		return reply{status: "no filter: press / to set one"}
	}
	r, h := v.ring(), v.logHeight(hs)
	from := v.log.cur
	if from < r.first() {
		from = v.log.start(r, h) - 1
		if dir < 0 || v.log.follow {
			from = v.log.end(r, h)
		}
	}
	seq, wrapped, ok := v.log.find(r, from, dir)
	if !ok {
		return reply{status: fmt.Sprintf("no match for %q", v.log.query)}
	}
	v.log.jump(r, h, seq)
	if wrapped {
		return reply{status: "search wrapped"}
	}
	return reply{}
}

// openFilter answers / in the view: the prompt, holding the query in
// force. The console puts the prompt's layer over the view.
func (v *hostModel) openFilter() tea.Cmd {
	v.filterInput.SetValue(v.log.query)
	v.filterInput.CursorEnd()
	return v.filterInput.Focus()
}

// UpdateFilter answers what is typed at the log filter prompt: enter
// sets the query and jumps to the newest match, esc leaves the query as
// it was. The reply says when the prompt closed.
func (v *hostModel) UpdateFilter(msg tea.Msg, hs *remote.HostState) reply {
	if k, ok := msg.(tea.KeyPressMsg); ok {
		switch k.String() {
		case "esc":
			v.filterInput.Blur()
			return reply{closed: true}
		case "enter":
			v.filterInput.Blur()
			v.log.setQuery(strings.TrimSpace(v.filterInput.Value()), v.ring())
			if v.log.query == "" {
				return reply{status: "filter cleared", closed: true}
			}
			// Start from the newest line when following, as a log reader
			// wants the latest match first.
			r := v.nextMatch(-1, hs)
			r.closed = true
			return r
		}
	}
	var cmd tea.Cmd
	v.filterInput, cmd = v.filterInput.Update(msg)
	return reply{cmd: cmd}
}

// appended keeps the pane's filter count and place when a line went onto
// the shown host's ring, old and evicted as the store's push says.
func (v *hostModel) appended(old logLine, evicted bool) {
	r := v.ring()
	v.log.pushed(r.at(r.total-1), old, evicted)
	v.log.synced(r)
}

// trimmed keeps the pane in step after the store dropped the shown
// host's oldest lines: the filter recounts its matches.
func (v *hostModel) trimmed() {
	r := v.ring()
	v.log.synced(r)
	if v.log.query != "" {
		cur, expanded := v.log.cur, v.log.expanded
		v.log.setQuery(v.log.query, r)
		if cur >= r.first() {
			v.log.cur, v.log.expanded = cur, expanded
		}
	}
}

// View draws the view of hs, the shown host, in w×h: typing says the
// log filter's prompt is open. now is what durations are measured
// against; localHashes is the local build's hash per kernel (nil when
// unknown).
func (v *hostModel) View(w, h int, hs *remote.HostState, now time.Time, styles Styles, localHashes map[string]string, typing bool) string {
	hv := hostView{hs: hs, logs: v.ring(), lv: &v.log, now: now, styles: styles, local: localHashes, lanes: v.lanes()}
	if typing {
		hv.input = v.filterInput.View()
	}
	return hv.Render(w, h)
}
