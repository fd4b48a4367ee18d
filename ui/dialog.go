package ui

import (
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"

	"bringup/kernels"
	"bringup/remote"
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

	// undo: the kernel chooser leads to the undo confirmation, not to the
	// mode chooser.
	undo bool

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
	a := d.action
	if d.rollbackTo != "" {
		return fmt.Sprintf("Roll %s back to %s=%s?", d.host, a.Kernel, d.rollbackTo)
	}
	switch a.Kind {
	case remote.ActSetMode:
		return fmt.Sprintf("Set %s to mode %q on %s?", a.Kernel, a.Mode, d.host)
	case remote.ActRestart:
		return fmt.Sprintf("Restart %s on %s?", d.unit, d.host)
	case remote.ActResetFailed:
		return fmt.Sprintf("Reset the failed state of %s on %s?", d.unit, d.host)
	case remote.ActRedeploy:
		return fmt.Sprintf("Redeploy %s to %s?", a.Kernel, d.host)
	case remote.ActUndoMode:
		return fmt.Sprintf("Undo the last mode change of %s on %s?", a.Kernel, d.host)
	}
	return fmt.Sprintf("%s on %s?", a, d.host)
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
		t := "Kernel for " + d.host
		if d.undo {
			t = "Undo the last mode change of which kernel on " + d.host + "?"
		}
		lines = append(lines, s.DialogTitle.Render(clip(t, iw)), "")
		lines = append(lines, d.renderChoices(iw, s)...)
		lines = append(lines, "", s.Dim.Render(clip("[enter] choose · [esc] cancel", iw)))
	case dlgMode:
		lines = append(lines, s.DialogTitle.Render(clip(fmt.Sprintf("Mode of %s on %s", d.kernel, d.host), iw)), "")
		lines = append(lines, d.renderChoices(iw, s)...)
		lines = append(lines, "", s.Dim.Render(clip("[enter] choose · [esc] cancel", iw)))
	case dlgConfirm:
		lines = append(lines, s.DialogTitle.Render(clip(d.question(), iw)), "")
		effect := d.action.Effect(d.unit)
		if d.rollbackTo != "" {
			effect = fmt.Sprintf("put back %s's drop-in for %s as it was before the rollout (mode %s), then restart it if it was running; a redeploy is not undone", d.kernel, d.unit, d.rollbackTo)
		}
		lines = append(lines, wrapLines(effect, iw)...)
		lines = append(lines, "", s.Dim.Render(clip("[y/enter] confirm · [n/esc] cancel", iw)))
	case dlgPreflight:
		lines = append(lines, d.renderPreflight(iw, s)...)
	case dlgRollout:
		lines = append(lines, d.rollout.render(iw, s)...)
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
	what := fmt.Sprintf("Restart %s on %s: preflight refused", d.unit, d.host)
	if d.hosts > 1 {
		what = fmt.Sprintf("Rollout to %d hosts: preflight refused", d.hosts)
	}
	lines := []string{s.DialogTitle.Render(clip(what, iw)), ""}
	lines = append(lines, wrapLines(d.reason, iw)...)
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
