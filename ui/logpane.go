package ui

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// logView is the log pane's state: where it looks in a host's ring, and
// the filter. It renders only the lines on screen, so a frame costs the
// same with 50 lines of history as with 50 000.
type logView struct {
	follow  bool // keep the newest line at the bottom
	top     int  // sequence number of the first line shown when not following
	wrap    bool // wrap long lines (only those on screen)
	query   string
	lq      string // query, lower-cased, for matching
	cur     int    // sequence number of the current match, or -1
	matches int    // lines in the ring that match

	// fold folds the ranks' copies of a line into one row (fold.go); nil
	// shows every line. expanded is the first line of the one group shown
	// unfolded because the current match is inside it, or -1.
	fold     *foldIndex
	expanded int
}

func newLogView() logView { return logView{follow: true, cur: -1, expanded: -1} }

// setFold folds r's lines (on) or shows each (off). Building the index
// looks at every line held once; from then on each line is looked at as
// it arrives (synced).
func (v *logView) setFold(on bool, r *ring) {
	v.fold = nil
	if on && r != nil {
		v.fold = newFoldIndex(r)
	}
}

// synced brings the fold index up to r: O(lines that came and went).
func (v *logView) synced(r *ring) {
	if v.fold != nil {
		v.fold.sync(r)
	}
}

// shown reports whether line seq is a row of its own: every line when
// not folding; else a line not folded into another's row, or one of the
// group the current match opened.
func (v *logView) shown(seq int) bool {
	if v.fold == nil {
		return true
	}
	h := v.fold.headOf(seq)
	return h == seq || h == v.expanded
}

// rowOf is the row that shows line seq: seq, or the first line of the
// group it is folded into.
func (v *logView) rowOf(seq int) int {
	if v.shown(seq) {
		return seq
	}
	return v.fold.headOf(seq)
}

// step moves n rows from row seq (back when n < 0), stopping at the
// oldest and the newest row. Without folding it is arithmetic; folded, a
// row is at most foldWindow lines from the next, so it costs O(n ×
// foldWindow).
func (v *logView) step(r *ring, seq, n int) int {
	lo, hi := r.first(), v.lastRow(r)
	if v.fold == nil {
		return min(max(seq+n, lo), hi)
	}
	for ; n > 0 && seq < hi; n-- {
		seq = v.after(r, seq)
	}
	for ; n < 0 && seq > lo; n++ {
		seq = v.before(seq)
	}
	return min(max(seq, lo), hi)
}

// after is the row after line seq, or r.total when there is none.
func (v *logView) after(r *ring, seq int) int {
	for seq++; seq < r.total && !v.shown(seq); seq++ {
	}
	return seq
}

// before is the row before line seq (first()-1 when there is none; the
// oldest line is always a row).
func (v *logView) before(seq int) int {
	for seq--; !v.shown(seq); seq-- {
	}
	return seq
}

// lastRow is the newest row: the newest line, unless it is folded.
func (v *logView) lastRow(r *ring) int {
	if r.n == 0 {
		return r.first() - 1
	}
	return v.rowOf(r.total - 1)
}

// matches reports whether l matches the filter (case-insensitive).
func (v *logView) match(l logLine) bool {
	return v.lq != "" && strings.Contains(strings.ToLower(l.Text), v.lq)
}

// setQuery sets the filter and counts its matches: O(ring), once per query.
func (v *logView) setQuery(q string, r *ring) {
	v.query, v.lq, v.cur, v.matches, v.expanded = q, strings.ToLower(q), -1, 0, -1
	if r == nil || v.lq == "" {
		return
	}
	for seq := r.first(); seq < r.total; seq++ {
		if v.match(r.at(seq)) {
			v.matches++
		}
	}
}

// pushed keeps the match count right as the ring moves: O(1) per line.
func (v *logView) pushed(l, old logLine, evicted bool) {
	if v.lq == "" {
		return
	}
	if v.match(l) {
		v.matches++
	}
	if evicted && v.match(old) {
		v.matches--
	}
}

