package ui

import (
	"fmt"
	"strconv"
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
)

// dialogKind says which modal is open.
type dialogKind uint8

const (
	dlgKernel    dialogKind = iota + 1 // choose a kernel (when the catalog has several)
	dlgMode                            // choose a kernel's mode
	dlgConfirm                         // confirm an action
	dlgPreflight                       // a restart the capture-safety preflight refused
	dlgRollout                         // plan a gated rollout
)

// choice is one line of a chooser.
type choice struct {
	value string
	label string
	note  string // "(not capture-safe)", "current"
}

// dialog is the modal on top of a view: a chooser or a confirmation. It
// names its host, so a confirmation can never act on a host other than
// the one it showed.
type dialog struct {
	kind    dialogKind
	host    string
	unit    string
	kernel  string
	choices []choice
	cursor  int
	action  remote.Action
	// targets are every host the dialog acts on when they are more than
	// one (a palette command); host is then the first of them.
	targets []string
	// refused are the hosts whose restart the preflight refused, when
	// the dialog is about several.
	refused []string

	// undo: the kernel chooser leads to the undo confirmation, not to the
	// mode chooser.
	undo bool

	// checking are the capture checks a confirmation waits for (nil
	// when none runs); checkNote says what they gave, or that they were
	// skipped.
	checking  []remote.CheckWant
	checkNote string
	// checkSeq counts the checks begun, so that only the latest one's
	// answer is taken; checkSkipped: a person skipped them (s).
	checkSeq     int
	checkSkipped bool
	// thenRestart: the confirmation of the preflight dialog's "set X to
	// M, then restart": action is the mode change, a restart follows.
	thenRestart bool

	// The preflight dialog: why the restart was refused, and the count
	// typed to go on anyway. The cursor's last position (len(choices)) is
	// the "go on anyway" row.
	reason string
	hosts  int
	typed  string
	// rollout: the preflight is for a planned rollout, not one restart.
	rollout *rolloutForm
	// rollbackTo is set on the confirmation of a halted rollout's
	// rollback: the mode the host goes back to.
	rollbackTo string
	// note follows the effect in a confirmation: how long a restart
	// usually takes, from the hosts' history.
	note string
}

// hostList is every host the dialog acts on.
func (d *dialog) hostList() []string {
	if len(d.targets) > 0 {
		return d.targets
	}
	return []string{d.host}
}

// where names the hosts in a dialog's first line: the host, or how many.
func (d *dialog) where() string {
	if len(d.targets) > 1 {
		return fmt.Sprintf("%d hosts", len(d.targets))
	}
	return d.host
}

// kernelDialog lists the catalog's kernels.
func kernelDialog(host, unit string, cat kernels.Catalog) *dialog {
	d := &dialog{kind: dlgKernel, host: host, unit: unit}
	for _, k := range cat.Kernels {
		d.choices = append(d.choices, choice{value: k.Name, label: k.Name, note: k.EnvVar})
	}
	return d
}

// modeDialog lists k's modes, marking the unsafe ones and the current one,
// with the cursor on the current mode.
func modeDialog(host, unit string, k kernels.Kernel, modes []kernels.ActiveMode) *dialog {
	d := &dialog{kind: dlgMode, host: host, unit: unit, kernel: k.Name}
	cur := ""
	for _, m := range modes {
		if m.Kernel == k.Name {
			cur = m.Mode
		}
	}
	for i, m := range k.Modes {
		var notes []string
		if !m.CaptureSafe {
			notes = append(notes, "(not capture-safe)")
		}
		if m.Name == cur {
			notes = append(notes, "● current")
			d.cursor = i
		}
		d.choices = append(d.choices, choice{value: m.Name, label: m.Name, note: strings.Join(notes, " ")})
	}
	return d
}

// confirmDialog asks before a changes.
func confirmDialog(host, unit string, a remote.Action) *dialog {
	return &dialog{kind: dlgConfirm, host: host, unit: unit, kernel: a.Kernel, action: a}
}

