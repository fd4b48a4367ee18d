package fleet

import (
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/startup"
)

// ThroughputSink is a HistorySink that also compares serving runs' decode
// rates by kernel modes (store.Sink is one). Compare is called from the
// fold loop, so it must answer from memory without IO.
type ThroughputSink interface {
	Compare(host, unit string, modes map[string]string, live, slowerBy float64) history.ModeAB
}

// hostThroughput is what the throughput follower keeps of one host.
type hostThroughput struct {
	// statsLines is the tracker's count of stats lines last looked at;
	// tputInv the invocation (its StartedAt) tputRecorded is about: its
	// steady decode rate has been handed to the history. live is that
	// rate (0: not steady yet), ab the comparison by kernel modes.
	statsLines   int
	tputInv      time.Time
	tputRecorded bool
	live         float64
	ab           history.ModeAB
}

// followThroughput runs after a stats line of h: once the serving run's
// decode rate is steady it is queued for the history (once a run) and
// compared with the kernel modes the host ran before. Stats lines come a
// few a second at most, so the copy of the state here is cheap enough.
func (f *Fleet) followThroughput(h *hostFold) {
	if f.opts.History == nil {
		return
	}
	st := h.tracker.State()
	if !st.StartedAt.Equal(h.tputInv) {
		h.tputInv, h.tputRecorded, h.live = st.StartedAt, false, 0
	}
	if st.Phase == startup.Serving && st.Stats != nil {
		if v, ok := history.Steady(st.Stats.Decode); ok {
			h.live = v
			if !h.tputRecorded {
				h.tputRecorded = true
				f.queue(history.Throughput(st.Stats.Latest.Time, h.state.Name, h.state.Unit, st.Engine,
					kernels.ModeMap(st.Modes), st.InvocationID, v))
			}
		}
	}
	f.refreshAB(h, st)
}

// refreshAB compares h's decode rate under the modes its run started with
// against the modes it ran before, when the history can.
func (f *Fleet) refreshAB(h *hostFold, st startup.Startup) {
	ts, ok := f.opts.History.(ThroughputSink)
	if !ok {
		return
	}
	modes := st.Modes
	if len(modes) == 0 {
		modes = h.state.Modes
	}
	live := h.live
	if !st.StartedAt.Equal(h.tputInv) {
		live = 0 // a new run: its rate is not known yet
	}
	mm := kernels.ModeMap(modes)
	h.ab = ts.Compare(h.state.Name, h.state.Unit, mm, live, f.opts.SlowerBy)
	// The bench just run counts before the history writer has stored it.
	if b := h.state.Bench; b != nil && !b.Interrupted && b.OK > 0 && history.ModesKey(b.Modes) == history.ModesKey(mm) {
		h.ab = h.ab.WithBench(history.ModesKey(mm), b.OutputTPS)
	}
}

// benched keeps a bench's result on h, from the event that carries it,
// and queues it for the history with the kernel modes the run started
// with, when it is a measurement of a serving run: complete (not
// stopped part way) and with something measured.
func (f *Fleet) benched(h *hostFold, at time.Time, a event.ActionResult) {
	st := h.tracker.State()
	modes := st.Modes
	if len(modes) == 0 {
		modes = h.state.Modes
	}
	if at.IsZero() {
		at = f.opts.Clock.Now()
	}
	h.state.Bench = &remote.BenchRun{Time: at, Action: a.ID, Modes: kernels.ModeMap(modes), Bench: *a.Bench}
	if f.opts.History == nil || a.Bench.Interrupted || a.Bench.OK == 0 || st.Phase != startup.Serving {
		return
	}
	f.queue(history.BenchRecord(at, h.state.Name, h.state.Unit, st.Engine, kernels.ModeMap(modes), st.InvocationID, *a.Bench))
	f.refreshAB(h, st)
}
