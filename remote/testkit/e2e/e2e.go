// Package e2e is the one gate of bringup's end-to-end tests: the tests that
// boot test hosts, start sshd, drive tmux, or build and run a real binary.
// `go test ./...` skips them, saying how to run them, so that the unit tier
// answers in under a minute; with BRINGUP_E2E=1 (set by `make test`, and so
// by CI) they run, and a prerequisite that is missing fails the test rather
// than skipping it, so that a green run never hides an end-to-end test
// that did not run.
package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// Env is the environment variable that turns the end-to-end tier on when
// set to 1.
const Env = "BRINGUP_E2E"

// Enabled reports whether the end-to-end tier is on.
func Enabled() bool { return os.Getenv(Env) == "1" }

// Need is a prerequisite of an end-to-end test: it returns nil when met,
// else an error saying what is missing.
type Need func() error

// Require gates an end-to-end test. Without BRINGUP_E2E=1 it skips t with
// a message saying how to run it. With it, it checks every need and fails
// t on the first one that is missing.
func Require(t testing.TB, needs ...Need) {
	t.Helper()
	if !Enabled() {
		t.Skipf("end-to-end test: set %s=1 or run make test", Env)
	}
	for _, n := range needs {
		if err := n(); err != nil {
			t.Fatalf("end-to-end test with %s=1: %v (as root, bash .ci/deps installs the tools)", Env, err)
		}
	}
}

// Root needs the test to run as root (network namespaces, nspawn, sshd's
// privilege separation).
func Root() Need {
	return func() error {
		if os.Geteuid() != 0 {
			return errors.New("needs root")
		}
		return nil
	}
}

// Command needs the program name on PATH.
func Command(name string) Need {
	return func() error {
		if _, err := exec.LookPath(name); err != nil {
			return fmt.Errorf("needs %s on PATH: %w", name, err)
		}
		return nil
	}
}

// File needs the file at path to exist (a program run by its full path,
// such as /usr/sbin/sshd, which is not on every user's PATH).
func File(path string) Need {
	return func() error {
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("needs %s: %w", path, err)
		}
		return nil
	}
}
