package live

import (
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote"
)

func TestDecideOnDemand(t *testing.T) {
	now := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	idle := 20 * time.Second
	for _, tc := range []struct {
		name string
		d    demand
		want step
	}{
		{"nothing wants it, closed", demand{}, step{}},
		{"view opens", demand{viewed: true}, step{open: true, sample: true}},
		{"view open, sampling", demand{viewed: true, open: true, sampling: true}, step{}},
		{"an action, closed", demand{users: 1}, step{open: true}},
		{"an action on the open view's connection", demand{viewed: true, users: 1, open: true, sampling: true}, step{}},
		{"view closes: stop sampling, start the idle time",
			demand{open: true, sampling: true}, step{unsample: true, markIdle: true, wakeAt: now.Add(idle)}},
		{"idle for half the time", demand{open: true, idleFrom: now.Add(-idle / 2)}, step{wakeAt: now.Add(idle / 2)}},
		{"idle for the time: close", demand{open: true, idleFrom: now.Add(-idle)}, step{close: true}},
		{"idle long ago: close", demand{open: true, idleFrom: now.Add(-time.Hour)}, step{close: true}},
		{"view opened again while idle: keep, sample", demand{viewed: true, open: true, idleFrom: now.Add(-time.Hour)}, step{sample: true}},
		{"action ended, view closed", demand{open: true}, step{markIdle: true, wakeAt: now.Add(idle)}},
	} {
		if got := decide(tc.d, now, idle); got != tc.want {
			t.Errorf("%s: decide(%+v) = %+v, want %+v", tc.name, tc.d, got, tc.want)
		}
	}
}

func TestChangesEnvironment(t *testing.T) {
	for _, k := range append(remote.AllActionKinds, remote.ActBench) {
		want := k == remote.ActSetMode || k == remote.ActUndoMode
		if got := changesEnvironment(k); got != want {
			t.Errorf("%s: %v, want %v", k, got, want)
		}
	}
}

// TestOnDemandSetPaceRecordsView: the view's demand reaches the policy
// through SetPace without blocking, and nothing is open before it.
func TestOnDemandSetPaceRecordsView(t *testing.T) {
	o := NewOnDemand(Options{Name: "gpu1"}, 0)
	if o.idle != DefaultIdle {
		t.Errorf("idle %v, want %v", o.idle, DefaultIdle)
	}
	o.SetPace(remote.Pace{Viewed: true})
	o.SetPace(remote.Pace{Viewed: true, Steady: true})
	o.mu.Lock()
	d, read := o.d, o.readWant
	o.mu.Unlock()
	if !d.viewed || d.open || !read {
		t.Errorf("after the view opened: demand %+v, read asked %v; want viewed, not yet open, a read asked", d, read)
	}
	o.SetPace(remote.Pace{})
	o.mu.Lock()
	d = o.d
	o.mu.Unlock()
	if d.viewed {
		t.Errorf("after the view closed: %+v", d)
	}
}
