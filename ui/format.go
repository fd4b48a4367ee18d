package ui

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// width is the display width of s. Grapheme segmentation is most of a
// frame's cost, and the frame is mostly ASCII, SGR colour and box drawing,
// so those are counted directly; anything else goes to ansi.StringWidth.
func width(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 0x80:
			r, size := utf8.DecodeRuneInString(s[i:])
			if !narrow(r) {
				return ansi.StringWidth(s)
			}
			n++
			i += size - 1
		case c == 0x1b:
			if i+1 >= len(s) || s[i+1] != '[' {
				return ansi.StringWidth(s)
			}
			i += 2
			for i < len(s) && (s[i] < 0x40 || s[i] > 0x7e) {
				i++
			}
		case c >= 0x20 && c != 0x7f:
			n++
		}
	}
	return n
}

// narrow reports whether r is one cell wide on its own: Latin-1, general
// punctuation, arrows, control pictures, box drawing, blocks and geometric
// shapes (less the two emoji squares). A combining mark or variation
// selector after it is not narrow, so it sends the string to the slow path.
func narrow(r rune) bool {
	switch {
	case r >= 0xa0 && r < 0x300,
		r >= 0x2010 && r <= 0x205e,
		r >= 0x2190 && r <= 0x21ff,
		r >= 0x2400 && r <= 0x243f,
		r >= 0x2500 && r <= 0x25ff && r != 0x25fd && r != 0x25fe:
		return true
	}
	return false
}

// fit cuts s to w cells (marking the cut with …) and pads it to exactly w,
// so columns line up whatever the remote text holds.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if width(s) > w {
		s = ansi.Truncate(s, w, "…")
	}
	return pad(s, w)
}

// pad right-pads s with spaces to w cells; it never cuts.
func pad(s string, w int) string {
	if n := w - width(s); n > 0 {
		return s + strings.Repeat(" ", n)
	}
	return s
}

// clip cuts s to w cells without padding.
func clip(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if len(s) <= w || width(s) <= w { // a cell takes at least one byte
		return s
	}
	if printableASCII(s) {
		return s[:w-1] + "…"
	}
	return ansi.Truncate(s, w, "…")
}

// printableASCII reports whether every byte of s takes exactly one cell.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
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

// approxLeft is a time left in round figures, as an estimate reads best:
// "~45s", "~7m" (minutes rounded up), "~1h05"; "due" when none is left.
func approxLeft(d time.Duration) string {
	switch {
	case d <= 0:
		return "due"
	case d < time.Minute:
		return fmt.Sprintf("~%ds", int((d+time.Second-1)/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("~%dm", int((d+time.Minute-1)/time.Minute))
	default:
		return fmt.Sprintf("~%dh%02d", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
}

// eighths are the partial blocks for bars, from one eighth to seven.
const eighths = "▏▎▍▌▋▊▉"

// bar draws frac (0..1) as a bar w cells wide: full blocks, one partial
// block, then the empty remainder.
func bar(frac float64, w int, s Styles) string {
	if w <= 0 {
		return ""
	}
	frac = min(1, max(0, frac))
	cells := int(frac * float64(w*8))
	full, part := cells/8, cells%8
	out := strings.Repeat("█", full)
	n := full
	if part > 0 {
		out += string([]rune(eighths)[part-1])
		n++
	}
	return s.table.barFull.paint(out) + s.table.barEmpty.paint(strings.Repeat("░", w-n))
}

// sparkLevels are the heights of a sparkline, low to high.
const sparkLevels = "▁▂▃▄▅▆▇█"

// spark draws values (0..1) as a sparkline, one cell each.
func spark(vals []float64) string {
	sparkLevels := []rune(sparkLevels)
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
		if len(l) > w && width(l) > w {
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
		bw = max(bw, width(l))
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

// ink is an inline style reduced to its SGR prefix and suffix: painting a
// log line with it is a concatenation, where lipgloss.Style.Render splits
// and measures the text. Only for styles without width, padding or border.
type ink struct{ pre, post string }

func inkOf(st lipgloss.Style) ink {
	r := st.Render("x") // SGR sequences hold no 'x'
	i := strings.IndexByte(r, 'x')
	if i < 0 {
		return ink{}
	}
	return ink{pre: r[:i], post: r[i+1:]}
}

func (k ink) paint(s string) string {
	if k.pre == "" || s == "" {
		return s
	}
	return k.pre + s + k.post
}

// frame draws lines in a rounded box exactly w cells wide, with one cell of
// padding; lines are cut to fit. It stands in for a lipgloss border, which
// measures every line again on every frame.
func frame(lines []string, w int, border lipgloss.Style) string {
	iw := max(1, w-4)
	b := inkOf(border)
	var out strings.Builder
	out.WriteString(b.paint("╭" + strings.Repeat("─", w-2) + "╮"))
	side := b.paint("│")
	for _, l := range lines {
		out.WriteString("\n" + side + " " + fit(l, iw) + " " + side)
	}
	out.WriteString("\n" + b.paint("╰"+strings.Repeat("─", w-2)+"╯"))
	return out.String()
}
