package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
)

// hostLayout is how the host view spends its rows. It is computed the same
// way in Update (to page the log by its real height) and in View.
type hostLayout struct {
	fullTimeline bool
	evidence     int  // evidence lines shown in the diagnosis box
	meta         bool // the cause/phase/time line and the hint
	// wrapDiag wraps the summary and the hint over as many rows as they
	// need; without it each takes one row, cut at a word (e shows them
	// whole).
	wrapDiag bool
	gpu      bool
	stats    bool // the serving line: decode rate and the engine's latest sample
	ab       bool // the decode rate by kernel modes, from the history
	bench    bool // the latest smoke load's result
	modes    bool // a row per kernel: on disk, started with, pending
	action   bool // the action under way, with its progress bar
	// runs is how many of the unit's latest runs are listed under a
	// heading, shown while the unit is in a crash loop.
	runs     int
	runsHead bool
	// lanes is the rows of the deployment's lanes (its nodes side by
	// side), 0 when the host is in none or they do not fit.
	lanes int
	logH  int // rows of log lines
}

// maxRunRows is how many runs the host view lists at most.
const maxRunRows = 5

const minLogRows = 5

// layoutHost fits the sections into h rows, giving up detail in the order
// that hurts least: evidence beyond two lines, the full timeline, the GPU
// row, the mode rows, the summary's and hint's wrapped rows, the
// diagnosis's meta lines, the rest of the evidence. w is the view's width,
// which the wrapped rows depend on; lanes the rows of the deployment's
// lanes (0: none).
func layoutHost(hs *remote.HostState, w, lanes, h int) hostLayout {
	_, stats := servingStats(hs)
	l := hostLayout{fullTimeline: true, meta: true, wrapDiag: true, gpu: len(hs.GPU) > 0, stats: stats, ab: abShown(hs), bench: hs.Bench != nil, modes: len(hs.Modes) > 0, action: busy(hs.Action)}
	d := hs.Startup.Diag
	if d != nil {
		l.evidence = len(d.Evidence)
	}
	if n := len(hs.Startup.Runs); n > 1 && hs.Startup.Loop != nil {
		// A crash loop lists its runs; a unit that failed once and was
		// fixed shows its current run, as before.
		l.runsHead, l.runs = true, min(n, maxRunRows)
	}
	l.lanes = lanes
	spans := max(1, len(hs.Startup.Spans))
	used := func() int {
		n := 3 + l.lanes // title, info, pane title
		if l.runsHead {
			n += 1 + l.runs
		}
		if l.fullTimeline {
			n += spans
		} else {
			n++
		}
		if d != nil {
			summary, hint := 1, 1
			if l.wrapDiag {
				summary, hint = diagRows(d, w)
			}
			n += 2 + summary + l.evidence // border ×2
			if l.meta {
				n += 1 + hint
			}
		}
		if l.gpu {
			n++
		}
		if l.stats {
			n++
		}
		if l.ab {
			n++
		}
		if l.bench {
			n++
		}
		if l.modes {
			n += len(hs.Modes)
		}
		if l.action {
			n++
		}
		return n
	}
	steps := []func() bool{
		func() bool { l.evidence = min(l.evidence, 2); return true },
		func() bool { l.runs = min(l.runs, 2); return true },
		func() bool { l.fullTimeline = false; return true },
		func() bool { l.gpu = false; return true },
		func() bool { l.modes = false; return true },
		func() bool { l.wrapDiag = false; return true },
		func() bool { l.lanes = 0; return true },
		func() bool { l.bench = false; return true },
		func() bool { l.ab = false; return true },
		func() bool { l.stats = false; return true },
		func() bool { l.meta = false; return true },
		func() bool { l.evidence = min(l.evidence, 1); return true },
		func() bool { l.runs = 0; return true },
	}
	for _, step := range steps {
		if used()+minLogRows <= h {
			break
		}
		step()
	}
	l.logH = max(0, h-used())
	return l
}

// diagBoxRows is the rows of the view that the diagnosis box takes, as
// Render lays it out: [top, end); empty when there is no diagnosis.
func (l hostLayout) diagBoxRows(hs *remote.HostState, w int) (top, end int) {
	d := hs.Startup.Diag
	if d == nil {
		return 0, 0
	}
	top = 2 // title, info
	if l.modes {
		top += len(hs.Modes)
	}
	if l.action {
		top++
	}
	top += l.lanes
	if l.fullTimeline {
		top += max(1, len(hs.Startup.Spans))
	} else {
		top++
	}
	if l.runsHead {
		top += 1 + l.runs
	}
	summary, hint := 1, 1
	if l.wrapDiag {
		summary, hint = diagRows(d, w)
	}
	end = top + 2 + summary + min(l.evidence, len(d.Evidence))
	if l.meta {
		end += 1 + hint
	}
	return top, end
}

