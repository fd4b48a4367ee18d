package fleetbench

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/startup"
	"github.com/bringup-dev/bringup/remote/startup/corpus"
)

// TestFailureAt: the failure's time is PID 1's "Failed with result" of the
// run asked for, found by its MESSAGE_ID or its text; the unit's own lines,
// another run's failure and PID 1's other messages are not it.
func TestFailureAt(t *testing.T) {
	const (
		start  = `{"__REALTIME_TIMESTAMP":"1700000000000001","_PID":"1","MESSAGE_ID":"39f53479d3a045ac8e11786248231fbf","MESSAGE":"Started sglang.service.","INVOCATION_ID":"bb"}`
		line   = `{"__REALTIME_TIMESTAMP":"1700000000100000","_PID":"812","MESSAGE":"Failed with result: the process's own words"}`
		exited = `{"__REALTIME_TIMESTAMP":"1700000000200000","_PID":"1","MESSAGE_ID":"98e322203f7a4ed290d09fe03c09fe15","MESSAGE":"sglang.service: Main process exited, code=exited, status=1/FAILURE","INVOCATION_ID":"bb"}`
		oldRun = `{"__REALTIME_TIMESTAMP":"1699999990000000","_PID":"1","MESSAGE_ID":"d9b373ed55a64feb8242e02dbe79a49c","MESSAGE":"sglang.service: Failed with result 'exit-code'.","INVOCATION_ID":"aa"}`
		failed = `{"__REALTIME_TIMESTAMP":"1700000000200123","_PID":"1","MESSAGE_ID":"d9b373ed55a64feb8242e02dbe79a49c","MESSAGE":"sglang.service: Failed with result 'exit-code'.","INVOCATION_ID":"bb"}`
		noID   = `{"__REALTIME_TIMESTAMP":"1700000000300000","_PID":"1","MESSAGE":"sglang.service: Failed with result 'exit-code'.","INVOCATION_ID":"bb"}`
	)
	join := func(l ...string) string { return strings.Join(l, "\n") + "\n" }
	for _, c := range []struct {
		name, json, inv string
		want            int64 // µs; 0: an error
		err             string
	}{
		{"the run's failure", join(oldRun, start, line, exited, failed), "bb", 1700000000200123, ""},
		{"any run's first failure", join(oldRun, start, failed), "", 1699999990000000, ""},
		{"by its text when no MESSAGE_ID", join(start, line, noID), "bb", 1700000000300000, ""},
		{"another run's failure only", join(oldRun, start, exited), "bb", 0, "for invocation bb"},
		{"the process's own line is not PID 1's", join(line), "", 0, "no PID 1"},
		{"nothing", "", "bb", 0, "no PID 1"},
		{"not JSON", "-- No entries --\n", "bb", 0, "journal entry"},
		{"a bad timestamp", `{"__REALTIME_TIMESTAMP":"soon","_PID":"1","MESSAGE_ID":"d9b373ed55a64feb8242e02dbe79a49c","INVOCATION_ID":"bb"}`, "bb", 0, "__REALTIME_TIMESTAMP"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := failureAt(c.json, c.inv)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("failureAt: %v, %v; want an error with %q", got, err, c.err)
				}
				return
			}
			if err != nil || !got.Equal(time.UnixMicro(c.want)) {
				t.Fatalf("failureAt: %v, %v; want %v", got, err, time.UnixMicro(c.want))
			}
		})
	}
}

