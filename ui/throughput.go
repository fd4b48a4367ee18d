package ui

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"bringup/remote"
	"bringup/remote/startup"
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
