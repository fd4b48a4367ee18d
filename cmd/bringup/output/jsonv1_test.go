package output

import (
	"bufio"
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/bench"
	"github.com/bringup-dev/bringup/remote/deployment"
	"github.com/bringup-dev/bringup/remote/doctor"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/logfile"
	"github.com/bringup-dev/bringup/remote/rollout"
	"github.com/bringup-dev/bringup/remote/startup"
)

// TestValidateLine: the validator takes the schema's lines and refuses
// what scripts tripped on (string durations and progress, fractional
// times jq's fromdateiso8601 rejects, no version), unknown kinds and
// fields, and missing required fields.
func TestValidateLine(t *testing.T) {
	for _, tc := range []struct {
		line, err string
	}{
		{`{"v":1,"time":"2026-11-30T05:25:31Z","kind":"phase","host":"gpu1","phase":"weights","progress":{"done":3,"total":65,"label":"shards"},"elapsed":12}`, ""},
		{`{"v":1,"time":"2026-11-30T05:25:31Z","kind":"summary","command":"doctor","outcome":"ok","exit":0,"hosts":[{"host":"gpu1","outcome":"ok"}]}`, ""},
		{`{"time":"2026-11-30T05:25:31Z","kind":"phase","host":"gpu1","phase":"weights"}`, `"v" is , want 1`},
		{`{"v":2,"time":"2026-11-30T05:25:31Z","kind":"phase","host":"gpu1","phase":"weights"}`, `"v" is 2`},
		{`{"v":1,"time":"2026-11-30T05:25:31.123456Z","kind":"phase","host":"gpu1","phase":"weights"}`, `"time"`},
		{`{"v":1,"time":"2026-11-30T05:25:31+01:00","kind":"phase","host":"gpu1","phase":"weights"}`, `"time"`},
		{`{"v":1,"time":"2026-11-30T05:25:31Z","kind":"phase","host":"gpu1","phase":"weights","elapsed":"12s"}`, `"elapsed": want a number`},
		{`{"v":1,"time":"2026-11-30T05:25:31Z","kind":"phase","host":"gpu1","phase":"weights","progress":"3/65 shards"}`, `"progress": want a progress`},
		{`{"v":1,"time":"2026-11-30T05:25:31Z","kind":"phase","host":"gpu1"}`, `kind phase: no "phase"`},
		{`{"v":1,"time":"2026-11-30T05:25:31Z","kind":"phase","host":"gpu1","phase":"weights","seen":"x"}`, `field "seen" is not in the schema`},
		{`{"v":1,"time":"2026-11-30T05:25:31Z","kind":"bogus"}`, `unknown kind "bogus"`},
		{`{"v":1,"kind":"summary","command":"doctor","outcome":"ok","exit":0}`, `no "time"`},
		{`{"v":1,"time":"2026-11-30T05:25:31Z","kind":"summary","command":"doctor","outcome":"ok","exit":0,"hosts":[{"host":"gpu1"}]}`, `every host wants host and outcome`},
		{`{"v":1,"time":"2026-11-30T05:25:31Z","kind":"summary","command":"explain","outcome":"failed","exit":1,"timed":"yes"}`, `"timed": want a bool`},
		{`{"v":1,"time":"2026-11-30T05:25:31Z","kind":"summary","command":"explain","outcome":"failed","exit":1,"trail":[{"phase":"weights","seconds":"10s"}]}`, `seconds wants a number`},
		{`{"v":1,"time":"2026-11-30T05:25:31Z","kind":"host-key","host":"gpu1","summary":"k","seen":"2026-11-30T05:25:31.000001Z"}`, `field "seen" is not in the schema`},
		{`[1]`, `not a JSON object`},
	} {
		err := ValidateLine([]byte(tc.line))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.line, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want %q", tc.line, err, tc.err)
		}
	}
}

// checkLines validates every line of out and returns them.
func checkLines(t *testing.T, out string) []string {
	t.Helper()
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if err := ValidateLine(sc.Bytes()); err != nil {
			t.Errorf("line %d: %v\n%s", len(lines)+1, err, sc.Text())
		}
		lines = append(lines, sc.Text())
	}
	return lines
}

