package ui

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
)

// BenchmarkHostView is one frame of the host view over a full 5 000-line
// ring at 160×48, in colour: it must not grow with the history.
func BenchmarkHostView(b *testing.B) {
	for _, mode := range []string{"follow", "wrap", "filter"} {
		b.Run(mode, func(b *testing.B) {
			m, _ := newTestModel(b, 160, 48)
			m.opts.NoColor = false
			m.setStyles(true)
			batch := fleetFixture()
			batch.Events = nil
			for i := range 6000 {
				batch.Events = append(batch.Events, event.Event{Host: "gpu3", Kind: event.KindJournal, Time: now,
					Journal: &event.Journal{Priority: 6, Message: fmt.Sprintf(
						"[2026-11-30 10:07:%02d TP%d] Capture cuda graph bs=%d, avail mem=%.2f GB, a long tail of text to make the line wrap at 160 columns and then some more words", i%60, i%8, i%256, 70-float64(i)/1000)}})
			}
			m.Update(batchMsg(batch))
			press(m, "j", "j", "enter")
			switch mode {
			case "wrap":
				press(m, "w")
			case "filter":
				m.host.log.setQuery("bs=1", m.ring("gpu3"))
			}
			b.ResetTimer()
			for b.Loop() {
				_ = m.View()
			}
		})
	}
}

// BenchmarkConsoleMemory64Hosts is what the console holds for a fleet of
// 64 hosts whose log rings are full (5 000 lines each, 120-160 byte lines,
// several times the ring fed through): MB retained after a GC, and one
// frame of the fleet table at 160×48. The rings must cap it.
func BenchmarkConsoleMemory64Hosts(b *testing.B) {
	const hosts = 64
	batch := fleetOf(hosts, "gpu%02d")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, _ := newTestModel(b, 160, 48)
	m.Update(batchMsg(batch))
	for round := range 3 {
		for i := range hosts {
			lines := remote.Batch{Hosts: batch.Hosts}
			for j := range 5000 {
				lines.Events = append(lines.Events, event.Event{Host: batch.Hosts[i].Name, Kind: event.KindJournal, Time: now,
					Journal: &event.Journal{Priority: 6, Message: fmt.Sprintf(
						"[2026-11-30 10:%02d:%02d TP%d] Decode batch. #running-req: %d, #token: %d, token usage: 0.%02d, gen throughput (token/s): 1234.5", j/60%60, j%60, j%8, round, j, j%100)}})
			}
			m.Update(batchMsg(lines))
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	retained := float64(after.HeapAlloc-before.HeapAlloc) / (1 << 20)
	b.ResetTimer()
	for b.Loop() {
		_ = m.View()
	}
	b.ReportMetric(retained, "MB-retained") // after the loop: ResetTimer clears metrics
	runtime.KeepAlive(m)
}

// fleetOf is a batch of n hosts named by the format (gpu%02d: gpu01…),
// their states the fixture's taken in turn.
func fleetOf(n int, name string) remote.Batch {
	base := fleetFixture()
	batch := remote.Batch{}
	for i := range n {
		h := base.Hosts[i%len(base.Hosts)]
		h.Name = fmt.Sprintf(name, i+1)
		batch.Hosts = append(batch.Hosts, h)
	}
	return batch
}
