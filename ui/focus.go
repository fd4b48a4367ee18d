package ui

// focus is what the keys go to: a view, or a layer opened over one.
type focus uint8

const (
	// The views, bottom to top: the table is always there; the rollout
	// view opens over it, and the host view over either.
	focusTable   focus = iota // the fleet table
	focusRollout              // the rollout view (m.rollout is set)
	focusHost                 // the host view

	// The layers: at most one is open, over the view it was opened from.
	focusLogFilter   // the host view's log filter prompt (/)
	focusHostFilter  // the table's filter prompt (/)
	focusPalette     // the command palette (:)
	focusDialog      // a chooser or a confirmation (m.dialog)
	focusRolloutForm // the rollout form (m.dialog of kind dlgRollout)
	focusHelp        // the keys of the view (?)
	focusActions     // the log of remote commands (@)
	focusCommands    // the palette's commands (:help)
	focusBench       // a smoke load's progress (m.bench): esc or ctrl+c stops it

	// focusDiag is the diagnosis detail (m.diag): a view of its own, over
	// the table or the host view it was opened from, so that an action's
	// dialog can open over it.
	focusDiag
)

func (f focus) String() string {
	switch f {
	case focusTable:
		return "table"
	case focusRollout:
		return "rollout"
	case focusHost:
		return "host"
	case focusLogFilter:
		return "log-filter"
	case focusHostFilter:
		return "host-filter"
	case focusPalette:
		return "palette"
	case focusDialog:
		return "dialog"
	case focusRolloutForm:
		return "rollout-form"
	case focusHelp:
		return "help"
	case focusActions:
		return "actions"
	case focusCommands:
		return "commands"
	case focusBench:
		return "bench"
	case focusDiag:
		return "diagnosis"
	}
	return "focus?"
}

// isView reports whether f is a view rather than a layer over one.
func (f focus) isView() bool { return f <= focusHost || f == focusDiag }

// isDialog reports whether f is a modal that m.dialog holds.
func (f focus) isDialog() bool { return f == focusDialog || f == focusRolloutForm }

// focusStack is what has the keys, with what is under it: the table at
// the bottom, the views opened over it, then a layer. esc pops the top,
// so it goes back to what was under it.
type focusStack []focus

// top is what has the keys.
func (s focusStack) top() focus {
	if len(s) == 0 {
		return focusTable
	}
	return s[len(s)-1]
}

// view is the view drawn under any layer.
func (s focusStack) view() focus {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i].isView() {
			return s[i]
		}
	}
	return focusTable
}

func (s *focusStack) push(f focus) { *s = append(*s, f) }

// pop closes the top; the table stays.
func (s *focusStack) pop() {
	if len(*s) > 1 {
		*s = (*s)[:len(*s)-1]
	}
}

// openDialog shows d, in place of the dialog open (one leads to the
// next), or over the view.
func (m *Model) openDialog(d *dialog) {
	f := focusDialog
	if d.kind == dlgRollout {
		f = focusRolloutForm
	}
	if m.focus.top().isDialog() {
		m.focus.pop()
	}
	m.dialog = d
	m.focus.push(f)
}

// closeDialog closes the dialog, back to the view under it.
func (m *Model) closeDialog() {
	if m.focus.top().isDialog() {
		m.focus.pop()
	}
	m.dialog = nil
}

// showView makes v the view: the table alone; the rollout over the
// table; a host over the view it is opened from (in place of a host
// view, so esc still goes back to the table or the rollout).
func (m *Model) showView(v focus) {
	switch v {
	case focusTable:
		m.focus = focusStack{focusTable}
	case focusRollout:
		m.focus = focusStack{focusTable, focusRollout}
	case focusHost, focusDiag:
		if m.focus.top() == v {
			m.focus.pop()
		}
		m.focus.push(v)
	default: // not a view: prompts and overlays are pushed, not shown
	}
}
