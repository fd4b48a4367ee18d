package ui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
)

// captureCheckLimit bounds the console's wait for the capture checks: the
// fleet gives each its own deadline; this only makes sure the command
// that waits for them ends.
const captureCheckLimit = 2 * time.Minute

// captureChecked is the answer of the capture checks a confirmation
// started: for the dialog d only (a dialog closed or replaced since
// ignores it).
type captureChecked struct {
	d     *dialog
	seq   int // d's checkSeq when it began: a check begun again since wins
	wants []remote.CheckWant
	ev    remote.SafetyEvidence
}

// startCaptureCheck lints the kernel files and runs the kernels' check
// commands that d's action asks for (a restart, or a mode that the next
// restart starts in) on the hosts, in a command of its own: the
// confirmation shows that they run, waits for them before it restarts,
// and shows their verdict.
func (m *Model) startCaptureCheck(d *dialog) tea.Cmd {
	run := m.caps.CaptureCheck
	if run == nil {
		return nil
	}
	weighs := m.caps.CaptureWeighs
	if weighs == nil {
		weighs = func(w remote.CheckWant) bool { return w.Command != "" }
	}
	var wants []remote.CheckWant
	for _, g := range d.checkGroups() {
		wants = append(wants, remote.PreflightPlan(m.statesOf(g.hosts), m.opts.Kernels, g.actions)...)
	}
	wants = slices.DeleteFunc(wants, func(w remote.CheckWant) bool { return !weighs(w) })
	if len(wants) == 0 {
		return nil
	}
	d.checking, d.checkNote = wants, ""
	d.checkSeq++
	seq := d.checkSeq
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), captureCheckLimit)
		defer cancel()
		return captureChecked{d: d, seq: seq, wants: wants, ev: run(ctx, wants)}
	}
}

// checkGroup is hosts whose next restart starts after actions.
type checkGroup struct {
	hosts   []string
	actions []remote.Action
}

// checkGroups are d's hosts by what their restart starts after: a
// rollout's mode change on all its hosts; the preflight dialog's "set X
// to M, then restart" sets M on the refused hosts only, the others
// restart as they are; a mode change on all; a plain restart nothing.
func (d *dialog) checkGroups() []checkGroup {
	switch {
	case d.rollout != nil:
		return []checkGroup{{d.rollout.hosts, d.rollout.plan().Changes()}}
	case d.thenRestart && len(d.refused) > 0:
		others := slices.DeleteFunc(slices.Clone(d.hostList()), func(h string) bool { return slices.Contains(d.refused, h) })
		return []checkGroup{{d.refused, []remote.Action{d.action}}, {others, nil}}
	case d.action.Kind == remote.ActSetMode:
		return []checkGroup{{d.hostList(), []remote.Action{d.action}}}
	}
	return []checkGroup{{d.hostList(), nil}}
}

// restarts reports whether confirming d restarts the unit: a restart,
// the preflight dialog's "set X to M, then restart", a rollout. Such a
// confirmation waits for its checks, and a refusal turns it into the
// preflight dialog.
func (d *dialog) restarts() bool {
	return d.action.Kind == remote.ActRestart || d.thenRestart || d.rollout != nil
}

// weigh is the preflight of d's restart weighing ev: the refusals.
func (m *Model) weigh(d *dialog, ev remote.SafetyEvidence) []*remote.PreflightError {
	var out []*remote.PreflightError
	for _, g := range d.checkGroups() {
		out = append(out, remote.PreflightAllWith(m.statesOf(g.hosts), m.opts.Kernels, g.actions, ev)...)
	}
	return out
}

// captureCheckDone takes the checks' verdict into their dialog: a
// restart they refuse turns into the preflight dialog (who refused, the
// cause, how long the check ran); otherwise the confirmation says what
// they proved and may go on.
func (m *Model) captureCheckDone(msg captureChecked) tea.Cmd {
	d := msg.d
	if m.dialog != d || d.checking == nil || msg.seq != d.checkSeq {
		return nil
	}
	d.checking = nil
	refused := m.weigh(d, msg.ev)
	if len(refused) > 0 && d.restarts() {
		m.openDialog(refusedDialog(d, refused))
		return nil
	}
	d.checkNote = checksText(msg.wants, msg.ev)
	if len(refused) > 0 {
		d.checkNote += "; a restart in this mode will be refused by " + sourcesText(refused[0].RefusedBy)
	}
	return nil
}