// start is the sequence number of the first row shown in an h-row pane.
func (v *logView) start(r *ring, h int) int {
	lo := r.first()
	hi := max(lo, r.total-h)
	if v.fold != nil {
		hi = max(lo, v.step(r, v.lastRow(r), -(h-1)))
	}
	if v.follow {
		return hi
	}
	return min(max(v.rowOf(max(v.top, lo)), lo), hi)
}

// scroll moves the view by n rows (up when negative). Scrolling up leaves
// follow mode; reaching the bottom returns to it, as in less +F.
func (v *logView) scroll(r *ring, h, n int) {
	v.follow = false
	v.top = v.step(r, v.start(r, h), n)
	v.settle(r, h)
}

// settle returns to follow mode when the top row shows the newest rows,
// and keeps the top in the ring.
func (v *logView) settle(r *ring, h int) {
	follow := v.follow
	v.follow = true
	bottom := v.start(r, h)
	v.follow = follow
	if v.top >= bottom {
		v.follow = true
	}
	v.top = v.start(r, h)
}

// find looks for the next match after seq (dir 1) or before it (dir -1),
// wrapping around the ring like less does with its wrap-search option.
// Folded, a match inside a group is found too (jump opens the group), but
// once per group: a line whose group already matched at an earlier line
// shows nothing new.
func (v *logView) find(r *ring, seq, dir int) (found int, wrapped, ok bool) {
	if v.lq == "" || r.n == 0 {
		return 0, false, false
	}
	lo, hi := r.first(), r.total-1
	s := seq
	for i := 0; i < r.n; i++ {
		s += dir
		if s > hi {
			s, wrapped = lo, true
		} else if s < lo {
			s, wrapped = hi, true
		}
		if v.match(r.at(s)) && !v.matchedBefore(r, s) {
			return s, wrapped, true
		}
	}
	return 0, false, false
}

// matchedBefore reports whether line seq is folded into a group whose
// earlier lines already match the filter.
func (v *logView) matchedBefore(r *ring, seq int) bool {
	if v.fold == nil {
		return false
	}
	head := v.fold.headOf(seq)
	g := v.fold.group(head)
	if head == seq || g == nil {
		return false
	}
	for _, m := range g.members {
		if m == seq {
			return false
		}
		if v.match(r.at(m)) {
			return true
		}
	}
	return false
}

// jump makes seq the current match and scrolls it into view a third of the
// way down, so the lines leading up to it show too. A match folded into a
// group opens the group.
func (v *logView) jump(r *ring, h, seq int) {
	v.cur, v.expanded = seq, -1
	if v.fold != nil && !v.shown(seq) {
		v.expanded = v.fold.headOf(seq)
	}
	v.follow = false
	v.top = v.step(r, seq, -(h / 3))
	v.settle(r, h)
}

// end is the first line after an h-row pane's last row.
func (v *logView) end(r *ring, h int) int {
	if v.fold == nil {
		return min(r.total, v.start(r, h)+h)
	}
	return v.after(r, v.step(r, v.start(r, h), h-1))
}

// paneInfo is what a render learned that the pane's title shows.
type paneInfo struct {
	last int // sequence number of the last line shown, or first()-1
}

