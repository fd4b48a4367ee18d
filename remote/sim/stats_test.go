package sim

import (
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
)

// TestServingHostsPrintStats: once ready, the simulated hosts print
// their engine's stats lines in its real format, which the phase engine
// reads at the rate of the kernel mode the run started in: on ≈ 4× off,
// for SGLang and vLLM.
func TestServingHostsPrintStats(t *testing.T) {
	for _, scenario := range []string{"all-ok", "mixed"} {
		for _, name := range []string{"gpu1", "gpu3"} {
			hosts, clock := fixture(t, scenario)
			h := hosts[name]
			if name == "gpu3" {
				h.mu.Lock()
				h.modes["kdtree-verify"] = "off" // before its start, at 7 s
				h.mu.Unlock()
			}
			tr := startup.NewTracker(startup.Options{Engine: h.Engine(), Kernels: kernels.DefaultCatalog()})
			var served time.Time
			evs, _ := until(t, h, clock, 16*time.Minute, func(event.Event) bool { return false })
			for _, ev := range evs {
				for _, c := range tr.Apply(ev) {
					if c.Kind == startup.ChangePhase && c.Phase == startup.Serving {
						served = c.Time
					}
					if c.Kind == startup.ChangeStats && !tr.State().ReadySeen {
						t.Errorf("%s %s: stats before the ready line: %+v", scenario, name, c.Stats)
					}
				}
			}
			st := tr.State()
			if served.IsZero() || st.Stats == nil || len(st.Stats.Decode) < 5 {
				t.Fatalf("%s %s: served %v, stats %+v", scenario, name, served, st.Stats)
			}
			want := 1920.0
			if name == "gpu3" {
				want = 480
			}
			for _, v := range st.Stats.Decode {
				if v < want*0.96 || v > want*1.04 {
					t.Errorf("%s %s (%s): decode %v tok/s, want %v ± 3 %%", scenario, name, h.Engine(), v, want)
				}
			}
			if st.Stats.Latest.Running != 8 {
				t.Errorf("%s %s: %+v", scenario, name, st.Stats.Latest)
			}
		}
	}
}
