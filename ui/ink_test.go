package ui

import (
	"testing"

	"github.com/bringup-dev/bringup/remote/startup"
)

// TestTableInksPaintAsLipgloss: the table paints its cells with inks, the
// styles' SGR strings, instead of lipgloss's Render (most of a 256-host
// frame); on what the table paints (one-line cells, bars, a whole row
// holding coloured cells) the two must give the same bytes.
func TestTableInksPaintAsLipgloss(t *testing.T) {
	for _, dark := range []bool{true, false} {
		s := NewStyles(dark, false)
		row := s.table.phaseInk(s, startup.Weights).paint("weights  ") + " " + s.table.barFull.paint("███▌") + s.table.barEmpty.paint("░░") + " 41/65 shards"
		texts := []string{"gpu001", "graph-capture", "█████▌", "░░░", "41/65 shards · ~3m", "graph capture failed: kdtree-verify=validate does host syncs (.item(), .cpu()) during CUDA gr…", row}
		for _, x := range texts {
			for name, c := range map[string]struct {
				got, want string
			}{
				"header":  {s.table.header.paint(x), s.Header.Render(x)},
				"dim":     {s.table.dim.paint(x), s.Dim.Render(x)},
				"mark":    {s.table.mark.paint(x), s.Mark.Render(x)},
				"bar":     {s.table.barFull.paint(x), s.BarFull.Render(x)},
				"empty":   {s.table.barEmpty.paint(x), s.BarEmpty.Render(x)},
				"unknown": {s.table.unknownRow.paint(x), s.PhaseUnknown.Render(x)},
				"failed":  {s.table.phaseInk(s, startup.Failed).paint(x), s.PhaseFailed.Render(x)},
				"serving": {s.table.phaseInk(s, startup.Serving).paint(x), s.Phase(startup.Serving).Render(x)},
				"active":  {s.table.phaseInk(s, startup.GraphCapture).paint(x), s.Phase(startup.GraphCapture).Render(x)},
				"stopped": {s.table.phaseInk(s, "").paint(x), s.Phase("").Render(x)},
			} {
				if c.got != c.want {
					t.Errorf("dark=%v %s(%q):\n ink      %q\n lipgloss %q", dark, name, x, c.got, c.want)
				}
			}
		}
	}
}
