package ui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"bringup/kernels"
	"bringup/remote"
	"bringup/remote/rollout"
	"bringup/remote/startup"
)

// rolloutForm is the rollout dialog: the hosts (fixed when R is pressed),
// the mode change, the redeploy and the batch size, then a confirmation
// that names the hosts and what will be done to them.
type rolloutForm struct {
	hosts []string
	unit  string
	// modes are "" (no mode change) then every kernel=mode of the catalog;
	// redeploys are "" (none) then every kernel.
	modes, redeploys []string
	mode, redeploy   int // indices into modes and redeploys
	batch            int // 1..len(hosts)
	field            int // the row the cursor is on: 0 mode, 1 redeploy, 2 batch
	confirming       bool
	filter           string // the table's filter the hosts were taken under, if any
}

// Rollout form rows.
const (
	fieldMode = iota
	fieldRedeploy
	fieldBatch
	numFields
)

func newRolloutForm(hosts []string, unit string, cat kernels.Catalog) *rolloutForm {
	f := &rolloutForm{hosts: hosts, unit: unit, modes: []string{""}, redeploys: []string{""}, batch: 1}
	for _, k := range cat.Kernels {
		for _, md := range k.Modes {
			f.modes = append(f.modes, k.Name+"="+md.Name)
		}
		f.redeploys = append(f.redeploys, k.Name)
	}
	return f
}

// plan is the rollout the form describes.
func (f *rolloutForm) plan() rollout.Plan {
	p := rollout.Plan{Hosts: f.hosts, Batch: f.batch, Redeploy: f.redeploys[f.redeploy]}
	if k, md, ok := strings.Cut(f.modes[f.mode], "="); ok {
		p.Mode = &rollout.ModeChange{Kernel: k, Mode: md}
	}
	return p
}

// change moves the value of the cursor's row by n, wrapping.
func (f *rolloutForm) change(n int) {
	wrap := func(v, size int) int { return ((v+n)%size + size) % size }
	switch f.field {
	case fieldMode:
		f.mode = wrap(f.mode, len(f.modes))
	case fieldRedeploy:
		f.redeploy = wrap(f.redeploy, len(f.redeploys))
	case fieldBatch:
		f.batch = wrap(f.batch-1, len(f.hosts)) + 1
	}
}

