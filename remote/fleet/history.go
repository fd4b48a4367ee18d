package fleet

import (
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/gpu"
	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/startup"
)

// Expecter answers what to expect of a host's startup from the history:
// the time of each phase, the memory its weights take. Expect is called
// from the fold loop, so it must answer from memory without IO.
// store.Sink is one.
type Expecter interface {
	Expect(host, unit string, modes map[string]string) (history.Expectation, bool)
}

// History is the Observer that reads the startup history: each host's
// snapshot gets what to expect of its unit and modes, the ETA that follows
// from it, and, while the weights load without a count, their progress
// estimated from GPU memory; each startup seen whole from start to
// serving is recorded (Options.Records keeps it).
func History(sink Expecter) Observer { return historyObserver{sink} }

type historyObserver struct{ sink Expecter }

func (o historyObserver) Follow(h Folded) HostObserver {
	hh := &hostHistory{sink: o.sink}
	hh.refreshExpect(h)
	return hh
}

// hostHistory is what the history observer keeps of one host.
type hostHistory struct {
	sink Expecter
	// What the history says for the host's unit and modes (Runs 0: none).
	expect history.Expectation
	// inv is the StartedAt of the invocation the fields below are about.
	inv time.Time
	// weightMem is the mean MiB per GPU when the weights phase ended.
	weightMem int
	// recorded says the invocation's record has been handed out.
	recorded bool
}

// refreshExpect asks the history what to expect of h's unit and modes.
func (hh *hostHistory) refreshExpect(h Folded) {
	e, ok := hh.sink.Expect(h.Name(), h.Unit(), kernels.ModeMap(h.Modes()))
	if !ok {
		e = history.Expectation{}
	}
	hh.expect = e
}

// Observe runs after h's startup changed or its unit was read: it
// refreshes the expectation (the modes or the history may have changed),
// notes the GPU memory when weights end, and records a startup that
// reached serving. Changes are a few per phase, so this adds nothing per
// journal line.
func (hh *hostHistory) Observe(h Folded, ev event.Event, changes []startup.Change) {
	if len(changes) == 0 && ev.Kind != event.KindUnit {
		return
	}
	hh.refreshExpect(h)
	for _, c := range changes {
		if c.Kind != startup.ChangePhase {
			continue
		}
		st := h.Startup()
		if !st.StartedAt.Equal(hh.inv) {
			hh.inv, hh.weightMem, hh.recorded = st.StartedAt, 0, false
		}
		if g, ok := h.GPU(); ok && hh.weightMem == 0 && c.Phase.Rank() > startup.Weights.Rank() {
			hh.weightMem = gpu.MemPerGPU(g)
		}
		if c.Phase == startup.Serving && !hh.recorded {
			hh.recorded = true
			hh.record(h, st, c.Time)
		}
	}
}

// record hands the record of st, which reached serving at at, to the
// history writer. A startup that was not seen from its start (bringup
// attached mid-way, spans out of order) is not a measurement and is not
// recorded.
func (hh *hostHistory) record(h Folded, st startup.Startup, at time.Time) {
	if !wholeStartup(st.Spans) || !at.After(st.StartedAt) {
		return
	}
	r := history.Record{Time: at, Host: h.Name(), Unit: h.Unit(), Engine: st.Engine,
		Modes: kernels.ModeMap(h.Modes()), InvocationID: st.InvocationID, Spans: st.Spans,
		Total: at.Sub(st.StartedAt), WeightMemMiB: hh.weightMem}
	if g, ok := h.GPU(); ok && r.WeightMemMiB == 0 {
		r.WeightMemMiB = gpu.MemPerGPU(g)
	}
	h.Record(r)
}

// Derive gives s what the history expects, the ETA (timed: it moves with
// the clock) and the weights' progress estimated from GPU memory.
func (hh *hostHistory) Derive(s *remote.HostState, now time.Time) bool {
	s.Expected = hh.expect
	eta, timed := history.ETA(hh.expect, s.Startup, now)
	if timed {
		s.ETA = eta
	}
	s.MemProgress = memProgress(s.Startup, hh.expect, s.GPU)
	return timed
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
