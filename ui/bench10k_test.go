package ui

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote"
)

// BenchmarkConsoleBusyBatch is the console's handling of one batch while
// units start at 1 000 and 10 000 hosts side by side: 20 hosts' snapshots
// taken anew (each a phase and progress step further), the batch's Update
// and the frame after it at 200×60. The cost should follow the 20 hosts,
// not the fleet.
func BenchmarkConsoleBusyBatch(b *testing.B) {
	const changed = 20
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("hosts=%d", n), func(b *testing.B) {
			m, _ := newTestModel(b, 200, 60)
			first := fleetOf(n, "node%05d")
			m.Update(batchMsg(first))
			// Two batches in turn, each as the fleet hands one out: the
			// hosts of the last, 20 of them taken anew.
			var next [2]remote.Batch
			for j := range next {
				hosts := slices.Clone(first.Hosts)
				taken := make([]int, 0, changed)
				for c := range changed {
					i := (c*97 + j*13) % n
					hosts[i].Startup.PhaseSince = hosts[i].Startup.PhaseSince.Add(time.Duration(j+1) * time.Second)
					hosts[i].Startup.Progress.Done = j + 1
					taken = append(taken, i)
				}
				next[j] = remote.Batch{Hosts: hosts}
				_ = taken
			}
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				m.Update(batchMsg(next[i%2]))
				_ = m.View()
				i++
			}
		})
	}
}
