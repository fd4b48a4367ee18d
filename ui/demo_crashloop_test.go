package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/startup"
)

// TestDemoCrashLoopGolden: in the demo's crashloop scenario gpu3's unit
// (Restart=on-failure) fails in NCCL init seconds after every start. Once
// it has failed three runs in a row, while its next run is on its way,
// the table's header counts it failed, its row is red `crash-loop ×3`
// with the runs' cause and no ETA, and its host view lists the runs.
// Regenerate with: go test ./ui -run TestDemoCrashLoopGolden -update
func TestDemoCrashLoopGolden(t *testing.T) {
	s := newScenarioStory(t, "crashloop")
	s.until("gpu3's third failed run, and its fourth on its way", time.Second, func() bool {
		st := s.host("gpu3").Startup
		return st.Loop != nil && st.Loop.Runs == 3 && st.Run == 4 && st.Phase != startup.Failed && st.Phase != startup.Restarting
	})
	hosts, now := s.last, s.clock.Now()
	gpu3 := s.host("gpu3")
	if gpu3.Startup.Loop.Cause != "nccl-error" || !gpu3.ETA.IsZero() {
		t.Fatalf("gpu3: loop %+v, ETA %v; want nccl-error and no ETA", gpu3.Startup.Loop, gpu3.ETA)
	}
	for _, size := range [][2]int{{80, 24}, {160, 48}} {
		for _, sc := range []struct {
			name string
			keys []string
			want []string
		}{
			{"table", nil, []string{"1 failed", "crash-loop ×3"}},
			{"host-gpu3", []string{"j", "j", "enter"}, []string{"runs 4", "crash-loop ×3", "run 3", "failed in init", "[nccl-error]"}},
		} {
			t.Run(fmt.Sprintf("%s-%dx%d", sc.name, size[0], size[1]), func(t *testing.T) {
				m := New(newFake(), Options{Title: "bringup demo · crashloop", Kernels: kernels.DefaultCatalog(),
					Now: func() time.Time { return now }, NoColor: true})
				m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
				m.Update(batchMsg(remote.Batch{Hosts: hosts}))
				press(m, sc.keys...)
				out := render(m)
				checkFits(t, out, size[0], size[1])
				for _, w := range sc.want {
					if !strings.Contains(out, w) {
						t.Errorf("lacks %q:\n%s", w, out)
					}
				}
				if sc.name == "table" {
					for _, l := range lines(out) {
						if strings.Contains(l, "gpu3") && strings.Contains(l, "~") {
							t.Errorf("gpu3's row has an ETA: %q", l)
						}
					}
				}
				golden.RequireEqual(t, []byte(out))
			})
		}
	}
}
