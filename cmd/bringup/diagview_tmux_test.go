package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/testkit/e2e"
)

// TestDiagDetailInTmux opens gpu3's diagnosis in the demo, at 80×24 and
// at 60×20, the way a person does: e on its row, then page down to the
// end. The whole hint, the summary and the fix command are read off the
// screens, none cut; at 60 columns the table keeps MODE; esc goes back.
func TestDiagDetailInTmux(t *testing.T) {
	e2e.Require(t, e2e.Command("tmux")) // builds and runs the binary
	bin := buildBringup(t)
	for _, size := range [][2]int{{80, 24}, {60, 20}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			p := startTmux(t, size[0], size[1], "sleep 1; exec "+bin+" demo --speed 60")
			s := p.waitFor("gpu3 failed", regexp.MustCompile(`(?m)^ +gpu3 +failed`), 40*time.Second)
			if !regexp.MustCompile(`HOST +PHASE .*MODE .*DIAGNOSIS`).MatchString(s) || !strings.Contains(s, "validate!") {
				t.Errorf("the table lacks MODE (gpu3's validate!):\n%s", s)
			}
			p.keys("j", "j", "e")
			s = p.waitFor("gpu3's diagnosis", regexp.MustCompile(`gpu3 · diagnosis · graph-capture-host-sync`), 5*time.Second)
			screens := []string{s}
			for range 4 {
				p.keys("NPage")
				screens = append(screens, p.screen())
			}
			text := readWrapped(screens)
			for _, want := range []string{
				"press m to set kdtree-verify=on, then r — switch kdtree-verify to a capture-safe mode (on, off), or start with --disable-cuda-graph",
				"graph capture failed: kdtree-verify=validate",
				"bringup mode gpu3 kdtree-verify=on --restart",
				"CUDA error: operation not permitted when stream is capturing",
			} {
				if !strings.Contains(text, want) {
					t.Errorf("%q is not on the screens whole:\n%s", want, strings.Join(screens, "\n---\n"))
				}
			}
			p.keys("Escape")
			p.waitFor("back on the table", regexp.MustCompile(`(?m)^›\s+gpu3 `), 5*time.Second)
			p.keys("q")
		})
	}
}

// readWrapped joins the rows of screens, less the evidence's rule, into
// one line of words, so that a text wrapped over rows reads whole.
func readWrapped(screens []string) string {
	var words []string
	for _, s := range screens {
		for _, row := range strings.Split(s, "\n") {
			row = strings.TrimPrefix(strings.TrimSpace(row), "│")
			words = append(words, strings.Fields(row)...)
		}
	}
	return strings.Join(words, " ")
}

// TestMouseInTmux clicks and scrolls the demo with the mouse reports a
// terminal sends (SGR, 1-based cells), written into the pane: a click
// selects gpu3's row, a second opens its host view, the wheel scrolls
// its journal back (follow off), and on the table moves the cursor.
func TestMouseInTmux(t *testing.T) {
	e2e.Require(t, e2e.Command("tmux")) // builds and runs the binary
	bin := buildBringup(t)
	p := startTmux(t, 80, 24, "sleep 1; exec "+bin+" demo --speed 60")
	p.waitFor("gpu3 failed", regexp.MustCompile(`(?m)^ +gpu3 +failed`), 40*time.Second)
	// Row 5 of the pane: the title, the column titles, gpu1, gpu2, gpu3.
	p.mouse(0, 10, 5)
	p.waitFor("gpu3 selected", regexp.MustCompile(`(?m)^›\s+gpu3 `), 5*time.Second)
	p.mouse(0, 10, 5)
	p.waitFor("gpu3's host view", regexp.MustCompile(`gpu3 · sglang.service · failed/failed`), 5*time.Second)
	p.mouse(64, 10, 18) // wheel up over the journal
	p.waitFor("the journal scrolled back", regexp.MustCompile(`── journal \d+ lines · .*(paused|new lines ↓)`), 5*time.Second)
	p.keys("Escape")
	p.waitFor("back on the table", regexp.MustCompile(`(?m)^›\s+gpu3 `), 5*time.Second)
	p.mouse(65, 10, 4) // wheel down over the table
	p.waitFor("the cursor on gpu4", regexp.MustCompile(`(?m)^›\s+gpu4 `), 5*time.Second)
	p.keys("q")
}

// mouse writes the SGR report of a press of button (0 left, 64 wheel up,
// 65 wheel down) at 1-based cell x, y into the pane, as a terminal
// would, and for a click its release.
func (p *tmuxPane) mouse(button, x, y int) {
	p.tmux("send-keys", "-t", p.name, "-l", fmt.Sprintf("\x1b[<%d;%d;%dM", button, x, y))
	if button < 64 {
		p.tmux("send-keys", "-t", p.name, "-l", fmt.Sprintf("\x1b[<%d;%d;%dm", button, x, y))
	}
	time.Sleep(150 * time.Millisecond)
}
