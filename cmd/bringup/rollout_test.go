package main

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// rolloutDemo runs `bringup rollout --demo --speed 1600 args...` with in as
// the terminal (nil: none) and returns its exit code and output.
func rolloutDemo(t *testing.T, in string, args ...string) (int, string) {
	t.Helper()
	code, out, errOut := rolloutDemoStreams(t, in, args...)
	return code, out + errOut
}

// rolloutDemoStreams is rolloutDemo with stdout and stderr apart.
func rolloutDemoStreams(t *testing.T, in string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var out, errOut syncBuffer
	var r io.Reader
	if in != "" {
		// A byte at a time, as a terminal gives a line at a time: each
		// prompt reads its own answer.
		r = iotest.OneByteReader(strings.NewReader(in))
	}
	argv := append([]string{"--demo", "--speed", "1600"}, args...)
	code := rolloutCmd(ctx, testEnv(&out, &errOut), argv, r)
	return code, out.String(), errOut.String()
}

// TestRolloutDemoFixesGPU3 rolls kdtree-verify=on over gpu1..gpu3 of the
// seed scenario (gpu3 starts in validate and would fail at graph capture):
// every host restarts in turn and serves.
func TestRolloutDemoFixesGPU3(t *testing.T) {
	code, out := rolloutDemo(t, "", "--mode", "kdtree-verify=on", "--yes", "gpu1", "gpu2", "gpu3")
	if code != exitServing {
		t.Fatalf("exit %d, want %d\n%s", code, exitServing, out)
	}
	if !strings.Contains(out, "will set kdtree-verify=on, then restart, on gpu1, gpu2, gpu3 one at a time, waiting for serving") {
		t.Errorf("no plan line:\n%s", out)
	}
	// One host at a time: gpu2 restarts only after gpu1 serves.
	servedGPU1 := strings.Index(out, "gpu1     serving")
	restartGPU2 := strings.Index(out, "gpu2     restarting")
	if servedGPU1 < 0 || restartGPU2 < servedGPU1 {
		t.Errorf("gpu2 restarted (at %d) before gpu1 served (at %d):\n%s", restartGPU2, servedGPU1, out)
	}
	for _, h := range []string{"gpu1", "gpu2", "gpu3"} {
		if !strings.Contains(out, h+"     serving") {
			t.Errorf("%s never served:\n%s", h, out)
		}
	}
	if strings.Contains(out, "gpu4 ") {
		t.Errorf("gpu4 is not in the rollout:\n%s", out)
	}
}

