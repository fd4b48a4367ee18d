package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
)

// column is one column of the fleet table.
type column struct {
	title string
	width int // 0: takes the rest of the line
	cell  func(t *fleetTable, h *remote.HostState) string
}

// fleetTable is the default view: one row per host. It is a plain struct;
// the root model hands it the data and asks it to render.
type fleetTable struct {
	hosts []remote.HostState // every host: the columns fit them all, so a filter does not move them
	sums  *fleetSums         // what hosts count, when known (nil: count them)
	// lines are what the table shows under its header, in order: host
	// rows, and when grouped the groups' summary rows; nil shows none.
	lines  []tableLine
	cursor int // a line of lines
	// grouping, groups and expanded say how a grouped table is laid out
	// (grouping nil: not grouped); host rows are then indented under
	// their group's row.
	grouping   *grouping
	groups     []groupRow
	expanded   func(key string) bool
	groupNameW int
	marked     map[string]bool
	now        time.Time // host time "in phase" is measured against
	styles     Styles
	drift      map[string]string // host → drift badge ("≠build", "drift")
}

const (
	gutterW = 3 // cursor, mark, space
	minDiag = 12
	// diagShare is the percent of the width the diagnosis keeps before
	// another column joins the table: 24 cells at 80 columns, 36 at 120,
	// 48 at 160 (at 60 the narrowest layout leaves it 14).
	diagShare = 30
)

// columns picks the richest layout that leaves the diagnosis its share
// of the width (diagShare): as the pane widens the diagnosis grows first,
// and a column joins only once the diagnosis keeps its share beside it.
// What goes first as the pane narrows: the GPU memory, the unit (the
// phase names a unit the host does not have), the ETA, the long progress,
// then the time in phase; the mode (the clue to a failure
// such as a capture-unsafe kernel mode) stays down to 60 columns and
// below. When some host has a startup history, an ETA column comes before
// the unit and GPU columns in what is kept.
func (t *fleetTable) columns(w int) []column {
	var hostW int
	if t.sums != nil {
		hostW = t.sums.hostW
	} else {
		hostW = sumHosts(t.hosts).hostW
	}
	host := column{"HOST", hostW, func(_ *fleetTable, h *remote.HostState) string { return h.Name }}
	if t.grouping != nil {
		// Host rows sit two cells in, under their group's name.
		host = column{"HOST", hostW + 2, func(_ *fleetTable, h *remote.HostState) string { return "  " + h.Name }}
	}
	unit := column{"UNIT", 16, cellUnit}
	phase := column{"PHASE", 13, cellPhase}
	since := column{"IN PHASE", 8, cellSince}
	prog := column{"PROGRESS", 19, cellProgress}
	progShort := column{"PROGRESS", 12, cellProgressShort}
	mode := column{"MODE", 10, cellMode}
	gpu := column{"GPU MEM", 11, cellGPU}
	diag := column{"DIAGNOSIS", 0, cellDiag}
	eta := column{"ETA", 5, cellETA}
	tps := column{"TOK/S", 6, cellTPS}
	var layouts [][]column
	if t.anyHistory() {
		layouts = [][]column{
			{host, unit, phase, since, eta, prog, mode, gpu, diag},
			{host, unit, phase, since, eta, prog, mode, diag},
			{host, phase, since, eta, prog, mode, diag},
		}
	}
	layouts = append(layouts, [][]column{
		{host, unit, phase, since, prog, mode, gpu, diag},
		{host, unit, phase, since, prog, mode, diag},
		{host, phase, since, prog, mode, diag},
		{host, phase, since, progShort, mode, diag},
		{host, phase, progShort, mode, diag},
	}...)
	if t.anyStats() {
		layouts = withTPS(layouts, tps, progShort)
	}
	want := max(minDiag, w*diagShare/100)
	for _, cols := range layouts {
		if fixedWidth(cols)+want <= w {
			return cols
		}
	}
	return layouts[len(layouts)-1]
}

// withTPS puts the decode-rate column after the progress (or the time in
// phase) of every layout; after each layout with the mode and no unit
// comes the same with the short progress, so that at 80 columns the mode
// (what a rate is compared by) and the ETA stay beside the rate.
func withTPS(layouts [][]column, tps, progShort column) [][]column {
	out := make([][]column, 0, len(layouts)+1)
	for _, l := range layouts {
		var cols []column
		for _, c := range l {
			cols = append(cols, c)
			if c.title == "PROGRESS" || c.title == "IN PHASE" && !hasColumn(l, "PROGRESS") {
				cols = append(cols, tps)
			}
		}
		out = append(out, cols)
		if hasColumn(l, "MODE") && hasColumn(l, "PROGRESS") && !hasColumn(l, "UNIT") {
			short := make([]column, 0, len(cols))
			for _, c := range cols {
				if c.title == "PROGRESS" {
					c = progShort
				}
				short = append(short, c)
			}
			out = append(out, short)
		}
	}
	return out
}