// render draws the form, or its confirmation.
func (f *rolloutForm) render(iw int, s Styles) []string {
	p := f.plan()
	lines := []string{s.DialogTitle.Render(clip(fmt.Sprintf("Rollout to %d %s", len(f.hosts), plural(len(f.hosts), "host", "hosts")), iw)), ""}
	if f.confirming {
		lines = append(lines, s.DialogTitle.Render(clip("Start the rollout?", iw)))
		lines = append(lines, wrapLines(p.String()+"; halt on the first failure.", iw)...)
		lines = append(lines, wrapLines(fmt.Sprintf("Each %s restarts: it stops serving until its new run is up.", f.unit), iw)...)
		return append(lines, "", s.Dim.Render(clip("[y/enter] start · [esc] back", iw)))
	}
	mode := "no mode change"
	if p.Mode != nil {
		mode = "set " + p.Mode.String()
	}
	redeploy := "no"
	if p.Redeploy != "" {
		redeploy = "yes, " + p.Redeploy
	}
	rows := []struct{ name, value string }{
		{"mode", mode}, {"redeploy", redeploy}, {"batch", fmt.Sprintf("%d at a time", f.batch)},
	}
	for i, r := range rows {
		line := fmt.Sprintf("  %-9s ‹ %s ›", r.name, r.value)
		if i == f.field {
			lines = append(lines, s.Choice.Render(fit("›"+line[1:], iw)))
			continue
		}
		lines = append(lines, clip(line, iw))
	}
	lines = append(lines, "")
	hosts := "hosts: "
	if f.filter != "" {
		hosts = fmt.Sprintf("hosts (shown by the filter %q): ", f.filter)
	}
	lines = append(lines, wrapLines(hosts+strings.Join(f.hosts, ", "), iw)...)
	return append(lines, "", s.Dim.Render(clip("[↑/↓] field · [←/→] change · [enter] next · [esc] cancel", iw)))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// rolloutRun is the rollout the console drives: the state machine, and
// the batches that arrived while its steps were being issued, held back
// so that it never sees an action's outcome before its id.
type rolloutRun struct {
	r       *rollout.Rollout
	issuing int            // step commands not answered yet
	held    []remote.Batch // batches to observe once they are
	cursor  int            // the lane under the cursor
}

// rolloutIssued is the answer of the Do calls for a rollout's steps.
type rolloutIssued struct {
	r     *rollout.Rollout
	steps []issuedStep
}

type issuedStep struct {
	step rollout.Step
	id   int
	err  error
}

// issueSteps issues a rollout's steps in order, in one command (a host's
// actions must reach the fleet in order).
func issueSteps(src Source, r *rollout.Rollout, steps []rollout.Step) tea.Cmd {
	return func() tea.Msg {
		out := rolloutIssued{r: r}
		for _, s := range steps {
			id, err := src.Do(s.Host, s.Action)
			out.steps = append(out.steps, issuedStep{step: s, id: id, err: err})
		}
		return out
	}
}

// issue hands steps to a command, counting it as outstanding.
func (m *Model) issue(steps []rollout.Step) tea.Cmd {
	if len(steps) == 0 || m.ro == nil {
		return nil
	}
	m.ro.issuing++
	return issueSteps(m.src, m.ro.r, steps)
}

// rolloutHosts are the hosts R acts on: the marked ones, else all, in
// table order; of either, only those the table shows under its filter.
func (m *Model) rolloutHosts() []string {
	if marked := m.shownMarked(); len(marked) > 0 {
		return marked
	}
	return m.shown()
}

// startRollout answers R: the running rollout's view, or the dialog for a
// new one.
func (m *Model) startRollout() tea.Cmd { return m.startRolloutOn(m.rolloutHosts(), "", "") }

// startRolloutOn opens the rollout dialog for hosts, its mode set to
// kernel=mode when given; or shows the running rollout.
func (m *Model) startRolloutOn(hosts []string, kernel, mode string) tea.Cmd {
	if m.src.ReadOnly() {
		return m.setStatus("read-only: rollout is disabled", true)
	}
	if m.ro != nil && !m.ro.r.Settled() {
		m.view = viewRollout
		return nil
	}
	if len(hosts) == 0 {
		return m.setStatus("no hosts to roll out to", true)
	}
	unit := "the unit"
	if hs := m.hostState(hosts[0]); hs != nil && hs.Unit != "" {
		unit = hs.Unit
	}
	f := newRolloutForm(hosts, unit, m.opts.Kernels)
	if i := slices.Index(f.modes, kernel+"="+mode); kernel != "" && i >= 0 {
		f.mode = i
	}
	if m.hf.active() {
		f.filter = safe(m.hf.text)
	}
	m.dlg = &dialog{kind: dlgRollout, host: strings.Join(hosts, ", "), unit: unit, rollout: f}
	return nil
}

// rolloutFormKey edits the rollout dialog; enter runs the preflight for
// the target mode on every host, then asks to confirm.
func (m *Model) rolloutFormKey(msg tea.KeyPressMsg) tea.Cmd {
	k, f := m.keys, m.dlg.rollout
	if f.confirming {
		switch {
		case key.Matches(msg, k.Confirm):
			m.dlg = nil
			return m.beginRollout(f, "", "", false)
		case key.Matches(msg, k.Cancel):
			f.confirming = false
		}
		return nil
	}
	switch s := msg.String(); {
	case key.Matches(msg, k.Back):
		m.dlg = nil
		return m.setStatus("cancelled", false)
	case key.Matches(msg, k.Up):
		f.field = (f.field + numFields - 1) % numFields
	case key.Matches(msg, k.Down):
		f.field = (f.field + 1) % numFields
	case s == "left" || s == "h":
		f.change(-1)
	case s == "right" || s == "l" || s == "space":
		f.change(1)
	case s == "enter":
		if pe := m.rolloutPreflight(f.plan()); pe != nil {
			d := preflightDialog(pe.Host, f.unit, pe, len(f.hosts))
			d.rollout = f
			m.dlg = d
			return nil
		}
		f.confirming = true
	}
	return nil
}

// rolloutPreflight checks every host of p against the capture-safety
// rule as it will start: in p's mode when p changes it, else in the mode
// on disk.
func (m *Model) rolloutPreflight(p rollout.Plan) *remote.PreflightError {
	for _, name := range p.Hosts {
		hs := m.hostState(name)
		if hs == nil {
			continue
		}
		h := *hs
		if p.Mode != nil {
			if k, ok := m.opts.Kernels.Kernel(p.Mode.Kernel); ok {
				env, err := kernels.DropInEnv(k, p.Mode.Mode, hs.UnitState.Environment)
				if err == nil {
					h.UnitState.Environment = append(append([]string(nil), hs.UnitState.Environment...), env...)
				}
			}
		}
		if pe := remote.Preflight(h, m.opts.Kernels, kernels.EngineAuto); pe != nil {
			return pe
		}
	}
	return nil
}

// beginRollout starts the rollout the form describes, with the mode
// replaced by kernel=mode when given (a capture-safe mode picked in the
// preflight dialog), or forced past the preflight.
func (m *Model) beginRollout(f *rolloutForm, kernel, mode string, force bool) tea.Cmd {
	p := f.plan()
	if kernel != "" {
		p.Mode = &rollout.ModeChange{Kernel: kernel, Mode: mode}
	}
	p.Force = force
	p.Now = m.opts.Now
	r, err := rollout.New(p, m.opts.Kernels)
	if err != nil {
		return m.setStatus(err.Error(), true)
	}
	m.ro = &rolloutRun{r: r}
	m.view = viewRollout
	return tea.Batch(m.setStatus("rollout started: "+p.String(), false), m.issue(r.Start(m.hosts)))
}

// rolloutIssuedMsg feeds the ids of issued steps back, then the batches
// held while they were out.
func (m *Model) rolloutIssuedMsg(msg rolloutIssued) tea.Cmd {
	if m.ro == nil || m.ro.r != msg.r {
		return nil // a rollout since replaced
	}
	cmds := []tea.Cmd{}
	for _, s := range msg.steps {
		m.ro.r.Issued(s.step, s.id, s.err)
		cmds = append(cmds, m.issued(actionIssued{host: s.step.Host, action: s.step.Action, id: s.id, err: s.err}))
	}
	m.ro.issuing = max(0, m.ro.issuing-1)
	if m.ro.issuing == 0 {
		held := m.ro.held
		m.ro.held = nil
		for _, b := range held {
			cmds = append(cmds, m.observe(b))
		}
	}
	return tea.Batch(cmds...)
}

// observe hands a batch to the running rollout, holding it while steps
// are being issued.
func (m *Model) observe(b remote.Batch) tea.Cmd {
	if m.ro == nil || m.ro.r.Settled() {
		return nil
	}
	if m.ro.issuing > 0 {
		m.ro.held = append(m.ro.held, b)
		return nil
	}
	before := m.ro.r.State().Status
	steps := m.ro.r.Observe(b)
	var cmd tea.Cmd
	if st := m.ro.r.State(); st.Status != before {
		cmd = m.rolloutStatus(st)
	}
	return tea.Batch(cmd, m.issue(steps))
}

// rolloutStatus reports the rollout's end in the status line; a halt puts
// the cursor on the halted host, ready for b.
func (m *Model) rolloutStatus(st rollout.State) tea.Cmd {
	switch st.Status {
	case rollout.Halted:
		for i, l := range m.ro.r.Lanes() {
			if l.Host == st.Host {
				m.ro.cursor = i
			}
		}
		return m.setStatus("rollout halted on "+st.Host+": b rolls it back, a ends the rollout", true)
	case rollout.Done:
		return m.setStatus("rollout done: every host serves", false)
	}
	return nil
}

// rolloutKey handles the rollout view.
func (m *Model) rolloutKey(msg tea.KeyPressMsg) tea.Cmd {
	k, ro := m.keys, m.ro
	lanes := ro.r.Lanes()
	switch {
	case key.Matches(msg, k.Back):
		m.view = viewTable
	case key.Matches(msg, k.Up):
		ro.cursor = max(0, ro.cursor-1)
	case key.Matches(msg, k.Down):
		ro.cursor = max(0, min(len(lanes)-1, ro.cursor+1))
	case key.Matches(msg, k.Open):
		if ro.cursor < len(lanes) {
			m.openHost(lanes[ro.cursor].Host)
			m.back = viewRollout
		}
	case key.Matches(msg, k.Abort):
		if ro.r.State().Status != rollout.Running {
			return m.setStatus("the rollout is not running", false)
		}
		ro.r.Abort()
		return m.setStatus("rollout aborted: hosts not reached are untouched; actions under way run to their end", false)
	case key.Matches(msg, k.Rollback):
		if m.src.ReadOnly() {
			return m.setStatus("read-only: rollback is disabled", true)
		}
		if ro.cursor >= len(lanes) {
			return nil
		}
		l := lanes[ro.cursor]
		if ro.r.State().Status == rollout.Running {
			return m.setStatus("rollback: the rollout is still running (a aborts it)", true)
		}
		if l.PrevMode == "" || ro.r.Plan().Mode == nil {
			return m.setStatus("rollback "+l.Host+": the rollout changed no mode on it", true)
		}
		unit := "the unit"
		if hs := m.hostState(l.Host); hs != nil {
			unit = hs.Unit
		}
		m.dlg = &dialog{kind: dlgConfirm, host: l.Host, unit: unit, kernel: ro.r.Plan().Mode.Kernel,
			rollbackTo: l.PrevMode, action: remote.Action{Kind: remote.ActUndoMode, Kernel: ro.r.Plan().Mode.Kernel}}
	}
	return nil
}

// rollback rolls host back after the confirmation.
func (m *Model) rollback(host string) tea.Cmd {
	if m.ro == nil {
		return nil
	}
	steps, err := m.ro.r.Rollback(host)
	if err != nil {
		return m.setStatus(err.Error(), true)
	}
	return tea.Batch(m.setStatus("rolling back "+host, false), m.issue(steps))
}

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
	}
	return s.PhaseActive
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
		if l := lanes[v.ro.cursor]; l.PrevMode != "" && v.ro.r.Plan().Mode != nil {
			offer = fmt.Sprintf("[b] roll %s back to %s=%s", l.Host, v.ro.r.Plan().Mode.Kernel, l.PrevMode)
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
