package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/testbed"
)

// TestRolloutRatesOnTestbed: on a real host serving in kdtree-verify=off
// (infersim kept decoding by background streams), `bringup status`
// records its run's steady decode rate in the history; `bringup rollout
// --mode kdtree-verify=on --json --throughput-wait 2m` then restarts it in
// on and, once the new run decodes steadily, its throughput line and
// summary compare it with that run: about 4× (infersim's on against off).
func TestRolloutRatesOnTestbed(t *testing.T) {
	tb := testbed.StartWith(t, testbed.Options{Hosts: 1, Host: func(int) testbed.HostOptions {
		return testbed.HostOptions{KernelMode: "off", Env: map[string]string{"INFERSIM_LOAD": "8", "INFERSIM_STATS_SECONDS": "0.5"}}
	}})
	cfg := filepath.Join(tb.Inventory(), "config.yaml")
	state := t.TempDir()
	bringup := func(ctx context.Context, args ...string) (int, string, string) {
		var out, errOut syncBuffer
		e := env{stdout: &out, stderr: &errOut, getenv: func(k string) string {
			switch k {
			case "HOME":
				return "/nonexistent"
			case "XDG_STATE_HOME":
				return state // the history of this test alone
			}
			return ""
		}}
		code := run(ctx, e, args)
		return code, out.String(), errOut.String()
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if out, err := tb.Run(ctx, "gpu1", "systemctl start sglang"); err != nil {
		t.Fatalf("start: %v\n%s", err, out)
	}
	if code, out, errOut := bringup(ctx, "watch", "--json", "--timeout", "2m", "--config", cfg, "gpu1"); code != exitServing {
		t.Fatalf("watch: exit %d\n%s%s", code, out, errOut)
	}
	time.Sleep(6 * time.Second) // a dozen stats lines: a steady rate in the journal
	if code, out, errOut := bringup(ctx, "status", "--json", "--config", cfg, "gpu1"); code != exitServing || !strings.Contains(out, `"throughput":{"modes":"kdtree-verify=off"`) {
		t.Fatalf("status: exit %d, want off's rate in the history\n%s%s", code, out, errOut)
	}

	code, out, errOut := bringup(ctx, "rollout", "--mode", "kdtree-verify=on", "--yes", "--json", "--throughput-wait", "2m", "--config", cfg, "gpu1")
	t.Logf("rollout --json:\n%s", out)
	if code != exitServing {
		t.Fatalf("rollout: exit %d\n%s%s", code, out, errOut)
	}
	var rate, summary *rolloutJSON
	for _, text := range strings.Split(strings.TrimSpace(out), "\n") {
		l := decodeRolloutLine(t, text)
		switch l.Kind {
		case "throughput":
			rate = &l
		case "summary":
			summary = &l
		}
	}
	if rate == nil || rate.Before == nil || rate.After == nil || rate.Ratio == nil || rate.Before.Modes != "kdtree-verify=off" ||
		rate.After.Modes != "kdtree-verify=on" || *rate.Ratio < 3.5 || *rate.Ratio > 4.5 {
		t.Errorf("throughput line %+v, want on about 4× off", rate)
	}
	if summary == nil || len(summary.Hosts) != 1 || summary.Hosts[0].Ratio == nil || *summary.Hosts[0].Ratio < 3.5 || *summary.Hosts[0].Ratio > 4.5 {
		t.Errorf("summary %+v, want gpu1's ratio about 4", summary)
	}
}
