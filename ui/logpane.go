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
}

func newLogView() logView { return logView{follow: true, cur: -1} }

// matches reports whether l matches the filter (case-insensitive).
func (v *logView) match(l logLine) bool {
	return v.lq != "" && strings.Contains(strings.ToLower(l.Text), v.lq)
}

// setQuery sets the filter and counts its matches: O(ring), once per query.
func (v *logView) setQuery(q string, r *ring) {
	v.query, v.lq, v.cur, v.matches = q, strings.ToLower(q), -1, 0
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

// start is the sequence number of the first line shown in an h-line pane.
func (v *logView) start(r *ring, h int) int {
	lo, hi := r.first(), max(r.first(), r.total-h)
	if v.follow {
		return hi
	}
	return min(max(v.top, lo), hi)
}

// scroll moves the view by n lines (up when negative). Scrolling up leaves
// follow mode; reaching the bottom returns to it, as in less +F.
func (v *logView) scroll(r *ring, h, n int) {
	v.top = v.start(r, h) + n
	v.follow = false
	if v.top >= r.total-h {
		v.follow = true
	}
	v.top = v.start(r, h)
}

// find looks for the next match after seq (dir 1) or before it (dir -1),
// wrapping around the ring like less does with its wrap-search option.
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
		if v.match(r.at(s)) {
			return s, wrapped, true
		}
	}
	return 0, false, false
}

// jump makes seq the current match and scrolls it into view a third of the
// way down, so the lines leading up to it show too.
func (v *logView) jump(r *ring, h, seq int) {
	v.cur = seq
	v.follow = false
	v.top = seq - h/3
	v.top = v.start(r, h)
	if v.top >= r.total-h {
		v.follow = true
	}
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
		for seq := first; seq < r.total && len(rows) < h; seq++ {
			rows = append(rows, v.renderLine(r.at(seq), seq, w, stamp, s)[0])
			info.last = seq
		}
	} else if v.follow {
		// Fill from the bottom up, wrapping only lines that will show.
		var rev [][]string
		n := 0
		for seq := r.total - 1; seq >= r.first() && n < h; seq-- {
			ls := v.renderLine(r.at(seq), seq, w, stamp, s)
			rev = append(rev, ls)
			n += len(ls)
		}
		for i := len(rev) - 1; i >= 0; i-- {
			rows = append(rows, rev[i]...)
		}
		rows = rows[max(0, len(rows)-h):]
		info.last = r.total - 1
	} else {
		for seq := v.start(r, h); seq < r.total && len(rows) < h; seq++ {
			rows = append(rows, v.renderLine(r.at(seq), seq, w, stamp, s)...)
			info.last = seq
		}
		rows = rows[:min(h, len(rows))]
	}
	for len(rows) < h {
		rows = append(rows, "")
	}
	return strings.Join(rows, "\n"), info
}

// renderLine draws one log line: one row, or several when wrapping. The
// text is cut while still plain, then painted, so styling never has to
// measure it again.
func (v *logView) renderLine(l logLine, seq, w int, stamp bool, s Styles) []string {
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
	if !v.wrap {
		return []string{prefix + v.highlight(clip(precut(text, bw), bw), style, k.match)}
	}
	parts := strings.Split(ansi.Hardwrap(text, bw, true), "\n")
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
