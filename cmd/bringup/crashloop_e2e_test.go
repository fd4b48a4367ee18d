package main

import (
	"bufio"
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote/testkit/e2e"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// stampedLines is a writer that keeps each whole line written with the
// wall time it arrived.
type stampedLines struct {
	mu    sync.Mutex
	part  string
	lines []stampedLine
}

type stampedLine struct {
	at   time.Time
	text string
}

func (s *stampedLines) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.part += string(p)
	for {
		i := strings.IndexByte(s.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		s.lines = append(s.lines, stampedLine{now, s.part[:i]})
		s.part = s.part[i+1:]
	}
}

func (s *stampedLines) all() []stampedLine {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]stampedLine(nil), s.lines...)
}

// TestCrashLoopOnTestbed: units with real restart policies on test hosts.
// gpu1 runs infersim failing in NCCL init under Restart=on-failure,
// RestartSec=2; gpu2 does the same with a start limit (3 starts in 120 s,
// RestartSec=200ms), which systemd hits.
//   - watch of gpu1 exits 1 soon after the first run's failure, although
//     systemd restarts the unit; its lines carry run 1;
//   - the console (in tmux) shows gpu1 as `crash-loop ×3` with the cause,
//     counted failed in the header;
//   - gpu2 hitting the start limit is named so, and x (reset-failed)
//     clears it.
func TestCrashLoopOnTestbed(t *testing.T) {
	e2e.Require(t, e2e.Command("tmux"))
	tb := testbed.StartWith(t, testbed.Options{Hosts: 2, Host: func(i int) testbed.HostOptions {
		o := testbed.HostOptions{KernelMode: "on", Restart: "on-failure", RestartSec: "2", Env: map[string]string{"INFERSIM_FAIL": "crashloop"}}
		if i == 1 {
			o.RestartSec, o.StartLimitBurst, o.StartLimitInterval = "200ms", 3, "120"
		}
		return o
	}})
	cfg := filepath.Join(tb.Inventory(), "config.yaml")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	sh := func(host, cmd string) string {
		t.Helper()
		out, err := tb.Run(ctx, host, cmd)
		if err != nil {
			t.Fatalf("%s: %s: %v\n%s", host, cmd, err, out)
		}
		return strings.TrimSpace(out)
	}

	t.Run("watch", func(t *testing.T) {
		var out stampedLines
		var errOut syncBuffer
		codeCh := make(chan int, 1)
		go func() {
			codeCh <- run(ctx, env{stdout: &out, stderr: &errOut, getenv: testEnv(nil, nil).getenv},
				[]string{"watch", "--json", "--timeout", "2m", "--config", cfg, "gpu1"})
		}()
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(fmt.Sprint(out.all()), `"kind":"unit"`) {
			if time.Now().After(deadline) {
				t.Fatalf("watch reported no unit state:\n%v%s", out.all(), errOut.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		sh("gpu1", "systemctl start sglang")
		code := <-codeCh
		exited := time.Now()
		lines := out.all()
		if code != exitFailed {
			t.Fatalf("watch exit %d, want %d\n%v%s", code, exitFailed, lines, errOut.String())
		}
		var firstFail *stampedLine
		var text []string
		for i, l := range lines {
			text = append(text, l.text)
			if err := output.ValidateLine([]byte(l.text)); err != nil {
				t.Errorf("%v: %s", err, l.text)
			}
			if firstFail == nil && strings.Contains(l.text, `"kind":"failed"`) {
				firstFail = &lines[i]
				if !strings.Contains(l.text, `"run":1`) || !strings.Contains(l.text, `"cause":"nccl-error"`) {
					t.Errorf("first failed line: %s, want run 1, nccl-error", l.text)
				}
			}
		}
		if firstFail == nil {
			t.Fatalf("no failed line:\n%s", strings.Join(text, "\n"))
		}
		// The failure settles once the journal shows the process's end
		// (at most the settle wait, 3 s, after the failure line).
		if gap := exited.Sub(firstFail.at); gap > 4*time.Second {
			t.Errorf("watch exited %s after the first run's failure line, want within the settle wait and a second", gap)
		} else {
			t.Logf("watch exited %s after the first run's failure line", gap)
		}
		if last := lines[len(lines)-1].text; !strings.Contains(last, `"outcome":"failed"`) {
			t.Errorf("summary %s, want failed", last)
		}
	})

	bin := buildBringup(t)
	p := startTmux(t, 160, 48, fmt.Sprintf("sleep 1; exec env HOME=%s %s --config %s", t.TempDir(), bin, cfg))

	t.Run("console", func(t *testing.T) {
		// The console attached mid-loop: the runs it sees fail make the loop.
		s := p.waitFor("gpu1 in a crash loop of 3", regexp.MustCompile(`gpu1 .*crash-loop ×[3-9]`), 2*time.Minute)
		for _, want := range []*regexp.Regexp{regexp.MustCompile(`\b1 failed\b`), regexp.MustCompile(`gpu1 .*crash-loop ×\d+ .*NCCL`)} {
			if !want.MatchString(s) {
				t.Errorf("screen lacks %s:\n%s", want, s)
			}
		}
	})

	t.Run("start-limit", func(t *testing.T) {
		sh("gpu2", "systemctl start sglang")
		p.waitFor("gpu2's start limit", regexp.MustCompile(`gpu2 .*start-limit-hit; x resets`), 2*time.Minute)
		if st := sh("gpu2", "systemctl show -p ActiveState --value sglang"); st != "failed" {
			t.Errorf("gpu2's unit %s, want failed", st)
		}
		p.keys("j", "x")
		p.waitFor("the reset-failed dialog", regexp.MustCompile(`Reset the failed state of sglang.service on gpu2`), 10*time.Second)
		p.keys("Enter")
		deadline := time.Now().Add(30 * time.Second)
		for {
			st := sh("gpu2", "systemctl show -p ActiveState --value sglang")
			screen := p.screen()
			gave := false
			sc := bufio.NewScanner(strings.NewReader(screen))
			for sc.Scan() {
				if strings.Contains(sc.Text(), "gpu2 ") && strings.Contains(sc.Text(), "start-limit-hit") {
					gave = true
				}
			}
			if st != "failed" && !gave {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after x: gpu2's unit %s, screen:\n%s", st, screen)
			}
			time.Sleep(300 * time.Millisecond)
		}
	})
	sh("gpu1", "systemctl stop sglang")
	sh("gpu2", "systemctl stop sglang; systemctl reset-failed sglang 2>/dev/null || true")
}