// render draws the pane: exactly h rows of at most w cells.
func (v *logView) render(r *ring, w, h int, s Styles) (string, paneInfo) {
	info := paneInfo{last: r.first() - 1}
	if h <= 0 || w <= 0 {
		return "", info
	}
	stamp := w >= 70
	rows := make([]string, 0, h)
	if !v.wrap {
		first := v.start(r, h)
		for seq := first; seq < r.total && len(rows) < h; seq = v.after(r, seq) {
			rows = append(rows, v.renderLine(r, seq, w, stamp, s)[0])
			info.last = seq
		}
	} else if v.follow {
		// Fill from the bottom up, wrapping only lines that will show.
		var rev [][]string
		n := 0
		for seq := v.lastRow(r); seq >= r.first() && n < h; seq = v.before(seq) {
			ls := v.renderLine(r, seq, w, stamp, s)
			rev = append(rev, ls)
			n += len(ls)
		}
		for i := len(rev) - 1; i >= 0; i-- {
			rows = append(rows, rev[i]...)
		}
		rows = rows[max(0, len(rows)-h):]
		info.last = r.total - 1
	} else {
		for seq := v.start(r, h); seq < r.total && len(rows) < h; seq = v.after(r, seq) {
			rows = append(rows, v.renderLine(r, seq, w, stamp, s)...)
			info.last = seq
		}
		rows = rows[:min(h, len(rows))]
	}
	if info.last >= 0 && info.last < r.total-1 && v.after(r, info.last) >= r.total {
		info.last = r.total - 1 // the lines after the last row are folded into rows shown
	}
	for len(rows) < h {
		rows = append(rows, "")
	}
	return strings.Join(rows, "\n"), info
}

// renderLine draws one log line: one row, or several when wrapping. The
// text is cut while still plain, then painted, so styling never has to
// measure it again.
func (v *logView) renderLine(r *ring, seq, w int, stamp bool, s Styles) []string {
	l := r.at(seq)
	k := s.log
	prefix, pw := " ", 1
	if seq == v.cur {
		prefix = k.cur.paint("›")
	}
	if stamp {
		ts := "        "
		if !l.Time.IsZero() {
			ts = l.Time.Format("15:04:05")
		}
		prefix += k.time.paint(ts) + " "
		pw += 9
	}
	bw := max(1, w-pw)
	text := l.Text
	var style ink // journal lines keep the terminal's own colour
	switch l.Kind {
	case lineErr:
		style = k.err
	case lineGap:
		text, style = "┄┄ "+text, k.gap
	case lineAction:
		text, style = "▶ "+text, k.action
	case lineMark:
		text, style = "── "+text+" ──", k.mark
	case lineJournal: // the terminal's own colour
	}
	mark := ""
	if g := v.foldedAt(seq); g != nil {
		text, mark = g.label(text), g.mark()
	}
	if !v.wrap {
		// The count stays in sight: the text gives way to it.
		mw := width(mark)
		if mw >= bw {
			mark, mw = "", 0
		}
		return []string{prefix + v.highlight(clip(precut(text, bw-mw), bw-mw), style, k.match) + k.fold.paint(mark)}
	}
	parts := strings.Split(ansi.Hardwrap(text+mark, bw, true), "\n")
	out := make([]string, len(parts))
	indent := strings.Repeat(" ", pw)
	for i, p := range parts {
		lead := indent
		if i == 0 {
			lead = prefix
		}
		out[i] = lead + v.highlight(clip(p, bw), style, k.match)
	}
	return out
}

// foldedAt is the group line seq's row stands for, or nil when the row is
// the line alone (not folding, a line no other rank repeated, or the
// group the current match opened).
func (v *logView) foldedAt(seq int) *foldGroup {
	if v.fold == nil || seq == v.expanded {
		return nil
	}
	return v.fold.group(seq)
}

// highlight paints text, marking every case-insensitive match of the
// filter. Text is plain (sanitised), so byte offsets are safe to cut at
// when lower-casing keeps the length.
func (v *logView) highlight(text string, style, match ink) string {
	if v.lq == "" {
		return style.paint(text)
	}
	low := strings.ToLower(text)
	if len(low) != len(text) {
		return style.paint(text)
	}
	var b strings.Builder
	for {
		i := strings.Index(low, v.lq)
		if i < 0 {
			break
		}
		b.WriteString(style.paint(text[:i]))
		b.WriteString(match.paint(text[i : i+len(v.lq)]))
		text, low = text[i+len(v.lq):], low[i+len(v.lq):]
	}
	b.WriteString(style.paint(text))
	return b.String()
}
