package ui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/startup"
)

func TestApproxLeft(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "due"},
		{0, "due"},
		{400 * time.Millisecond, "~1s"},
		{45 * time.Second, "~45s"},
		{time.Minute, "~1m"},
		{6*time.Minute + time.Second, "~7m"},
		{65 * time.Minute, "~1h05"},
	}
	for _, tc := range tests {
		if got := approxLeft(tc.d); got != tc.want {
			t.Errorf("approxLeft(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// quietWeights is the fixture with gpu2's shard count gone (the logs are
// quiet) and its GPU memory halfway to the last good run's level.
func quietWeights(t *testing.T, w, h int) *Model {
	t.Helper()
	m, _ := newTestModel(t, w, h)
	b := fleetFixture()
	g := &b.Hosts[1]
	g.Startup.Progress = startup.Progress{}
	g.MemProgress = startup.Progress{Done: 156, Total: 312, Label: "GiB est."}
	g.ETA, _ = history.ETA(g.Expected, g.Startup, now)
	m.Update(batchMsg(b))
	return m
}

func TestTableShowsMemoryEstimateWhenLogsAreQuiet(t *testing.T) {
	for _, size := range [][2]int{{160, 48}, {80, 24}, {60, 20}} {
		m := quietWeights(t, size[0], size[1])
		out := render(m)
		checkFits(t, out, size[0], size[1])
		row := ""
		for _, l := range lines(out) {
			if strings.Contains(l, "gpu2") {
				row = l
				break
			}
		}
		if !strings.Contains(row, "~50% mem") {
			t.Errorf("%dx%d: gpu2 row has no memory estimate: %q", size[0], size[1], row)
		}
		if strings.Contains(row, "shards") {
			t.Errorf("%dx%d: a count is shown without one: %q", size[0], size[1], row)
		}
	}
}

func TestETAShownWhereItFits(t *testing.T) {
	// gpu2: weights for 8m14s of a 9m median, 41/65 shards by the log
	// count: 4m49s left, then 2m25s of later phases: ~8m. At 80 columns
	// the diagnosis keeps its share of the row and the ETA column goes
	// (the host view gives it).
	for _, tc := range []struct {
		w, h   int
		column bool
	}{{160, 48, true}, {120, 40, true}, {80, 24, false}, {60, 20, false}} {
		m, _ := newTestModel(t, tc.w, tc.h)
		out := render(m)
		if got := strings.Contains(lines(out)[1], "ETA"); got != tc.column {
			t.Errorf("%d cols: ETA column shown = %v, want %v:\n%s", tc.w, got, tc.column, out)
		}
		press(m, "j", "enter")
		host := render(m)
		checkFits(t, host, tc.w, tc.h)
		if !strings.Contains(host, "ETA 10:20 (~8m, from 5 runs)") && tc.w >= 80 {
			t.Errorf("%d cols: host view lacks the ETA:\n%s", tc.w, host)
		}
		if !strings.Contains(host, "of ~9m") {
			t.Errorf("%d cols: host view lacks the typical phase time:\n%s", tc.w, host)
		}
	}
}

func TestNoETAColumnWithoutHistory(t *testing.T) {
	m, _ := newTestModel(t, 160, 48)
	b := fleetFixture()
	for i := range b.Hosts {
		b.Hosts[i].Expected, b.Hosts[i].ETA = history.Expectation{}, time.Time{}
	}
	m.Update(batchMsg(b))
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	if head := lines(render(m))[1]; strings.Contains(head, "ETA") {
		t.Fatalf("ETA column without any history: %q", head)
	}
}