// question is the confirmation's first line: what, and on which host.
func (d *dialog) question() string {
	a, on := d.action, d.where()
	if d.rollbackTo != "" {
		return fmt.Sprintf("Roll %s back to %s=%s?", d.host, a.Kernel, d.rollbackTo)
	}
	if d.thenRestart {
		return fmt.Sprintf("Set %s to %s on %s, then restart %s?", a.Kernel, a.Mode, on, d.unit)
	}
	return a.Question(d.unit, on)
}

// preflightDialog explains a refused restart on hosts (how many) and
// offers the kernel's capture-safe modes, or going on after typing the
// host count.
func preflightDialog(host, unit string, pe *remote.PreflightError, hosts int) *dialog {
	d := &dialog{kind: dlgPreflight, host: host, unit: unit, kernel: pe.Kernel, reason: pe.Reason, hosts: hosts}
	for _, sm := range pe.SafeModes {
		d.choices = append(d.choices, choice{value: sm, label: fmt.Sprintf("set %s to %s, then restart", pe.Kernel, sm)})
	}
	return d
}

// rows is how many rows the cursor moves over.
func (d *dialog) rows() int {
	if d.kind == dlgPreflight {
		return len(d.choices) + 1
	}
	return len(d.choices)
}

func (d *dialog) move(n int) {
	if r := d.rows(); r > 0 {
		d.cursor = (d.cursor + n + r) % r
	}
}

// Render draws the dialog as a box at most w wide.
func (d *dialog) Render(w int, s Styles) string {
	bw := min(w, 76)
	iw := max(1, bw-4)
	var lines []string
	switch d.kind {
	case dlgKernel:
		t := "Kernel for " + d.where()
		if d.undo {
			t = "Undo the last mode change of which kernel on " + d.where() + "?"
		}
		lines = append(lines, s.DialogTitle.Render(clip(t, iw)), "")
		lines = append(lines, d.renderChoices(iw, s)...)
		lines = append(lines, d.renderTargets(iw)...)
		lines = append(lines, "", s.Dim.Render(clip("[enter] choose · [esc] cancel", iw)))
	case dlgMode:
		lines = append(lines, s.DialogTitle.Render(clip(fmt.Sprintf("Mode of %s on %s", d.kernel, d.where()), iw)), "")
		lines = append(lines, d.renderChoices(iw, s)...)
		lines = append(lines, d.renderTargets(iw)...)
		lines = append(lines, "", s.Dim.Render(clip("[enter] choose · [esc] cancel", iw)))
	case dlgConfirm:
		lines = append(lines, s.DialogTitle.Render(clip(d.question(), iw)), "")
		effect := d.action.Effect(d.unit)
		if d.rollbackTo != "" {
			effect = fmt.Sprintf("put back %s's drop-in for %s as it was before the rollout (mode %s), then restart it if it was running; a redeploy is not undone", d.kernel, d.unit, d.rollbackTo)
		}
		if d.thenRestart {
			effect += "; then restart " + d.unit
		}
		if d.note != "" {
			effect += ". " + d.note
		}
		lines = append(lines, wrapLines(effect, iw)...)
		lines = append(lines, d.checkLines(iw)...)
		lines = append(lines, d.renderTargets(iw)...)
		lines = append(lines, "", s.Dim.Render(clip("[y/enter] confirm · [n/esc] cancel", iw)))
	case dlgPreflight:
		lines = append(lines, d.renderPreflight(iw, s)...)
	case dlgRollout:
		lines = append(lines, d.rollout.render(iw, s, d.checkLines(iw))...)
	}
	return frame(lines, bw, s.DialogBorder)
}

// wrapLines wraps plain text to w cells, one string per row.
func wrapLines(text string, w int) []string {
	var out []string
	for _, l := range strings.Split(lipgloss.Wrap(text, w, " "), "\n") {
		out = append(out, clip(l, w))
	}
	return out
}

