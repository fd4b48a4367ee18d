package ui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/rollout"
	"github.com/bringup-dev/bringup/remote/startup"
)

// rolloutView draws the rollout: the plan and its state, one lane per
// host with its stage and phase strip, and on a halt the diagnosis.
type rolloutView struct {
	ro     *rolloutRun
	now    time.Time
	styles Styles
}

// Render draws the view in exactly h rows of at most w cells.
func (v *rolloutView) Render(w, h int) string {
	s := v.styles
	r := v.ro.r
	st := r.State()
	lanes := r.Lanes()
	var out []string
	add := func(line string) { out = append(out, clip(line, w)) }
	status := string(st.Status)
	switch st.Status {
	case rollout.Halted:
		status = s.PhaseFailed.Render("halted on " + st.Host)
	case rollout.Done:
		status = s.PhaseServing.Render("done")
	case rollout.Aborted:
		status = s.PhaseStuck.Render("aborted")
	default: // running: its name as it is
	}
	serving := 0
	for _, l := range lanes {
		if l.Stage == rollout.StageServing {
			serving++
		}
	}
	add(s.Title.Render("rollout") + " · " + status + fmt.Sprintf(" · %d/%d serving", serving, len(lanes)))
	add(s.Dim.Render(r.Plan().String()))

	hostW := 4
	for _, l := range lanes {
		hostW = max(hostW, min(20, len(l.Host)))
	}
	const stageW, infoW = 15, 30
	stripW := w - gutterW - hostW - 1 - stageW - 1 - infoW - 1
	compact := stripW < 16
	if compact {
		stripW = 0
	}
	hdr := strings.Repeat(" ", gutterW) + fit("HOST", hostW) + " " + fit("STAGE", stageW) + " " + fit("NOW", infoW)
	if !compact {
		hdr += " PHASES"
	}
	add(s.Header.Render(hdr))

	diagRows := 0
	if st.Status == rollout.Halted || st.Status == rollout.Aborted {
		diagRows = 7
	}
	// Once done, the rates block under the lanes, when it fits whole.
	var rates []string
	if st.Status == rollout.Done {
		rates = v.ratesBlock(lanes, w)
		if len(out)+len(lanes)+len(rates) > h-1 {
			rates = nil
		}
	}
	room := max(1, h-len(out)-diagRows-1)
	first := max(0, min(v.ro.cursor-room+1, len(lanes)-room))
	for i := first; i < len(lanes) && i < first+room; i++ {
		l := lanes[i]
		cur := " "
		if i == v.ro.cursor {
			cur = "›"
		}
		row := cur + "  " + fit(l.Host, hostW) + " " + v.stageStyle(l.Stage).Render(fit(string(l.Stage), stageW)) + " " + fit(v.laneInfo(l), infoW)
		if !compact {
			row += " " + phaseStrip(l.Phases, v.laneEnd(l), stripW, s)
		}
		if i == v.ro.cursor {
			row = s.Selected.Render(pad(row, w))
		}
		out = append(out, clip(row, w))
	}
	if diagRows > 0 {
		out = append(out, "")
		out = append(out, strings.Split(v.haltBox(w, st, lanes), "\n")...)
	}
	out = append(out, rates...)
	for len(out) < h-1 {
		out = append(out, "")
	}
	return strings.Join(out[:min(len(out), h)], "\n")
}

// laneEnd is the time a lane's open phase is measured to.
func (v *rolloutView) laneEnd(l rollout.Lane) time.Time {
	if !l.Until.IsZero() {
		return l.Until
	}
	return v.now
}

// laneInfo is what a lane is doing now: the action and its progress, the
// phase and its count, or the error.
func (v *rolloutView) laneInfo(l rollout.Lane) string {
	switch {
	case l.Err != "":
		return l.Err
	case l.Diag != nil:
		return l.Diag.Summary
	case l.ConnErr != "" && !l.Stage.Final():
		return "not reached: " + l.ConnErr
	case l.Stage == rollout.StageServing && (l.After.Known() || l.Before.Known()):
		return laneRate(l)
	case l.Action != "" && l.Phase == "":
		t := l.Action
		if l.Percent > 0 {
			t += " " + bar(float64(l.Percent)/100, 5, v.styles) + fmt.Sprintf(" %d%%", l.Percent)
		}
		if l.Detail != "" {
			t += " · " + l.Detail
		}
		return t
	case l.Phase != "":
		t := string(l.Phase)
		if p := l.Progress; p.Known() {
			t += fmt.Sprintf(" %d/%d %s", p.Done, p.Total, p.Label)
		}
		if n := len(l.Phases); n > 0 && !l.Stage.Final() {
			t += " for " + fmtDur(l.Phases[n-1].Duration(v.now))
		}
		return t
	}
	return ""
}

// laneRate is a serving lane's decode rate in the NOW column: "4.0×
// decode 1 920 vs 480", "⚠ −30 % decode 350 vs 500", "decode 1 920
// tok/s", or, before the new run is steady, "decode … (480 before)".
func laneRate(l rollout.Lane) string {
	r, ok := l.Ratio()
	switch {
	case ok && l.Slower:
		return fmt.Sprintf("⚠ −%d %% decode %s vs %s", int((1-r)*100+0.5), fmtTPS(l.After.TPS), fmtTPS(l.Before.TPS))
	case ok:
		return fmt.Sprintf("%s× decode %s vs %s", strconv.FormatFloat(r, 'f', 1, 64), fmtTPS(l.After.TPS), fmtTPS(l.Before.TPS))
	case l.After.Known():
		return "decode " + fmtTPS(l.After.TPS) + " tok/s"
	}
	return "decode … (" + fmtTPS(l.Before.TPS) + " before)"
}