func hasColumn(cols []column, title string) bool {
	for _, c := range cols {
		if c.title == title {
			return true
		}
	}
	return false
}

// anyHistory reports whether some host has earlier startups to estimate
// from; without any, the ETA column would be empty.
func (t *fleetTable) anyHistory() bool {
	if t.sums != nil {
		return t.sums.history > 0
	}
	for i := range t.hosts {
		if t.hosts[i].Expected.Known() {
			return true
		}
	}
	return false
}

func fixedWidth(cols []column) int {
	n := gutterW
	for _, c := range cols {
		if c.width > 0 {
			n += c.width + 1
		}
	}
	return n
}

// Render draws the header row and as many host rows as fit in h, keeping
// the cursor row on screen.
func (t *fleetTable) Render(w, h int) string {
	if h <= 0 {
		return ""
	}
	cols := t.columns(w)
	rest := max(1, w-fixedWidth(cols))
	var b strings.Builder
	b.WriteString(strings.Repeat(" ", gutterW))
	for i, c := range cols {
		cw := c.width
		if cw == 0 {
			cw = rest
		}
		b.WriteString(t.styles.table.header.paint(fit(c.title, cw)))
		if i < len(cols)-1 {
			b.WriteByte(' ')
		}
	}
	rows := h - 1
	first := 0
	if t.cursor >= rows {
		first = t.cursor - rows + 1
	}
	for r := first; r < len(t.lines) && r < first+rows; r++ {
		b.WriteByte('\n')
		if l := t.lines[r]; l.host < 0 {
			b.WriteString(t.groupRowText(&t.groups[l.group], r == t.cursor, w))
		} else {
			b.WriteString(t.row(l.host, r == t.cursor, cols, rest))
		}
	}
	return b.String()
}

func (t *fleetTable) row(i int, onCursor bool, cols []column, rest int) string {
	h := &t.hosts[i]
	cur, mark := " ", " "
	if onCursor {
		cur = "›"
	}
	if t.marked[h.Name] {
		mark = t.styles.table.mark.paint("●")
	}
	var b strings.Builder
	b.WriteString(cur + mark + " ")
	for j, c := range cols {
		cw := c.width
		if cw == 0 {
			cw = rest
		}
		cell := fit(c.cell(t, h), cw)
		switch c.title {
		case "PHASE":
			ph := h.Startup.Phase
			if h.Startup.Loop != nil {
				ph = startup.Failed // a crash loop is a failure, whatever run it is in
			}
			cell = t.styles.table.phaseInk(t.styles, ph).paint(cell)
		case "DIAGNOSIS":
			if busy(h.Action) {
				break // the bar keeps its colours
			}
			if h.Startup.Diag != nil || h.Startup.Loop != nil || h.Throughput.Slower {
				cell = t.styles.table.phaseInk(t.styles, startup.Failed).paint(cell)
			} else {
				cell = t.styles.table.dim.paint(cell)
			}
		}
		b.WriteString(cell)
		if j < len(cols)-1 {
			b.WriteByte(' ')
		}
	}
	line := b.String()
	if onCursor {
		return t.styles.Selected.Render(line)
	}
	if h.Startup.Phase == startup.Unknown || h.Conn.State == event.ConnUnreachable {
		return t.styles.table.unknownRow.paint(line)
	}
	return line
}

// unitText is the unit state as systemctl shows it (its load state when
// the host does not have the unit), or the connection state when the host
// is not connected.
func unitText(h *remote.HostState) string {
	if h.Conn.State != "" && h.Conn.State != event.ConnUp && h.UnitState.ActiveState == "" {
		return string(h.Conn.State)
	}
	u := h.UnitState
	switch {
	case u.ActiveState == "":
		return "—"
	case u.SubState == "" && u.Loaded():
		return u.ActiveState
	}
	return u.State() // "not-found" for a unit the host does not have
}

func cellUnit(_ *fleetTable, h *remote.HostState) string { return unitText(h) }

func cellPhase(_ *fleetTable, h *remote.HostState) string {
	if l := h.Startup.Loop; l != nil {
		return loopPhase(l)
	}
	if !h.UnitState.Loaded() {
		// No such unit: not a stopped one, whether or not the unit
		// column is there to say so.
		return h.UnitState.LoadState
	}
	if h.Startup.Phase == "" {
		return "—"
	}
	return string(h.Startup.Phase)
}

func cellSince(t *fleetTable, h *remote.HostState) string {
	if h.Startup.PhaseSince.IsZero() {
		return "—"
	}
	return fmtDur(t.now.Sub(h.Startup.PhaseSince))
}

// cellETA is the time left until the startup is expected to serve:
// "~7m", "due" once that time has passed.
func cellETA(t *fleetTable, h *remote.HostState) string {
	if h.ETA.IsZero() {
		return ""
	}
	return approxLeft(h.ETA.Sub(t.now))
}

// cellProgress is a small bar and the count: "███▌░░ 41/65 shards".
func cellProgress(t *fleetTable, h *remote.HostState) string { return progressText(t, h, 6, true) }

