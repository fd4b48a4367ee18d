package output

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/capturecheck"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/startup"
)

// Preflight says why the restart was refused and what to do.
func Preflight(w io.Writer, refused []*remote.PreflightError, hosts int) {
	for _, pe := range refused {
		fmt.Fprintf(w, "%s: refused by the capture-safety preflight: %s\n", pe.Host, pe.Reason)
		if len(pe.RefusedBy) > 0 {
			fmt.Fprintf(w, "  refused by: %s%s\n", joinSources(pe.RefusedBy), checkTook(pe.Evidence))
		}
		if len(pe.SafeModes) > 0 {
			fmt.Fprintf(w, "  capture-safe modes of %s: %s — e.g. `bringup mode %s %s=%s --restart`\n",
				pe.Kernel, strings.Join(pe.SafeModes, ", "), pe.Host, pe.Kernel, pe.SafeModes[0])
		}
	}
	fmt.Fprintf(w, "To go on anyway (it will fail at graph capture), confirm by typing the number of hosts (%d), or pass --force --yes.\n", hosts)
}

// RefusedBy is " (by declared, check)": who refused the first of
// refused, for a one-line reason; "" when none says.
func RefusedBy(refused []*remote.PreflightError) string {
	if len(refused) == 0 || len(refused[0].RefusedBy) == 0 {
		return ""
	}
	return " (by " + joinSources(refused[0].RefusedBy) + ")"
}

// joinSources is "declared, check".
func joinSources(ss []kernels.SafetySource) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return strings.Join(out, ", ")
}

// checkTook is "; the check ran 7.0s" for evidence with a check that ran.
func checkTook(ev []kernels.Evidence) string {
	for _, e := range ev {
		if e.Source == kernels.SourceCheck && !e.Skipped && e.Took > 0 {
			return fmt.Sprintf("; the check ran %s", e.Took.Round(100*time.Millisecond))
		}
	}
	return ""
}

// Checks says what the lint and each capture check before a restart
// gave, a line each: clean or the sync it found (file:line, the call,
// the function); passed, refused (the cause and PyTorch's line), or
// skipped.
func Checks(w io.Writer, wants []remote.CheckWant, ev remote.SafetyEvidence) {
	for _, cw := range wants {
		for _, e := range ev[remote.HostKernel{Host: cw.Host, Kernel: cw.Kernel}] {
			took := e.Took.Round(100 * time.Millisecond)
			switch {
			case e.Source == kernels.SourceLint && e.Skipped:
				fmt.Fprintf(w, "  %s: lint of %s=%s did not run: %s\n", cw.Host, cw.Kernel, cw.Mode, strings.TrimPrefix(e.Detail, "the lint could not run: "))
			case e.Source == kernels.SourceLint:
				verdict := "FOUND A HOST SYNC"
				if e.Safe {
					verdict = "clean"
				}
				fmt.Fprintf(w, "  %s: lint of %s=%s %s in %s: %s\n", cw.Host, cw.Kernel, cw.Mode, verdict, e.Took.Round(time.Millisecond), e.Detail)
			case e.Source == kernels.SourceCheck:
				verdict, detail := fmt.Sprintf("FAILED in %s", took), e.Detail
				switch {
				case e.Skipped && strings.HasPrefix(detail, capturecheck.CannotRun):
					verdict, detail = fmt.Sprintf("could not run (%s)", took), strings.TrimPrefix(detail, capturecheck.CannotRun)
				case e.Skipped:
					verdict = "skipped"
				case e.Safe:
					verdict = fmt.Sprintf("passed in %s", took)
				}
				fmt.Fprintf(w, "  %s: capture check of %s=%s %s: %s\n", cw.Host, cw.Kernel, cw.Mode, verdict, detail)
			}
		}
	}
}

// Plan says, host by host, exactly what will change.
func Plan(w io.Writer, hosts []string, states map[string]remote.HostState, actions []remote.Action) {
	fmt.Fprintf(w, "This will change %d host(s):\n", len(hosts))
	for _, name := range hosts {
		unit := states[name].Unit
		effects := make([]string, len(actions))
		for i, a := range actions {
			effects[i] = a.Effect(unit)
			if a.Kind == remote.ActRestart && a.Force {
				effects[i] += " AGAINST THE PREFLIGHT"
			}
		}
		fmt.Fprintf(w, "  %s: %s\n", name, strings.Join(effects, "; then "))
	}
}

// DiagSuffix is a diagnosis at the end of a line: ": summary [cause]"
// and the kernel mode in force.
func DiagSuffix(d *startup.Diagnosis) string {
	if d == nil {
		return ""
	}
	s := fmt.Sprintf(": %s [%s]", d.Summary, d.Cause)
	if d.KernelMode != "" {
		s += " under " + d.KernelMode
	}
	return s
}

// Actions prints how the actions go, a line each.
type Actions struct{ W io.Writer }

// Refused prints a refusal at the door.
func (p Actions) Refused(host string, a remote.Action, err error) {
	fmt.Fprintf(p.W, "%s %-8s %s: refused: %v\n", Stamp(), host, a, err)
}

// Action prints an outcome of an action.
func (p Actions) Action(ev event.Event) { Action(p.W, ev) }

// Change prints a startup change of a host being restarted.
func (p Actions) Change(c remote.HostChange, started time.Time) {
	Change(p.W, c, started, false)
}

// Ended prints how the restart's new invocation ended.
func (p Actions) Ended(h remote.HostState) {
	st := h.Startup
	if st.Phase == startup.Serving {
		fmt.Fprintf(p.W, "%s %-8s serving (invocation %.8s)\n", st.PhaseSince.Format(TimeLayout), h.Name, st.InvocationID)
		return
	}
	fmt.Fprintf(p.W, "%s %-8s failed (invocation %.8s)%s\n", st.PhaseSince.Format(TimeLayout), h.Name, st.InvocationID, DiagSuffix(st.Diag))
}

// Action prints one action outcome (its text was sanitised where it
// entered the fleet).
func Action(w io.Writer, ev event.Event) {
	a := ev.Action
	line := fmt.Sprintf("%s %-8s %s: %s", ev.Time.Format(TimeLayout), ev.Host, a.Name, a.Stage)
	switch {
	case a.Err != "":
		line += ": " + a.Err
	case a.Detail != "" && a.Percent > 0 && a.Percent < 100:
		line += fmt.Sprintf(" %d%%: %s", a.Percent, a.Detail)
	case a.Detail != "":
		line += ": " + a.Detail
	}
	fmt.Fprintln(w, line)
}

// Stamp is the local time now, as lines print it.
func Stamp() string { return time.Now().Format(TimeLayout) }

// Applied prints how the actions ended: a timeout line per host still
// under way when ctx ended (ctxErr), then the hosts that failed or that
// all is done. It reports which it was.
func Applied(w io.Writer, done []fleet.Applied, ctxErr error) (timedOut, failed bool) {
	var failedOn []string
	for _, a := range done {
		switch {
		case !a.Finished:
			timedOut = true
			fmt.Fprintf(w, "%s %-8s timeout (%v) in %s\n", Stamp(), a.Host, ctxErr, a.Phase)
		case a.Failed:
			failedOn = append(failedOn, a.Host)
		}
	}
	switch {
	case timedOut:
	case len(failedOn) > 0:
		fmt.Fprintf(w, "failed on %s\n", strings.Join(failedOn, ", "))
	default:
		fmt.Fprintf(w, "done on %d host(s)\n", len(done))
	}
	return timedOut, len(failedOn) > 0
}
