package ui

import (
	"fmt"
	"time"
	"unsafe"
)

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

// lineSlot is what a line costs besides its text: its slot in a ring.
const lineSlot = int(unsafe.Sizeof(logLine{}))

// minSlots is the smallest buffer a ring keeps once it has lines: it
// grows by doubling up to its capacity, so a quiet host costs little.
const minSlots = 64

// ring is a log of at most max lines: the newest lines win, the oldest
// are dropped and counted, and every line keeps a sequence number so that
// a scrolled-back view stays anchored while new lines arrive. Its buffer
// grows with the lines it holds (and shrinks after a budget trim), so that
// what it costs (bytes) follows what it holds.
type ring struct {
	buf     []logLine
	start   int // index in buf of the oldest line
	n       int
	total   int // lines ever pushed; the next line's sequence number
	evicted int // lines pushed out by newer ones
	max     int // capacity in lines
	text    int // bytes of text held

	// budgetDropped counts the lines the fleet-wide memory budget took
	// (logStore.trim); marked says the oldest line is the marker that
	// says so.
	budgetDropped int
	marked        bool
}

func newRing(capacity int) *ring {
	return &ring{max: max(1, capacity)}
}

// bytes is the memory the ring holds: its lines' text and its buffer.
func (r *ring) bytes() int { return r.text + cap(r.buf)*lineSlot }

// push appends l, returning the line it pushed out, if any. The text is
// shown as it is: the fleet sanitised it where it entered.
func (r *ring) push(l logLine) (old logLine, evicted bool) {
	if r.n == len(r.buf) && len(r.buf) < r.max {
		r.resize(min(r.max, max(minSlots, 2*len(r.buf))))
	}
	if r.n == len(r.buf) {
		old, evicted = r.buf[r.start], true
		r.buf[r.start] = l
		r.start = (r.start + 1) % len(r.buf)
		r.evicted++
		r.text -= len(old.Text)
		if r.marked {
			r.marked = false // the budget's marker went first
		}
	} else {
		r.buf[(r.start+r.n)%len(r.buf)] = l
		r.n++
	}
	r.text += len(l.Text)
	r.total++
	return old, evicted
}

// resize moves the lines into a buffer of size slots (at least n).
func (r *ring) resize(size int) {
	buf := make([]logLine, size)
	for i := range r.n {
		buf[i] = r.buf[(r.start+i)%len(r.buf)]
	}
	r.buf, r.start = buf, 0
}

// popFront removes the oldest line.
func (r *ring) popFront() logLine {
	l := r.buf[r.start]
	r.buf[r.start] = logLine{} // let its text go
	r.start = (r.start + 1) % len(r.buf)
	r.n--
	r.text -= len(l.Text)
	return l
}

// oldest is the oldest line that is not the budget's marker, if any.
func (r *ring) oldest() (logLine, bool) {
	skip := 0
	if r.marked {
		skip = 1
	}
	if r.n <= skip {
		return logLine{}, false
	}
	return r.buf[(r.start+skip)%len(r.buf)], true
}

// dropOldest removes the k oldest lines for the memory budget and puts
// in their place one marker line that counts every line the budget took
// from this host; the lines left keep their sequence numbers. It returns
// the bytes freed.
func (r *ring) dropOldest(k int) int {
	before := r.bytes()
	var last logLine
	if r.marked {
		last = r.popFront()
		r.marked = false
	}
	dropped := 0
	for ; dropped < k && r.n > 0; dropped++ {
		last = r.popFront()
	}
	r.budgetDropped += dropped
	if r.budgetDropped > 0 {
		// The marker takes the last dropped line's place (and number).
		m := logLine{Time: last.Time, Kind: lineGap,
			Text: fmt.Sprintf("… %d older lines dropped to stay within the memory budget", r.budgetDropped)}
		r.start = (r.start - 1 + len(r.buf)) % len(r.buf)
		r.buf[r.start] = m
		r.n++
		r.text += len(m.Text)
		r.marked = true
	}
	if len(r.buf) > minSlots && r.n < len(r.buf)/4 {
		r.resize(max(minSlots, 2*r.n))
	}
	return before - r.bytes()
}

// first is the sequence number of the oldest line held.
func (r *ring) first() int { return r.total - r.n }

// at returns the line with sequence number seq, which must be held.
func (r *ring) at(seq int) logLine {
	return r.buf[(r.start+seq-r.first())%len(r.buf)]
}
