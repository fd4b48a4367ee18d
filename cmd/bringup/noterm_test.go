package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"bringup/remote/testbed/e2e"
)

// TestNoTerminalRefused: the console and the demo, with no terminal, say
// so and what to use instead, and exit 3 (they used to exit 0 silently:
// the program's error was read after its context was cancelled).
func TestNoTerminalRefused(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		instead string
	}{
		{[]string{"demo"}, "bringup watch --demo"},
		{[]string{"demo", "--speed", "100"}, "bringup watch --demo"},
		{[]string{"-H", "gpu1"}, "bringup watch"},
		{[]string{"-H", "gpu1"}, "bringup status"},
	} {
		var out, errOut syncBuffer
		e := testEnv(&out, &errOut)
		e.stdin = strings.NewReader("")
		code := run(context.Background(), e, tc.args)
		if code != exitUsage || !strings.Contains(errOut.String(), "no terminal") || !strings.Contains(errOut.String(), tc.instead) {
			t.Errorf("%q: exit %d, stderr %q; want %d, \"no terminal\" and %q", tc.args, code, errOut.String(), exitUsage, tc.instead)
		}
		if out.String() != "" {
			t.Errorf("%q: stdout %q, want nothing", tc.args, out.String())
		}
	}
}

// TestNoTerminalBinary runs the built binary as cron or `ssh box bringup`
// would: standard input from /dev/null, standard output a pipe.
func TestNoTerminalBinary(t *testing.T) {
	e2e.Require(t) // builds and runs the binary
	bin := buildBringup(t)
	for _, args := range [][]string{{"demo"}, {"-H", "gpu1"}} {
		devnull, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(t.Context(), bin, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, &stdout, &stderr // a bytes.Buffer is a pipe to the child
		err = cmd.Run()
		devnull.Close()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != exitUsage {
			t.Errorf("%q: %v, want exit %d; stderr %q", args, err, exitUsage, stderr.String())
			continue
		}
		if !strings.Contains(stderr.String(), "no terminal") || !strings.Contains(stderr.String(), "bringup watch") {
			t.Errorf("%q: stderr %q, want it to say no terminal and name bringup watch", args, stderr.String())
		}
		if stdout.Len() != 0 {
			t.Errorf("%q: stdout %q, want nothing", args, stdout.String())
		}
	}
}
