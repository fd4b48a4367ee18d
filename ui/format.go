package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// fit cuts s to w cells (marking the cut with …) and pads it to exactly w,
// so columns line up whatever the remote text holds.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if sw := ansi.StringWidth(s); sw > w {
		s = ansi.Truncate(s, w, "…")
	}
	return pad(s, w)
}

// pad right-pads s with spaces to w cells; it never cuts.
func pad(s string, w int) string {
	if n := w - ansi.StringWidth(s); n > 0 {
		return s + strings.Repeat(" ", n)
	}
	return s
}

// clip cuts s to w cells without padding.
func clip(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if ansi.StringWidth(s) > w {
		return ansi.Truncate(s, w, "…")
	}
	return s
}

// precut bounds a plain line before it is styled, so a 16 KiB journal line
// costs no more per frame than a short one: no rune is narrower than zero
// cells, and a wide rune is at most two, so 4w bytes always cover w cells.
func precut(s string, w int) string {
	limit := 4*w + 16
	if len(s) <= limit {
		return s
	}
	for limit > 0 && !isRuneStart(s[limit]) {
		limit--
	}
	return s[:limit]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// fmtDur prints a duration the way the table reads best: 45s, 3m12s, 1h02m.
func fmtDur(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	default:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
}

// eighths are the partial blocks for bars, from one eighth to seven.
var eighths = []string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}

// bar draws frac (0..1) as a bar w cells wide: full blocks, one partial
// block, then the empty remainder.
func bar(frac float64, w int, s Styles) string {
	if w <= 0 {
		return ""
	}
	frac = min(1, max(0, frac))
	cells := int(frac * float64(w*8))
	full, part := cells/8, cells%8
	out := strings.Repeat("█", full) + eighths[part]
	n := full
	if part > 0 {
		n++
	}
	return s.BarFull.Render(out) + s.BarEmpty.Render(strings.Repeat("░", w-n))
}

// sparkLevels are the heights of a sparkline, low to high.
var sparkLevels = []rune("▁▂▃▄▅▆▇█")

// spark draws values (0..1) as a sparkline, one cell each.
func spark(vals []float64) string {
	var b strings.Builder
	for _, v := range vals {
		i := int(min(1, max(0, v)) * float64(len(sparkLevels)-1))
		b.WriteRune(sparkLevels[i])
	}
	return b.String()
}

// screen makes s exactly h lines, none wider than w, so the frame never
// scrolls the terminal or wraps in a narrow tmux pane.
func screen(s string, w, h int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	for i, l := range lines {
		if ansi.StringWidth(l) > w {
			lines[i] = ansi.Truncate(l, w, "")
		}
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

// overlay draws box centred over base (both w wide, base h lines high).
func overlay(base, box string, w, h int) string {
	lines := strings.Split(base, "\n")
	for len(lines) < h {
		lines = append(lines, "")
	}
	bl := strings.Split(box, "\n")
	bw := 0
	for _, l := range bl {
		bw = max(bw, ansi.StringWidth(l))
	}
	x := max(0, (w-bw)/2)
	y := max(0, (h-len(bl))/2)
	for i, l := range bl {
		if y+i >= len(lines) {
			break
		}
		under := lines[y+i]
		left := pad(ansi.Truncate(under, x, ""), x)
		right := ansi.TruncateLeft(under, x+bw, "")
		lines[y+i] = left + pad(l, bw) + right
	}
	return strings.Join(lines, "\n")
}
