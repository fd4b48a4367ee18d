package startup

import (
	"fmt"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/event"
)

// benchLines is a realistic mix: mostly lines no rule cares about (request
// logs, config chatter, warnings) and progress lines, in SGLang's format.
func benchLines() []string {
	var out []string
	for i := range 100 {
		out = append(out,
			fmt.Sprintf(`[2026-11-30 10:%02d:%02d] INFO:     127.0.0.1:%d - "POST /v1/chat/completions HTTP/1.1" 200 OK`, i/60, i%60, 40000+i),
			fmt.Sprintf("[2026-11-30 10:%02d:%02d TP0] Decode batch. #running-req: %d, #token: %d, token usage: 0.%02d, cuda graph: True, gen throughput (token/s): 1234.5, #queue-req: 0", i/60, i%60, i, i*100, i),
			fmt.Sprintf("[2026-11-30 10:%02d:%02d TP0] Prefill batch. #new-seq: 1, #new-token: %d, #cached-token: 0, token usage: 0.01, #running-req: 0, #queue-req: 0", i/60, i%60, i*7),
			"/opt/sglang/.venv/lib/python3.12/site-packages/torch/utils/cpp_extension.py:2356: UserWarning: TORCH_CUDA_ARCH_LIST is not set, all archs for visible cards are included for compilation.",
			fmt.Sprintf("Loading safetensors checkpoint shards: %3d%% Completed | %d/100 [00:%02d<00:10,  1.17s/it]", i, i, i%60),
			fmt.Sprintf("Capturing batches (bs=%d avail_mem=57.52 GB):  50%%|█████     | %d/100 [00:00<00:00,  5.24it/s]", i+1, i),
		)
	}
	return out
}

func benchEvents(lines []string) []event.Event {
	evs := make([]event.Event, len(lines))
	for i, l := range lines {
		evs[i] = event.Event{Kind: event.KindJournal, Time: t0.Add(time.Duration(i) * time.Millisecond),
			Journal: &event.Journal{InvocationID: "inv-1", Message: l}}
	}
	return evs
}

func benchTracker() *Tracker {
	tr := NewTracker(Options{Engine: "sglang", Kernels: kernels.DefaultCatalog()})
	tr.Apply(event.Event{Kind: event.KindUnit, Time: t0, Unit: &event.Unit{ActiveState: "active", SubState: "running", InvocationID: "inv-1"}})
	return tr
}

// BenchmarkApply measures the phase engine on the mix: one op is one line.
func BenchmarkApply(b *testing.B) { benchApply(b, benchLines()) }

// benchApply feeds lines round and round to one tracker and reports the
// rate in lines per second next to allocations per line.
func benchApply(b *testing.B, lines []string) {
	evs := benchEvents(lines)
	tr := benchTracker()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		tr.Apply(evs[i%len(evs)])
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkApplyUninteresting measures lines no rule matches, the bulk of
// a serving host's journal.
func BenchmarkApplyUninteresting(b *testing.B) {
	var lines []string
	for _, l := range benchLines() {
		if l[0] == '[' || l[0] == '/' {
			lines = append(lines, l)
		}
	}
	benchApply(b, lines)
}

// TestUninterestingLinesDoNotAllocate pins the per-line allocation budget
// on a decode stats line, the bulk of a serving host's journal: read into a
// sample, it still allocates nothing.
func TestUninterestingLinesDoNotAllocate(t *testing.T) {
	tr := benchTracker()
	ev := benchEvents([]string{"[2026-11-30 10:00:01 TP0] Decode batch. #running-req: 1, #token: 100, token usage: 0.01, cuda graph: True, gen throughput (token/s): 1234.5, #queue-req: 0"})[0]
	if n := testing.AllocsPerRun(100, func() { tr.Apply(ev) }); n > 0 {
		t.Errorf("%v allocations per uninteresting line", n)
	}
}
