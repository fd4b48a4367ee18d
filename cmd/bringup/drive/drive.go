// Package drive drives a started fleet to a command's outcome and returns
// its exit code: watch's lines until every host settles, a changing
// command's plan, confirmation and apply, a rollout's host-by-host loop.
// The binary parses the flags and opens the fleet; what a run prints goes
// through package output, and what it asks goes to the streams handed in.
package drive

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/capturecheck"
	"github.com/bringup-dev/bringup/remote/fleet"
)

// Streams are where a run talks to people.
type Streams struct {
	Out io.Writer // what it reports, for people
	Err io.Writer // what went wrong, warnings
	In  io.Reader // answers to prompts; nil: nobody to ask
}

// Follow starts fleet for command name and returns its follower and the
// func that stops it, which says so on errOut when the hosts take too
// long.
func Follow(ctx context.Context, errOut io.Writer, name string, f *fleet.Fleet) (*fleet.Follower, func()) {
	fl := fleet.Follow(ctx, f)
	return fl, func() {
		if err := fl.Stop(5 * time.Second); err != nil {
			fmt.Fprintf(errOut, "bringup %s: %v\n", name, err)
		}
	}
}

// InOrder is states in the order of hosts.
func InOrder(hosts []string, states map[string]remote.HostState) []remote.HostState {
	out := make([]remote.HostState, 0, len(hosts))
	for _, h := range hosts {
		if st, ok := states[h]; ok {
			out = append(out, st)
		}
	}
	return out
}

// preflight runs the one preflight planner over hosts as they will
// start after changes, weighing ev (the checks'); on a refusal it
// explains why (on w) and asks for the override, or takes it from
// --force. It reports whether the restarts must be forced, and whether
// to go on at all; refused says why not, naming who refused.
func (s Streams) preflight(name string, w io.Writer, hosts []remote.HostState, cat kernels.Catalog, changes []remote.Action, ev remote.SafetyEvidence, force bool) (forced, ok bool, refused string) {
	refusals := remote.PreflightAllWith(hosts, cat, changes, ev)
	if len(refusals) == 0 {
		return false, true, ""
	}
	output.Preflight(w, refusals, len(hosts))
	refused = "refused by the capture-safety preflight" + output.RefusedBy(refusals)
	switch {
	case force:
		fmt.Fprintf(s.Err, "bringup %s: WARNING: --force: restarting against the preflight\n", name)
		return true, true, ""
	case s.In == nil:
		fmt.Fprintf(s.Err, "bringup %s: refused: no terminal to confirm on, and no --force --yes\n", name)
		return false, false, refused
	}
	fmt.Fprintf(s.Out, "Type the number of hosts (%d) to go on anyway: ", len(hosts))
	line, _ := bufio.NewReader(s.In).ReadString('\n')
	if !kernels.OverrideConfirmed(line, len(hosts)) {
		fmt.Fprintln(s.Out, "Not confirmed: nothing changed.")
		return false, false, refused
	}
	return true, true, ""
}

// captureChecks weighs, before anything changes, what a restart of
// hosts after changes loads beyond the declaration (remote.PreflightPlan):
// the lint of the kernel files each unit will load, and the kernels'
// check commands run on the hosts; it says on w what each gave. With skip
// it runs no check and records that they were skipped (the lint, which
// takes milliseconds and changes nothing, still runs). The evidence is
// the preflight's.
func (s Streams) captureChecks(ctx context.Context, name string, w io.Writer, f *fleet.Fleet, hosts []remote.HostState, changes []remote.Action, skip bool) remote.SafetyEvidence {
	wants := remote.PreflightPlan(hosts, f.Kernels(), changes)
	if len(wants) == 0 {
		return nil
	}
	checked := remote.Checked(wants)
	var ev remote.SafetyEvidence
	switch {
	case skip:
		ev = f.LintKernels(ctx, wants)
		if len(checked) > 0 {
			fmt.Fprintf(s.Err, "bringup %s: WARNING: --skip-check: %d capture check(s) skipped; the restart is recorded as such\n", name, len(checked))
			ev = ev.Merge(remote.Skipped(checked, "skipped by --skip-check"))
		}
	case len(checked) > 0:
		fmt.Fprintf(w, "Capture check on %d host(s) before any restart (up to %s each)…\n", len(hosts), capturecheck.Deadline)
		ev = f.CaptureCheck(ctx, wants)
	default:
		ev = f.LintKernels(ctx, wants)
	}
	output.Checks(w, wants, ev)
	return ev
}

// proceed asks question unless --yes answered it; there is no going ahead
// without a terminal to ask on. why says what stopped it.
func (s Streams) proceed(name string, yes bool, question string) (ok bool, why string) {
	switch {
	case yes:
		return true, ""
	case s.In == nil:
		fmt.Fprintf(s.Err, "bringup %s: refused: no terminal to confirm on; pass --yes to go ahead (nothing changed)\n", name)
		return false, "no terminal to confirm on, and no --yes"
	case !confirm(s.In, s.Out, question):
		fmt.Fprintln(s.Out, "Not confirmed: nothing changed.")
		return false, "not confirmed"
	}
	return true, ""
}

// confirm asks a yes/no question; only y or yes goes ahead.
func confirm(in io.Reader, w io.Writer, q string) bool {
	fmt.Fprint(w, q)
	line, _ := bufio.NewReader(in).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}
