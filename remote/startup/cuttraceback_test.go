package startup

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/event"
)

// TestCutTracebackLive: a run whose log ends inside a traceback, its
// exception line never written, is unrecognised (quoting the traceback's
// first line) once the journal shows the process's failed end, as
// `bringup explain` says of the same text: whether the unit's state came
// before the lines or after them. Until then the unit's state alone
// explains it (unit-failed, not settled), since the exception line may
// still come; one that comes after PID 1's end names the cause.
func TestCutTracebackLive(t *testing.T) {
	tbHead := "[2025-01-24 09:39:25 TP0] Scheduler hit an exception: Traceback (most recent call last):"
	frames := []string{
		`  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/managers/scheduler.py", line 1748, in run_scheduler_process`,
		`    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)`,
		`  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/model_executor/model_runner.py", line 220, in load_model`,
		`    self.model = get_model(`,
	}
	cut := append([]string{sgWeights, "Traceback (most recent call last):"}, frames...)
	ninja := "FileNotFoundError: [Errno 2] No such file or directory: 'ninja'"
	for _, tc := range []struct {
		name  string
		lines []string // the engine's text, as explain reads it
		// dbusFirst: the unit's failure comes before the lines (D-Bus
		// beats the journal); late: a line stamped after PID 1's end.
		dbusFirst bool
		late      string
		// before is the cause before PID 1's end ("": not failed yet).
		before, cause, quote string
	}{
		{name: "the lines, then PID 1's end", lines: cut,
			cause: CauseUnrecognised, quote: "Traceback (most recent call last):"},
		{name: "the unit's failure before the lines", lines: cut, dbusFirst: true,
			before: CauseUnitFailed, cause: CauseUnrecognised, quote: "Traceback (most recent call last):"},
		{name: "a wrapper's traceback header", lines: append([]string{sgWeights, tbHead}, frames...),
			cause: CauseUnrecognised, quote: "Scheduler hit an exception"},
		{name: "the exception line after PID 1's end names the cause", lines: cut, late: ninja,
			cause: "jit-build", quote: ninja},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, Options{Engine: "sglang"})
			h.unit("active", "running", "success")
			if tc.dbusFirst {
				h.unit("failed", "failed", "exit-code")
			}
			h.lines(tc.lines...)
			if d := h.tr.State().Diag; (d == nil) != (tc.before == "") || d != nil && d.Cause != tc.before {
				t.Fatalf("before PID 1's end: diagnosis %+v, want cause %q", d, tc.before)
			}
			h.exitFailure()
			text := tc.lines
			if tc.late != "" {
				h.lines(tc.late)
				text = append(slices.Clone(text), tc.late)
			}
			st := h.tr.State()
			if st.Phase != Failed || st.Diag == nil || !st.LogEnded {
				t.Fatalf("phase %s, diagnosis %+v, log ended %v: want failed, diagnosed, ended", st.Phase, st.Diag, st.LogEnded)
			}
			d := st.Diag
			if d.Cause != tc.cause {
				t.Errorf("cause %q (%s), want %q", d.Cause, d.Summary, tc.cause)
			}
			if len(d.Evidence) == 0 || !strings.Contains(d.Evidence[0], tc.quote) {
				t.Errorf("evidence %q, want the first to hold %q", d.Evidence, tc.quote)
			}
			var evs []event.Event
			for i, l := range text {
				evs = append(evs, event.Event{Kind: event.KindJournal, Time: t0.Add(time.Duration(i) * time.Second),
					Journal: &event.Journal{Priority: 6, Message: l}})
			}
			x := Explain(evs, Options{Engine: "sglang", Kernels: kernels.DefaultCatalog()})
			if x.Outcome != OutcomeFailed || x.Startup.Diag == nil || x.Startup.Diag.Cause != d.Cause {
				t.Errorf("explain of the same text: %s %+v, live says %q", x.Outcome, x.Startup.Diag, d.Cause)
			}
		})
	}
}
