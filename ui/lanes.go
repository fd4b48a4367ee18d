package ui

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/deployment"
	"github.com/bringup-dev/bringup/remote/sanitize"
	"github.com/bringup-dev/bringup/remote/startup"
)

// laneSet is the deployment a shown host is a node of: its verdict and
// each node's state, for the host view's lanes (one per node, on one
// time axis).
type laneSet struct {
	dep    deployment.Deployment
	v      deployment.Verdict
	states map[string]remote.HostState
	shown  string // the host the view is of
}

// lanesOf is the deployment host is a node of, judged on the table's
// latest states; false when it is in none.
func (t *tableModel) lanesOf(host string) (laneSet, bool) {
	d, _, ok := deployment.Of(t.deployments, host)
	if !ok {
		return laneSet{}, false
	}
	states := make(map[string]remote.HostState, len(d.Nodes))
	for _, n := range d.Nodes {
		if i := slices.IndexFunc(t.hosts, func(h remote.HostState) bool { return h.Name == n.Host }); i >= 0 {
			states[n.Host] = t.hosts[i]
		}
	}
	return laneSet{dep: d, v: deployment.Judge(d, states, deployment.Offsets(states)), states: states, shown: host}, true
}

// rows is how many rows the lanes take: a heading and one per node.
func (ls *laneSet) rows() int {
	if ls == nil {
		return 0
	}
	return 1 + len(ls.v.Nodes)
}

// laneLabelMax bounds a lane's host name.
const laneLabelMax = 14

// render draws the lanes in w cells: a heading with the verdict and the
// axis's width, then per node its label, its phases as coloured cells
// on the common axis (each host's times less its clock offset), a ✗ where
// it failed, and its part in the verdict.
func (ls *laneSet) render(w int, now time.Time, s Styles) []string {
	t0, t1 := ls.axis(now)
	head := "  deployment " + sanitize.String(ls.dep.Name) + " · " + s.Phase(ls.v.Phase).Render(ls.v.Outcome) +
		" · " + strconv.Itoa(len(ls.v.Nodes)) + " nodes on one axis, " + fmtDur(t1.Sub(t0))
	if corrected := ls.offsets(); corrected != "" {
		head += " · clocks corrected (" + corrected + ")"
	}
	rows := []string{head}
	label := 0
	for _, n := range ls.v.Nodes {
		label = max(label, min(laneLabelMax, width(sanitize.String(n.Host))))
	}
	const tail = 26
	bw := max(8, min(64, w-2-len("node 00 ")-label-1-1-tail))
	for _, n := range ls.v.Nodes {
		mark := " "
		if n.Host == ls.shown {
			mark = "›"
		}
		lbl := mark + " node " + strconv.Itoa(n.Rank) + " " + fit(sanitize.String(n.Host), label)
		rows = append(rows, lbl+" "+ls.bar(n, t0, t1, bw, now, s)+" "+ls.part(n, s))
	}
	return rows
}

// axis is the common time axis: from the first node's first phase to
// the latest end (now while a node's phase is open), on the reference
// clock.
func (ls *laneSet) axis(now time.Time) (time.Time, time.Time) {
	var t0, t1 time.Time
	for _, n := range ls.v.Nodes {
		hs, ok := ls.states[n.Host]
		if !ok {
			continue
		}
		off := hs.Clock.Offset
		for _, sp := range hs.Startup.Spans {
			start, end := sp.Start.Add(-off), sp.End.Add(-off)
			if sp.End.IsZero() {
				end = now.Add(-off)
			}
			if t0.IsZero() || start.Before(t0) {
				t0 = start
			}
			if end.After(t1) {
				t1 = end
			}
		}
		if !n.Failed.IsZero() && n.Failed.After(t1) {
			t1 = n.Failed
		}
	}
	if !t1.After(t0) {
		t1 = t0.Add(time.Second)
	}
	return t0, t1
}

// bar is one node's lane: a cell per slice of the axis, in the colour of
// the phase the node was in at the slice's middle, blank where it had
// none, ✗ at its failure.
func (ls *laneSet) bar(n deployment.NodeVerdict, t0, t1 time.Time, bw int, now time.Time, s Styles) string {
	hs := ls.states[n.Host]
	off := hs.Clock.Offset
	dt := t1.Sub(t0) / time.Duration(bw)
	fail := -1
	if !n.Failed.IsZero() && dt > 0 {
		fail = min(bw-1, max(0, int(n.Failed.Sub(t0)/dt)))
	}
	var b strings.Builder
	for i := range bw {
		if i == fail {
			b.WriteString(s.PhaseFailed.Render("✗"))
			continue
		}
		mid := t0.Add(dt*time.Duration(i) + dt/2)
		ph, ok := phaseAt(hs.Startup.Spans, mid.Add(off), now)
		if !ok {
			b.WriteString(" ")
			continue
		}
		b.WriteString(s.Phase(ph).Render("█"))
	}
	return b.String()
}

// phaseAt is the phase of spans at host time t.
func phaseAt(spans []startup.Span, t, now time.Time) (startup.Phase, bool) {
	for _, sp := range spans {
		end := sp.End
		if end.IsZero() {
			end = now
		}
		if !t.Before(sp.Start) && t.Before(end) {
			return sp.Phase, true
		}
	}
	return "", false
}

// part is a node's part in the verdict: the one that failed first and
// its cause, a peer lost, or its phase.
func (ls *laneSet) part(n deployment.NodeVerdict, s Styles) string {
	switch {
	case n.Blame == "failed first" && ls.v.Diag != nil:
		return s.PhaseFailed.Render("failed first: " + ls.v.Diag.Cause)
	case n.Blame != "":
		return "peer lost"
	}
	return s.Phase(n.Phase).Render(string(n.Phase))
}

// offsets names the nodes whose clocks were off, as "gpu3 -3.0s".
func (ls *laneSet) offsets() string {
	var out []string
	for _, n := range ls.v.Nodes {
		if off := ls.states[n.Host].Clock.Offset; off.Abs() >= 100*time.Millisecond {
			out = append(out, sanitize.String(n.Host)+" "+strconv.FormatFloat(off.Seconds(), 'f', 1, 64)+"s")
		}
	}
	return strings.Join(out, ", ")
}
