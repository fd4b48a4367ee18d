package drive

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/startup"
)

// TestProceed: --yes goes ahead unasked; without a terminal nothing
// does; only y or yes typed goes ahead.
func TestProceed(t *testing.T) {
	for _, tc := range []struct {
		yes      bool
		in       string // typed; "-" no terminal
		ok       bool
		why, out string
	}{
		{yes: true, in: "-", ok: true},
		{in: "-", why: "no terminal to confirm on, and no --yes"},
		{in: "y\n", ok: true, out: "Go? "},
		{in: " YES \n", ok: true, out: "Go? "},
		{in: "n\n", why: "not confirmed", out: "Go? Not confirmed: nothing changed.\n"},
		{in: "", why: "not confirmed", out: "Go? Not confirmed: nothing changed.\n"},
	} {
		var out, errOut bytes.Buffer
		s := Streams{Out: &out, Err: &errOut}
		if tc.in != "-" {
			s.In = strings.NewReader(tc.in)
		}
		ok, why := s.proceed("stop", tc.yes, "Go? ")
		if ok != tc.ok || why != tc.why || out.String() != tc.out {
			t.Errorf("yes=%v in=%q: %v %q, printed %q; want %v %q, %q", tc.yes, tc.in, ok, why, out.String(), tc.ok, tc.why, tc.out)
		}
		if (tc.in == "-" && !tc.yes) != strings.Contains(errOut.String(), "no terminal to confirm on") {
			t.Errorf("yes=%v in=%q: stderr %q", tc.yes, tc.in, errOut.String())
		}
	}
}

// TestInOrderAndOutcome: states follow the hosts' order, leaving out the
// hosts without one; one failed host fails the lot.
func TestInOrderAndOutcome(t *testing.T) {
	states := map[string]remote.HostState{"b": {Name: "b"}, "a": {Name: "a"}}
	var names []string
	for _, h := range InOrder([]string{"a", "c", "b"}, states) {
		names = append(names, h.Name)
	}
	if strings.Join(names, " ") != "a b" {
		t.Errorf("InOrder: %v", names)
	}
	serving := remote.HostState{Startup: startup.Startup{Phase: startup.Serving}}
	failed := remote.HostState{Startup: startup.Startup{Phase: startup.Failed}}
	if Outcome([]remote.HostState{serving, serving}) != 0 || Outcome([]remote.HostState{serving, failed}) != 1 {
		t.Error("Outcome: want 0 serving, 1 with a failed host")
	}
}
