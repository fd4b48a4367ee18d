package startup

import (
	"slices"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
)

// phasePath is how far one host's current invocation got: the phase
// beneath the overlays (a path phase, or failed, restarting, stopped),
// the trail of its phases with the progress of the open one, and the two
// overlays shown over it: stuck (no progress for longer than the phase's
// threshold) and unknown (the host unreachable). It reports each change
// of the phase shown as a ChangePhase.
type phasePath struct {
	// stuckAfter is how long each phase may go without progress.
	stuckAfter map[Phase]time.Duration

	// shown is the phase displayed, since shownSince; stuckIn and
	// lastKnown are the phases the overlays hide (Startup's fields).
	shown              Phase
	shownSince         time.Time
	stuckIn, lastKnown Phase

	// under is the phase beneath the stuck and unknown overlays.
	under      Phase
	underSince time.Time
	isStuck    bool
	stuckSince time.Time
	unreach    bool
	unreachAt  time.Time
	// lastPath is the furthest path phase of this invocation, the phase a
	// failure line belongs to even when it arrives after the failure.
	lastPath Phase

	// spans are the invocation's phases in order; progress is how far
	// the open one is, lastProgress the host time of the last line that
	// moved the startup on.
	spans        []Span
	progress     Progress
	lastProgress time.Time
}

// newPhasePath returns a path in phase stopped.
func newPhasePath(stuckAfter map[Phase]time.Duration) phasePath {
	return phasePath{stuckAfter: stuckAfter, shown: Stopped, under: Stopped}
}

// fill copies the path into s, its slices cloned.
func (p *phasePath) fill(s *Startup) {
	s.Phase, s.PhaseSince = p.shown, p.shownSince
	s.StuckIn, s.LastKnown = p.stuckIn, p.lastKnown
	s.Spans = slices.Clone(p.spans)
	s.Progress, s.LastProgress = p.progress, p.lastProgress
}

// display is the phase shown: the overlays win over the phase beneath.
func (p *phasePath) display() Phase {
	switch {
	case p.unreach:
		return Unknown
	case p.isStuck:
		return Stuck
	}
	return p.under
}

// emit reports a change of the displayed phase, if there is one.
func (p *phasePath) emit(from Phase, at time.Time, out *[]Change) {
	to := p.display()
	p.stuckIn, p.lastKnown = "", ""
	if p.isStuck {
		p.stuckIn = p.under
	}
	if p.unreach {
		p.lastKnown = p.under
		if p.isStuck {
			p.lastKnown = Stuck
		}
	}
	if to == from {
		return
	}
	p.shown = to
	switch to {
	case Unknown:
		p.shownSince = p.unreachAt
	case Stuck:
		p.shownSince = p.stuckSince
	default:
		p.shownSince = p.underSince
	}
	*out = append(*out, Change{Kind: ChangePhase, Time: at, Phase: to, From: from, Progress: p.progress})
}

// enter moves the phase beneath the overlays to ph at host time at: the
// open span ends there, and a path phase opens a new one. It also clears
// stuck, since entering a phase is progress.
func (p *phasePath) enter(ph Phase, at time.Time, out *[]Change) {
	from := p.display()
	if ph != p.under {
		p.closeSpan(at)
		if ph.Rank() > Stopped.Rank() {
			p.spans = append(p.spans, Span{Phase: ph, Start: at})
			p.lastPath = ph
		}
		p.under, p.underSince = ph, at
		p.progress = Progress{}
	}
	p.isStuck = false
	p.lastProgress = at
	p.emit(from, at, out)
}

func (p *phasePath) closeSpan(at time.Time) {
	if n := len(p.spans); n > 0 && p.spans[n-1].End.IsZero() {
		p.spans[n-1].End = at
	}
}

// restart begins a new invocation's trail at host time at: it passes
// through starting whatever the last one reached.
func (p *phasePath) restart(at time.Time, out *[]Change) {
	p.closeSpan(at)
	p.spans, p.progress, p.lastPath = nil, Progress{}, ""
	p.under = Stopped
	p.enter(Starting, at, out)
}