// TestCauseFigures: the distribution is of settled runs with a failure
// time; a settled run without one counts as settled, not timed; a wrong
// cause is a miss, an unsettled run neither timed nor right.
func TestCauseFigures(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	run := func(host, want, got string, settled bool, after time.Duration) causeRun {
		r := causeRun{host: host, log: "log-" + host, want: want, got: got, settled: settled, at: t0.Add(after)}
		if after > 0 {
			r.failedAt = t0
		}
		return r
	}
	for _, c := range []struct {
		name string
		runs []causeRun
		want Causes
	}{
		{"none", nil, Causes{}},
		{"all right", []causeRun{
			run("gpu4", "gpu-oom", "gpu-oom", true, 3200*time.Millisecond),
			run("gpu8", "jit-build", "jit-build", true, 3100*time.Millisecond),
			run("gpu12", "unrecognised", "unrecognised", true, 8*time.Second),
		}, Causes{Failing: 3, Settled: 3, Right: 3,
			TimeToCause: Dist{N: 3, MinMs: 3100, P50ms: 3200, P99ms: 8000, MaxMs: 8000},
			Times: []CauseTime{{Host: "gpu12", Log: "log-gpu12", Cause: "unrecognised", Ms: 8000},
				{Host: "gpu4", Log: "log-gpu4", Cause: "gpu-oom", Ms: 3200}, {Host: "gpu8", Log: "log-gpu8", Cause: "jit-build", Ms: 3100}}}},
		{"a miss, an unsettled, an untimed", []causeRun{
			run("gpu4", "gpu-oom", "gpu-oom", true, 3*time.Second),
			run("gpu8", "jit-build", "unit-failed", true, 4*time.Second),
			run("gpu12", "import-error", "", false, 0),
			{host: "gpu16", log: "log-gpu16", want: "model-fetch", got: "model-fetch", settled: true, at: t0, why: "no PID 1 \"Failed with result\" entry"},
		}, Causes{Failing: 4, Settled: 3, Right: 2,
			TimeToCause: Dist{N: 2, MinMs: 3000, P50ms: 3000, P99ms: 4000, MaxMs: 4000},
			Times:       []CauseTime{{Host: "gpu8", Log: "log-gpu8", Cause: "unit-failed", Ms: 4000}, {Host: "gpu4", Log: "log-gpu4", Cause: "gpu-oom", Ms: 3000}},
			Misses:      []CauseMiss{{Host: "gpu8", Log: "log-gpu8", Want: "jit-build", Got: "unit-failed"}},
			Unmeasured:  []string{"gpu12 log-gpu12: no settled cause", "gpu16 log-gpu16: no PID 1 \"Failed with result\" entry"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := causeFigures(c.runs); !reflect.DeepEqual(got, c.want) {
				t.Errorf("causeFigures:\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// TestSettledCause: only the replayed run's failure, settled and
// diagnosed, is a cause; the run before, a provisional failure and one
// without a diagnosis are not.
func TestSettledCause(t *testing.T) {
	was := startup.Startup{Run: 1, InvocationID: "aa", Phase: startup.Serving}
	diag := &startup.Diagnosis{Cause: "gpu-oom"}
	for _, c := range []struct {
		name string
		h    remote.HostState
		want bool
	}{
		{"the new run failed, settled", remote.HostState{Startup: startup.Startup{Run: 2, InvocationID: "bb", Phase: startup.Failed, Diag: diag}}, true},
		{"still the run before", remote.HostState{Startup: startup.Startup{Run: 1, InvocationID: "aa", Phase: startup.Failed, Diag: diag}}, false},
		{"provisional", remote.HostState{Provisional: true, Startup: startup.Startup{Run: 2, InvocationID: "bb", Phase: startup.Failed, Diag: diag}}, false},
		{"no diagnosis", remote.HostState{Startup: startup.Startup{Run: 2, InvocationID: "bb", Phase: startup.Failed}}, false},
		{"starting", remote.HostState{Startup: startup.Startup{Run: 2, InvocationID: "bb", Phase: startup.Phase("weights")}}, false},
	} {
		if got := settledCause(c.h, was); got != c.want {
			t.Errorf("%s: settledCause %v, want %v", c.name, got, c.want)
		}
	}
}

// TestCauseCases: the failing hosts are every every-th, replaying the
// scale rig's failed logs in its order, each with its log's body.
func TestCauseCases(t *testing.T) {
	logs := []corpus.Log{
		{Name: "a-served", Expect: "served", Body: "ready\n"},
		{Name: "b-failed", Expect: "failed", Cause: "gpu-oom", Body: "CUDA out of memory\n"},
		{Name: "c-running", Expect: "running", Body: "loading\n"},
		{Name: "d-failed", Expect: "failed", Cause: "jit-build", Body: "ninja: build stopped\n"},
	}
	hosts := []string{"gpu1", "gpu2", "gpu3", "gpu4", "gpu5", "gpu6", "gpu7", "gpu8", "gpu9"}
	runs, bodies, err := causeCases(logs, hosts, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := []causeRun{{host: "gpu4", log: "b-failed", want: "gpu-oom"}, {host: "gpu8", log: "d-failed", want: "jit-build"}}
	if !reflect.DeepEqual(runs, want) {
		t.Errorf("runs %+v, want %+v", runs, want)
	}
	if len(bodies) != 2 || bodies["gpu4"].Body != "CUDA out of memory\n" || bodies["gpu8"].Body != "ninja: build stopped\n" {
		t.Errorf("bodies %+v", bodies)
	}
	if _, _, err := causeCases(logs[:1], hosts, 4); err == nil {
		t.Error("a corpus with no failed log: no error")
	}
}

// TestReplayCmd: the host is readied the way TestCorpusOnTestbed readies
// it, the log's body carried base64, and restored by removing what it
// wrote.
func TestReplayCmd(t *testing.T) {
	cmd := replayCmd(corpus.Log{Body: "boom 'quoted'\n"})
	for _, want := range []string{
		"systemctl stop sglang.service; systemctl reset-failed sglang.service;",
		"printf %s Ym9vbSAncXVvdGVkJwo= | base64 -d > /var/lib/corpus/log",
		`ExecStart=\nExecStart=/bin/sh -c "cat /var/lib/corpus/log; exit 1"\n' > /run/systemd/system/sglang.service.d/zz-corpus.conf`,
		"&& systemctl daemon-reload",
	} {
		if !strings.Contains(cmd, want) {
			t.Errorf("replayCmd lacks %q:\n%s", want, cmd)
		}
	}
	if strings.Contains(cmd, "systemctl start") {
		t.Errorf("replayCmd starts the unit (every host starts at once, later):\n%s", cmd)
	}
	for _, want := range []string{"rm -f /run/systemd/system/sglang.service.d/zz-corpus.conf", "systemctl daemon-reload", "systemctl reset-failed sglang.service", "systemctl start sglang.service"} {
		if !strings.Contains(restoreCmd, want) {
			t.Errorf("restoreCmd lacks %q: %s", want, restoreCmd)
		}
	}
}