// hostView renders one host: its state, the phase timeline, the diagnosis,
// GPU memory and the log pane. Like the table it is a plain struct.
type hostView struct {
	hs     *remote.HostState
	logs   *ring
	lv     *logView
	now    time.Time
	styles Styles
	input  string // the filter input line while typing, else ""
	// local is the local build's hash per kernel, for the build column
	// of the mode rows; nil when unknown.
	local map[string]string
	// lanes is the deployment the host is a node of; nil: none.
	lanes *laneSet
}

// Render draws the view in exactly h rows of at most w cells.
func (v *hostView) Render(w, h int) string {
	s := v.styles
	hs := v.hs
	st := hs.Startup
	l := layoutHost(hs, w, v.lanes.rows(), h)
	var out []string
	add := func(line string) { out = append(out, clip(line, w)) }

	title := s.Title.Render(hs.Name) + " · " + hs.Unit + " · " + unitText(hs)
	if !st.StartedAt.IsZero() {
		title += " · started " + st.StartedAt.Format("15:04:05")
		if !st.Phase.Terminal() {
			title += fmt.Sprintf(" (%s ago)", fmtDur(v.now.Sub(st.StartedAt)))
		}
	}
	add(title)
	info := "phase " + s.Phase(st.Phase).Render(string(st.Phase))
	if !st.PhaseSince.IsZero() {
		info += " for " + fmtDur(v.now.Sub(st.PhaseSince))
		if typ := hs.Expected.Phase[st.Phase]; typ > 0 && !st.Phase.Terminal() {
			info += " of " + approxLeft(typ) // the median of earlier runs
		}
	}
	if e := etaText(hs, v.now); e != "" {
		info += " · " + e
	}
	if len(hs.Modes) > 0 && !l.modes {
		info += " · mode " + modeText(hs, true)
	}
	if st.Restarts > 0 {
		info += fmt.Sprintf(" · restarts %d", st.Restarts)
	}
	// How the unit's state is read: D-Bus is instant, the fallbacks are
	// not, and the person should know which they are looking at.
	if p := hs.UnitState.Path; p != "" && p != "sim" {
		info += " · state via " + p
	}
	if r := hs.Conn.HostKeyRisk; r != 0 {
		info += " · host keys unchecked (" + r.String() + ")"
	}
	if c := hs.Conn; c.State != "" && c.State != event.ConnUp {
		info += " · ssh " + string(c.State)
		if !c.Retry.IsZero() {
			info += " (retry " + c.Retry.Format("15:04:05") + ")"
		}
	}
	if st.Engine != "" {
		info += " · " + st.Engine
		if st.EngineVersion != "" {
			// The release whose startup strings read this log.
			info += " " + st.EngineVersion
		}
	}
	add(info)
	if l.modes {
		for _, line := range v.modeRows() {
			add(line)
		}
	}
	if l.action {
		add("  ▶ " + actionProgress(*hs.Action, max(6, min(30, w/6)), s, false))
	}

	if l.lanes > 0 {
		for _, line := range v.lanes.render(w, v.now, s) {
			add(line)
		}
	}
	if l.fullTimeline {
		for _, line := range v.timeline(w) {
			add(line)
		}
	} else {
		add(v.compactTimeline(w))
	}
	if l.runsHead {
		add(v.runsHead())
		for _, r := range st.Runs[len(st.Runs)-l.runs:] {
			add(v.runRow(r))
		}
	}
	if st.Diag != nil {
		out = append(out, strings.Split(v.diagBox(w, l), "\n")...)
	}
	if l.stats {
		add(v.statsRow(w))
	}
	if l.ab {
		add(v.abRow(w))
	}
	if l.bench {
		add(v.benchRow())
	}
	if l.gpu {
		add(v.gpuRow(w))
	}
	body, info2 := v.lv.render(v.logs, w, l.logH, s)
	if v.input != "" {
		add(v.input)
	} else {
		add(v.paneTitle(w, info2))
	}
	if l.logH > 0 {
		out = append(out, body)
	}
	return strings.Join(out, "\n")
}

