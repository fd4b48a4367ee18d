package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/remote/testkit/e2e"
)

// runBinary runs the built binary with its output into pipes, as a script
// would, and returns stdout, stderr and the exit code.
func runBinary(t *testing.T, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut // a bytes.Buffer is a pipe to the child
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("%q: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

// TestTypoBinary: a mistyped command prints the suggestion and one line
// on --help, nothing more (it used to bury the suggestion under the whole
// usage), and exits as a usage error.
func TestTypoBinary(t *testing.T) {
	e2e.Require(t) // builds and runs the binary
	bin := buildBringup(t)
	stdout, stderr, code := runBinary(t, bin, "wathc")
	want := "bringup: unknown command \"wathc\" — did you mean watch?\nRun 'bringup --help' for usage.\n"
	if code != exitUsage || stdout != "" || stderr != want {
		t.Errorf("bringup wathc: exit %d, stdout %q, stderr %q; want exit %d, nothing, %q", code, stdout, stderr, exitUsage, want)
	}
	if n := strings.Count(stderr, "\n"); n > 3 {
		t.Errorf("bringup wathc: %d lines, want at most 3", n)
	}
}

// TestBenchIntoPipe: bench --demo with its output into pipes, as a script
// or CI runs it: stderr holds one line per host at the end, with no
// carriage return or escape (it used to hold every redraw of the bars:
// 3.9 KB for one host), stdout the results; --json keeps stderr empty.
func TestBenchIntoPipe(t *testing.T) {
	e2e.Require(t) // builds and runs the binary
	bin := buildBringup(t)
	stdout, stderr, code := runBinary(t, bin, "bench", "--demo", "--speed", "600", "gpu1", "gpu2")
	if code != 0 {
		t.Fatalf("bench --demo: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if len(lines) != 2 || strings.ContainsAny(stderr, "\r\x1b") || !strings.Contains(stderr, "gpu1     64/64 requests\n") || !strings.Contains(stderr, "gpu2     64/64 requests\n") {
		t.Errorf("stderr into a pipe: %q, want one line per host, no redraws", stderr)
	}
	if strings.Count(stdout, "64 requests (64 ok, 0 errors)") != 2 {
		t.Errorf("stdout:\n%s", stdout)
	}
	stdout, stderr, code = runBinary(t, bin, "bench", "--demo", "--speed", "600", "--json", "gpu1")
	if code != 0 || stderr != "" || strings.Count(stdout, "\n") != 2 {
		t.Errorf("bench --json: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
}
