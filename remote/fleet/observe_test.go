package fleet

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
)

// countingObserver notes, per host, what the fold tells it, and derives
// a timed value into the snapshot's Expected.Runs: how many events it
// heard.
type countingObserver struct{ heard map[string][]event.Kind }

func (o *countingObserver) Follow(h Folded) HostObserver {
	return &countingHost{o: o, name: h.Name()}
}

type countingHost struct {
	o    *countingObserver
	name string
}

func (c *countingHost) Observe(h Folded, ev event.Event, _ []startup.Change) {
	if h.Name() != c.name || ev.Host != c.name {
		panic("an observer heard of another host")
	}
	c.o.heard[c.name] = append(c.o.heard[c.name], ev.Kind)
}

func (c *countingHost) Derive(s *remote.HostState, _ time.Time) bool {
	s.Expected.Runs = len(c.o.heard[c.name])
	return true
}

// TestObserversArePluggedIn: the fold tells each observer of its own
// host's every event and takes what it derives into the snapshot; a
// timed value takes the host anew at every snapshot. Without the kernel
// check no snapshot carries kernel hashes; with it, the hash of the
// loaded line.
func TestObserversArePluggedIn(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	hash := strings.Repeat("ab", 32)
	loaded := func(host string) event.Event {
		return event.Event{Host: host, Kind: event.KindJournal, Time: now, Journal: &event.Journal{Unit: "sglang.service",
			Message: "[2026-12-01 12:00:00] kdtree-verify: sitecustomize loaded from /opt/kdtree/site, mode=on, content sha256=" + hash}}
	}
	probe := event.Event{Host: "gpu2", Kind: event.KindProbe, Time: now, Probe: &event.Probe{OK: true, Status: 200}}
	for _, tc := range []struct {
		name   string
		check  bool
		hashes map[string]string
	}{
		{name: "without the kernel check"},
		{name: "with the kernel check", check: true, hashes: map[string]string{"kdtree-verify": hash}},
	} {
		counts := &countingObserver{heard: map[string][]event.Kind{}}
		observers := []Observer{counts}
		if tc.check {
			observers = append(observers, KernelCheck())
		}
		specs := []HostSpec{{Driver: &scriptDriver{name: "gpu1"}}, {Driver: &scriptDriver{name: "gpu2"}}}
		f, err := New(specs, Options{Observers: observers})
		if err != nil {
			t.Fatal(err)
		}
		hosts := make([]*hostFold, len(specs))
		snaps := &snapshots{}
		for i, s := range specs {
			hosts[i] = &hostFold{tracker: startup.NewTracker(startup.Options{}), settle: startup.NewSettler(time.Second),
				state: remote.HostState{Name: s.Driver.Name()}}
			f.follow(hosts[i])
		}
		var pending batch
		for _, ev := range []event.Event{loaded("gpu1"), probe, loaded("gpu1")} {
			f.apply(hosts, snaps, &pending, ev)
		}
		out, _ := snaps.take(hosts, now, now)
		if want := []event.Kind{event.KindJournal, event.KindJournal}; !slices.Equal(counts.heard["gpu1"], want) {
			t.Errorf("%s: gpu1's observer heard %v, want %v", tc.name, counts.heard["gpu1"], want)
		}
		if out[0].Expected.Runs != 2 || out[1].Expected.Runs != 1 {
			t.Errorf("%s: derived %d and %d, want 2 and 1", tc.name, out[0].Expected.Runs, out[1].Expected.Runs)
		}
		if !hosts[0].timed || !hosts[1].timed {
			t.Errorf("%s: a timed value did not keep the hosts on the stale list", tc.name)
		}
		if !maps.Equal(out[0].KernelHashes, tc.hashes) || out[1].KernelHashes != nil {
			t.Errorf("%s: kernel hashes %v and %v, want %v and none", tc.name, out[0].KernelHashes, out[1].KernelHashes, tc.hashes)
		}
	}
}
