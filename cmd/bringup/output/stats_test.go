package output

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"bringup/remote"
	"bringup/remote/startup"
)

// TestStatsWatchAndStatus: a serving host's latest sample goes into status
// --json and into watch lines, one a host per StatsEvery of host time.
func TestStatsWatchAndStatus(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	host := func(at time.Time, gen float64) remote.HostState {
		return remote.HostState{Name: "gpu1", Unit: "sglang.service", Startup: startup.Startup{Phase: startup.Serving,
			Stats: &startup.Stats{Lines: 3, Latest: startup.Sample{Time: at, GenTime: at, GenTPS: gen, Running: 8, KVUsage: 0.12, Graph: "on"}}}}
	}
	var out bytes.Buffer
	var sw StatsWatch
	sw.Hosts(&out, []remote.HostState{host(t0, 1921.7), {Name: "gpu2"}}, true)
	sw.Hosts(&out, []remote.HostState{host(t0.Add(2*time.Second), 1800)}, true) // too soon
	sw.Hosts(&out, []remote.HostState{host(t0.Add(StatsEvery), 1930.2)}, true)
	ls := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(ls) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(ls), out.String())
	}
	var l StatsLine
	if err := json.Unmarshal([]byte(ls[1]), &l); err != nil {
		t.Fatal(err)
	}
	if l.Kind != "stats" || l.Host != "gpu1" || l.Stats.GenTPS != 1930.2 || l.Stats.Graph != "on" || l.Phase != "serving" {
		t.Errorf("line %+v", l)
	}
	out.Reset()
	Stats(&out, "gpu1", startup.Serving, host(t0, 1921.7).Startup.Stats.Latest, false)
	if want := "2026-11-30T10:00:00.000000Z gpu1     decode 1921.7 tok/s · 8 running, 0 queued · KV 12% · cuda graph on\n"; out.String() != want {
		t.Errorf("text %q, want %q", out.String(), want)
	}
	out.Reset()
	StatusJSON(&out, []remote.HostState{host(t0, 1921.7)})
	var doc struct {
		Hosts []StatusHost `json:"hosts"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if s := doc.Hosts[0].Stats; s == nil || s.GenTPS != 1921.7 || s.Running != 8 {
		t.Errorf("status stats %+v", s)
	}
}
