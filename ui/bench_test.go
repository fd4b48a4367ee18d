package ui

import (
	"fmt"
	"testing"

	"bringup/remote/event"
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
				m.lv.setQuery("bs=1", m.ring("gpu3"))
			}
			b.ResetTimer()
			for b.Loop() {
				_ = m.View()
			}
		})
	}
}
