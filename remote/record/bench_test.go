package record

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/sim"
)

func benchEvent(i int, t time.Time) event.Event {
	return event.Event{Host: "gpu1", Kind: event.KindJournal, Time: t, Seen: t, Journal: &event.Journal{
		Cursor: fmt.Sprintf("s=0;i=%x", i), InvocationID: "inv", Priority: 6,
		Message: fmt.Sprintf("[2026-11-30 10:07:%02d TP%d] Decode batch. #running-req: %d, #token: %d, gen throughput (token/s): 1234.5", i%60, i%8, i, i*100)}}
}

// BenchmarkRecorderAdd is the cost recording adds to every event (the
// driver's goroutine pays it): one op is one journal line written.
func BenchmarkRecorderAdd(b *testing.B) {
	clock := sim.NewManualClock(time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC))
	rec, err := Create(filepath.Join(b.TempDir(), "r.jsonl"), Header{Hosts: []Host{{Name: "gpu1", Unit: "sglang.service"}}}, clock)
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		rec.Add(benchEvent(i, clock.Now()))
		i++
	}
	if err := rec.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkLoad reads a recording of 100 000 journal lines: one op is
// the whole file.
func BenchmarkLoad(b *testing.B) {
	path := filepath.Join(b.TempDir(), "r.jsonl")
	clock := sim.NewManualClock(time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC))
	rec, err := Create(path, Header{Hosts: []Host{{Name: "gpu1", Unit: "sglang.service"}}}, clock)
	if err != nil {
		b.Fatal(err)
	}
	const n = 100_000
	for i := range n {
		rec.Add(benchEvent(i, clock.Advance(time.Millisecond)))
	}
	if err := rec.Close(); err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	for b.Loop() {
		r, err := Load(path)
		if err != nil || len(r.Entries) != n {
			b.Fatalf("load: %d entries, %v", len(r.Entries), err)
		}
	}
}
