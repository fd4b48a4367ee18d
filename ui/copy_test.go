package ui

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/sanitize"
)

// osc52 is the clipboard sequence for text, written out by hand.
func osc52(text string) string {
	return "\x1b]52;c;" + base64.StdEncoding.EncodeToString([]byte(text)) + "\a"
}

// TestCopyFixAndEvidence: y on the fixture's gpu3 (failed in graph
// capture under validate) prints OSC 52 holding the fix command `bringup
// watch` prints, Y its evidence one a line; inside tmux the sequence goes
// as it is and again through tmux's passthrough (ESC doubled). From the
// table and from the host view; the status line says what was copied.
func TestCopyFixAndEvidence(t *testing.T) {
	fix := "bringup mode gpu3 kdtree-verify=on --restart"
	evidence := "RuntimeError: CUDA error: operation not permitted when stream is capturing\n" +
		"  File \"/opt/kdtree/site/kdtree_verify/validate.py\", line 88, in check\n" +
		"    if not torch.allclose(out.cpu(), ref.cpu()):\n" +
		"Capture cuda graph failed: operation failed due to a previous error during capture"
	for _, tmux := range []bool{false, true} {
		for _, view := range [][]string{{"j", "j"}, {"j", "j", "enter"}} {
			m, _ := newTestModel(t, 120, 40)
			m.opts.Tmux = tmux
			press(m, view...)
			want := func(text string) string {
				if !tmux {
					return osc52(text)
				}
				inner := strings.ReplaceAll(osc52(text), "\x1b", "\x1b\x1b")
				return osc52(text) + "\x1bPtmux;" + inner + "\x1b\\"
			}
			if got := rawsOf(press(m, "y")); got != want(fix) {
				t.Errorf("tmux %v, keys %v: y printed %q, want %q", tmux, view, got, want(fix))
			}
			if m.status != "copied gpu3's fix command: "+fix+" (OSC 52)" {
				t.Errorf("status %q", m.status)
			}
			if got := rawsOf(press(m, "Y")); got != want(evidence) {
				t.Errorf("tmux %v, keys %v: Y printed %q, want %q", tmux, view, got, want(evidence))
			}
			if m.status != "copied gpu3's evidence: 4 lines (OSC 52)" {
				t.Errorf("status %q", m.status)
			}
		}
	}
}

// TestCopyNothing: a host with no diagnosis, or one whose diagnosis has
// no fix command, copies nothing and says so.
func TestCopyNothing(t *testing.T) {
	m, src := newTestModel(t, 120, 40)
	for _, k := range []string{"y", "Y"} {
		if got := rawsOf(press(m, k)); got != "" || !strings.HasPrefix(m.status, "gpu1: nothing to copy") {
			t.Errorf("%s on gpu1 (serving): printed %q, status %q", k, got, m.status)
		}
	}
	b := fleetFixture()
	b.Hosts[2].Startup.Diag.Fix = nil
	src.ch <- b
	m.Update(batchMsg(b))
	press(m, "j", "j")
	if got := rawsOf(press(m, "y")); got != "" || m.status != "gpu3: nothing to copy: the diagnosis has no fix command (see its hint)" {
		t.Errorf("y without a fix: printed %q, status %q", got, m.status)
	}
	if got := rawsOf(press(m, "Y")); got == "" {
		t.Error("Y without a fix must still copy the evidence")
	}
}

// TestCopyEvidenceIsWhatTheConsoleShows: evidence from a hostile host
// reaches the fleet sanitised (remote/sanitize: its escapes as visible
// pictures); the copy is that text, and whatever control byte slipped by
// never lands in the clipboard.
func TestCopyEvidenceIsWhatTheConsoleShows(t *testing.T) {
	hostile := "RuntimeError: \x1b]0;pwned\a\x1b[2Jcleared\x9b31m"
	shown, _ := sanitize.Line(hostile, 0)
	m := New(newFake(), Options{Kernels: kernels.DefaultCatalog(), Now: func() time.Time { return now }, NoColor: true})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	b := fleetFixture()
	b.Hosts[0].Startup.Diag = b.Hosts[2].Startup.Diag
	b.Hosts[0].Startup.Diag.Evidence = []string{shown, "raw \x1b[31mred\x07 and \x00 nul"}
	m.Update(batchMsg(b))
	got := rawsOf(press(m, "Y"))
	want := osc52(shown + "\nraw [31mred and  nul")
	if got != want {
		t.Fatalf("Y printed %q, want %q", got, want)
	}
	if !strings.Contains(render(m), "copied gpu1's evidence: 2 lines") {
		t.Fatalf("no status line:\n%s", render(m))
	}
}