// TestRolloutDemoHaltAndRollback forces kdtree-verify=validate (not
// capture-safe, graphs on): gpu1 fails at graph capture, the rollout halts
// with the diagnosis, gpu2 and gpu3 stay untouched, and the rollback puts
// gpu1 back in mode on, where it serves.
func TestRolloutDemoHaltAndRollback(t *testing.T) {
	code, out := rolloutDemo(t, "", "--mode", "kdtree-verify=validate", "--force", "--yes", "--rollback-on-failure", "gpu1", "gpu2", "gpu3")
	if code != exitFailed {
		t.Fatalf("exit %d, want %d\n%s", code, exitFailed, out)
	}
	for _, want := range []string{
		"WARNING: --force",
		"gpu1     FAILED in graph-capture", "[graph-capture-host-sync]", "hint:", "evidence:",
		"gpu2     untouched", "gpu3     untouched",
		"rolling back gpu1 to kdtree-verify=on",
		"gpu1     rolled-back",
		"halted on gpu1; untouched: gpu2, gpu3",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, h := range []string{"gpu2", "gpu3"} {
		if strings.Contains(out, h+"     applying") || strings.Contains(out, h+"     restarting") {
			t.Errorf("%s was touched:\n%s", h, out)
		}
	}
}

// TestRolloutDemoPrompts answers the prompts from a "terminal": yes to
// the rollout, no to the rollback.
func TestRolloutDemoPrompts(t *testing.T) {
	code, out := rolloutDemo(t, "3\ny\nn\n", "--mode", "kdtree-verify=validate", "gpu1", "gpu2", "gpu3")
	if code != exitFailed {
		t.Fatalf("exit %d, want %d\n%s", code, exitFailed, out)
	}
	for _, want := range []string{"Type the number of hosts (3)", "Proceed? [y/N]", "Roll back gpu1 to kdtree-verify=on? [y/N]", "gpu1 not rolled back"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestRolloutDemoTimeout(t *testing.T) {
	// Host time: a startup takes about 11 minutes.
	code, out := rolloutDemo(t, "", "--mode", "kdtree-verify=on", "--yes", "--timeout", "2m", "gpu1", "gpu2")
	if code != exitTimeout {
		t.Fatalf("exit %d, want %d\n%s", code, exitTimeout, out)
	}
	if !strings.Contains(out, "not serving after 2m0s") || !strings.Contains(out, "untouched: gpu2") {
		t.Errorf("output:\n%s", out)
	}
}

func TestRolloutRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		args []string
		want string
	}{
		{"force without yes", "", []string{"--mode", "kdtree-verify=on", "--force"}, "--force overrides the preflight only with --yes"},
		{"read-only", "", []string{"--mode", "kdtree-verify=on", "--yes", "--read-only"}, "read-only mode"},
		{"bad mode", "", []string{"--mode", "kdtree-verify=fast", "--yes"}, "has no mode"},
		{"bad host", "", []string{"--yes", "gpu9"}, "unknown host"},
		{"bad batch", "", []string{"--yes", "--batch", "0"}, "--batch 0"},
		{"preflight", "", []string{"--mode", "kdtree-verify=validate", "--yes"}, "refused by the capture-safety preflight"},
		{"no terminal", "", []string{"--mode", "kdtree-verify=on"}, "no terminal to confirm on"},
		{"declined", "n\n", []string{"--mode", "kdtree-verify=on"}, "nothing changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := rolloutDemo(t, tc.in, tc.args...)
			if code != exitUsage || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, want %d with %q:\n%s", code, exitUsage, tc.want, out)
			}
			for _, stage := range []string{"applying", "restarting"} {
				if strings.Contains(out, stage) {
					t.Errorf("a host was changed:\n%s", out)
				}
			}
		})
	}
}

