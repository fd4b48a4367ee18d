package main

import (
	"strings"
	"testing"
	"time"
)

// TestRolloutRatesOnTestbed: on a real host serving in kdtree-verify=off
// (infersim kept decoding by background streams), `bringup status`
// records its run's steady decode rate in the history; `bringup rollout
// --mode kdtree-verify=on --json --throughput-wait 2m` then restarts it in
// on and, once the new run decodes steadily, its throughput line and
// summary compare it with that run: about 4× (infersim's on against off).
func TestRolloutRatesOnTestbed(t *testing.T) {
	cfg, _, ctx, bringup := servingInOff(t)
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
