package ui

import "time"

// lineKind says how a log line is drawn.
type lineKind uint8

const (
	lineJournal lineKind = iota
	lineErr              // journal priority err or worse
	lineGap              // lines may be missing here
	lineAction           // an action's progress on this host
	lineMark             // a new invocation of the unit starts here
)

// logLine is one line of a host's log pane.
type logLine struct {
	Time time.Time
	Text string
	Kind lineKind
}

// ring is a fixed-capacity log: the newest lines win, the oldest are
// dropped and counted, and every line keeps a sequence number so that a
// scrolled-back view stays anchored while new lines arrive.
type ring struct {
	buf     []logLine
	start   int // index in buf of the oldest line
	n       int
	total   int // lines ever pushed; the next line's sequence number
	evicted int // lines pushed out by newer ones
}

func newRing(capacity int) *ring {
	return &ring{buf: make([]logLine, max(1, capacity))}
}

// push appends l, returning the line it pushed out, if any. The text is
// shown as it is: the fleet sanitised it where it entered.
func (r *ring) push(l logLine) (old logLine, evicted bool) {
	if r.n == len(r.buf) {
		old, evicted = r.buf[r.start], true
		r.buf[r.start] = l
		r.start = (r.start + 1) % len(r.buf)
		r.evicted++
	} else {
		r.buf[(r.start+r.n)%len(r.buf)] = l
		r.n++
	}
	r.total++
	return old, evicted
}

// first is the sequence number of the oldest line held.
func (r *ring) first() int { return r.total - r.n }

// at returns the line with sequence number seq, which must be held.
func (r *ring) at(seq int) logLine {
	return r.buf[(r.start+seq-r.first())%len(r.buf)]
}