// cellProgressShort fits a 60-column pane: "██▌ 41/65".
func cellProgressShort(t *fleetTable, h *remote.HostState) string {
	return progressText(t, h, 3, false)
}

func progressText(t *fleetTable, h *remote.HostState, barW int, label bool) string {
	p := h.Startup.Progress
	if !p.Known() {
		if m := h.MemProgress; m.Known() {
			// GPU memory toward the last good run's level: an estimate,
			// marked "~", never a count.
			return bar(m.Fraction(), barW, t.styles) + fmt.Sprintf(" ~%d%% mem", int(m.Fraction()*100))
		}
		return p.Label
	}
	count := fmt.Sprintf("%d/%d", p.Done, p.Total)
	if label && p.Label != "" {
		count += " " + p.Label
	}
	return bar(p.Fraction(), barW, t.styles) + " " + count
}

// cellMode names each kernel's mode on disk; "!" marks a mode that is
// not capture-safe, and "↻" one that differs from what the current (or
// failed) invocation started with: it takes effect at the next restart.
func cellMode(_ *fleetTable, h *remote.HostState) string { return modeText(h, false) }

func modeText(h *remote.HostState, long bool) string {
	parts := make([]string, 0, len(h.Modes))
	for _, m := range h.Modes {
		s := m.Mode
		if long {
			s = m.Kernel + "=" + m.Mode
		}
		if !m.Known {
			s += "?"
		} else if !m.CaptureSafe {
			s += "!"
		}
		if run, ok := startedWith(h, m.Kernel); ok {
			if run.Mode != m.Mode {
				s += "↻"
			}
		} else if d := h.Startup.Diag; d != nil && d.KernelMode != "" {
			if k, _, ok := strings.Cut(d.KernelMode, "="); ok && k == m.Kernel && d.KernelMode != m.Kernel+"="+m.Mode {
				s += "↻"
			}
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, ",")
}

// gpuMem is the mean memory use across a sample's GPUs, 0..1.
func gpuMem(g event.GPU) (float64, bool) {
	var used, total int
	for _, d := range g.Devices {
		used += d.MemUsedMiB
		total += d.MemTotalMiB
	}
	if total == 0 {
		return 0, false
	}
	return float64(used) / float64(total), true
}

// gpuSpark is the last n samples' mean memory use as a sparkline plus the
// newest value in percent.
func gpuSpark(samples []event.GPU, n int) string {
	samples = samples[max(0, len(samples)-n):]
	vals := make([]float64, 0, len(samples))
	for _, g := range samples {
		if v, ok := gpuMem(g); ok {
			vals = append(vals, v)
		}
	}
	if len(vals) == 0 {
		return ""
	}
	return fmt.Sprintf("%s %d%%", spark(vals), int(vals[len(vals)-1]*100+0.5))
}

func cellGPU(_ *fleetTable, h *remote.HostState) string {
	if s := gpuSpark(h.GPU, 6); s != "" {
		return s
	}
	return "—"
}

func cellDiag(t *fleetTable, h *remote.HostState) string {
	text := ""
	switch {
	case busy(h.Action):
		text = actionProgress(*h.Action, 6, t.styles, true)
	case h.Startup.Loop != nil:
		text = loopText(h.Startup.Loop)
	case h.Startup.Diag != nil:
		text = h.Startup.Diag.Summary
	case h.Conn.Err != "" && h.Conn.State != event.ConnUp:
		text = h.Conn.Err
	case h.Action != nil && h.Action.Stage == event.ActionFailed:
		text = h.Action.Name + " failed"
	default:
		text = slowerText(h)
	}
	if b := t.drift[h.Name]; b != "" {
		if text == "" {
			return b
		}
		return b + " · " + text
	}
	return text
}

// failing reports whether h counts as failed: its startup failed, or its
// unit is in a crash loop (whatever run it is in).
func failing(h *remote.HostState) bool {
	return h.Startup.Phase == startup.Failed || h.Startup.Loop != nil
}

// loopPhase is a crash loop in the phase column: "crash-loop ×3" (the
// diagnosis column says when systemd gave up).
func loopPhase(l *startup.CrashLoop) string {
	if s := fmt.Sprintf("crash-loop ×%d", l.Runs); len([]rune(s)) <= 13 {
		return s
	}
	return fmt.Sprintf("crash-loop×%d", l.Runs) // the column is 13 cells
}

// loopText is a crash loop in a line: its cause (the runs' common one,
// or that they vary, with the latest's summary), first so that a narrow
// column shows it, and, once systemd gave up, that x (reset-failed) lets
// it start again.
func loopText(l *startup.CrashLoop) string {
	text := l.Summary
	if l.Cause == startup.CausesVary {
		text = "causes vary; latest: " + l.Summary
	}
	if text == "" {
		text = l.Cause
	}
	if l.StartLimit {
		return "systemd gave up (start-limit-hit; x resets): " + text
	}
	return text // the phase column says it is a loop, and how long
}