// TestEmittersFollowTheSchema: every printer of the v1 schema, fed the
// shapes it meets (a doctor report with fixes, a failure with its
// diagnosis, progress, a timeout), prints lines the schema takes.
func TestEmittersFollowTheSchema(t *testing.T) {
	var b bytes.Buffer
	at := time.Date(2026, 11, 30, 5, 25, 31, 123456789, time.UTC)
	rep := &doctor.Report{Host: "gpu1", Target: "root@10.0.0.1:22", Checks: []doctor.Check{
		{Name: "ssh", Status: doctor.OK, Detail: "connected"},
		{Name: "sudo", Status: doctor.Fail, Detail: "a password is required", Fix: "add NOPASSWD for systemctl"},
		{Name: "journald", Status: doctor.Skip, Detail: "needs sudo"},
		{Name: "nvidia-smi", Status: doctor.Warn, Detail: "not found"},
	}}
	ho := DoctorJSON(&b, rep)
	if ho.Outcome != "failed" || strings.Join(ho.Failed, ",") != "sudo" {
		t.Errorf("doctor outcome %+v", ho)
	}
	Summary(&b, "doctor", "failed", 1, []HostOutcome{ho}, "")
	p := ActionsJSON{W: &b}
	states := map[string]remote.HostState{"gpu3": {Name: "gpu3", Unit: "sglang.service"}}
	PlanJSON(&b, []string{"gpu3"}, states, []remote.Action{{Kind: remote.ActSetMode, Kernel: "kdtree-verify", Mode: "on"}, {Kind: remote.ActRestart, Force: true}})
	p.Refused("gpu3", remote.Action{Kind: remote.ActRestart}, remote.ErrReadOnly)
	p.Action(event.Event{Host: "gpu3", Time: at, Action: &event.ActionResult{ID: 1, Name: "redeploy kdtree-verify", Stage: event.ActionProgress, Percent: 0, Detail: "3/40 files"}})
	p.Action(event.Event{Host: "gpu3", Time: at, Action: &event.ActionResult{ID: 1, Name: "restart", Stage: event.ActionFailed, Err: "unit not found"}})
	started := at.Add(-10 * time.Minute)
	p.Change(remote.HostChange{Host: "gpu3", Change: startup.Change{Time: at, Kind: startup.ChangePhase, Phase: startup.Weights, From: startup.Init,
		Progress: startup.Progress{Done: 3, Total: 65, Label: "shards"}}}, started)
	p.Change(remote.HostChange{Host: "gpu3", Change: startup.Change{Time: at, Kind: startup.ChangeUnit, Phase: startup.Weights, Unit: "failed/failed"}}, time.Time{})
	p.Change(remote.HostChange{Host: "gpu3", Change: startup.Change{Time: at, Kind: startup.ChangeFail, Phase: startup.Failed, From: startup.GraphCapture,
		Diag: &startup.Diagnosis{Cause: "graph-capture-host-sync", Summary: "graph capture failed", Hint: "switch mode", Evidence: []string{"CUDA error"},
			KernelMode: "kdtree-verify=validate", Phase: startup.GraphCapture, Fix: &startup.Fix{Kernel: "kdtree-verify", Mode: "on"}}}}, started)
	p.Change(remote.HostChange{Host: "gpu1", Change: startup.Change{Time: at, Kind: startup.ChangeStats, Phase: startup.Serving,
		Stats: &startup.Sample{Time: at, GenTPS: 1920.5, PromptTPS: 12, Running: 8, KVUsage: 0.12, Graph: "on"}}}, started)
	h := remote.HostState{Name: "gpu3"}
	h.Startup.Phase, h.Startup.PhaseSince, h.Startup.InvocationID = startup.Failed, at, "5bf6e81d"
	h.Startup.Diag = &startup.Diagnosis{Cause: "graph-capture-host-sync", Summary: "graph capture failed"}
	p.Ended(h)
	hs := AppliedJSON(&b, []fleet.Applied{{Host: "gpu3", Phase: startup.Weights}, {Host: "gpu4", Finished: true, Failed: true}}, deadline{})
	Summary(&b, "restart", "timeout", 2, hs, "")
	// watch: a host key, changes received a second late (one of a
	// deployment's node), its summary
	diagNCCL := &startup.Diagnosis{Cause: "nccl-error", Summary: "NCCL failed"}
	Notice(&b, event.Event{Host: "gpu1", Kind: event.KindGap, Time: at, Seen: at.Add(time.Second),
		Gap: &event.Gap{Reason: event.GapHostKey, Message: "learned new host key for gpu1"}}, true)
	Change(&b, remote.HostChange{Host: "gpu1", Seen: at.Add(1500 * time.Millisecond), Change: startup.Change{Time: at, Kind: startup.ChangePhase,
		Phase: startup.Weights, Progress: startup.Progress{Done: 1, Total: 2}}}, started, true)
	NodeChange(&b, remote.HostChange{Host: "gpu1", Seen: at.Add(1500 * time.Millisecond), Change: startup.Change{Time: at, Kind: startup.ChangeFail,
		Phase: startup.Failed, Diag: diagNCCL}}, started, "gpu1:5000", true)
	WatchSummary(&b, "watch", []remote.HostState{h, {Name: "gpu1"}}, Deployments{}, "failed", 1, "")
	// explain: its changes and its summary with the trail and diagnosis
	diag := &startup.Diagnosis{Cause: "graph-capture-host-sync", Summary: "graph capture failed", Hint: "switch mode", Evidence: []string{"CUDA error"},
		Phase: startup.GraphCapture, Fix: &startup.Fix{Kernel: "kdtree-verify", Mode: "on"}}
	x := startup.Explanation{Outcome: startup.OutcomeFailed, Changes: []startup.Change{{Time: at, Kind: startup.ChangeFail, Phase: startup.Failed, Diag: diag}},
		Startup: startup.Startup{Engine: "sglang", Phase: startup.Failed, StartedAt: started, Diag: diag,
			Spans: []startup.Span{{Phase: startup.Weights, Start: started, End: at}, {Phase: startup.GraphCapture, Start: at, Inferred: true}}}}
	ExplainJSON(&b, x, logfile.Summary{Format: logfile.FormatJournal, Timed: true, Lines: 3}, 1, nil)
	// status: a host with every part it may carry, one barely known
	gpu3 := remote.HostState{Name: "gpu3", Unit: "sglang.service", Conn: event.Conn{State: event.ConnUp}, KernelHashes: map[string]string{"kdtree-verify": "ab12"},
		UnitState:  event.Unit{Name: "sglang.service", LoadState: "loaded", ActiveState: "active", SubState: "running", Path: "dbus"},
		Probe:      event.Probe{Path: "/health", Status: 200, OK: true, Latency: 12 * time.Millisecond},
		Throughput: history.ModeAB{Modes: "kdtree-verify=on", TPS: 1921.7, Live: true, Base: "off", BaseTPS: 480, BaseRuns: 4, Ratio: 4}}
	gpu3.Startup.Phase, gpu3.Startup.PhaseSince, gpu3.Startup.Diag = startup.Failed, at, diag
	gpu3.Startup.Progress = startup.Progress{Done: 3, Total: 65, Label: "shards"}
	gpu3.Startup.Stats = &startup.Stats{Latest: startup.Sample{GenTPS: 10}}
	StatusJSON(&b, []remote.HostState{gpu3, {Name: "gpu9"}}, []deployment.Declared{{Name: "kimi", Hosts: []string{"gpu9", "gpu3"}}}, "failed", 1)
	// bench: a result and a refusal
	Bench(&b, "gpu1", &bench.Result{Model: "m", Requests: 8, OK: 8, Concurrency: 8, Duration: 280 * time.Millisecond, TTFTP50: 34 * time.Millisecond}, "", true)
	Bench(&b, "gpu2", nil, "not serving (phase weights)", true)
	// init: a unit found, a host without one, one not reached, the summary
	fs := []Found{{Host: "gpu1", Unit: "sglang.service", Engine: "sglang", Port: 30000, State: "active", Also: []string{"vllm.service (vllm, inactive)"}},
		{Host: "gpu2"}, {Host: "gpu9", ConnErr: "gpu9: dial tcp 10.0.0.9:22: connect: connection refused"}}
	var found []HostOutcome
	for _, f := range fs {
		found = append(found, InitJSON(&b, f))
	}
	InitSummary(&b, "failed", 1, found, "/home/u/.config/bringup/config.yaml", "")
	// rollout: steps issued, refused and done, lanes, a halt with and
	// without a diagnosis, the rollback, rates, and the summary
	ro := NewRollout(&b, true, func() time.Time { return at })
	off, on := map[string]string{"kdtree-verify": "off"}, map[string]string{"kdtree-verify": "on"}
	ro.Step(rollout.Step{Host: "gpu1", Action: remote.Action{Kind: remote.ActSetMode, Kernel: "kdtree-verify", Mode: "on"}}, 7, nil)
	ro.Step(rollout.Step{Host: "gpu2", Action: remote.Action{Kind: remote.ActRestart}}, 0, remote.ErrReadOnly)
	ro.Actions([]event.Event{{Host: "gpu1", Kind: event.KindAction, Time: at, Seen: at.Add(250 * time.Millisecond),
		Action: &event.ActionResult{ID: 7, Name: "mode kdtree-verify=on", Stage: event.ActionDone}}}, func(int) bool { return true })
	lanes := []rollout.Lane{
		{Host: "gpu1", Stage: rollout.StageServing, Phase: startup.Serving, PrevMode: "off", Since: at.Add(-16 * time.Minute), Until: at,
			Before: rollout.Rate{Modes: off, TPS: 480.43}, After: rollout.Rate{Modes: on, TPS: 1920}},
		{Host: "gpu2", Stage: rollout.StageFailed, Phase: startup.Failed, Since: at.Add(-time.Minute), Until: at, Diag: diag,
			Phases: []startup.Span{{Phase: startup.Weights, Start: at.Add(-time.Minute)}}},
		{Host: "gpu3", Stage: rollout.StageUntouched, Before: rollout.Rate{Modes: off, TPS: 400}},
		{Host: "gpu4", Stage: rollout.StageRestarting, Action: "restart", Since: at.Add(-time.Minute), ConnErr: "dial tcp 10.0.0.4:22: connect: connection refused"},
	}
	ro.Lanes(lanes)
	ro.Halt(rollout.State{Status: rollout.Halted, Host: "gpu2", Diag: diag}, lanes)
	ro.Halt(rollout.State{Status: rollout.Halted, Host: "gpu2", Err: "gpu2: not serving after 2m0s", TimedOut: true}, lanes)
	ro.Rollback("gpu2", "kdtree-verify=off", "started", nil)
	ro.Summary(rollout.Plan{Hosts: []string{"gpu1", "gpu2", "gpu3"}}, lanes, rollout.State{Status: rollout.Halted, Host: "gpu2", Diag: diag}, "halted", 1)
	NewRollout(&b, true, func() time.Time { return at }).Summary(rollout.Plan{Hosts: []string{"gpu1"}}, nil, rollout.State{Err: "refused"}, "refused", 3)
	lines := checkLines(t, b.String())
	kinds := map[string]bool{}
	for _, l := range lines {
		kinds[regexp.MustCompile(`"kind":"([a-z-]+)"`).FindStringSubmatch(l)[1]] = true
	}
	for _, k := range Schema() {
		if !kinds[k.Name] {
			t.Errorf("no line of kind %s was printed: the test does not cover it", k.Name)
		}
	}
	for _, want := range []string{`"percent":0`, `"elapsed":600`, `"progress":{"done":3,"total":65,"label":"shards"}`, `"time":"2026-11-30T05:25:31Z"`,
		`"fix":"bringup mode gpu3 kdtree-verify=on --restart"`, `"effects":["set kdtree-verify`, `"exit":2`, `"latency":1.5`,
		`"kind":"host-key","host":"gpu1","latency":1,"summary":"learned new host key for gpu1"`, `"command":"watch","exit":1,"outcome":"failed"`,
		`"trail":[{"phase":"weights","start":"2026-11-30T05:15:31Z","end":"2026-11-30T05:25:31Z","seconds":600},{"phase":"graph-capture","start":"2026-11-30T05:25:31Z","inferred":true}]`,
		`"command":"explain","exit":1,"outcome":"failed"`, `"format":"journal","timed":true,"lines":3,"engine":"sglang"`,
		`"probe":{"path":"/health","status":200,"ok":true,"latency":0.012}`, `"since":"2026-11-30T05:25:31Z"`, `"command":"status","exit":1`, `"seconds":0.28`, `"ttft_p50":0.034`, `"kind":"bench","host":"gpu2","err":"not serving (phase weights)"`,
		`"kind":"found","host":"gpu1","unit":"sglang.service","state":"active","port":30000,"also":["vllm.service (vllm, inactive)"],"engine":"sglang"`,
		`"kind":"found","host":"gpu9","conn_error":"gpu9: dial tcp 10.0.0.9:22: connect: connection refused"`,
		`"kind":"step","host":"gpu1","action":"mode kdtree-verify=on","id":7,"outcome":"issued"`,
		`"kind":"step","host":"gpu2","action":"restart","err":"read-only mode: actions that change hosts are disabled","outcome":"refused"`,
		`"kind":"step","host":"gpu1","action":"mode kdtree-verify=on","latency":0.25,"id":7,"outcome":"done"`,
		`"kind":"stage","host":"gpu1","stage":"serving","phase":"serving","elapsed":960,"outcome":"serving"`,
		`"kind":"throughput","host":"gpu1","before":{"modes":"kdtree-verify=off","decode_tps":480.43},"after":{"modes":"kdtree-verify=on","decode_tps":1920},"ratio":4}`,
		`"kind":"stage","host":"gpu4","action":"restart","stage":"restarting","elapsed":60,"conn_error":"dial tcp 10.0.0.4:22: connect: connection refused"}`,
		`"kind":"halted","host":"gpu2","err":"gpu2: not serving after 2m0s","timed_out":true}`,
		`"kind":"rollback","host":"gpu2","to":"kdtree-verify=off","outcome":"started"}`,
		`"hosts":[{"host":"gpu1","outcome":"serving","phase":"serving","prev_mode":"off","before":{"modes":"kdtree-verify=off","decode_tps":480.43},"after":{"modes":"kdtree-verify=on","decode_tps":1920},"ratio":4},{"host":"gpu2","outcome":"failed","phase":"failed","cause":"graph-capture-host-sync"},{"host":"gpu3","outcome":"untouched","before":{"modes":"kdtree-verify=off","decode_tps":400}},{"host":"gpu4","outcome":"restarting"}]`,
		`"hosts":[{"host":"gpu1","outcome":"found"},{"host":"gpu2","outcome":"none"},{"host":"gpu9","outcome":"unreached"}],"config":"/home/u/.config/bringup/config.yaml"`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %s in:\n%s", want, b.String())
		}
	}
}

// deadline stands for context.DeadlineExceeded in a timeout line.
type deadline struct{}

func (deadline) Error() string { return "context deadline exceeded" }

// TestReadmeSchema: the README's table of JSON kinds is Schema.
func TestReadmeSchema(t *testing.T) {
	data, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\| (.*) \\| (.*) \\| (.*) \\|$").FindAllStringSubmatch(string(data), -1)
	var got, want []string
	for _, r := range rows {
		got = append(got, strings.Join(r[1:], " | "))
	}
	for _, k := range Schema() {
		want = append(want, k.Name+" | "+k.About+" | "+strings.Join(k.Required, ", ")+" | "+strings.Join(k.Optional, ", "))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("README JSON kinds:\n%s\nwant (output.Schema):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
