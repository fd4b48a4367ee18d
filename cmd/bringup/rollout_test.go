package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"bringup/remote/testbed"
)

// rolloutDemo runs `bringup rollout --demo --speed 400 args...` with in as
// the terminal (nil: none) and returns its exit code and output.
func rolloutDemo(t *testing.T, in string, args ...string) (int, string) {
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
	argv := append([]string{"--demo", "--speed", "400"}, args...)
	code := rolloutCmd(ctx, testEnv(&out, &errOut), argv, r)
	return code, out.String() + errOut.String()
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
