package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/remote/testkit/e2e"
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

// TestInterruptedWatch: ctrl-c in watch exits 130, not 2 (the timeout's
// code): the signal is the context's cause.
func TestInterruptedWatch(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(300*time.Millisecond, func() { cancel(cli.Interrupted{Signal: os.Interrupt}) })
	var out, errOut syncBuffer
	if code := run(ctx, testEnv(&out, &errOut), []string{"watch", "--demo", "--speed", "1"}); code != exitInterrupted {
		t.Errorf("exit %d, want %d; stderr %q", code, exitInterrupted, errOut.String())
	}
	// A deadline of its own is still a timeout.
	var out2, errOut2 syncBuffer
	if code := run(context.Background(), testEnv(&out2, &errOut2), []string{"watch", "--demo", "--speed", "1", "--timeout", "300ms"}); code != exitTimeout {
		t.Errorf("--timeout: exit %d, want %d", code, exitTimeout)
	}
}

// TestInterruptedBinary sends SIGINT to the built binary's watch, as
// ctrl-c does: exit 130.
func TestInterruptedBinary(t *testing.T) {
	e2e.Require(t) // builds and runs the binary
	bin := buildBringup(t)
	cmd := exec.CommandContext(t.Context(), bin, "watch", "--demo", "--speed", "1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitInterrupted {
		t.Errorf("%v, want exit %d; stderr %q", err, exitInterrupted, stderr.String())
	}
}

// TestNoTerminalInTmux runs the real binary in a real tmux pane, once with
// standard input from /dev/null and once with standard output to a file:
// each time the pane shows the error naming what to use instead, and the
// exit code is 3, not a silent 0.
func TestNoTerminalInTmux(t *testing.T) {
	e2e.Require(t, e2e.Command("tmux")) // builds and runs the binary
	bin := buildBringup(t)
	out := filepath.Join(t.TempDir(), "stdout")
	p := startTmux(t, 120, 20, fmt.Sprintf(
		"%[1]s demo < /dev/null; echo stdin-exit=$?; %[1]s demo > %[2]s; echo stdout-exit=$?; sleep 60", bin, out))
	s := p.waitFor("both exits", regexp.MustCompile(`(?s)stdin-exit=\d+.*stdout-exit=\d+`), 20*time.Second)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`no terminal \(standard input: not a terminal\)`),
		regexp.MustCompile(`no terminal \(standard output: not a terminal\)`),
		regexp.MustCompile(`bringup watch\s+--demo`),
		regexp.MustCompile(`stdin-exit=3\b`),
		regexp.MustCompile(`stdout-exit=3\b`),
	} {
		if !want.MatchString(s) {
			t.Errorf("pane lacks %s:\n%s", want, s)
		}
	}
	if b, err := os.ReadFile(out); err != nil || len(b) != 0 {
		t.Errorf("standard output got %q (%v), want nothing", b, err)
	}
}
