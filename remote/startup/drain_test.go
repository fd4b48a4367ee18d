package startup_test

import (
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
)

// TestExitLoggedBeforeTheStreamDrained: journald reads a unit's stdout
// stream apart from PID 1's messages, so a process that prints its whole
// log and exits at once can have systemd's "Main process exited" line
// stamped before its own lines. Seen on the test hosts (TestCorpusOnTestbed
// replaying sglang-28299's log as a unit's output: `journalctl -o short`
// showed the exit line first, and the run was said to fail in starting).
// The lines read within a second of the exit were printed before it: the
// run fails where the log itself says, as explain of the log has it.
func TestExitLoggedBeforeTheStreamDrained(t *testing.T) {
	var log corpusLog
	for _, c := range readCorpus(t) {
		if strings.HasPrefix(c.Name, "sglang-28299-") {
			log = c
		}
	}
	if log.Name == "" {
		t.Fatal("corpus log sglang-28299-… not found")
	}
	want := explainCorpus(t, log).Startup.Diag
	if want == nil || want.Phase != startup.Init {
		t.Fatalf("explain of the log: %+v, want a failure in init", want)
	}
	at := time.Date(2026, 12, 6, 7, 53, 43, 0, time.UTC)
	tr := startup.NewTracker(startup.Options{Engine: "auto", Kernels: kernels.DefaultCatalog()})
	const inv = "5f0c4e7f2a8b4d3c9e1f00aa11bb22cc"
	sys := func(at time.Time, msg string) {
		tr.Apply(event.Event{Kind: event.KindJournal, Time: at, Journal: &event.Journal{Unit: "sglang.service", InvocationID: inv, PID: 1, Priority: 6, Message: msg}})
	}
	sys(at.Add(-time.Millisecond), "Started sglang.service - SGLang.")
	sys(at, "sglang.service: Main process exited, code=exited, status=1/FAILURE")
	for i, l := range strings.Split(strings.TrimRight(log.Body, "\n"), "\n") {
		tr.Apply(event.Event{Kind: event.KindJournal, Time: at.Add(time.Duration(i+1) * 100 * time.Microsecond),
			Journal: &event.Journal{Unit: "sglang.service", InvocationID: inv, PID: 4242, Priority: 6, Message: l}})
	}
	sys(at.Add(50*time.Millisecond), "sglang.service: Failed with result 'exit-code'.")
	got := tr.State().Diag
	if got == nil || got.Cause != want.Cause || got.Phase != want.Phase {
		t.Fatalf("the journal's order: %+v, want %s in %s as explain of the log", got, want.Cause, want.Phase)
	}

	// A line of the run read well after the exit is not how far it got.
	late := startup.NewTracker(startup.Options{Engine: "sglang", Kernels: kernels.DefaultCatalog()})
	for _, ev := range []struct {
		at  time.Duration
		pid int
		msg string
	}{
		{0, 1, "Started sglang.service - SGLang."},
		{time.Second, 4242, "[2026-06-15 19:57:33 TP5] Init torch distributed begin."},
		{2 * time.Second, 1, "sglang.service: Main process exited, code=exited, status=1/FAILURE"},
		{5 * time.Second, 4242, "[2026-06-15 19:57:38 TP0] Load weight begin. avail mem=30.12 GB"},
	} {
		late.Apply(event.Event{Kind: event.KindJournal, Time: at.Add(ev.at), Journal: &event.Journal{Unit: "sglang.service", InvocationID: inv, PID: ev.pid, Priority: 6, Message: ev.msg}})
	}
	if d := late.State().Diag; d == nil || d.Phase != startup.Init {
		t.Errorf("a line 3 s after the exit moved the failed run on: %+v, want failed in init", d)
	}
}
