package startup

import "time"

// failureLedger is the failure of one invocation: its candidate failure
// lines, of which it picks the root cause and the evidence; systemd's
// record of the run's end (exit lines, result, the unit's own cause);
// whether and when it failed; and what was last reported of it, so that
// a ChangeFail is reported only when that changes.
type failureLedger struct {
	cands     []cand
	exits     []string
	unitCause string // cause from systemd: host-oom-kill, start-limit-hit
	result    string // the unit's result, where it is not one of those
	failed    bool
	failAt    time.Time
	said      failReport // what the last ChangeFail reported
}

// cand is one failure line of the invocation.
type cand struct {
	rule  *compiledFailure
	line  string
	time  time.Time
	phase Phase // the furthest phase of the trail when it arrived
	// framePhase is the phase the frames of its traceback named, when the
	// line ended one.
	framePhase Phase
	seq        int // its line number in the invocation
	// quote is the line evidence shows first when it is not line itself.
	quote string
	// decoy marks a warning or a line that says it skips or ignores
	// what failed: it is the root only when nothing else is.
	decoy bool
}

// failReport is what a ChangeFail reported of a failure: a change of any
// of it is reported again.
type failReport struct {
	cause   string
	phase   Phase
	root    string // its root line
	fromLog bool   // the cause came from a log line
	mode    string // the kernel mode it named (Diagnosis.KernelMode)
}

// has reports whether line is a candidate already.
func (l *failureLedger) has(line string) bool {
	for _, c := range l.cands {
		if c.line == line {
			return true
		}
	}
	return false
}

// add keeps c as a candidate and reports whether it did: beyond maxCands
// only a line that outranks the root replaces the last one, keeping room
// for the first specific line after a flood of wrappers.
func (l *failureLedger) add(c cand) bool {
	switch ri := l.root(); {
	case len(l.cands) < maxCands:
		l.cands = append(l.cands, c)
	case c.rank() < l.cands[ri].rank():
		l.cands[len(l.cands)-1] = c
	default:
		return false
	}
	return true
}

func (l *failureLedger) addExit(msg string) {
	if len(l.exits) < maxExits {
		l.exits = append(l.exits, msg)
	}
}

// fail marks the invocation failed at host time at, unless it already is.
func (l *failureLedger) fail(at time.Time) {
	if !l.failed {
		l.failed, l.failAt = true, at
	}
}

// report records r as reported and says whether it differs from what was
// reported last.
func (l *failureLedger) report(r failReport) bool {
	if r == l.said {
		return false
	}
	l.said = r
	return true
}

// root is the index of the root-cause candidate: the earliest line of the
// best tier, or -1 when there is none. A decoy (a warning, a line that says
// it skips or ignores something) ranks below every other line, whatever
// rule it matched: a warning never wins over an error. A rule's Outranks
// names causes that are its consequences, and it wins over them whatever
// their ranks (Ray reports a worker's death at WARNING; the collective the
// other ranks then time out on is its consequence).
func (l *failureLedger) root() int {
	best := -1
	for i := range l.cands {
		if best < 0 || l.cands[i].beats(&l.cands[best]) {
			best = i
		}
	}
	return best
}

// beats reports whether c is a better root than b, the best before it.
func (c *cand) beats(b *cand) bool {
	switch {
	case b.rule.outranks(c.rule):
		return false
	case c.rule.outranks(b.rule):
		return true
	}
	return c.rank() < b.rank()
}

// rank orders candidates for root: decoys last, then by tier.
func (c *cand) rank() int {
	if c.decoy {
		return 10 + c.rule.tier()
	}
	return c.rule.tier()
}

// evidence is the root line, then supporting lines in log order: one per
// other cause first (they tell the story: wrapper, crash, exit), then more
// wrappers, then the rest; and the first exit line of the unit at the end.
func (l *failureLedger) evidence(ri int) []string {
	room := maxEvidence - 1
	if len(l.exits) > 0 {
		room--
	}
	seen := map[string]bool{l.cands[ri].rule.Cause: true}
	used := make([]bool, len(l.cands))
	used[ri] = true
	for pass := 0; pass < 3; pass++ {
		for i, c := range l.cands {
			if used[i] || room == 0 || pass == 0 && seen[c.rule.Cause] || pass == 1 && !c.rule.Wrapper {
				continue
			}
			seen[c.rule.Cause], used[i] = true, true
			room--
		}
	}
	root := l.cands[ri]
	ev := []string{root.line}
	if root.quote != "" {
		ev = []string{root.quote, root.line}
	}
	for i, c := range l.cands {
		if used[i] && i != ri {
			ev = append(ev, c.line)
		}
	}
	if len(l.exits) > 0 {
		ev = append(ev, l.exits[0])
	}
	return ev
}