// refusedDialog is the preflight dialog of d's restart that the lint or
// the checks refused: who refused, the cause, how long the check ran, and
// the safe modes left to pick (a rollout's dialog keeps its form).
func refusedDialog(d *dialog, refused []*remote.PreflightError) *dialog {
	pe := refused[0]
	var p *dialog
	if f := d.rollout; f != nil {
		f.confirming = false
		p = preflightDialog(pe.Host, d.unit, pe, len(f.hosts))
		p.rollout = f
	} else {
		p = preflightDialog(pe.Host, d.unit, pe, len(d.hostList())).on(d.targets)
		if len(d.targets) > 1 {
			for _, r := range refused {
				p.refused = append(p.refused, r.Host)
			}
		}
	}
	p.reason = verdictText(pe, len(refused))
	return p
}

// verdictText is a refusal with who refused and how long the check ran.
func verdictText(pe *remote.PreflightError, refusedHosts int) string {
	s := pe.Reason
	if len(pe.RefusedBy) > 0 {
		s = fmt.Sprintf("refused by %s: %s", sourcesText(pe.RefusedBy), s)
	}
	if refusedHosts > 1 {
		s = fmt.Sprintf("%s (and %d more hosts)", s, refusedHosts-1)
	}
	return s
}

// sourcesText is "declared, check".
func sourcesText(ss []kernels.SafetySource) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return strings.Join(out, ", ")
}

// checksText says what the lint and the checks gave, in one line.
func checksText(wants []remote.CheckWant, ev remote.SafetyEvidence) string {
	var parts []string
	for _, w := range wants {
		for _, e := range ev[remote.HostKernel{Host: w.Host, Kernel: w.Kernel}] {
			what, verdict, took := "capture check", "failed", e.Took.Round(100*time.Millisecond)
			if e.Source == kernels.SourceLint {
				what, verdict, took = "lint", "found a host sync", e.Took.Round(time.Millisecond)
			}
			switch {
			case e.Skipped:
				verdict = "did not run"
			case e.Safe && e.Source == kernels.SourceLint:
				verdict = "clean"
			case e.Safe:
				verdict = "passed"
			}
			parts = append(parts, fmt.Sprintf("%s: %s of %s=%s %s in %s (%s)", w.Host, what, w.Kernel, w.Mode, verdict, took, e.Detail))
		}
	}
	return strings.Join(parts, "; ")
}

// checkingText is what a confirmation says while its checks run (the
// lint alone when no kernel has a check command).
func (d *dialog) checkingText() string {
	checked := remote.Checked(d.checking)
	what, w := "Capture check", d.checking[0]
	if len(checked) == 0 {
		what = "Lint of the kernel files"
	} else {
		w = checked[0]
	}
	s := fmt.Sprintf("%s of %s=%s running on %s", what, w.Kernel, w.Mode, w.Host)
	if len(d.checking) > 1 {
		s += fmt.Sprintf(" and %d more", len(d.checking)-1)
	}
	return s + "… [s] skips it (recorded)"
}

// skipCaptureCheck goes on without the checks: the restart's audit line
// (each restart's, a rollout's too) says it was skipped.
func (d *dialog) skipCaptureCheck() {
	d.checking = nil
	d.action.SkipCheck = d.action.Kind == remote.ActRestart
	d.checkSkipped = true
	if d.rollout != nil {
		d.rollout.skipCheck = true
	}
	d.checkNote = "capture check skipped (recorded)"
}

// checkLines are a confirmation's lines about its checks: that they run,
// or what they gave; none when there were none.
func (d *dialog) checkLines(iw int) []string {
	switch {
	case d.checking != nil:
		return []string{"", clip(d.checkingText(), iw)}
	case d.checkNote != "":
		note := wrapLines(d.checkNote, iw)
		if len(note) > 2*maxTargetRows { // a rollout over many hosts
			note = append(note[:2*maxTargetRows-1], "…")
		}
		return append([]string{""}, note...)
	}
	return nil
}
