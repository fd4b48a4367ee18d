package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/testkit/e2e"
)

// TestFoldAndCopyInTmux runs `bringup demo` (8 simulated ranks a host) in
// tmux: the host view folds the ranks' copies of a line into one row and
// z unfolds them; y and Y on the failed gpu3 reach tmux as OSC 52, which
// tmux (set-clipboard on) keeps as its paste buffer.
func TestFoldAndCopyInTmux(t *testing.T) {
	e2e.Require(t, e2e.Command("tmux")) // builds and runs the binary
	bin := buildBringup(t)
	p := startTmux(t, 160, 48, "sleep 1; exec "+bin+" demo --speed 60")
	p.tmux("set-option", "-g", "set-clipboard", "on")

	p.waitFor("gpu3 failed", regexp.MustCompile(`gpu3 .*failed .*graph capture failed`), 40*time.Second)
	p.keys("j", "j", "y")
	p.waitFor("the copy's status line", regexp.MustCompile(`copied gpu3's fix command: bringup mode gpu3 kdtree-verify=on --restart`), 5*time.Second)
	if got := p.tmux("show-buffer"); got != "bringup mode gpu3 kdtree-verify=on --restart" {
		t.Errorf("tmux's paste buffer after y is %q", got)
	}
	p.keys("Y")
	p.waitFor("the evidence's status line", regexp.MustCompile(`copied gpu3's evidence: \d+ lines?`), 5*time.Second)
	if got := p.tmux("show-buffer"); !strings.Contains(got, "operation not permitted when stream is capturing") || strings.ContainsAny(got, "\x1b\a") {
		t.Errorf("tmux's paste buffer after Y is %q", got)
	}

	// gpu1's journal: eight ranks' lines, folded.
	p.keys("k", "k", "Enter")
	s := p.waitFor("a folded row", regexp.MustCompile(`TP0-7\] .* ×8`), 10*time.Second)
	if regexp.MustCompile(`TP[1-7]\] `).MatchString(s) {
		t.Errorf("a rank's own line shows while folded:\n%s", s)
	}
	p.keys("z")
	p.waitFor("every rank's line", regexp.MustCompile(`(?s)TP3\] .*TP7\] `), 5*time.Second)
	p.keys("q")
}
