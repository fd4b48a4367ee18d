package drive

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// timeOrder holds watch's text lines for at most a window after they
// arrive and lets them out in the order of their host time. Each host's
// lines reach the watch in batches of their own: without it, a host whose
// batch came later printed its earlier lines after later ones of another
// host (gpu4 03:11:00 before gpu1 03:10:58).
//
// A line leaves once it has been held the window, together with every
// held line of an earlier or equal host time, so that no line waits more
// than the window and the lines let out together are in order. It is not
// safe for concurrent use.
type timeOrder struct {
	window time.Duration
	held   []heldLine // by host time, in arrival order among equals
	last   time.Time  // the host time of the latest line let out
}

// heldLine is one line waiting: its host time, when it arrived (wall),
// and its text, newline included.
type heldLine struct {
	at, arrived time.Time
	text        string
}

// add holds a line of host time at that arrived at wall time arrived.
func (o *timeOrder) add(at, arrived time.Time, text string) {
	i, _ := slices.BinarySearchFunc(o.held, at, func(h heldLine, t time.Time) int {
		if h.at.After(t) {
			return 1
		}
		return -1 // equal or before: the new line goes after it
	})
	o.held = slices.Insert(o.held, i, heldLine{at: at, arrived: arrived, text: text})
}

// release writes the lines due at wall time now: every line held the
// window, and those of an earlier host time.
func (o *timeOrder) release(w io.Writer, now time.Time) {
	var upTo time.Time // the latest host time among the lines due
	due := false
	for _, h := range o.held {
		if !h.arrived.Add(o.window).After(now) && (!due || h.at.After(upTo)) {
			upTo, due = h.at, true
		}
	}
	if !due {
		return
	}
	n := 0
	for n < len(o.held) && !o.held[n].at.After(upTo) {
		n++
	}
	o.write(w, n)
}

// flush writes every line held, in order.
func (o *timeOrder) flush(w io.Writer) { o.write(w, len(o.held)) }

func (o *timeOrder) write(w io.Writer, n int) {
	for _, h := range o.held[:n] {
		fmt.Fprint(w, h.text)
		if h.at.After(o.last) {
			o.last = h.at
		}
	}
	o.held = slices.Delete(o.held, 0, n)
}

// after is t, or the host time of the latest line let out where that is
// later: a line that ends the watch (its timeout) is stamped after the
// lines it follows, whatever the hosts' clocks say.
func (o *timeOrder) after(t time.Time) time.Time {
	if o.last.After(t) {
		return o.last
	}
	return t
}
