package fleet

import (
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/gpu"
	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/startup"
)

// HistorySink is the fleet's door to the startup history. Expect is
// called from the fold loop, so it must answer from memory without IO;
// Record is called from a writer goroutine the fleet owns and may do IO,
// but must return (Run waits for the records queued before it ends).
type HistorySink interface {
	Expect(host, unit string, modes map[string]string) (history.Expectation, bool)
	Record(history.Record) error
}

// hostHistory is what the history follower keeps of one host.
type hostHistory struct {
	// What the history says for the host's unit and modes (Runs 0: none).
	expect history.Expectation
	// inv is the StartedAt of the invocation the fields below are about.
	inv time.Time
	// weightMem is the mean MiB per GPU when the weights phase ended.
	weightMem int
	// recorded says the invocation's record has been handed out.
	recorded bool
}

// historyQueue bounds the records waiting for the history writer; beyond
// it records are dropped (and counted) rather than slowing the fold loop.
const historyQueue = 16

// HistoryStats counts what became of the startup records.
type HistoryStats struct {
	Written int `json:"written"`
	// Dropped records found the writer's queue full.
	Dropped int `json:"dropped,omitempty"`
	// Failed records were refused by the sink; LastErr is the latest error.
	Failed  int    `json:"failed,omitempty"`
	LastErr string `json:"last_err,omitempty"`
}

// writeHistory hands each queued record to the sink until the queue is
// closed.
func (f *Fleet) writeHistory(q <-chan history.Record) {
	for r := range q {
		if err := f.opts.History.Record(r); err != nil {
			f.histFailed.Add(1)
			f.histErr.Store(err.Error())
			continue
		}
		f.histWritten.Add(1)
	}
}

// HistoryStats reports the startup records written, dropped and failed so
// far. It is safe to call from any goroutine.
func (f *Fleet) HistoryStats() HistoryStats {
	s := HistoryStats{Written: int(f.histWritten.Load()), Dropped: int(f.histDropped.Load()), Failed: int(f.histFailed.Load())}
	s.LastErr, _ = f.histErr.Load().(string)
	return s
}

// refreshExpect asks the history what to expect of h's unit and modes.
func (f *Fleet) refreshExpect(h *hostFold) {
	if f.opts.History == nil {
		return
	}
	e, ok := f.opts.History.Expect(h.state.Name, h.state.Unit, kernels.ModeMap(h.state.Modes))
	if !ok {
		e = history.Expectation{}
	}
	h.expect = e
}

// queue hands r to the history writer, or drops it when the writer is
// behind.
func (f *Fleet) queue(r history.Record) {
	select {
	case f.hist <- r:
	default:
		f.histDropped.Add(1)
	}
}

// followHistory runs after h's startup changed or its unit was read: it
// refreshes the expectation (the modes or the history may have changed),
// notes the GPU memory when weights end, and queues the record of a
// startup that reached serving. Changes are a few per phase, so this adds
// nothing per journal line.
func (f *Fleet) followHistory(h *hostFold, changes []startup.Change) {
	if f.opts.History == nil {
		return
	}
	f.refreshExpect(h)
	for _, c := range changes {
		if c.Kind != startup.ChangePhase {
			continue
		}
		st := h.tracker.State()
		if !st.StartedAt.Equal(h.inv) {
			h.inv, h.weightMem, h.recorded = st.StartedAt, 0, false
		}
		if h.weightMem == 0 && c.Phase.Rank() > startup.Weights.Rank() && len(h.state.GPU) > 0 {
			h.weightMem = gpu.MemPerGPU(h.state.GPU[len(h.state.GPU)-1])
		}
		if c.Phase == startup.Serving && !h.recorded {
			h.recorded = true
			f.queueRecord(h, st, c.Time)
		}
		f.refreshAB(h, st)
	}
}

// queueRecord hands the record of st, which reached serving at at, to the
// history writer, or drops it when the writer is behind. A startup that
// was not seen from its start (bringup attached mid-way, spans out of
// order) is not a measurement and is not recorded.
func (f *Fleet) queueRecord(h *hostFold, st startup.Startup, at time.Time) {
	if !wholeStartup(st.Spans) || !at.After(st.StartedAt) {
		return
	}
	r := history.Record{Time: at, Host: h.state.Name, Unit: h.state.Unit, Engine: st.Engine,
		Modes: kernels.ModeMap(h.state.Modes), InvocationID: st.InvocationID, Spans: st.Spans,
		Total: at.Sub(st.StartedAt), WeightMemMiB: h.weightMem}
	if r.WeightMemMiB == 0 && len(h.state.GPU) > 0 {
		r.WeightMemMiB = gpu.MemPerGPU(h.state.GPU[len(h.state.GPU)-1])
	}
	f.queue(r)
}

// wholeStartup reports whether spans run from starting through weights to
// serving, each beginning where the one before ended.
func wholeStartup(spans []startup.Span) bool {
	if len(spans) < 2 || spans[0].Phase != startup.Starting || spans[len(spans)-1].Phase != startup.Serving {
		return false
	}
	weights := false
	for i, sp := range spans {
		if sp.Inferred {
			return false
		}
		weights = weights || sp.Phase == startup.Weights
		if i > 0 && sp.Start.Before(spans[i-1].Start) {
			return false
		}
	}
	return weights
}

// memProgress is weight loading estimated from GPU memory: only in the
// weights phase (stuck in it included: a quiet tqdm bar is what trips the
// stuck threshold), while the logs give no count, with a reference level
// from history and a sample to compare. Done and Total are GiB over all
// GPUs.
func memProgress(st startup.Startup, exp history.Expectation, samples []event.GPU) startup.Progress {
	inWeights := st.Phase == startup.Weights || st.Phase == startup.Stuck && st.StuckIn == startup.Weights
	if !inWeights || st.Progress.Known() || exp.WeightMemMiB <= 0 || len(samples) == 0 {
		return startup.Progress{}
	}
	done, total := gpu.WeightProgress(samples[len(samples)-1], exp.WeightMemMiB)
	if total <= 0 {
		return startup.Progress{}
	}
	return startup.Progress{Done: done / 1024, Total: max(1, total/1024), Label: "GiB est."}
}
