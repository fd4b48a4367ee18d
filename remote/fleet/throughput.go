package fleet

import (
	"maps"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/startup"
)

// Comparer compares serving runs' decode rates by kernel modes (store.Sink
// is one). Compare is called from the fold loop, so it must answer from
// memory without IO.
type Comparer interface {
	Compare(host, unit string, modes map[string]string, live, slowerBy float64) history.ModeAB
}

// Throughput is the Observer that compares each host's decode rate under
// the kernel modes its run started with against the modes it ran before
// (the snapshot's Throughput), counting a bench just run; slowerBy is the
// drop that flags the modes as slower (0: history.DefaultSlowerBy). It
// records each serving run's steady rate, once a run, and each complete
// bench of a serving run (Options.Records keeps them).
func Throughput(sink Comparer, slowerBy float64) Observer {
	return throughputObserver{sink: sink, slowerBy: slowerBy}
}

type throughputObserver struct {
	sink     Comparer
	slowerBy float64
}

func (o throughputObserver) Follow(Folded) HostObserver {
	return &hostThroughput{throughputObserver: o}
}

// hostThroughput is what the throughput observer keeps of one host.
type hostThroughput struct {
	throughputObserver
	// statsLines is the tracker's count of stats lines last looked at;
	// inv the invocation (its StartedAt) recorded is about: its steady
	// decode rate has been handed to the history. live is that rate (0:
	// not steady yet), ab the comparison by kernel modes.
	statsLines int
	inv        time.Time
	recorded   bool
	live       float64
	ab         history.ModeAB
}

// Observe follows a bench's result, a stats line (the rate may have
// become steady) and a phase change (a new run's modes).
func (t *hostThroughput) Observe(h Folded, ev event.Event, changes []startup.Change) {
	if ev.Kind == event.KindAction && ev.Action != nil && ev.Action.Bench != nil {
		t.benched(h)
	}
	if n := h.StatsLines(); n != t.statsLines {
		t.statsLines = n
		t.followStats(h)
	}
	for _, c := range changes {
		if c.Kind == startup.ChangePhase {
			t.refreshAB(h, h.Startup())
		}
	}
}

// Derive gives s the comparison by kernel modes.
func (t *hostThroughput) Derive(s *remote.HostState, _ time.Time) bool {
	s.Throughput = t.ab
	return false
}

// followStats runs after a stats line of h: once the serving run's decode
// rate is steady it is recorded (once a run) and compared with the kernel
// modes the host ran before. Stats lines come a few a second at most, so
// the copy of the state here is cheap enough.
func (t *hostThroughput) followStats(h Folded) {
	st := h.Startup()
	if !st.StartedAt.Equal(t.inv) {
		t.inv, t.recorded, t.live = st.StartedAt, false, 0
	}
	if st.Phase == startup.Serving && st.Stats != nil {
		if v, ok := history.Steady(st.Stats.Decode); ok {
			t.live = v
			if !t.recorded {
				t.recorded = true
				h.Record(history.Throughput(st.Stats.Latest.Time, h.Name(), h.Unit(), st.Engine,
					kernels.ModeMap(st.Modes), st.InvocationID, v))
			}
		}
	}
	t.refreshAB(h, st)
}

// refreshAB compares h's decode rate under the modes its run started with
// against the modes it ran before.
func (t *hostThroughput) refreshAB(h Folded, st startup.Startup) {
	modes := st.Modes
	if len(modes) == 0 {
		modes = h.Modes()
	}
	live := t.live
	if !st.StartedAt.Equal(t.inv) {
		live = 0 // a new run: its rate is not known yet
	}
	mm := kernels.ModeMap(modes)
	t.ab = t.sink.Compare(h.Name(), h.Unit(), mm, live, t.slowerBy)
	// The bench just run counts before the history writer has stored it.
	if b := h.Bench(); b != nil && !b.Interrupted && b.OK > 0 && history.ModesKey(b.Modes) == history.ModesKey(mm) {
		t.ab = t.ab.WithBench(history.ModesKey(mm), b.OutputTPS)
	}
}

// benched records the bench the fold just kept on h (Folded.Bench), with
// the kernel modes the run started with, when it is a measurement of a
// serving run: complete (not stopped part way) and with something
// measured.
func (t *hostThroughput) benched(h Folded) {
	b := h.Bench()
	st := h.Startup()
	if b == nil || b.Interrupted || b.OK == 0 || st.Phase != startup.Serving {
		return
	}
	h.Record(history.BenchRecord(b.Time, h.Name(), h.Unit(), st.Engine, maps.Clone(b.Modes), st.InvocationID, b.Bench))
	t.refreshAB(h, st)
}