func TestRolloutAbort(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var out, errOut syncBuffer
	codeCh := make(chan int, 1)
	go func() {
		codeCh <- rolloutCmd(ctx, testEnv(&out, &errOut), []string{"--demo", "--speed", "20", "--mode", "kdtree-verify=on", "--yes"}, nil)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "gpu1     restarting") {
		if time.Now().After(deadline) {
			t.Fatalf("gpu1 never restarted:\n%s%s", out.String(), errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-codeCh; code != exitAborted {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitAborted, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "gpu4     untouched") {
		t.Errorf("output:\n%s", out.String())
	}
}

// TestRolloutOnTestbed is the rollout on three real hosts where the second
// fails at every start (INFERSIM_FAIL=oom): the rollout sets
// kdtree-verify=on on gpu1, which serves in it, halts on gpu2 with the OOM
// diagnosis and rolls it back to off, and leaves gpu3 as it was: mode
// off, no drop-in, not restarted.
func TestRolloutOnTestbed(t *testing.T) {
	tb := testbed.StartWith(t, testbed.Options{Hosts: 3, Host: func(i int) testbed.HostOptions {
		o := testbed.HostOptions{KernelMode: "off", Enable: true}
		if i == 1 {
			o.Env = map[string]string{"INFERSIM_FAIL": "oom"}
		}
		return o
	}})
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	cfgPath := filepath.Join(tb.Inventory(), "config.yaml")
	show := func(host, props string) string {
		t.Helper()
		o, err := tb.Run(ctx, host, "systemctl show -p "+props+" sglang")
		if err != nil {
			t.Fatalf("%s: systemctl show: %v: %s", host, err, o)
		}
		return string(o)
	}
	dropins := func(host string) string {
		t.Helper()
		o, _ := tb.Run(ctx, host, "ls /etc/systemd/system/sglang.service.d/ /run/systemd/system/sglang.service.d/ 2>/dev/null; true")
		return string(o)
	}
	// gpu1 and gpu3 serve, gpu2 failed, before the rollout.
	waitFor := func(host, state string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for !strings.Contains(show(host, "ActiveState"), state) {
			if time.Now().After(deadline) {
				t.Fatalf("%s never %s: %s", host, state, show(host, "ActiveState,SubState"))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	waitFor("gpu2", "failed")
	waitFor("gpu3", "active")
	gpu3Before := show("gpu3", "InvocationID,ActiveEnterTimestamp")

	var out, errOut syncBuffer
	code := run(ctx, testEnv(&out, &errOut), []string{"rollout", "--config", cfgPath, "--history", "off",
		"--mode", "kdtree-verify=on", "--yes", "--rollback-on-failure", "gpu1", "gpu2", "gpu3"})
	t.Logf("rollout output:\n%s%s", out.String(), errOut.String())
	if code != exitFailed {
		t.Fatalf("exit %d, want %d", code, exitFailed)
	}
	o := out.String()
	for _, want := range []string{"gpu1     serving", "gpu2     FAILED in ", "[gpu-oom]", "evidence: torch.OutOfMemoryError", "rolling back gpu2 to kdtree-verify=off",
		"gpu2     rolled-back", "halted on gpu2; untouched: gpu3"} {
		if !strings.Contains(o, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if env := show("gpu1", "Environment"); !strings.Contains(env, "KDTREE_MODE=on") {
		t.Errorf("gpu1 environment after the rollout: %s", env)
	}
	if st := show("gpu1", "ActiveState"); !strings.Contains(st, "active") {
		t.Errorf("gpu1: %s", st)
	}
	if env := show("gpu2", "Environment"); !strings.Contains(env, "KDTREE_MODE=off") || strings.Contains(env, "KDTREE_MODE=on") {
		t.Errorf("gpu2 environment after the rollback: %s", env)
	}
	if d := dropins("gpu2"); strings.Contains(d, "bringup") {
		t.Errorf("gpu2 still has bringup's drop-in after the rollback: %s", d)
	}
	if env := show("gpu3", "Environment"); !strings.Contains(env, "KDTREE_MODE=off") {
		t.Errorf("gpu3 environment changed: %s", env)
	}
	if d := dropins("gpu3"); strings.Contains(d, "bringup") {
		t.Errorf("gpu3 got a drop-in: %s", d)
	}
	if after := show("gpu3", "InvocationID,ActiveEnterTimestamp"); after != gpu3Before {
		t.Errorf("gpu3 was restarted: before %q, after %q", gpu3Before, after)
	}
}

// rolloutJSON is what the tests read from a v1 line of `bringup rollout
// --json`: any kind, the summary included.
type rolloutJSON struct {
	V          int                  `json:"v"`
	Time       string               `json:"time"`
	Kind       string               `json:"kind"`
	Host       string               `json:"host"`
	Phase      string               `json:"phase"`
	Stage      string               `json:"stage"`
	Action     string               `json:"action"`
	ID         *int                 `json:"id"`
	Outcome    string               `json:"outcome"`
	Err        string               `json:"err"`
	TimedOut   bool                 `json:"timed_out"`
	To         string               `json:"to"`
	Elapsed    *float64             `json:"elapsed"`
	Cause      string               `json:"cause"`
	Summary    string               `json:"summary"`
	Hint       string               `json:"hint"`
	Evidence   []string             `json:"evidence"`
	FailedIn   string               `json:"failed_in"`
	KernelMode string               `json:"kernel_mode"`
	Before     *output.Rate         `json:"before"`
	After      *output.Rate         `json:"after"`
	Ratio      *float64             `json:"ratio"`
	Command    string               `json:"command"`
	Exit       int                  `json:"exit"`
	Plan       string               `json:"plan"`
	Hosts      []output.HostOutcome `json:"hosts"`
}

// rolloutLines runs `bringup rollout --demo --json args...` and decodes
// its stdout, which must be lines of the v1 schema only (each checked
// against it), ending with the summary.
func rolloutLines(t *testing.T, in string, args ...string) (int, []rolloutJSON, string) {
	t.Helper()
	code, out, errOut := rolloutDemoStreams(t, in, append([]string{"--json"}, args...)...)
	var lines []rolloutJSON
	for _, text := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		lines = append(lines, decodeRolloutLine(t, text))
	}
	if n := len(lines); n == 0 || lines[n-1].Kind != "summary" || slices.IndexFunc(lines, func(l rolloutJSON) bool { return l.Kind == "summary" }) != n-1 {
		t.Fatalf("the summary is not the one last line:\n%s", out)
	}
	if s := lines[len(lines)-1]; s.Exit != code || s.Command != "rollout" {
		t.Errorf("summary exit %d of %q, the command's %d", s.Exit, s.Command, code)
	}
	return code, lines, errOut
}

// decodeRolloutLine checks text against the v1 schema and decodes it.
func decodeRolloutLine(t *testing.T, text string) rolloutJSON {
	t.Helper()
	if err := output.ValidateLine([]byte(text)); err != nil {
		t.Errorf("line %s: %v", text, err)
	}
	var l rolloutJSON
	if err := json.Unmarshal([]byte(text), &l); err != nil {
		t.Fatalf("line %q is not JSON: %v", text, err)
	}
	return l
}

// index is the position of the first line l matches, -1 for none.
func index(lines []rolloutJSON, match func(l rolloutJSON) bool) int {
	return slices.IndexFunc(lines, match)
}

func stageLine(host, stage string) func(rolloutJSON) bool {
	return func(l rolloutJSON) bool { return l.Kind == "stage" && l.Host == host && l.Stage == stage }
}

func stepLine(host, action, outcome string) func(rolloutJSON) bool {
	return func(l rolloutJSON) bool {
		return l.Kind == "step" && l.Host == host && l.Action == action && l.Outcome == outcome
	}
}

// TestRolloutDemoJSONHaltAndRollback is the forced rollout to validate in
// JSON: gpu1's steps and stages, its graph-capture failure in watch's
// format, the rollback, gpu2 never touched, and the summary; the text for
// people goes to stderr.
func TestRolloutDemoJSONHaltAndRollback(t *testing.T) {
	code, lines, errOut := rolloutLines(t, "", "--mode", "kdtree-verify=validate", "--force", "--yes", "--rollback-on-failure", "gpu1", "gpu2")
	if code != exitFailed {
		t.Fatalf("exit %d, want %d\n%s", code, exitFailed, errOut)
	}
	order := []func(rolloutJSON) bool{
		stepLine("gpu1", "mode kdtree-verify=validate", "issued"),
		stepLine("gpu1", "mode kdtree-verify=validate", "done"),
		stepLine("gpu1", "restart (preflight overridden)", "issued"),
		stageLine("gpu1", "starting"),
		stageLine("gpu1", "failed"),
		func(l rolloutJSON) bool { return l.Kind == "failed" && l.Host == "gpu1" },
		func(l rolloutJSON) bool {
			return l.Kind == "rollback" && l.Host == "gpu1" && l.Outcome == "started" && l.To == "kdtree-verify=on"
		},
		stepLine("gpu1", "undo mode kdtree-verify", "issued"),
		stageLine("gpu1", "rolled-back"),
	}
	last := -1
	for i, m := range order {
		j := index(lines, m)
		if j <= last {
			t.Fatalf("line %d of the expected order at %d (after %d):\n%+v", i, j, last, lines)
		}
		last = j
	}
	f := lines[index(lines, func(l rolloutJSON) bool { return l.Kind == "failed" })]
	if f.Cause != "graph-capture-host-sync" || f.Summary == "" || f.Hint == "" || len(f.Evidence) == 0 ||
		f.FailedIn != "graph-capture" || f.KernelMode != "kdtree-verify=validate" || f.Phase != "failed" {
		t.Errorf("failure line %+v", f)
	}
	if l := lines[index(lines, stageLine("gpu1", "failed"))]; l.Outcome != "failed" || l.Elapsed == nil || *l.Elapsed <= 0 {
		t.Errorf("gpu1's failed stage %+v: want outcome failed and elapsed seconds", l)
	}
	for _, l := range lines {
		if l.Host == "gpu2" && (l.Kind == "step" || l.Kind == "stage" && l.Stage != "pending" && l.Stage != "untouched") {
			t.Errorf("gpu2 touched: %+v", l)
		}
	}
	s := lines[len(lines)-1]
	if s.Outcome != "halted" || s.Host != "gpu1" || s.Cause != "graph-capture-host-sync" || s.Err == "" || len(s.Hosts) != 2 ||
		s.Hosts[0].Outcome != "rolled-back" || s.Hosts[0].Phase != "serving" || s.Hosts[0].PrevMode != "on" || s.Hosts[0].After != nil ||
		s.Hosts[1].Outcome != "untouched" {
		t.Errorf("summary %+v", s)
	}
	for _, want := range []string{"will set kdtree-verify=validate", "WARNING: --force", "rolling back gpu1 to kdtree-verify=on", "halted on gpu1; untouched: gpu2"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

// TestRolloutDemoJSONDone rolls mode on over gpu3 (failed in validate) and
// gpu4: gpu4's first step comes after gpu3's serving line; the summary
// says done.
func TestRolloutDemoJSONDone(t *testing.T) {
	code, lines, errOut := rolloutLines(t, "", "--mode", "kdtree-verify=on", "--yes", "gpu3", "gpu4")
	if code != exitServing {
		t.Fatalf("exit %d, want %d\n%s", code, exitServing, errOut)
	}
	served := index(lines, stageLine("gpu3", "serving"))
	first := index(lines, func(l rolloutJSON) bool { return l.Host == "gpu4" && l.Kind == "step" })
	if served < 0 || first < served {
		t.Errorf("gpu4's first step at %d, gpu3 serving at %d:\n%+v", first, served, lines)
	}
	for _, h := range []string{"gpu3", "gpu4"} {
		for _, m := range []func(rolloutJSON) bool{stepLine(h, "mode kdtree-verify=on", "done"), stepLine(h, "restart", "done"), stageLine(h, "serving")} {
			if index(lines, m) < 0 {
				t.Errorf("%s: a step or stage is missing:\n%+v", h, lines)
			}
		}
	}
	if s := lines[len(lines)-1]; s.Outcome != "done" || s.Host != "" || len(s.Hosts) != 2 || s.Hosts[0].Outcome != "serving" || s.Hosts[1].Outcome != "serving" {
		t.Errorf("summary %+v", s)
	}
}

// TestRolloutDemoJSONRefused: refused by the preflight, nothing changes,
// and the summary says so.
func TestRolloutDemoJSONRefused(t *testing.T) {
	code, lines, errOut := rolloutLines(t, "", "--mode", "kdtree-verify=validate", "--yes", "gpu1")
	if code != exitUsage || len(lines) != 1 {
		t.Fatalf("exit %d, %d lines, want %d and the summary alone\n%+v\n%s", code, len(lines), exitUsage, lines, errOut)
	}
	if s := lines[0]; s.Outcome != "refused" || !strings.Contains(s.Err, "preflight") || len(s.Hosts) != 1 || s.Hosts[0].Outcome != "untouched" {
		t.Errorf("summary %+v", s)
	}
	if !strings.Contains(errOut, "refused by the capture-safety preflight") {
		t.Errorf("stderr:\n%s", errOut)
	}
}

// TestRolloutDemoJSONTimeout: a halt without a diagnosis is a "halted"
// line, and the summary says it timed out (exit 2).
func TestRolloutDemoJSONTimeout(t *testing.T) {
	code, lines, errOut := rolloutLines(t, "", "--mode", "kdtree-verify=on", "--yes", "--timeout", "2m", "gpu1", "gpu2")
	if code != exitTimeout {
		t.Fatalf("exit %d, want %d\n%s", code, exitTimeout, errOut)
	}
	h := index(lines, func(l rolloutJSON) bool { return l.Kind == "halted" && l.Host == "gpu1" })
	if h < 0 || !lines[h].TimedOut || !strings.Contains(lines[h].Err, "not serving after 2m0s") {
		t.Errorf("no halted line for gpu1's timeout:\n%+v", lines)
	}
	if s := lines[len(lines)-1]; s.Outcome != "halted" || !s.TimedOut || s.Host != "gpu1" || s.Hosts[1].Outcome != "untouched" {
		t.Errorf("summary %+v", s)
	}
}

// TestRolloutDemoJSONThroughput rolls mode on over gpu3 (failed in
// validate; its history holds earlier runs in off) and gpu4 (serving in
// on), waiting for the new runs' steady rates: gpu3's throughput line and
// summary compare on with its previous run in off (the stand-in decodes
// about 4× faster in on), gpu4's on with on (about 1×).
func TestRolloutDemoJSONThroughput(t *testing.T) {
	code, lines, errOut := rolloutLines(t, "", "--mode", "kdtree-verify=on", "--yes", "--throughput-wait", "30m", "gpu3", "gpu4")
	if code != exitServing {
		t.Fatalf("exit %d, want %d\n%s", code, exitServing, errOut)
	}
	want := map[string]struct {
		before string
		lo, hi float64
	}{
		"gpu3": {"kdtree-verify=off", 3, 5.5},
		"gpu4": {"kdtree-verify=on", 0.8, 1.25},
	}
	for h, w := range want {
		i := index(lines, func(l rolloutJSON) bool { return l.Kind == "throughput" && l.Host == h })
		if i < 0 {
			t.Errorf("%s: no throughput line:\n%+v", h, lines)
			continue
		}
		l := lines[i]
		if l.Before == nil || l.After == nil || l.Ratio == nil || l.Before.Modes != w.before || l.After.Modes != "kdtree-verify=on" ||
			*l.Ratio < w.lo || *l.Ratio > w.hi {
			t.Errorf("%s: throughput line %+v %+v ratio %v, want %s before and a ratio in [%v, %v]", h, l.Before, l.After, l.Ratio, w.before, w.lo, w.hi)
		}
		if served := index(lines, stageLine(h, "serving")); served > i {
			t.Errorf("%s: its rate (line %d) came before it served (line %d)", h, i, served)
		}
	}
	s := lines[len(lines)-1]
	for i, h := range []string{"gpu3", "gpu4"} {
		if i >= len(s.Hosts) || s.Hosts[i].Host != h || s.Hosts[i].Ratio == nil || s.Hosts[i].Before == nil || s.Hosts[i].After == nil {
			t.Errorf("summary host %d: %+v, want %s with before, after and ratio", i, s.Hosts, h)
		}
	}
}

// TestRolloutDemoThroughputText: without waiting, the text summary still
// compares the host whose rate came in during the rollout (gpu3, about 4×
// its previous run in off); the last host's is said not steady yet, with
// the flag that waits for it, unless its rate raced in with its serving
// (the simulated clock runs 1600× on a loaded machine).
func TestRolloutDemoThroughputText(t *testing.T) {
	code, out := rolloutDemo(t, "", "--mode", "kdtree-verify=on", "--yes", "gpu3", "gpu4")
	if code != exitServing {
		t.Fatalf("exit %d, want %d\n%s", code, exitServing, out)
	}
	block := out[strings.Index(out, "throughput, after the rollout"):]
	for _, re := range []string{
		`(?m)^  gpu3 +decode \d+ tok/s with kdtree-verify=on vs \d+ tok/s with off \([3-5]\.\d\d×\)$`,
		`(?m)^  gpu4 +decode \d+ tok/s (before with kdtree-verify=on; after: not steady yet|with kdtree-verify=on vs \d+ tok/s with kdtree-verify=on \((0\.9\d|1\.\d\d)×\))$`,
	} {
		if !regexp.MustCompile(re).MatchString(block) {
			t.Errorf("the summary lacks %s:\n%s", re, out)
		}
	}
	if strings.Contains(block, "not steady yet") != strings.Contains(block, "--throughput-wait D waits for them") {
		t.Errorf("a rate not steady yet comes with the flag that waits for it, and only then:\n%s", block)
	}
}
