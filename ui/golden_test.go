package ui

import (
	"fmt"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
)

// TestGolden renders the main screens without colour at the two reference
// sizes. Regenerate with: go test ./ui -update
func TestGolden(t *testing.T) {
	t.Parallel() // pure: a model over a fake source
	screens := []struct {
		name  string
		keys  []string
		setup func(*testing.T, *Model, *fakeSource) // before the keys
	}{
		{"table", nil, nil},
		{"host-gpu3", []string{"j", "j", "enter"}, nil},
		{"diag-gpu3", []string{"j", "j", "enter", "e"}, nil},
		{"help-table", []string{"?"}, nil},
		{"help-host", []string{"j", "j", "enter", "?"}, nil},
		{"mode-chooser", []string{"j", "j", "m"}, nil},
		{"mode-confirm", []string{"j", "j", "m", "j", "enter"}, nil},
		{"restart-confirm", []string{"j", "j", "j", "enter", "r"}, nil},
		{"host-filter", []string{"j", "j", "enter", "/", "c", "u", "d", "a", "enter"}, nil},
		{"preflight", []string{"j", "j", "enter", "r", "9"}, nil},
		{"host-pending", []string{"j", "j", "enter"}, setupPending},
		{"table-drift", nil, setupDrift},
		{"redeploy-progress", []string{"j", "enter"}, setupProgress},
		{"actions", []string{"@"}, setupCommands},
		{"rollout-form", []string{"space", "j", "space", "R", "l", "l", "l", "j", "l"}, nil},
		{"rollout-confirm", []string{"R", "l", "l", "l", "enter"}, nil},
		{"rollout-running", nil, setupRolloutRunning},
		{"rollout-halted", nil, setupRolloutHalted},
		{"table-filter", append(append([]string{"j", "space", "/"}, typed("mode:on")...), "enter"), nil},
		{"table-filter-typing", append([]string{"/"}, typed("phase:fai")...), nil},
		{"palette-completions", []string{":", "r", "e", "tab", "tab"}, nil},
		{"palette-hosts", append([]string{":"}, typed("mode gpu1 ")...), nil},
		{"palette-error", append(append([]string{":"}, typed("restart gpu9")...), "enter"), nil},
		{"palette-confirm-several", append(append([]string{":"}, typed("restart gpu1 gpu2 gpu4")...), "enter"), nil},
		{"palette-help", append(append([]string{":"}, typed("help")...), "enter"), nil},
	}
	for _, size := range [][2]int{{80, 24}, {160, 48}, {60, 20}} {
		for _, sc := range screens {
			t.Run(fmt.Sprintf("%s-%dx%d", sc.name, size[0], size[1]), func(t *testing.T) {
				m, src := newTestModel(t, size[0], size[1])
				if sc.setup != nil {
					sc.setup(t, m, src)
				}
				press(m, sc.keys...)
				out := render(m)
				checkFits(t, out, size[0], size[1])
				golden.RequireEqual(t, []byte(out))
			})
		}
	}
}

// checkFits fails when a frame would wrap or scroll the terminal.
func checkFits(t *testing.T, out string, w, h int) {
	t.Helper()
	ls := lines(out)
	if len(ls) != h {
		t.Errorf("frame has %d lines, want %d", len(ls), h)
	}
	for i, l := range ls {
		if lw := ansi.StringWidth(l); lw > w {
			t.Errorf("line %d is %d cells wide, want ≤ %d: %q", i, lw, w, l)
		}
	}
}
