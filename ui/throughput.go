package ui

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/startup"
)

// servingStats is the host's stats sample when it is serving and its
// engine has printed a generation rate; only then is a rate worth a cell.
func servingStats(h *remote.HostState) (*startup.Stats, bool) {
	s := h.Startup.Stats
	if h.Startup.Phase != startup.Serving || s == nil || s.Latest.GenTime.IsZero() {
		return nil, false
	}
	return s, true
}

// anyStats reports whether some host serves with a rate: without one the
// TOK/S column would be empty.
func (t *fleetTable) anyStats() bool {
	if t.sums != nil {
		return t.sums.stats > 0
	}
	for i := range t.hosts {
		if _, ok := servingStats(&t.hosts[i]); ok {
			return true
		}
	}
	return false
}

// cellTPS is the decode rate the engine printed last, once serving.
func cellTPS(_ *fleetTable, h *remote.HostState) string {
	s, ok := servingStats(h)
	if !ok {
		return ""
	}
	return fmtTPS(s.Latest.GenTPS)
}

// fmtTPS is a rate in tokens/s as people read it: "41.7", "186", "1 920",
// "12 345" (thousands apart by a space, as in the engines' own reports).
func fmtTPS(v float64) string {
	switch {
	case v < 0 || math.IsNaN(v) || math.IsInf(v, 0):
		return "—"
	case v < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	d := strconv.FormatInt(int64(v+0.5), 10)
	var b strings.Builder
	for i, c := range d {
		if i > 0 && (len(d)-i)%3 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// rateSpark draws the last n rates as a sparkline scaled to their maximum.
func rateSpark(vals []float64, n int) string {
	vals = vals[max(0, len(vals)-n):]
	top := 0.0
	for _, v := range vals {
		top = max(top, v)
	}
	if top <= 0 {
		return spark(make([]float64, len(vals)))
	}
	scaled := make([]float64, len(vals))
	for i, v := range vals {
		scaled[i] = v / top
	}
	return spark(scaled)
}

// statsRow is the host view's serving line: the decode rate over the
// recent stats lines and what the newest said.
func (v *hostView) statsRow(w int) string {
	s, _ := servingStats(v.hs)
	l := s.Latest
	// What matters most first: a narrow pane clips the end.
	line := "  decode " + rateSpark(s.Decode, max(4, min(40, w-60))) + " " + fmtTPS(l.GenTPS) + " tok/s"
	line += fmt.Sprintf(" · %d running, %d queued · KV %d%%", l.Running, l.Queued, int(l.KVUsage*100+0.5))
	if l.Graph != "" {
		line += " · cuda graph " + l.Graph
	}
	if l.PromptTPS > 0 {
		line += " · prompt " + fmtTPS(l.PromptTPS) + " tok/s"
	}
	return line
}

// abShown reports whether the host view has a mode comparison to show: a
// serving host whose rate history knows.
func abShown(h *remote.HostState) bool {
	return h.Startup.Phase == startup.Serving && h.Throughput.Known() && (h.Throughput.Compared() || !h.Throughput.Live)
}

// abText is the mode comparison: "decode 1 920 tok/s with kdtree-verify=on
// vs 410 tok/s with off (4.7×, from 3 runs)"; a drop beyond the threshold
// says so first, like a failure's hint. The smoke loads' output rates
// follow when the history has them: "· bench 876 tok/s on vs 223 off".
func abText(ab history.ModeAB) string { return abPhrase(ab, false) }

// abPhrase is abText, or with short the same in fewer cells for a narrow
// pane: "4.7× with kdtree-verify=on: 1 920 vs 410 tok/s with off (3 runs)".
func abPhrase(ab history.ModeAB, short bool) string {
	decode := decodePhrase(ab, short)
	bench := benchPhrase(ab)
	switch {
	case ab.TPS <= 0:
		return bench
	case bench == "":
		return decode
	}
	return decode + " · " + bench
}

// benchPhrase is the smoke loads' output rates of the two configurations:
// "bench 876 tok/s on vs 223 off" (a kernel's mode alone when one kernel
// differs); "" without a bench of the current one.
func benchPhrase(ab history.ModeAB) string {
	if ab.BenchTPS <= 0 {
		return ""
	}
	cur := ab.Modes
	if _, mode, ok := strings.Cut(cur, "="); ok && !strings.Contains(mode, ",") && !strings.Contains(ab.Base, "=") {
		cur = mode // "kdtree-verify=on" against "off": the kernel is named by the decode phrase
	}
	if ab.BaseBenchTPS <= 0 {
		return fmt.Sprintf("bench %s tok/s %s", fmtTPS(ab.BenchTPS), cur)
	}
	return fmt.Sprintf("bench %s tok/s %s vs %s %s", fmtTPS(ab.BenchTPS), cur, fmtTPS(ab.BaseBenchTPS), ab.Base)
}

// decodePhrase is the decode rates' part of abPhrase.
func decodePhrase(ab history.ModeAB, short bool) string {
	runs := ab.BaseRuns
	if !ab.Live {
		runs += ab.Runs
	}
	from := fmt.Sprintf("from %d runs", runs)
	if runs == 1 {
		from = "from 1 run"
	}
	if !ab.Compared() {
		return fmt.Sprintf("decode %s tok/s with %s (%s)", fmtTPS(ab.TPS), ab.Modes, from)
	}
	ratio := strconv.FormatFloat(ab.Ratio, 'f', 1, 64)
	s := fmt.Sprintf("decode %s tok/s with %s vs %s tok/s with %s (%s×, %s)", fmtTPS(ab.TPS), ab.Modes, fmtTPS(ab.BaseTPS), ab.Base, ratio, from)
	slower := fmt.Sprintf("⚠ %d %% slower", int((1-ab.Ratio)*100+0.5))
	switch {
	case short && ab.Slower:
		return fmt.Sprintf("%s with %s: %s vs %s tok/s with %s (%s)", slower, ab.Modes, fmtTPS(ab.TPS), fmtTPS(ab.BaseTPS), ab.Base, strings.TrimPrefix(from, "from "))
	case short:
		return fmt.Sprintf("%s× with %s: %s vs %s tok/s with %s (%s)", ratio, ab.Modes, fmtTPS(ab.TPS), fmtTPS(ab.BaseTPS), ab.Base, strings.TrimPrefix(from, "from "))
	case ab.Slower:
		return slower + ": " + s
	}
	return s
}

// slowerText is the table's word on a mode that decodes slower than the one
// before: "decode −35 % vs off".
func slowerText(h *remote.HostState) string {
	if ab := h.Throughput; ab.Slower && h.Startup.Phase == startup.Serving {
		return fmt.Sprintf("decode −%d %% vs %s", int((1-ab.Ratio)*100+0.5), ab.Base)
	}
	return ""
}

// abRow is the host view's comparison line in w cells, the short form when
// the long one does not fit, styled as a failure when slower.
func (v *hostView) abRow(w int) string {
	ab := v.hs.Throughput
	text := abPhrase(ab, false)
	if width(text)+2 > w {
		text = abPhrase(ab, true)
	}
	if ab.Slower {
		return "  " + v.styles.PhaseFailed.Render(text)
	}
	return "  " + text
}
