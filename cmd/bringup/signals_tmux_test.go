package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/testkit/e2e"
)

// TestSignalsInTmux runs `bringup demo` in a tmux window that is not the
// one shown, as during a rollout: the pane's title carries the counts,
// gpu3's failure rings the window's bell, the progress bar goes through
// tmux's passthrough, and once gpu3 is fixed (from the background, with
// send-keys) every host serving rings it again.
func TestSignalsInTmux(t *testing.T) {
	e2e.Require(t, e2e.Command("tmux")) // builds and runs the binary
	bin := buildBringup(t)
	raw := filepath.Join(t.TempDir(), "pane.raw")
	// The pause lets pipe-pane attach before the first byte.
	p := startTmux(t, 120, 40, "sleep 1; exec "+bin+" demo --speed 60")
	demo := p.name + ":0"
	p.tmux("pipe-pane", "-t", demo, "cat > "+raw)
	p.tmux("new-window", "-t", p.name+":1") // the shown window: the demo's is in the background
	if got := p.format(p.name, "#{window_index}"); got != "1" {
		t.Fatalf("current window %q, want 1", got)
	}

	p.waitFormat(demo, "#{pane_title}", regexp.MustCompile(`^bringup · [0-3]/4 serving$`), 20*time.Second)
	if got := p.format(demo, "#{window_bell_flag}"); got != "0" {
		t.Errorf("bell flag %q before any failure, want 0", got)
	}
	p.waitFormat(demo, "#{pane_title}", regexp.MustCompile(`^bringup · [0-3]/4 serving · 1 failed$`), 40*time.Second)
	p.waitFormat(demo, "#{window_bell_flag}", regexp.MustCompile(`^1$`), 5*time.Second)

	// Look at it (that clears the flag), look away, and fix gpu3 from
	// the background.
	p.tmux("select-window", "-t", demo)
	p.tmux("select-window", "-t", p.name+":1")
	if got := p.format(demo, "#{window_bell_flag}"); got != "0" {
		t.Fatalf("bell flag %q after the window was shown, want 0", got)
	}
	send := func(keys ...string) {
		for _, k := range keys {
			p.tmux("send-keys", "-t", demo, k)
			time.Sleep(150 * time.Millisecond)
		}
	}
	send("j", "j", "m")
	p.waitScreen(demo, "mode chooser", regexp.MustCompile(`Mode of kdtree-verify on gpu3`), 5*time.Second)
	send("3")
	if !regexp.MustCompile(`Set kdtree-verify to mode "on" on gpu3\?`).MatchString(p.tmux("capture-pane", "-p", "-t", demo)) {
		send("Enter")
	}
	p.waitScreen(demo, "mode confirmation", regexp.MustCompile(`Set kdtree-verify to mode "on" on gpu3\?`), 5*time.Second)
	send("y")
	p.waitScreen(demo, "mode set", regexp.MustCompile(`(?m)^›\s+gpu3 .* on↻`), 10*time.Second)
	send("r")
	p.waitScreen(demo, "restart confirmation", regexp.MustCompile(`Restart sglang.service on gpu3\?`), 5*time.Second)
	send("y")
	p.waitFormat(demo, "#{pane_title}", regexp.MustCompile(`^bringup · 4/4 serving$`), 60*time.Second)
	p.waitFormat(demo, "#{window_bell_flag}", regexp.MustCompile(`^1$`), 5*time.Second)
	send("q")

	// What the program wrote: the bar, wrapped for tmux (ESC doubled),
	// red while gpu3 was failed, cleared at the end.
	deadline := time.Now().Add(5 * time.Second)
	var out string
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(raw)
		if out = string(b); strings.Contains(out, "\x1bPtmux;\x1b\x1b]9;4;0\a\x1b\\") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, want := range []string{"\x1bPtmux;\x1b\x1b]9;4;1;", "\x1bPtmux;\x1b\x1b]9;4;2;", "\x1bPtmux;\x1b\x1b]9;4;0\a\x1b\\", "\a"} {
		if !strings.Contains(out, want) {
			t.Errorf("the pane's output has no %q", want)
		}
	}
}

// format is tmux's format string f for target.
func (p *tmuxPane) format(target, f string) string {
	p.t.Helper()
	return strings.TrimSpace(p.tmux("display-message", "-p", "-t", target, f))
}

// waitFormat polls the format f of target until re matches.
func (p *tmuxPane) waitFormat(target, f string, re *regexp.Regexp, timeout time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	var got string
	for time.Now().Before(deadline) {
		if got = p.format(target, f); re.MatchString(got) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	p.t.Fatalf("timed out waiting for %s of %s to match %s; it is %q; screen:\n%s", f, target, re, got, p.tmux("capture-pane", "-p", "-t", target))
}

// waitScreen polls target's screen until re matches.
func (p *tmuxPane) waitScreen(target, what string, re *regexp.Regexp, timeout time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	var s string
	for time.Now().Before(deadline) {
		if s = p.tmux("capture-pane", "-p", "-t", target); re.MatchString(s) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	p.t.Fatalf("timed out waiting for %s; screen:\n%s", what, s)
}
