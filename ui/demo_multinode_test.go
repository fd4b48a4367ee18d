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

// TestDemoMultinodeGolden: the demo's multinode scenario is two two-node
// deployments, found from the units' command lines. In gpu3:5000 node 1
// (gpu4) fails in NCCL init and node 0 (gpu3) loses it at the store two
// seconds later, by a clock 3 s behind. The table is one row per
// deployment, the failed one blaming node 1; gpu3's host view shows both
// nodes side by side on one axis, clocks corrected.
// Regenerate with: go test ./ui -run TestDemoMultinodeGolden -update
func TestDemoMultinodeGolden(t *testing.T) {
	s := newScenarioStory(t, "multinode")
	s.until("both nodes of gpu3:5000 failed, settled", time.Second, func() bool {
		g3, g4 := s.host("gpu3"), s.host("gpu4")
		return g3.Startup.Phase == startup.Failed && !g3.Provisional && g3.Startup.Diag != nil &&
			g4.Startup.Phase == startup.Failed && !g4.Provisional && g4.Startup.Diag != nil
	})
	hosts, now := s.last, s.clock.Now()
	for _, size := range [][2]int{{80, 24}, {160, 48}} {
		for _, sc := range []struct {
			name string
			keys []string
			want []string
		}{
			{"table", nil, []string{"gpu3:5000", "node 1 gpu4 failed first: nccl-error", "node 0 gpu3 peer lost"}},
			{"host-gpu3", []string{"l", "j", "enter"}, []string{"deployment gpu3:5000", "node 0 gpu3", "node 1 gpu4", "failed first: nccl-error", "peer lost", "clocks corrected (gpu3 -3.0s)"}},
		} {
			t.Run(fmt.Sprintf("%s-%dx%d", sc.name, size[0], size[1]), func(t *testing.T) {
				m := New(newFake(), Options{Title: "bringup demo · multinode", Kernels: kernels.DefaultCatalog(),
					Now: func() time.Time { return now }, NoColor: true})
				m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
				m.Update(batchMsg(remote.Batch{Hosts: hosts}))
				press(m, sc.keys...)
				out := render(m)
				checkFits(t, out, size[0], size[1])
				for _, w := range sc.want {
					if size[0] < 160 {
						break // rows are cut at 80 columns
					}
					if !strings.Contains(out, w) {
						t.Errorf("lacks %q:\n%s", w, out)
					}
				}
				golden.RequireEqual(t, []byte(out))
			})
		}
	}
}