// renderPreflight is the refused restart: what would happen, the
// capture-safe modes to pick instead, and the typed override.
func (d *dialog) renderPreflight(iw int, s Styles) []string {
	what := fmt.Sprintf("Restart %s on %s: preflight refused", d.unit, d.where())
	if d.hosts > 1 && d.rollout != nil {
		what = fmt.Sprintf("Rollout to %d hosts: preflight refused", d.hosts)
	}
	lines := []string{s.DialogTitle.Render(clip(what, iw)), ""}
	reason := wrapLines(d.reason, iw)
	if len(reason) > 2*maxTargetRows {
		reason = append(reason[:2*maxTargetRows-1], "…")
	}
	lines = append(lines, reason...)
	lines = append(lines, d.renderTargets(iw)...)
	lines = append(lines, "")
	row := func(i int, text string) string {
		if i == d.cursor {
			return s.Choice.Render(fit("› "+text, iw))
		}
		return clip("  "+text, iw)
	}
	for i, c := range d.choices {
		lines = append(lines, row(i, c.label))
	}
	lines = append(lines, row(len(d.choices), fmt.Sprintf("go on anyway: type %d (the number of hosts) to confirm: [%s_]", d.hosts, d.typed)))
	return append(lines, "", s.Dim.Render(clip("[↑/↓] move · [enter] choose · [0-9] type the count · [esc] cancel", iw)))
}

// maxTargetRows is how many rows a dialog gives to the names of its hosts.
const maxTargetRows = 4

// renderTargets names every host a dialog about several acts on, with
// numbered runs folded (gpu[1-8]), in at most maxTargetRows rows.
func (d *dialog) renderTargets(iw int) []string {
	if len(d.targets) < 2 {
		return nil
	}
	rows := wrapLines("hosts: "+foldHosts(d.targets), iw)
	if len(rows) > maxTargetRows {
		rows = append(rows[:maxTargetRows-1], clip(fmt.Sprintf("… %d hosts in all", len(d.targets)), iw))
	}
	return append([]string{""}, rows...)
}

func (d *dialog) renderChoices(iw int, s Styles) []string {
	out := make([]string, len(d.choices))
	for i, c := range d.choices {
		line := fmt.Sprintf("  %d %s", i+1, c.label)
		if c.note != "" {
			line = pad(line, 14) + " " + c.note
		}
		if i == d.cursor {
			line = "›" + line[1:]
			out[i] = s.Choice.Render(fit(line, iw))
			continue
		}
		out[i] = clip(line, iw)
	}
	return out
}

// foldHosts lists names in order, folding runs of three or more numbered
// names (gpu1, gpu2, gpu3) as pdsh does: gpu[1-3].
func foldHosts(names []string) string {
	var out []string
	for i := 0; i < len(names); {
		pre, n, digits := splitNumber(names[i])
		j := i + 1
		for digits != "" && j < len(names) {
			p2, n2, d2 := splitNumber(names[j])
			if p2 != pre || d2 == "" || n2 != n+(j-i) || (len(d2) != len(digits) && (d2[0] == '0' || digits[0] == '0')) {
				break
			}
			j++
		}
		if j-i >= 3 {
			_, _, last := splitNumber(names[j-1])
			out = append(out, fmt.Sprintf("%s[%s-%s]", pre, digits, last))
		} else {
			out = append(out, names[i:j]...)
		}
		i = j
	}
	return strings.Join(out, ", ")
}

// splitNumber cuts a name's trailing digits off: "gpu12" → "gpu", 12,
// "12"; a name without them has digits "".
func splitNumber(name string) (prefix string, n int, digits string) {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	digits = name[i:]
	if digits == "" || len(digits) > 9 {
		return name, 0, ""
	}
	n, _ = strconv.Atoi(digits)
	return name[:i], n, digits
}
