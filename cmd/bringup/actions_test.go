package main

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/action"
	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
)

// actCmd returns the changing command named name.
func actCmd(t *testing.T, name string) action.Command {
	t.Helper()
	for _, c := range action.Commands() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no action command %q", name)
	return action.Command{}
}

// runAct runs a changing command with in as the terminal (nil: none).
func runAct(t *testing.T, ctx context.Context, name string, in *strings.Reader, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut syncBuffer
	var terminal io.Reader // a nil *strings.Reader would not be a nil io.Reader
	if in != nil {
		terminal = in
	}
	code := act(ctx, testEnv(&out, &errOut), actCmd(t, name), args, terminal)
	return code, out.String(), errOut.String()
}

// readOnlyArgs are, per command, arguments that would change a host.
var readOnlyArgs = map[string][]string{
	"mode":          {"gpu1", "kdtree-verify=on", "--restart"},
	"redeploy":      {"gpu1", "--restart"},
	"restart":       {"gpu1"},
	"stop":          {"gpu1"},
	"reset-failed":  {"gpu1"},
	"daemon-reload": {"gpu1"},
}

// TestReadOnlyRefusesEveryAction enumerates every action kind at the
// fleet's door and every changing command: each is refused in read-only
// mode, and the commands exit 3 naming read-only.
func TestReadOnlyRefusesEveryAction(t *testing.T) {
	f, _, err := simFlags{speed: 1, scenario: "seed"}.simFleet(true, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range remote.AllActionKinds() {
		_, err := f.Do("gpu1", remote.Action{Kind: k, Kernel: "kdtree-verify", Mode: "on"})
		if !errors.Is(err, remote.ErrReadOnly) {
			t.Errorf("%s in read-only mode: err = %v, want ErrReadOnly", k, err)
		}
	}
	// Every command is covered, and together they reach every kind but
	// undo-mode (which has no command: it undoes a change of the same
	// session).
	var kinds []remote.ActionKind
	for _, c := range action.Commands() {
		args, ok := readOnlyArgs[c.Name]
		if !ok {
			t.Errorf("command %s has no read-only case", c.Name)
			continue
		}
		code, out, errOut := runAct(t, t.Context(), c.Name, nil, append([]string{"--demo", "--read-only", "--yes"}, args...)...)
		if code != exitUsage || !strings.Contains(errOut, "read-only") || strings.Contains(out, "done") {
			t.Errorf("%s --read-only: exit %d, want %d\nstdout: %s\nstderr: %s", c.Name, code, exitUsage, out, errOut)
		}
		var extra []string
		for _, a := range args {
			if strings.Contains(a, "=") {
				extra = append(extra, a)
			}
		}
		as, err := c.Build(kernels.DefaultCatalog(), extra, action.Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		for _, a := range as {
			kinds = append(kinds, a.Kind)
		}
	}
	kinds = append(kinds, remote.ActRestart) // what --restart and `restart` add
	for _, k := range remote.AllActionKinds() {
		if k != remote.ActUndoMode && !slices.Contains(kinds, k) {
			t.Errorf("no command issues %s", k)
		}
	}
}

// TestPreflightOverride: the preflight refuses without a terminal, takes
// only the host count typed, and --force needs --yes.
func TestPreflightOverride(t *testing.T) {
	args := []string{"--demo", "gpu1", "gpu2", "kdtree-verify=validate", "--restart", "--yes"}
	code, _, errOut := runAct(t, t.Context(), "mode", nil, args...)
	if code != exitUsage || !strings.Contains(errOut, "capture-safety preflight") || !strings.Contains(errOut, "kdtree-verify=validate") ||
		!strings.Contains(errOut, "capture-safe modes of kdtree-verify: on, off") || !strings.Contains(errOut, "number of hosts (2)") {
		t.Errorf("no terminal: exit %d\n%s", code, errOut)
	}
	code, out, _ := runAct(t, t.Context(), "mode", strings.NewReader("1\n"), args...)
	if code != exitUsage || !strings.Contains(out, "Not confirmed") {
		t.Errorf("wrong count typed: exit %d\n%s", code, out)
	}
	code, _, errOut = runAct(t, t.Context(), "restart", nil, "--demo", "gpu1", "--force")
	if code != exitUsage || !strings.Contains(errOut, "--force needs --yes") {
		t.Errorf("--force without --yes: exit %d\n%s", code, errOut)
	}
}

// TestConfirmation: nothing happens without --yes unless someone answers y.
func TestConfirmation(t *testing.T) {
	code, out, errOut := runAct(t, t.Context(), "stop", nil, "--demo", "gpu1")
	if code != exitUsage || !strings.Contains(errOut, "pass --yes") {
		t.Errorf("no terminal, no --yes: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runAct(t, t.Context(), "stop", strings.NewReader("n\n"), "--demo", "gpu1", "gpu2")
	if code != exitUsage || !strings.Contains(out, "gpu1: stop sglang.service") || !strings.Contains(out, "gpu2: stop sglang.service") ||
		!strings.Contains(out, "nothing changed") || strings.Contains(out, "stop: started") {
		t.Errorf("answered n: exit %d\n%s", code, out)
	}
	code, out, _ = runAct(t, t.Context(), "stop", strings.NewReader("y\n"), "--demo", "gpu1")
	if code != exitServing || !strings.Contains(out, "gpu1     stop: done") {
		t.Errorf("answered y: exit %d\n%s", code, out)
	}
}

// TestActionUsageErrors: changing commands never default to every host, and
// bad arguments change nothing.
func TestActionUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		args []string
		want string
	}{
		{"restart", []string{"--demo", "--yes"}, "name the hosts"},
		{"mode", []string{"--demo", "--yes", "gpu1"}, "KERNEL=MODE"},
		{"mode", []string{"--demo", "--yes", "gpu1", "kdtree-verify=fast"}, `has no mode "fast"`},
		{"mode", []string{"--demo", "--yes", "gpu1", "nope=on"}, `unknown kernel "nope"`},
		{"stop", []string{"--demo", "--yes", "gpu99"}, `unknown host "gpu99"`},
		{"stop", []string{"--yes", "-H", "gpu1"}, "name the hosts"},
	} {
		code, out, errOut := runAct(t, t.Context(), tc.cmd, nil, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || strings.Contains(out, "started") {
			t.Errorf("%s %v: exit %d, want %d with %q\n%s%s", tc.cmd, tc.args, code, exitUsage, tc.want, out, errOut)
		}
	}
}

// TestRestartFollowsTheNewRun restarts a simulated host that is already
// serving: the command must not stop at the old run's serving state but
// follow the new invocation from its first phase to serving.
func TestRestartFollowsTheNewRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	code, out, errOut := runAct(t, ctx, "restart", nil, "--demo", "--speed", "1200", "--yes", "gpu1", "--timeout", "50s")
	if code != exitServing {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "restart: done") {
		t.Fatalf("no restart outcome:\n%s", out)
	}
	// The new run's phases follow the restart's start (its "done" may
	// print after the unit's new state).
	after := out[strings.Index(out, "restart: started"):]
	for _, want := range []string{"starting at +0s", "weights", "graph-capture", "serving at +", "serving (invocation"} {
		if !strings.Contains(after, want) {
			t.Errorf("after the restart, no %q:\n%s", want, out)
		}
	}
}

// TestModeRestartFailureExit: a restart forced against the preflight
// fails at graph capture; the command says so and exits 1.
func TestModeRestartFailureExit(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	code, out, errOut := runAct(t, ctx, "mode", nil, "--demo", "--speed", "1200", "--yes", "--force", "gpu1", "kdtree-verify=validate", "--restart")
	if code != exitFailed || !strings.Contains(errOut, "WARNING: --force") || !strings.Contains(out, "AGAINST THE PREFLIGHT") ||
		!strings.Contains(out, "failed (invocation") || !strings.Contains(out, "kdtree-verify=validate") {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitFailed, out, errOut)
	}
}