// modeRows are one row per kernel: the mode on disk (the unit's
// Environment, what the next start uses), the mode the current
// invocation started with, "restart pending" when they differ, and the
// build the service loaded against the local one.
func (v *hostView) modeRows() []string {
	s := v.styles
	hs := v.hs
	kw := 0
	for _, m := range hs.Modes {
		kw = max(kw, len(m.Kernel))
	}
	rows := make([]string, 0, len(hs.Modes))
	for _, disk := range hs.Modes {
		line := "  " + pad(disk.Kernel, kw) + "  on disk " + modeName(disk, s)
		if run, ok := startedWith(hs, disk.Kernel); ok {
			line += " · started with " + run.Mode
			if run.Mode != disk.Mode {
				line += " · " + s.Warn.Render("↻ restart pending")
			}
		}
		if h := hs.KernelHashes[disk.Kernel]; h != "" {
			switch local := v.local[disk.Kernel]; local {
			case "":
				line += " · build " + shortHash(h)
			case h:
				line += " · build " + shortHash(h) + " = local"
			default:
				line += " · " + s.Warn.Render("build "+shortHash(h)+" ≠ local "+shortHash(local))
			}
		}
		rows = append(rows, line)
	}
	return rows
}

// startedWith is kernel's mode in the current invocation's start, when
// the host has started one.
func startedWith(hs *remote.HostState, kernel string) (kernels.ActiveMode, bool) {
	for _, m := range hs.Startup.Modes {
		if m.Kernel == kernel {
			return m, true
		}
	}
	return kernels.ActiveMode{}, false
}

// modeName is a mode with its warning: "validate (not capture-safe)".
func modeName(m kernels.ActiveMode, s Styles) string {
	switch {
	case !m.Known:
		return m.Mode + s.Warn.Render(" (not in the catalog)")
	case !m.CaptureSafe:
		return m.Mode + s.Warn.Render(" (not capture-safe)")
	}
	return m.Mode
}

// etaText is "ETA 10:14 (~7m, from 5 runs)": when the startup is expected
// to serve, how long that is from now, and how much history says so.
func etaText(hs *remote.HostState, now time.Time) string {
	if hs.ETA.IsZero() {
		return ""
	}
	runs := fmt.Sprintf("from %d runs", hs.Expected.Runs)
	if hs.Expected.Runs == 1 {
		runs = "from 1 run"
	}
	if hs.Expected.OtherHosts {
		runs += " on other hosts"
	}
	return fmt.Sprintf("ETA %s (%s, %s)", hs.ETA.Round(time.Minute).Format("15:04"), approxLeft(hs.ETA.Sub(now)), runs)
}

// timeline is one row per phase of the current invocation, the bar scaled
// to the longest phase, the open phase measured to now.
func (v *hostView) timeline(w int) []string {
	spans := v.hs.Startup.Spans
	if len(spans) == 0 {
		return []string{v.styles.Dim.Render("  no startup seen yet")}
	}
	var longest time.Duration
	for _, sp := range spans {
		longest = max(longest, sp.Duration(v.now))
	}
	bw := max(1, min(48, w-2-13-1-1-8))
	rows := make([]string, len(spans))
	for i, sp := range spans {
		d := sp.Duration(v.now)
		n := 1
		if longest > 0 {
			n = max(1, int(float64(bw)*float64(d)/float64(longest)+0.5))
		}
		st := v.styles.Phase(sp.Phase)
		live := " "
		if sp.End.IsZero() {
			live = "▸"
		}
		rows[i] = live + " " + st.Render(fit(string(sp.Phase), 13)) + " " +
			st.Render(strings.Repeat("█", n)) + " " + fmtDur(d)
	}
	return rows
}

// compactTimeline is the timeline on one row, newest phases kept when it
// does not fit.
func (v *hostView) compactTimeline(w int) string {
	spans := v.hs.Startup.Spans
	line := ""
	for i := len(spans) - 1; i >= 0; i-- {
		sp := spans[i]
		part := string(sp.Phase) + " " + fmtDur(sp.Duration(v.now))
		next := part
		if line != "" {
			next = part + " › " + line
		}
		if width(next)+4 > w && line != "" {
			return "  … › " + line
		}
		line = next
	}
	return "  " + line
}

// diagBox is the diagnosis: summary, where and when, the hint, and the
// evidence with the root-cause line first and highlighted.
func (v *hostView) diagBox(w int, l hostLayout) string {
	s := v.styles
	d := v.hs.Startup.Diag
	iw := max(1, w-4)
	rows := func(text string) []string {
		if l.wrapDiag {
			return wrapWords(text, iw)
		}
		return []string{clipWords(text, iw)}
	}
	var lines []string
	for _, r := range rows("✗ " + d.Summary) {
		lines = append(lines, s.DiagSummary.Render(r))
	}
	if l.meta {
		meta := "cause " + d.Cause
		if d.Phase != "" {
			meta += " · in " + string(d.Phase)
		}
		if !d.Time.IsZero() {
			meta += " at " + d.Time.Format("15:04:05")
		}
		if d.KernelMode != "" {
			meta += " · mode " + d.KernelMode
		}
		lines = append(lines, s.Dim.Render(clip(meta, iw)))
		for _, r := range rows("hint: " + hintText(d)) {
			lines = append(lines, s.DiagHint.Render(r))
		}
	}
	for i, e := range d.Evidence[:min(l.evidence, len(d.Evidence))] {
		st := s.Evidence
		if i == 0 {
			st = s.EvidenceFirst
		}
		lines = append(lines, st.Render(clip("│ "+precut(e, iw), iw)))
	}
	return frame(lines, w, s.DiagBorder)
}

