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
	dlgKernel  dialogKind = iota + 1 // choose a kernel (when the catalog has several)
	dlgMode                          // choose a kernel's mode
	dlgConfirm                       // confirm an action
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
	switch a.Kind {
	case remote.ActSetMode:
		return fmt.Sprintf("Set %s to mode %q on %s?", a.Kernel, a.Mode, d.host)
	case remote.ActRestart:
		return fmt.Sprintf("Restart %s on %s?", d.unit, d.host)
	case remote.ActResetFailed:
		return fmt.Sprintf("Reset the failed state of %s on %s?", d.unit, d.host)
	case remote.ActRedeploy:
		return fmt.Sprintf("Redeploy %s to %s?", a.Kernel, d.host)
	}
	return fmt.Sprintf("%s on %s?", a, d.host)
}

func (d *dialog) move(n int) {
	if len(d.choices) > 0 {
		d.cursor = (d.cursor + n + len(d.choices)) % len(d.choices)
	}
}

// Render draws the dialog as a box at most w wide.
func (d *dialog) Render(w int, s Styles) string {
	bw := min(w, 76)
	iw := max(1, bw-4)
	var lines []string
	switch d.kind {
	case dlgKernel:
		lines = append(lines, s.DialogTitle.Render(clip("Kernel for "+d.host, iw)), "")
		lines = append(lines, d.renderChoices(iw, s)...)
		lines = append(lines, "", s.Dim.Render(clip("[enter] choose · [esc] cancel", iw)))
	case dlgMode:
		lines = append(lines, s.DialogTitle.Render(clip(fmt.Sprintf("Mode of %s on %s", d.kernel, d.host), iw)), "")
		lines = append(lines, d.renderChoices(iw, s)...)
		lines = append(lines, "", s.Dim.Render(clip("[enter] choose · [esc] cancel", iw)))
	case dlgConfirm:
		lines = append(lines, s.DialogTitle.Render(clip(d.question(), iw)), "")
		for _, l := range strings.Split(lipgloss.Wrap(d.action.Effect(d.unit), iw, " "), "\n") {
			lines = append(lines, clip(l, iw))
		}
		lines = append(lines, "", s.Dim.Render(clip("[y/enter] confirm · [n/esc] cancel", iw)))
	}
	return frame(lines, bw, s.DialogBorder)
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