// onPath reports whether the startup is running: a path phase past stopped.
func (p *phasePath) onPath() bool { return p.under.Rank() > Stopped.Rank() }

// hasTrail reports whether the current invocation has a trail.
func (p *phasePath) hasTrail() bool { return len(p.spans) > 0 }

// furthest is the phase a failure line belongs to: the furthest path
// phase reached, starting before any.
func (p *phasePath) furthest() Phase {
	if p.lastPath == "" {
		return Starting
	}
	return p.lastPath
}

// tick makes the phase stuck at host time now when it has gone without
// a progressing line for longer than its threshold.
func (p *phasePath) tick(now time.Time, out *[]Change) {
	if p.unreach || p.isStuck {
		return
	}
	limit, ok := p.stuckAfter[p.under]
	if !ok || limit <= 0 {
		return
	}
	last := p.lastProgress
	if last.Before(p.underSince) {
		last = p.underSince
	}
	if now.Sub(last) <= limit {
		return
	}
	from := p.display()
	p.isStuck, p.stuckSince = true, now
	p.emit(from, now, out)
}

// conn follows the host's connection: unreachable shows unknown over the
// phase, reachable again shows it.
func (p *phasePath) conn(s event.ConnState, at time.Time, out *[]Change) {
	from := p.display()
	switch s {
	case event.ConnDown, event.ConnUnreachable:
		if p.unreach {
			return
		}
		p.unreach, p.unreachAt = true, at
	case event.ConnUp:
		if !p.unreach {
			return
		}
		p.unreach = false
	default:
		return
	}
	p.emit(from, at, out)
}

// extendTrail appends phase ph, begun at host time at, to a failed run's
// trail, which ended at end: the span before it now ends at at, and ph's
// runs to end.
func (p *phasePath) extendTrail(ph Phase, at, end time.Time) {
	if n := len(p.spans); n > 0 && p.spans[n-1].End.After(at) {
		p.spans[n-1].End = at
	}
	p.spans = append(p.spans, Span{Phase: ph, Start: at, End: end})
	p.lastPath = ph
}

// trimTrail makes the trail agree with ph, the phase a failure was put in:
// a traceback can name a phase whose own lines the log never showed (an
// excerpt that holds only the traceback), and lines of a phase the
// startup never really reached can come before the error (another rank
// ahead, uvicorn's "Application startup complete" before its bind fails).
// Phases past ph are dropped, ph's span runs to the last of them, and a
// missing ph is inserted in path order.
func (p *phasePath) trimTrail(ph Phase, at time.Time) {
	if ph.Rank() <= Starting.Rank() {
		return
	}
	for i, s := range p.spans {
		if s.Phase.Rank() > ph.Rank() {
			end := p.spans[len(p.spans)-1].End
			p.spans = p.spans[:i]
			if i > 0 && p.spans[i-1].Phase == ph {
				p.spans[i-1].End = end
			} else {
				p.spans = append(p.spans, Span{Phase: ph, Start: s.Start, End: end})
			}
			p.lastPath = ph
			return
		}
	}
	i := 0
	for ; i < len(p.spans); i++ {
		q := p.spans[i].Phase
		if q == ph {
			return
		}
		if q.Rank() > ph.Rank() {
			break
		}
	}
	sp := Span{Phase: ph, Start: at, End: at, Inferred: true}
	if i == len(p.spans) && i > 0 {
		if last := p.spans[i-1]; !last.End.IsZero() && last.End.Before(at) {
			sp.Start = last.End
		}
	}
	if i < len(p.spans) {
		sp.End = p.spans[i].Start
		if sp.Start.After(sp.End) {
			sp.Start = sp.End
		}
	}
	p.spans = slices.Insert(p.spans, i, sp)
	if ph.Rank() > p.lastPath.Rank() {
		p.lastPath = ph
	}
}
