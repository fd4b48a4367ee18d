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
	wants := slices.DeleteFunc(remote.PreflightPlan(m.statesOf(d.hostList()), m.opts.Kernels, d.restartActions()),
		func(w remote.CheckWant) bool { return !weighs(w) })
	if len(wants) == 0 {
		return nil
	}
	d.checking = wants
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), captureCheckLimit)
		defer cancel()
		return captureChecked{d: d, wants: wants, ev: run(ctx, wants)}
	}
}

// restartActions are the actions a restart under d's action starts
// after: the mode change, or nothing.
func (d *dialog) restartActions() []remote.Action {
	if d.action.Kind == remote.ActSetMode {
		return []remote.Action{d.action}
	}
	return nil
}

// captureCheckDone takes the checks' verdict into their dialog: a
// restart they refuse turns into the preflight dialog (who refused, the
// cause, how long the check ran); otherwise the confirmation says what
// they proved and may go on.
func (m *Model) captureCheckDone(msg captureChecked) tea.Cmd {
	d := msg.d
	if m.dialog != d || d.checking == nil {
		return nil
	}
	d.checking = nil
	hosts := d.hostList()
	refused := remote.PreflightAllWith(m.statesOf(hosts), m.opts.Kernels, d.restartActions(), msg.ev)
	if len(refused) > 0 && d.action.Kind == remote.ActRestart {
		pe := refused[0]
		p := preflightDialog(pe.Host, d.unit, pe, len(hosts)).on(d.targets)
		p.reason = verdictText(pe, len(refused))
		m.openDialog(p)
		return nil
	}
	d.checkNote = checksText(msg.wants, msg.ev)
	if len(refused) > 0 {
		d.checkNote += "; a restart in this mode will be refused by " + sourcesText(refused[0].RefusedBy)
	}
	return nil
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
// says it was skipped.
func (d *dialog) skipCaptureCheck() {
	d.checking = nil
	d.action.SkipCheck = d.action.Kind == remote.ActRestart
	d.checkNote = "capture check skipped (recorded)"
}
