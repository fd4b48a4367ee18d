package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/startup"
	"github.com/bringup-dev/bringup/ui/notify"
)

// raws feeds b to m and returns what its commands would print raw (the
// signals' sequences). The source holds the next batch, so re-arming
// returns at once.
func raws(t *testing.T, m *Model, src *fakeSource, b remote.Batch) string {
	t.Helper()
	src.ch <- remote.Batch{}
	_, cmd := m.Update(batchMsg(b))
	var out strings.Builder
	var walk func(tea.Cmd)
	walk = func(c tea.Cmd) {
		if c == nil {
			return
		}
		switch msg := c().(type) {
		case tea.BatchMsg:
			for _, c := range msg {
				walk(c)
			}
		case tea.RawMsg:
			fmt.Fprint(&out, msg.Msg)
		}
	}
	walk(cmd)
	return out.String()
}

// phases is a snapshot of hosts gpu1.. in the phases given.
func phases(ps ...startup.Phase) remote.Batch {
	var b remote.Batch
	for i, p := range ps {
		h := remote.HostState{Name: fmt.Sprintf("gpu%d", i+1)}
		h.Startup.Phase = p
		b.Hosts = append(b.Hosts, h)
	}
	return b
}

// TestSignalsFromTheModel: with signals on, the model prints the bell and
// the progress (through tmux's passthrough) once, on the failure, and
// the window title carries the counts; with them off, nothing is printed
// and the title is the header's.
func TestSignalsFromTheModel(t *testing.T) {
	for _, on := range []bool{true, false} {
		src := newFake()
		opts := Options{Title: "bringup demo · seed ×20", Kernels: kernels.DefaultCatalog(),
			Now: func() time.Time { return now }, NoColor: true, Tmux: true}
		if on {
			opts.Signals = notify.Defaults()
		}
		m := New(src, opts)
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
		starting := raws(t, m, src, phases(startup.Weights, startup.Weights, startup.Weights, startup.Weights))
		failed := raws(t, m, src, phases(startup.Serving, startup.Serving, startup.Failed, startup.Warmup))
		again := raws(t, m, src, phases(startup.Serving, startup.Serving, startup.Failed, startup.Warmup))
		title := m.View().WindowTitle
		if !on {
			if starting+failed+again != "" || title != opts.Title {
				t.Errorf("signals off: printed %q, title %q", starting+failed+again, title)
			}
			continue
		}
		if want := "\x1bPtmux;\x1b\x1b]9;4;1;0\a\x1b\\"; starting != want {
			t.Errorf("starting: %q, want %q", starting, want)
		}
		if want := "\a\x1bPtmux;\x1b\x1b]9;4;2;50\a\x1b\\"; failed != want {
			t.Errorf("failed: %q, want %q", failed, want)
		}
		if again != "" {
			t.Errorf("the same snapshot again printed %q", again)
		}
		if want := "bringup · 2/4 serving · 1 failed"; title != want {
			t.Errorf("title %q, want %q", title, want)
		}
	}
}