// ratesBlock is the done rollout's summary of rates: for each host with
// one, its decode rate after against its previous run before, as the
// host view's A/B line says it ("decode 1 920 tok/s with kdtree-verify=on
// vs 480 tok/s with off (4.0×, from 1 run)"); nil when no host has one.
func (v *rolloutView) ratesBlock(lanes []rollout.Lane, w int) []string {
	var rows []string
	for _, l := range lanes {
		if !l.After.Known() && !l.Before.Known() {
			continue
		}
		var text string
		switch r, ok := l.Ratio(); {
		case ok:
			now, was := history.Differ(l.After.Modes, l.Before.Modes)
			text = abPhrase(history.ModeAB{Modes: now, TPS: l.After.TPS, Live: true, Base: was, BaseTPS: l.Before.TPS, BaseRuns: 1,
				Ratio: r, Slower: l.Slower}, width(l.Host)+40 > w)
		case l.After.Known():
			text = fmt.Sprintf("decode %s tok/s with %s (no earlier run to compare)", fmtTPS(l.After.TPS), history.ModesKey(l.After.Modes))
		default:
			text = fmt.Sprintf("decode %s tok/s before with %s; after: not steady yet", fmtTPS(l.Before.TPS), history.ModesKey(l.Before.Modes))
		}
		style := v.styles.Dim
		if l.Slower {
			style = v.styles.PhaseFailed
		}
		rows = append(rows, clip(strings.Repeat(" ", gutterW)+fit(l.Host, max(4, width(l.Host)))+" "+style.Render(text), w))
	}
	if len(rows) == 0 {
		return nil
	}
	return append([]string{"", clip(v.styles.Header.Render("decode after the rollout vs each host's run before"), w)}, rows...)
}

func (v *rolloutView) stageStyle(st rollout.Stage) lipgloss.Style {
	s := v.styles
	switch st {
	case rollout.StageServing, rollout.StageRolledBack:
		return s.PhaseServing
	case rollout.StageFailed, rollout.StageRollbackFailed:
		return s.PhaseFailed
	case rollout.StageHalted:
		return s.PhaseStuck
	case rollout.StagePending, rollout.StageUntouched:
		return s.Dim
	default: // under way
		return s.PhaseActive
	}
}

// haltBox is why the rollout stopped and what can be done about it.
func (v *rolloutView) haltBox(w int, st rollout.State, lanes []rollout.Lane) string {
	s := v.styles
	iw := max(1, w-4)
	var lines []string
	switch {
	case st.Status == rollout.Aborted:
		lines = append(lines, s.DiagSummary.Render(clip("rollout aborted: hosts not reached are untouched", iw)))
	case st.Diag != nil:
		lines = append(lines, s.DiagSummary.Render(clip("✗ "+st.Host+": "+st.Diag.Summary, iw)),
			s.DiagHint.Render(clip("hint: "+st.Diag.Hint, iw)))
		for i, e := range st.Diag.Evidence[:min(2, len(st.Diag.Evidence))] {
			style := s.Evidence
			if i == 0 {
				style = s.EvidenceFirst
			}
			lines = append(lines, style.Render(clip("│ "+precut(e, iw), iw)))
		}
	default:
		lines = append(lines, s.DiagSummary.Render(clip("✗ "+st.Host+": "+st.Err, iw)))
	}
	offer := "[a] nothing more is issued"
	if v.ro.cursor < len(lanes) {
		if l := lanes[v.ro.cursor]; v.ro.r.RollbackTo(l.Host) != nil {
			offer = fmt.Sprintf("[b] roll %s back to %s", l.Host, v.ro.r.RollbackTo(l.Host))
		} else {
			offer = "no mode change to roll back on " + l.Host
		}
	}
	lines = append(lines, s.Dim.Render(clip(offer+" · [enter] open host · [esc] table", iw)))
	return frame(lines, w, s.DiagBorder)
}

// phaseStrip draws spans as one row w cells wide: a segment per phase,
// as long as its share of the time, labelled with the phase and its
// duration where that fits, painted in the phase's colour.
func phaseStrip(spans []startup.Span, now time.Time, w int, s Styles) string {
	if len(spans) == 0 || w <= 0 {
		return ""
	}
	durs := make([]time.Duration, len(spans))
	var total time.Duration
	for i, sp := range spans {
		durs[i] = max(0, sp.Duration(now))
		total += durs[i]
	}
	cells := make([]int, len(spans))
	used := 0
	for i, d := range durs {
		n := 1
		if total > 0 {
			n = max(1, int(float64(w)*float64(d)/float64(total)+0.5))
		}
		cells[i], used = n, used+n
	}
	for used > w { // take from the longest segment
		j := 0
		for i := range cells {
			if cells[i] > cells[j] {
				j = i
			}
		}
		if cells[j] <= 1 {
			break
		}
		cells[j]--
		used--
	}
	var b strings.Builder
	left := w
	for i, sp := range spans {
		n := min(cells[i], left)
		if n <= 0 {
			break
		}
		left -= n
		b.WriteString(s.Phase(sp.Phase).Render(segment(sp.Phase, durs[i], n)))
	}
	return b.String()
}

// segment labels one phase's n cells: "weights 6m50s━━", "w 6m50s", "w━".
func segment(p startup.Phase, d time.Duration, n int) string {
	abbr := string(p)[:1]
	for _, label := range []string{string(p) + " " + fmtDur(d), abbr + " " + fmtDur(d), abbr} {
		if len(label) < n || label == abbr {
			if len(label) >= n {
				return label[:n]
			}
			return label + strings.Repeat("━", n-len(label))
		}
	}
	return abbr
}
