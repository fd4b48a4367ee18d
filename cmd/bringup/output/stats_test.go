package output

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/startup"
)

// TestStatsInWatchAndStatus: a stats change is a watch line of kind
// "stats" carrying the sample (JSON) or saying it (text), and status
// --json carries a host's latest sample.
func TestStatsInWatchAndStatus(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	sample := startup.Sample{Time: t0, GenTime: t0, GenTPS: 1921.7, Running: 8, KVUsage: 0.12, Graph: "on", PromptTPS: 559.53}
	c := remote.HostChange{Host: "gpu1", Seen: t0.Add(time.Second),
		Change: startup.Change{Kind: startup.ChangeStats, Time: t0, Phase: startup.Serving, Stats: &sample}}
	var out bytes.Buffer
	Change(&out, c, t0.Add(-10*time.Minute), true)
	if err := ValidateLine(out.Bytes()); err != nil {
		t.Errorf("%v: %s", err, out.String())
	}
	var l Line
	if err := json.Unmarshal(out.Bytes(), &l); err != nil {
		t.Fatal(err)
	}
	if l.Kind != "stats" || l.Host != "gpu1" || l.Stats == nil || l.Stats.GenTPS != 1921.7 || l.Stats.Graph != "on" || l.Phase != "serving" ||
		l.Latency == nil || *l.Latency != 1 || l.Elapsed == nil || *l.Elapsed != 600 {
		t.Errorf("line %+v", l)
	}
	out.Reset()
	Change(&out, c, time.Time{}, false)
	if want := "2026-11-30T10:00:00.000000Z gpu1     decode 1921.7 tok/s · 8 running, 0 queued · KV 12% · cuda graph on · prompt 559.5 tok/s\n"; out.String() != want {
		t.Errorf("text %q, want %q", out.String(), want)
	}
	out.Reset()
	StatusJSON(&out, []remote.HostState{{Name: "gpu1", Startup: startup.Startup{Phase: startup.Serving, Stats: &startup.Stats{Latest: sample, Lines: 3}},
		Throughput: history.ModeAB{Modes: "kdtree-verify=on", TPS: 1921.7, Live: true, Base: "off", BaseTPS: 480, BaseRuns: 4, Ratio: 1921.7 / 480}}}, nil, "serving", 0)
	lines := checkLines(t, out.String())
	var row Line
	if err := json.Unmarshal([]byte(lines[0]), &row); err != nil || len(lines) != 2 || row.Kind != "status" {
		t.Fatalf("status lines %q: %v", lines, err)
	}
	if s := row.Stats; s == nil || s.GenTPS != 1921.7 || s.Running != 8 {
		t.Errorf("status stats %+v", s)
	}
	if ab := row.Throughput; ab == nil || ab.Base != "off" || ab.Ratio < 4 || ab.Ratio > 4.01 {
		t.Errorf("status throughput %+v", ab)
	}
}
