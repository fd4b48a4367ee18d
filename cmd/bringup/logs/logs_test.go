package logs

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
)

// line is a journal event of the unit at t0+sec seconds.
func line(sec int, msg string) event.Event {
	t0 := time.Date(2026, 3, 1, 23, 17, 0, 0, time.UTC)
	return event.Event{Host: "gpu1", Kind: event.KindJournal, Time: t0.Add(time.Duration(sec) * time.Second),
		Journal: &event.Journal{Unit: "sglang.service", InvocationID: "inv1", PID: 42, Message: msg}}
}

// startupLines is a run that loads, allocates, begins capture and fails
// in it with a traceback.
var startupLines = []string{
	"Load weight begin. avail mem=78.00 GB",
	"Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=62.01 GB",
	"Memory pool end. avail mem=18.61 GB",
	"Capture cuda graph begin. This can take up to several minutes.",
	"Exception in run_tp_server:",
	"Traceback (most recent call last):",
	`  File "/sgl/python/sglang/srt/model_executor/cuda_graph_runner.py", line 300, in capture`,
	"torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing",
}

// TestPrinterMarksPhasesAndDiagnoses: each line is printed with its
// time, the line where a phase begins carries its mark, a host's control
// sequence is made harmless, and the verdict names the cause.
func TestPrinterMarksPhasesAndDiagnoses(t *testing.T) {
	var out bytes.Buffer
	p := NewPrinter(&out, startup.Options{Engine: "sglang"}, time.UTC)
	for i, msg := range startupLines {
		p.Line(line(i, msg))
	}
	p.Line(line(20, "evil \x1b]0;pwned\x07title \x1b[2Jclear"))
	p.State("failed", "failed", time.Time{})
	if !p.Settled() {
		t.Fatalf("a failed run is not settled:\n%s", out.String())
	}
	p.Verdict()
	got := out.String()
	for _, want := range []string{
		"Mar 01 23:17:00 ▶ [weights] Load weight begin.",
		"Mar 01 23:17:01 ▶ [kv-cache] Load weight end.",
		"Mar 01 23:17:03 ▶ [graph-capture] Capture cuda graph begin.",
		"Mar 01 23:17:02   Memory pool end.",
		"\n──\nFAILED in graph-capture:",
		"hint: ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.ContainsRune(got, 0x1b) || strings.ContainsRune(got, 0x07) {
		t.Errorf("a control sequence reached the output:\n%q", got)
	}
	if p.Settled() {
		t.Error("the verdict once printed is still to print")
	}
}

// TestPrinterUnderWay: a run still starting says where it is; a gap says
// what it is.
func TestPrinterUnderWay(t *testing.T) {
	var out bytes.Buffer
	p := NewPrinter(&out, startup.Options{Engine: "sglang"}, time.UTC)
	p.Line(line(0, startupLines[0]))
	p.Line(event.Event{Kind: event.KindGap, Time: line(1, "").Time, Gap: &event.Gap{Reason: "reconnect"}})
	p.State("active", "running", time.Time{})
	if p.Settled() {
		t.Error("a run loading its weights is settled")
	}
	p.Verdict()
	for _, want := range []string{"-- reconnect --", "UNDER WAY: in weights"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestQuery(t *testing.T) {
	since := time.Unix(1796000000, 250000000)
	for _, tc := range []struct {
		n     int
		since time.Time
		want  []string
	}{
		{n: 50, want: []string{"exec journalctl -q -u 'sglang.service' -o export", " -n 50"}},
		{since: since, want: []string{"--since=@1796000000.250000"}},
		{n: 5, since: since, want: []string{"--since=@1796000000.250000 -n 5"}},
		{want: []string{"ExecMainStartTimestamp", "--since=@$((s - 2))", "-n 200"}},
	} {
		got := Query("sglang.service", tc.n, tc.since)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("Query(%d, %v) = %q, lacks %q", tc.n, tc.since, got, w)
			}
		}
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		err  string
	}{
		{in: "10m", want: now.Add(-10 * time.Minute)},
		{in: "2h30m", want: now.Add(-150 * time.Minute)},
		{in: "2026-03-01 10:00:00", want: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)},
		{in: "2026-03-01 10:00", want: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)},
		{in: "2026-03-01T10:00:00+02:00", want: time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)},
		{in: "-5m", err: "positive"},
		{in: "yesterday", err: "want a duration"},
	} {
		got, err := ParseSince(tc.in, now, time.UTC)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
		case err != nil || !got.Equal(tc.want):
			t.Errorf("%q: %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}
