package startup

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/startup/corpus"
)

// TestSettler walks a host's stream on the reader's wall clock and asks
// the settler after each step whether the failure is provisional, and
// until when. The two stories of one bug class (a failure taken before
// the lines that explain it arrived) are among them: c5ddd69 (systemd's
// signal before the run's last lines, stamped after it) and e302d08 (an
// earlier run replayed from the journal's backlog, its end included).
func TestSettler(t *testing.T) {
	const wait = 3 * time.Second
	w0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	segfault := "Fatal Python error: Segmentation fault"
	// step is what reaches the reader at wall time w0+at: the events of
	// do (journal lines are heard at at), and the run the unit's state
	// names; want and wake are the settler's answer then.
	type step struct {
		at      time.Duration
		do      func(h *host)
		heard   bool
		unitRun string
		want    bool
		wake    time.Duration
	}
	started := func(h *host) { h.unit("activating", "start", "") }
	// startedHeard is a run started and followed: its first line heard.
	startedHeard := func(h *host) { started(h); h.lines(sgWeights) }
	failed := func(h *host) { h.unit("failed", "failed", "exit-code") }
	// A real log whose wrapper fails the run nine lines before the
	// exception that names the cause (the scale rig saw it settle on the
	// wrapper when a delivery stalled past the settle wait).
	ninja, err := corpus.Read(filepath.Join(corpus.Dir(), "sglang-1314-slime-ray-capture-ninja.log"))
	if err != nil {
		t.Fatal(err)
	}
	ninjaLines := strings.Split(strings.TrimRight(ninja.Body, "\n"), "\n")
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{name: "the engine's failure while its process runs waits RunningWait: the cause is still on its way", steps: []step{
			{do: func(h *host) { h.unit("active", "running", ""); h.lines(ninjaLines[:2]...) }, heard: true, unitRun: "inv-1", want: true, wake: RunningWait},
			{at: 5 * time.Second, unitRun: "inv-1", want: true, wake: RunningWait},
			{at: 6 * time.Second, do: func(h *host) { h.lines(ninjaLines[2:]...) }, heard: true, unitRun: "inv-1", want: true, wake: 6*time.Second + RunningWait},
			{at: 6500 * time.Millisecond, do: func(h *host) { h.exitFailure() }, heard: true, unitRun: "inv-1"},
		}},
		{name: "a starting run is not provisional", steps: []step{
			{do: started, unitRun: "inv-1"},
			{at: time.Second, do: func(h *host) { h.lines(sgWeights) }, heard: true, unitRun: "inv-1"},
		}},
		{name: "a failure the unit's state alone explains settles by the clock", steps: []step{
			{do: startedHeard, heard: true, unitRun: "inv-1"},
			{at: time.Second, do: failed, unitRun: "inv-1", want: true, wake: 4 * time.Second},
			{at: 3900 * time.Millisecond, unitRun: "inv-1", want: true, wake: 4 * time.Second},
			{at: 4 * time.Second, unitRun: "inv-1"},
		}},
		{name: "c5ddd69: the unit failed before its last lines came; the run's end settles it", steps: []step{
			{do: startedHeard, heard: true, unitRun: "inv-1"},
			{at: time.Second, do: failed, unitRun: "inv-1", want: true, wake: 4 * time.Second},
			// The cause is known, but the journal has not shown the
			// run's end: the lines still to come may place it.
			{at: 2 * time.Second, do: func(h *host) { h.lines(sgWeights, sgCapture, segfault) }, heard: true, unitRun: "inv-1", want: true, wake: 5 * time.Second},
			{at: 2500 * time.Millisecond, do: func(h *host) { h.exitFailure() }, heard: true, unitRun: "inv-1"},
		}},
		{name: "c5ddd69: a log that never shows the run's end settles once its lines go quiet", steps: []step{
			{do: startedHeard, heard: true, unitRun: "inv-1"},
			{at: time.Second, do: failed, unitRun: "inv-1", want: true, wake: 4 * time.Second},
			{at: 2 * time.Second, do: func(h *host) { h.lines(sgWeights, sgCapture, segfault) }, heard: true, unitRun: "inv-1", want: true, wake: 5 * time.Second},
			{at: 4500 * time.Millisecond, unitRun: "inv-1", want: true, wake: 5 * time.Second},
			{at: 5 * time.Second, unitRun: "inv-1"},
		}},
		{name: "e302d08: a backlog run, its end included, waits for the unit to name it", steps: []step{
			{do: func(h *host) {
				h.inv = "inv-old"
				h.lines(sgCapture, "torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing")
				h.exitFailure()
			}, heard: true, want: true, wake: 3 * time.Second},
			{at: time.Second, want: true, wake: 3 * time.Second},
			{at: 2 * time.Second, unitRun: "inv-old"},
		}},
		{name: "e302d08: a backlog run the unit's state does not name settles only by the clock", steps: []step{
			{do: func(h *host) {
				h.inv = "inv-old"
				h.lines(sgCapture, "torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing")
				h.exitFailure()
			}, heard: true, unitRun: "inv-new", want: true, wake: 3 * time.Second},
			{at: time.Second, do: func(h *host) { h.lines("[2025-01-24 09:39:40 TP0] rank 1 exiting") }, heard: true, unitRun: "inv-new", want: true, wake: 4 * time.Second},
			{at: 4 * time.Second, unitRun: "inv-new"},
		}},
		{name: "a failure seen before the host's first line waits FirstLineExtra longer: its follow may start after the table", steps: []step{
			{do: func(h *host) { started(h); failed(h) }, unitRun: "inv-1", want: true, wake: wait + FirstLineExtra},
			{at: 7 * time.Second, unitRun: "inv-1", want: true, wake: wait + FirstLineExtra},
			{at: 7500 * time.Millisecond, do: func(h *host) { h.lines(sgWeights, sgCapture, segfault) }, heard: true, unitRun: "inv-1", want: true, wake: 10500 * time.Millisecond},
			{at: 8 * time.Second, do: func(h *host) { h.exitFailure() }, heard: true, unitRun: "inv-1"},
		}},
		{name: "a named failure with its cause and end read is settled at once", steps: []step{
			{do: started, unitRun: "inv-1"},
			{at: time.Second, do: func(h *host) { h.lines(sgWeights, sgCapture, segfault); h.exitFailure() }, heard: true, unitRun: "inv-1"},
		}},
		{name: "the next run's failure waits from its own first sight", steps: []step{
			{do: startedHeard, heard: true, unitRun: "inv-1"},
			{at: time.Second, do: failed, unitRun: "inv-1", want: true, wake: 4 * time.Second},
			{at: 10 * time.Second, unitRun: "inv-1"},
			{at: 20 * time.Second, do: func(h *host) { h.inv = "inv-2"; started(h); failed(h) }, unitRun: "inv-2", want: true, wake: 23 * time.Second},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, Options{Engine: "sglang"})
			s := NewSettler(wait)
			for i, st := range tc.steps {
				wall := w0.Add(st.at)
				if st.do != nil {
					st.do(h)
				}
				if st.heard {
					s.Heard(wall)
				}
				got, wake := s.Provisional(h.tr.State(), st.unitRun, wall)
				var want time.Time
				if st.want {
					want = w0.Add(st.wake)
				}
				if got != st.want || !wake.Equal(want) {
					t.Errorf("step %d (+%s, phase %s): provisional %v until %s, want %v until %s",
						i, st.at, h.phase(), got, wake.Sub(w0), st.want, want.Sub(w0))
				}
				if s.Pending() != got {
					t.Errorf("step %d: Pending %v, want the last answer %v", i, s.Pending(), got)
				}
			}
		})
	}
}