// diagRows is how many rows the diagnosis box's summary and hint take
// wrapped to the box in a view w wide.
func diagRows(d *startup.Diagnosis, w int) (summary, hint int) {
	iw := max(1, w-4)
	return len(wrapWords("✗ "+d.Summary, iw)), len(wrapWords("hint: "+hintText(d), iw))
}

// clipWords cuts plain text to w cells at a space where one is near the
// end, so that no word is cut in two, and marks the cut with "…".
func clipWords(text string, w int) string {
	if width(text) <= w {
		return text
	}
	cut := ansi.Truncate(text, max(0, w-1), "")
	if i := strings.LastIndexByte(cut, ' '); i > 0 && width(cut[:i]) >= w*2/3 {
		cut = cut[:i]
	}
	return cut + "…"
}

// gpuRow is memory use over the recent samples and the newest utilisation.
func (v *hostView) gpuRow(w int) string {
	samples := v.hs.GPU
	line := "GPU mem " + gpuSpark(samples, max(4, min(60, w-32)))
	last := samples[len(samples)-1]
	if n := len(last.Devices); n > 0 {
		util := 0
		for _, d := range last.Devices {
			util += d.UtilPct
		}
		line += fmt.Sprintf(" · util %d%% · %d GPUs", util/n, n)
	}
	return "  " + line
}

// paneTitle is the log pane's rule: size, drops, follow state, filter.
func (v *hostView) paneTitle(w int, info paneInfo) string {
	s := v.styles
	r := v.logs
	parts := []string{fmt.Sprintf("journal %d lines", r.n)}
	if dropped := r.evicted + r.budgetDropped + v.hs.Dropped; dropped > 0 {
		parts = append(parts, fmt.Sprintf("%d dropped", dropped))
	}
	switch newer := r.total - 1 - info.last; {
	case v.lv.follow:
		parts = append(parts, "follow")
	case newer > 0:
		parts = append(parts, fmt.Sprintf("%d new lines ↓", newer))
	default:
		parts = append(parts, "paused")
	}
	if v.lv.wrap {
		parts = append(parts, "wrap")
	}
	if f := v.lv.fold; f != nil && f.hidden > 0 {
		parts = append(parts, fmt.Sprintf("%d folded", f.hidden))
	}
	if v.lv.query != "" {
		parts = append(parts, fmt.Sprintf("/%s %d matches", v.lv.query, v.lv.matches))
	}
	t := "── " + strings.Join(parts, " · ") + " "
	return s.Rule.Render(clip(t, w) + strings.Repeat("─", max(0, w-width(t))))
}

// hintText is the diagnosis's hint with the key that applies its fix.
func hintText(d *startup.Diagnosis) string {
	if d.Fix == nil {
		return d.Hint
	}
	return fmt.Sprintf("press m to set %s=%s, then r — %s", d.Fix.Kernel, d.Fix.Mode, d.Hint)
}

// runsHead heads the list of the unit's runs: how many, and the crash
// loop they make, with its cause kept between runs.
func (v *hostView) runsHead() string {
	st := v.hs.Startup
	head := fmt.Sprintf("runs %d", st.Run)
	if l := st.Loop; l != nil {
		head += " · " + v.styles.PhaseFailed.Render(loopPhase(l)) + " · " + loopText(l)
	}
	return head
}

// runRow is one run: its number, start, how it ended (or where it is),
// after how long, and a failed run's cause.
func (v *hostView) runRow(r startup.Run) string {
	line := fmt.Sprintf("  run %-3d", r.N)
	if !r.Start.IsZero() {
		line += " " + r.Start.Format("15:04:05")
	}
	reached := r.Reached
	if reached == "" {
		reached = startup.Starting
	}
	switch {
	case r.Failed():
		in := reached
		if r.Diag != nil {
			in = r.Diag.Phase
		}
		line += " " + v.styles.PhaseFailed.Render("failed") + " in " + string(in)
	case r.Outcome == startup.Serving:
		line += " served"
	case r.Outcome == startup.Stopped:
		line += " stopped in " + string(reached)
	default:
		line += " " + string(r.Outcome) + " (now)"
	}
	if !r.Start.IsZero() {
		line += " after " + fmtDur(r.Duration(v.now))
	}
	if c := r.Cause(); c != "" {
		line += " [" + c + "]"
	}
	return line
}
