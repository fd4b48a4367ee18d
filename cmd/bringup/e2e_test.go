package main

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// syncBuffer is a bytes.Buffer safe to read while a command writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// Bytes returns a copy of what was written so far.
func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testEnv(out, errOut *syncBuffer) env {
	return env{stdout: out, stderr: errOut, getenv: func(k string) string {
		if k == "HOME" {
			return "/nonexistent"
		}
		return ""
	}}
}

// TestCommandsOnTestbed runs the commands against three real hosts:
// doctor reports every check (and says a deploy user without sudo will
// need it for actions), and watch --json follows the hosts' startups to
// serving, and gpu3 (validate) to a graph-capture failure.
func TestCommandsOnTestbed(t *testing.T) {
	tb := testbed.StartWith(t, testbed.Options{Hosts: 3, Host: func(i int) testbed.HostOptions {
		if i == 2 {
			return testbed.HostOptions{KernelMode: "validate"}
		}
		return testbed.HostOptions{KernelMode: "on"}
	}})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cfgPath := filepath.Join(tb.Inventory(), "config.yaml")

	t.Run("doctor", func(t *testing.T) {
		var out, errOut syncBuffer
		code := run(ctx, testEnv(&out, &errOut), []string{"doctor", "--config", cfgPath})
		if code != 0 {
			t.Fatalf("doctor exit %d\n%s%s", code, out.String(), errOut.String())
		}
		for _, name := range []string{"ssh config", "reachable", "host key", "auth", "sudo", "systemd", "journald", "unit", "nvidia-smi"} {
			if n := strings.Count(out.String(), "✓ "+name); n != 3 {
				t.Errorf("check %q passed on %d hosts, want 3:\n%s", name, n, out.String())
			}
		}
		out, errOut = syncBuffer{}, syncBuffer{}
		code = run(ctx, testEnv(&out, &errOut), []string{"doctor", "-F", tb.SSHConfig(), "-H", "gpu2-deploy"})
		if code != 1 {
			t.Errorf("doctor as deploy exit %d, want 1 (journald not readable)", code)
		}
		// doctor prints the exact sudoers rule that would let deploy act.
		if !strings.Contains(out.String(), "needs a password for deploy") || !strings.Contains(out.String(), "deploy ALL=(root) NOPASSWD: /usr/bin/systemctl --no-ask-password restart -- sglang.service") ||
			!strings.Contains(out.String(), "✗ journald") {
			t.Errorf("doctor as deploy without sudo:\n%s", out.String())
		}
		// The same as JSON lines, each in the v1 schema, the last the summary.
		out, errOut = syncBuffer{}, syncBuffer{}
		code = run(ctx, testEnv(&out, &errOut), []string{"doctor", "--json", "-F", tb.SSHConfig(), "-H", "gpu2-deploy"})
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		for i, l := range lines {
			if err := output.ValidateLine([]byte(l)); err != nil {
				t.Errorf("doctor --json line %d: %v\n%s", i+1, err, l)
			}
		}
		if last := lines[len(lines)-1]; code != 1 || !strings.Contains(last, `"kind":"summary","command":"doctor","exit":1,"outcome":"failed"`) ||
			!strings.Contains(last, `"journald"`) || !strings.Contains(out.String(), `"check":"journald","status":"fail"`) {
			t.Errorf("doctor --json exit %d:\n%s", code, out.String())
		}
	})

	t.Run("watch", func(t *testing.T) {
		var out, errOut syncBuffer
		codeCh := make(chan int, 1)
		recPath := filepath.Join(t.TempDir(), "watch.jsonl")
		go func() {
			codeCh <- run(ctx, testEnv(&out, &errOut), []string{"watch", "--json", "--timeout", "2m", "--config", cfgPath, "--record", recPath})
		}()
		// Start the units once watch has read their state.
		deadline := time.Now().Add(30 * time.Second)
		for strings.Count(out.String(), `"kind":"unit"`) < 3 {
			if time.Now().After(deadline) {
				t.Fatalf("watch reported no unit states:\n%s%s", out.String(), errOut.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		for _, h := range tb.Hosts() {
			if o, err := tb.Run(ctx, h.Name, "systemctl start sglang"); err != nil {
				t.Fatalf("start %s: %v: %s", h.Name, err, o)
			}
		}
		code := <-codeCh
		if code != exitFailed {
			t.Fatalf("watch exit %d, want %d\n%s%s", code, exitFailed, out.String(), errOut.String())
		}
		story := readWatch(t, out.String())
		phases := story.phases
		var fail *output.Line
		if l, ok := story.failed["gpu3"]; ok {
			fail = &l
		}
		for _, h := range []string{"gpu1", "gpu2"} {
			p := phases[h]
			for _, want := range []string{"weights", "graph-capture", "serving"} {
				if !slices.Contains(p, want) {
					t.Errorf("%s phases %v lack %s", h, p, want)
				}
			}
		}
		if fail == nil || fail.Host != "gpu3" || fail.Cause != "graph-capture-host-sync" || !strings.Contains(fail.Hint, "kdtree-verify") {
			t.Fatalf("failure line = %+v", fail)
		}
		// The recording of these real hosts tells the same story again,
		// ten times faster. (Unit lines after a host settled may fall
		// either side of the end, so the phases and the failure are compared.)
		var rout, rerr syncBuffer
		if code := run(ctx, testEnv(&rout, &rerr), []string{"watch", "--json", "--replay", recPath, "--speed", "10"}); code != exitFailed {
			t.Fatalf("watch --replay exit %d, want %d\n%s", code, exitFailed, rerr.String())
		}
		sameStories(t, out.String(), rout.String(), "phase", "failed")
	})

	t.Run("status", func(t *testing.T) {
		var out, errOut syncBuffer
		code := run(ctx, testEnv(&out, &errOut), []string{"status", "--json", "--config", cfgPath})
		if code != exitFailed {
			t.Fatalf("status exit %d, want %d\n%s%s", code, exitFailed, out.String(), errOut.String())
		}
		got := statusLines(t, out.String(), code)
		if got["gpu1"].Phase != "serving" || got["gpu2"].Phase != "serving" || got["gpu1"].Probe == nil || !got["gpu1"].Probe.OK {
			t.Errorf("gpu1/gpu2 not serving: %+v", got)
		}
		if g := got["gpu3"]; g.Phase != "failed" || g.Cause != "graph-capture-host-sync" || g.Modes["kdtree-verify"] != "validate" {
			t.Errorf("gpu3 = %+v", g)
		}
	})
}
