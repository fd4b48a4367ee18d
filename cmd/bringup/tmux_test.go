package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/testkit/e2e"
)

// tmuxPane drives the real binary in a detached tmux session, the way a
// person sees it: send keys, read the screen.
type tmuxPane struct {
	t      *testing.T
	socket string
	name   string
}

// startTmux starts command in a width×height pane. It needs tmux: its
// callers are end-to-end tests, gated with e2e.Require.
func startTmux(t *testing.T, width, height int, command string) *tmuxPane {
	t.Helper()
	p := &tmuxPane{t: t, socket: filepath.Join(t.TempDir(), "tmux.sock"), name: "bringup"}
	p.tmux("new-session", "-d", "-s", p.name, "-x", fmt.Sprint(width), "-y", fmt.Sprint(height),
		"env", "TERM=xterm-256color", "sh", "-c", command)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", p.socket, "kill-server").Run() })
	return p
}

func (p *tmuxPane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.socket}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return string(out)
}

func (p *tmuxPane) screen() string { return p.tmux("capture-pane", "-p", "-t", p.name) }

func (p *tmuxPane) keys(keys ...string) {
	for _, k := range keys {
		p.tmux("send-keys", "-t", p.name, k)
		time.Sleep(150 * time.Millisecond)
	}
}

// waitFor polls the screen until re matches, and returns the screen.
func (p *tmuxPane) waitFor(what string, re *regexp.Regexp, timeout time.Duration) string {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	var s string
	for time.Now().Before(deadline) {
		s = p.screen()
		if re.MatchString(s) {
			return s
		}
		time.Sleep(200 * time.Millisecond)
	}
	p.t.Fatalf("timed out waiting for %s; screen:\n%s", what, s)
	return ""
}

// TestDemoInTmux runs `bringup demo` in a 120×40 tmux pane: the four hosts
// progress, gpu3 fails at graph capture, and m → on → confirm, r → confirm
// brings it to serving; b → confirm benches it, about 4× its runs in off.
func TestDemoInTmux(t *testing.T) {
	e2e.Require(t, e2e.Command("tmux")) // builds and runs the binary
	bin := buildBringup(t)
	p := startTmux(t, 120, 40, bin+" demo --speed 60")

	s := p.waitFor("four hosts loading weights", regexp.MustCompile(`(?s)gpu1.*weights.*gpu2.*weights.*gpu3.*weights.*gpu4.*weights`), 20*time.Second)
	if !strings.Contains(s, "shards") {
		t.Errorf("no shard progress on screen:\n%s", s)
	}
	p.waitFor("gpu3 failed", regexp.MustCompile(`gpu3 .*failed .*graph capture failed`), 30*time.Second)

	p.keys("j", "j") // select gpu3
	p.keys("m")
	p.waitFor("mode chooser", regexp.MustCompile(`Mode of kdtree-verify on gpu3`), 5*time.Second)
	p.keys("3") // "on"
	s = p.screen()
	if !regexp.MustCompile(`Set kdtree-verify to mode "on" on gpu3\?`).MatchString(s) {
		p.keys("Enter") // choosers that need enter after a number
		p.waitFor("mode confirmation", regexp.MustCompile(`Set kdtree-verify to mode "on" on gpu3\?`), 5*time.Second)
	}
	p.keys("y")
	p.waitFor("mode set", regexp.MustCompile(`(?m)^›\s+gpu3 .* on↻`), 10*time.Second)
	p.keys("r")
	p.waitFor("restart confirmation", regexp.MustCompile(`Restart sglang.service on gpu3\?`), 5*time.Second)
	p.keys("y")
	p.waitFor("gpu3 starting again", regexp.MustCompile(`gpu3 .*(starting|init|weights)`), 10*time.Second)
	s = p.waitFor("gpu3 serving", regexp.MustCompile(`gpu3 (active/running\s+)?serving`), 40*time.Second)
	if !regexp.MustCompile(`4 serving`).MatchString(s) {
		t.Errorf("header does not count 4 serving:\n%s", s)
	}
	// The payoff: b benches gpu3's simulated service in on, and its host
	// view sets the result against the benches of its runs in off.
	p.keys("b")
	p.waitFor("bench confirmation", regexp.MustCompile(`Bench gpu3: 64 requests, 8 at a time\?`), 5*time.Second)
	p.keys("y")
	p.waitFor("bench result", regexp.MustCompile(`gpu3: bench \d+ output tok/s`), 10*time.Second)
	p.keys("Enter")
	p.waitFor("gpu3's bench against off", regexp.MustCompile(`bench 1 [89]\d\d tok/s on vs 4[67]\d off`), 5*time.Second)
	p.keys("q")
}

// TestDemoGroupedInTmux groups the demo's table by its racks in the real
// binary: the rack holding the failed host moves first, opens, and its
// hosts act as the flat table's do; then the table is flat again.
func TestDemoGroupedInTmux(t *testing.T) {
	e2e.Require(t, e2e.Command("tmux")) // builds and runs the binary
	bin := buildBringup(t)
	p := startTmux(t, 120, 40, bin+" demo --speed 60")
	p.waitFor("four hosts", regexp.MustCompile(`(?s)gpu1.*gpu2.*gpu3.*gpu4`), 20*time.Second)
	p.keys("t")
	s := p.waitFor("two racks", regexp.MustCompile(`(?s)▸ rack-a  2 hosts.*▸ rack-b  2 hosts`), 5*time.Second)
	// No host rows while both racks are closed (the pane below names the
	// rack's host whose lines it shows).
	if !strings.Contains(s, "grouped by group: 2 groups") || regexp.MustCompile(`(?m)^[› ][● ] +gpu\d `).MatchString(s) {
		t.Errorf("grouped screen:\n%s", s)
	}
	// gpu3 fails in graph capture: its rack leads, counting it.
	p.waitFor("rack-b first with its failure", regexp.MustCompile(`(?s)HOST.*\n.*▸ rack-b  2 hosts +1 failed.*\n.*▸ rack-a`), 40*time.Second)
	p.keys("g", "Enter")
	p.waitFor("rack-b open", regexp.MustCompile(`(?s)▾ rack-b.*\n +gpu3 (failed/failed +)?failed.*\n +gpu4 .*\n.*▸ rack-a`), 5*time.Second)
	p.keys("j", "Enter") // gpu3's host view, as from the flat table
	p.waitFor("gpu3's host view", regexp.MustCompile(`gpu3 · sglang.service · failed/failed`), 5*time.Second)
	p.keys("Escape")
	p.waitFor("back on gpu3's row", regexp.MustCompile(`(?m)^›\s+gpu3 (failed/failed +)?failed`), 5*time.Second)
	p.keys("Left")
	p.waitFor("rack-b closed, the cursor on it", regexp.MustCompile(`(?m)^›\s+▸ rack-b`), 5*time.Second)
	p.keys("t")
	p.waitFor("flat again", regexp.MustCompile(`(?s)ungrouped.*`), 5*time.Second)
	if s := p.screen(); !regexp.MustCompile(`(?s)gpu1 .*gpu2 .*gpu3 .*gpu4 `).MatchString(s) || strings.Contains(s, "rack-") {
		t.Errorf("ungrouped screen:\n%s", s)
	}
	p.keys("q")
}

// buildBringup builds this command into a temporary directory and returns
// the binary's path. Its callers are end-to-end tests.
func buildBringup(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bringup")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}
