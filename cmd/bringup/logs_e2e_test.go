package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// TestLogsFollowOnTestbed: `bringup logs -f` on a real host prints the
// unit's journal as it comes, marks the lines where phases begin, prints
// the diagnosis once the failed run settles, and exits 130 on ctrl-c; a
// one-shot `logs` then prints the same run and its diagnosis and exits 0.
func TestLogsFollowOnTestbed(t *testing.T) {
	tb := testbed.StartWith(t, testbed.Options{Hosts: 1, Host: func(int) testbed.HostOptions {
		return testbed.HostOptions{KernelMode: "validate"} // fails in graph capture
	}})
	cfgPath := filepath.Join(tb.Inventory(), "config.yaml")
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	var out, errOut syncBuffer
	codeCh := make(chan int, 1)
	go func() {
		codeCh <- run(ctx, testEnv(&out, &errOut), []string{"logs", "-f", "--config", cfgPath, "gpu1"})
	}()
	time.Sleep(2 * time.Second) // connected and following: a line before the follow comes with its tail anyway
	if o, err := tb.Run(t.Context(), "gpu1", "systemctl start sglang"); err != nil {
		t.Fatalf("start: %v: %s", err, o)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(out.String(), "FAILED in graph-capture") {
		if time.Now().After(deadline) {
			t.Fatalf("no diagnosis from logs -f:\n%s\nstderr:\n%s", out.String(), errOut.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	cancel(cli.Interrupted{Signal: os.Interrupt})
	if code := <-codeCh; code != exitInterrupted {
		t.Errorf("logs -f after ctrl-c: exit %d, want %d", code, exitInterrupted)
	}
	followed := out.String()
	t.Logf("logs -f:\n%s", followed)
	for _, want := range []string{"▶ [weights] ", "▶ [graph-capture] ", "\n──\nFAILED in graph-capture: ", "[graph-capture-host-sync]", "  hint: "} {
		if !strings.Contains(followed, want) {
			t.Errorf("logs -f output lacks %q:\n%s", want, followed)
		}
	}
	if n := strings.Count(followed, "FAILED in"); n != 1 {
		t.Errorf("logs -f said the verdict %d times, want once:\n%s", n, followed)
	}

	var once, onceErr syncBuffer
	code := run(t.Context(), testEnv(&once, &onceErr), []string{"logs", "--config", cfgPath, "gpu1"})
	if code != exitServing || !strings.Contains(once.String(), "▶ [graph-capture] ") || !strings.Contains(once.String(), "\n──\nFAILED in graph-capture: ") {
		t.Errorf("logs one-shot: exit %d\n%s\nstderr:\n%s", code, once.String(), onceErr.String())
	}
}
