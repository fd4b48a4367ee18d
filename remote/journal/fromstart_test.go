package journal

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCommandFromStart checks the start-of-run command with a real shell:
// a unit that ran starts 2 s before its main process, bounded by the
// look-back; one that never ran falls back to the tail.
func TestCommandFromStart(t *testing.T) {
	cmd := Command(Options{Unit: "sglang.service", Tail: 200, FromStart: 2 * time.Hour}, "", time.Time{})
	if !strings.HasPrefix(cmd, "s=$(systemctl show -p ExecMainStartTimestamp --timestamp=unix --value 'sglang.service'") {
		t.Fatalf("command = %s", cmd)
	}
	// Run it with stand-ins for systemctl, date and journalctl on PATH
	// that print what they were asked.
	dir := t.TempDir()
	stub := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	stub("date", `case "$1" in +%s) echo 1796010000;; *) echo 1796010000.000000;; esac`)
	stub("journalctl", `for a in "$@"; do case "$a" in --since=*|--cursor=*|-n) echo "$a";; esac; done`)
	run := func(start string) string {
		t.Helper()
		stub("systemctl", `echo "`+start+`"`)
		c := exec.Command("sh", "-c", cmd)
		c.Env = []string{"PATH=" + dir + ":/usr/bin:/bin"}
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("sh: %v: %s", err, out)
		}
		return string(out)
	}
	if got := run("@1796009000"); !strings.HasPrefix(got, "--since=@1796008998\n") {
		t.Errorf("recent run: %q", got)
	}
	if got := run("@1700000000"); !strings.HasPrefix(got, "--since=@1796002798\n") { // 2 h back, less 2 s
		t.Errorf("old run: %q", got)
	}
	// Never ran: the tail path, which (with no entries) follows from the
	// host's clock.
	if got := run("@0"); got != "--since=@1796010000.000000\n" {
		t.Errorf("never ran: %q, want the tail path", got)
	}
}

// TestCommandFromKnownStart: with the run's start already read (Started)
// the command is one journalctl from 2 s before it, to the microsecond,
// bounded by the look-back; no shell asks systemctl.
func TestCommandFromKnownStart(t *testing.T) {
	now := time.Date(2026, 12, 6, 11, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		started time.Time
		since   string
	}{
		{name: "a recent run", started: now.Add(-10*time.Minute + 250*time.Microsecond), since: "--since=@" + usec(now.Add(-10*time.Minute-2*time.Second+250*time.Microsecond))},
		{name: "a run older than the look-back", started: now.Add(-5 * time.Hour), since: "--since=@" + usec(now.Add(-2*time.Hour))},
	} {
		cmd := Command(Options{Unit: "sglang.service", Tail: 200, FromStart: 2 * time.Hour, Started: tc.started, Now: func() time.Time { return now }}, "", time.Time{})
		if !strings.HasPrefix(cmd, "exec journalctl ") || strings.Contains(cmd, "systemctl") || strings.Count(cmd, "journalctl") != 1 {
			t.Errorf("%s: not one journalctl: %s", tc.name, cmd)
		}
		if !strings.HasSuffix(cmd, tc.since) {
			t.Errorf("%s: command %s, want it to end in %s", tc.name, cmd, tc.since)
		}
	}
}
