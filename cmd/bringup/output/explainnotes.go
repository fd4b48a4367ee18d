package output

import (
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/logfile"
	"github.com/bringup-dev/bringup/remote/startup"
)

// ExplainNotes is what explain's text says of a log beyond its fold:
// where each line of evidence is in the log, and which phase spans were
// bounded by a line that carried no time of its own (its duration would
// be measured to the time of the line before it, and mean nothing). Feed
// it every line with See; memory stays bounded however long the log.
type ExplainNotes struct {
	// lineOf is the last line number of each recent text (reset when it
	// holds maxNoted texts: evidence is found near the failure, late).
	lineOf map[string]int
	// evidence is the line number of each evidence text, kept when the
	// failure that quotes it is found.
	evidence map[string]int
	// untimedBegin and untimedEnd are the phase changes a line without
	// a time of its own made: the phase that began, and the one that ended.
	untimedBegin, untimedEnd map[phaseAt]bool
}

// phaseAt is a phase and a host time: where a span begins or ends.
type phaseAt struct {
	phase startup.Phase
	at    int64 // UnixNano; time.Time's monotonic part must not count
}

// maxNoted bounds ExplainNotes' memory of line texts.
const maxNoted = 100_000

// NewExplainNotes is an empty set of notes.
func NewExplainNotes() *ExplainNotes {
	return &ExplainNotes{lineOf: map[string]int{}, evidence: map[string]int{},
		untimedBegin: map[phaseAt]bool{}, untimedEnd: map[phaseAt]bool{}}
}

// See notes the log's line l, of event ev, that made the changes cs.
func (n *ExplainNotes) See(ev event.Event, l logfile.Line, cs []startup.Change) {
	if ev.Journal != nil {
		if len(n.lineOf) >= maxNoted {
			clear(n.lineOf)
		}
		n.lineOf[ev.Journal.Message] = l.N
	}
	for _, c := range cs {
		if c.Diag != nil {
			for _, e := range c.Diag.Evidence {
				if at, ok := n.lineOf[e]; ok {
					n.evidence[e] = at
				}
			}
		}
		if c.Kind == startup.ChangePhase && !l.OwnTime {
			n.untimedBegin[phaseAt{c.Phase, c.Time.UnixNano()}] = true
			n.untimedEnd[phaseAt{c.From, c.Time.UnixNano()}] = true
		}
	}
}

// lineOfEvidence is the line number of an evidence text, 0 when unknown.
func (n *ExplainNotes) lineOfEvidence(e string) int {
	if n == nil {
		return 0
	}
	if at, ok := n.evidence[e]; ok {
		return at
	}
	return n.lineOf[e] // a text quoted after the failure was first told
}

// untimed says span sp began or ended on a line with no time of its own.
func (n *ExplainNotes) untimed(sp startup.Span) bool {
	if n == nil {
		return false
	}
	return n.untimedBegin[phaseAt{sp.Phase, sp.Start.UnixNano()}] || !sp.End.IsZero() && n.untimedEnd[phaseAt{sp.Phase, sp.End.UnixNano()}]
}