// TestSettlerDue: a provisional failure is due at its wake, and a line
// heard since the last answer puts its wake off.
func TestSettlerDue(t *testing.T) {
	w0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	s := NewSettler(time.Second)
	s.Heard(w0) // the run's lines were followed
	st := Startup{Phase: Failed, InvocationID: "inv-1", PhaseSince: t0}
	if p, _ := s.Provisional(st, "inv-1", w0); !p {
		t.Fatal("a failure without a diagnosis is not provisional")
	}
	for _, tc := range []struct {
		name  string
		heard time.Duration // a line heard then (0: none)
		at    time.Duration
		want  bool
	}{
		{name: "before its wake", at: 999 * time.Millisecond},
		{name: "at its wake", at: time.Second, want: true},
		{name: "a line heard since puts it off", heard: 500 * time.Millisecond, at: time.Second},
		{name: "until a wait after that line", at: 1500 * time.Millisecond, want: true},
	} {
		if tc.heard > 0 {
			s.Heard(w0.Add(tc.heard))
		}
		if got := s.Due(w0.Add(tc.at)); got != tc.want {
			t.Errorf("%s: due %v, want %v (wake +%s)", tc.name, got, tc.want, s.Wake().Sub(w0))
		}
	}
	if p, _ := s.Provisional(st, "inv-1", w0.Add(2*time.Second)); p || s.Due(w0.Add(3*time.Second)) {
		t.Error("a settled failure is still provisional or due")
	}
}
