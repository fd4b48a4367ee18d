package drive

import (
	"bytes"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/startup"
)

// TestEngineNotes: watch's text names a host's engine release once, at
// the host's first change after its log stated it, and again only when a
// later run states another.
func TestEngineNotes(t *testing.T) {
	at := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	host := func(version string) remote.HostState {
		h := remote.HostState{Name: "gpu1"}
		h.Startup.Engine, h.Startup.EngineVersion = "vllm", version
		return h
	}
	change := remote.HostChange{Host: "gpu1", Change: startup.Change{Time: at, Kind: startup.ChangePhase}}
	batches := []remote.Batch{
		{Hosts: []remote.HostState{host("")}, Changes: []remote.HostChange{change}},
		{Hosts: []remote.HostState{host("0.30.0")}},                                       // no change of gpu1: waits
		{Hosts: []remote.HostState{host("0.30.0")}, Changes: []remote.HostChange{change}}, // said
		{Hosts: []remote.HostState{host("0.30.0")}, Changes: []remote.HostChange{change}}, // said already
		{Hosts: []remote.HostState{host("0.31.0\x1b[2J")}, Changes: []remote.HostChange{change}},
	}
	n := engineNotes{}
	var out bytes.Buffer
	for _, b := range batches {
		n.say(b, func(_ time.Time, text string) { out.WriteString(text) })
	}
	want := "2026-12-06T08:00:00.000000Z gpu1     engine vllm 0.30.0\n" +
		"2026-12-06T08:00:00.000000Z gpu1     engine vllm 0.31.0␛[2J\n"
	if out.String() != want {
		t.Errorf("watch's engine lines:\n%q\nwant\n%q", out.String(), want)
	}
}
