package startup

import "strings"

// lineContext is what the tracker knows around the journal line at hand:
// the Python tracebacks open around it, the multi-line error message it
// may go on with, and where it stands in the invocation's lines, so that
// a log whose last word is an error can be told from one that went on.
type lineContext struct {
	// tb follows Python tracebacks; tbEnds are the first ones that ended
	// in this invocation and named a phase.
	tb     tbParser
	tbEnds []tbEnd
	// seq numbers the invocation's engine lines; lastProgSeq is the last
	// that moved the startup on and lastCandSeq the last failure line.
	seq, lastProgSeq, lastCandSeq int
	// inTB is set while the line at hand sits inside an open traceback.
	inTB bool
	// cont follows the message of the last unrecognised or wrapper error
	// over its continuation lines.
	cont continuation
}

// tbEnd is where a traceback ended and the phase its frames named.
type tbEnd struct {
	seq   int
	phase Phase
}

func newLineContext(frames *frameIndex) lineContext {
	return lineContext{tb: newTBParser(frames), cont: continuation{cand: -1}}
}

// reset forgets the lines of the invocation before.
func (l *lineContext) reset() {
	l.tb.reset()
	l.tbEnds = nil
	l.seq, l.lastProgSeq, l.lastCandSeq = 0, 0, 0
	l.cont.stop()
}

// endsInError reports whether the last failure line came after the last
// line that moved the startup on (or with it).
func (l *lineContext) endsInError() bool { return l.lastCandSeq >= l.lastProgSeq }

// continuation follows one error message over the lines after its first:
// torch's "Failed running call_function …(*(…), **{}):" puts the real
// error on a later line, and a message wrapped over lines, or written on
// the lines after a triple-quoted `raise RuntimeError(`, is matched
// whole.
type continuation struct {
	// cand is the index of the message's candidate in the ledger (-1:
	// none followed), src its process tag, colon whether the message so
	// far ends in ":".
	cand  int
	src   string
	colon bool
	// text is the message so far, its lines joined (bounded by
	// maxMessage).
	text string
}

// maxMessage bounds the joined text of a multi-line message.
const maxMessage = 1024

// start follows the message of candidate i, whose line is msg.
func (c *continuation) start(i int, msg string) {
	src, body := splitLine(msg)
	c.cand, c.src, c.colon = i, src, strings.HasSuffix(strings.TrimSpace(body), ":")
	c.text = clip(strings.TrimSpace(body), maxMessage)
}

// stop follows no message.
func (c *continuation) stop() { c.cand = -1 }

// on reports whether a message is followed, of the n candidates.
func (c *continuation) on(n int) bool { return c.cand >= 0 && c.cand < n }

// continues reports whether msg goes on with the message followed (of the
// n candidates): the same process, after a line ending in ":" or indented
// under it.
func (c *continuation) continues(msg string, n int) bool {
	if !c.on(n) {
		return false
	}
	src, body := splitLine(msg)
	return src == c.src && strings.TrimSpace(body) != "" && (c.colon || indented(msg, body))
}

// next reads msg as the next line of the message followed. ok false ends
// the message there (another process, a blank, pip's "Possible
// solutions", a line neither after a ":" nor indented). Otherwise quote
// says msg is the message's real error (the line after one ending in
// ":"), and grew that its text took msg in (up to maxMessage).
func (c *continuation) next(msg string) (quote, grew, ok bool) {
	src, body := splitLine(msg)
	trimmed := strings.TrimSpace(body)
	switch {
	case src != c.src || trimmed == "" || strings.HasPrefix(trimmed, "Possible solutions"):
		c.stop()
		return false, false, false
	case c.colon:
		quote = true
	case !indented(msg, body):
		c.stop()
		return false, false, false
	}
	c.colon = strings.HasSuffix(trimmed, ":")
	if len(c.text) < maxMessage {
		c.text = clip(c.text+" "+trimmed, maxMessage)
		grew = true
	}
	return quote, grew, true
}

// indented reports whether body, the text of msg after its prefixes, was
// indented under them (splitLine drops the spaces).
func indented(msg, body string) bool {
	i := len(msg) - len(body)
	return i >= 2 && msg[i-1] == ' ' && msg[i-2] == ' '
}
