package fleet

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/startup"
)

// TestSnapshotReusesQuietHosts: a host with no event since the last
// snapshot is handed out as it was, without being looked at or copied
// again (only the stale list is taken anew); an event, a tick change or a
// clock-dependent field (an ETA) takes it anew. Each row folds some
// events and says which hosts the next snapshot takes anew.
func TestSnapshotReusesQuietHosts(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	names := []string{"gpu1", "gpu2", "gpu3"}
	specs := make([]HostSpec, len(names))
	for i, n := range names {
		specs[i] = HostSpec{Driver: &scriptDriver{name: n}, Unit: "sglang.service"}
	}
	f, err := New(specs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	hosts := make([]*hostFold, len(names))
	snaps := &snapshots{}
	for i, n := range names {
		hosts[i] = &hostFold{tracker: startup.NewTracker(startup.Options{}), settle: startup.NewSettler(time.Second), state: remote.HostState{Name: n}}
		snaps.mark(i, hosts[i])
	}
	probe := func(host string, status int) event.Event {
		return event.Event{Host: host, Kind: event.KindProbe, Time: now, Probe: &event.Probe{OK: status == 200, Status: status}}
	}
	starting := event.Event{Host: "gpu2", Kind: event.KindUnit, Time: now,
		Unit: &event.Unit{Name: "sglang.service", ActiveState: "activating", SubState: "start", ExecMainStart: now}}
	var pending batch
	var last []remote.HostState
	for _, tc := range []struct {
		name   string
		before func() // what happens to the fold first
		events []event.Event
		taken  []int
	}{
		{name: "the first snapshot takes every host", taken: []int{0, 1, 2}},
		{name: "nothing happened: nobody is taken anew"},
		{name: "an event for gpu1 takes only gpu1", events: []event.Event{probe("gpu1", 200)}, taken: []int{0},
			// not through apply: must not show in gpu2's snapshot
			before: func() { hosts[1].state.Probe = event.Probe{Status: 599} }},
		{name: "two events for gpu3, then gpu1: each taken once", events: []event.Event{probe("gpu3", 503), probe("gpu1", 503), probe("gpu3", 200)}, taken: []int{2, 0}},
		{name: "gpu2 starting with an expectation has an ETA", events: []event.Event{starting}, taken: []int{1},
			before: func() {
				hosts[1].observers = []HostObserver{History(knownExpect{Runs: 3, Total: 10 * time.Minute}).Follow(Folded{f, hosts[1]})}
				hosts[1].state.Probe = event.Probe{} // its event would show the one set behind apply's back
			}},
		{name: "its ETA moves with the clock: taken anew without events", taken: []int{1}},
	} {
		if tc.before != nil {
			tc.before()
		}
		for _, ev := range tc.events {
			f.apply(hosts, snaps, &pending, ev)
		}
		now = now.Add(time.Minute)
		out, taken := snaps.take(hosts, now, now)
		if !slices.Equal(taken, tc.taken) {
			t.Errorf("%s: took %v anew, want %v", tc.name, taken, tc.taken)
		}
		for i, h := range hosts {
			if !slices.Contains(taken, i) && last != nil && !reflect.DeepEqual(out[i], last[i]) {
				t.Errorf("%s: %s changed without being taken anew", tc.name, h.state.Name)
			}
			if slices.Contains(taken, i) && out[i].Probe != h.state.Probe {
				t.Errorf("%s: %s's probe %+v, want %+v", tc.name, h.state.Name, out[i].Probe, h.state.Probe)
			}
		}
		if out[1].Probe.Status == 599 {
			t.Errorf("%s: gpu2 shows a probe that never went through apply", tc.name)
		}
		last = out
	}
	if last[1].ETA.IsZero() || !hosts[1].timed {
		t.Errorf("gpu2 starting with an expectation: ETA %v, timed %v", last[1].ETA, hosts[1].timed)
	}
}

// knownExpect is a history that expects the same of every host.
type knownExpect history.Expectation

func (e knownExpect) Expect(string, string, map[string]string) (history.Expectation, bool) {
	return history.Expectation(e), true
}

// TestGPUAppendNeverWritesOverASnapshot: snapshots share the GPU
// history's array, so appending keeps the last keep samples in order and
// never changes a sample a slice taken earlier holds.
func TestGPUAppendNeverWritesOverASnapshot(t *testing.T) {
	const keep = 4
	sample := func(n int) event.GPU { return event.GPU{Devices: []event.GPUDevice{{MemUsedMiB: n}}} }
	var gs []event.GPU
	var taken [][]event.GPU
	var want [][]int
	for n := 1; n <= 5*keep; n++ {
		gs = gpuAppend(gs, sample(n), keep)
		var w []int
		for m := max(1, n-keep+1); m <= n; m++ {
			w = append(w, m)
		}
		taken, want = append(taken, gs[:len(gs):len(gs)]), append(want, w)
	}
	for k, s := range taken {
		got := make([]int, len(s))
		for i, g := range s {
			got[i] = g.Devices[0].MemUsedMiB
		}
		if !slices.Equal(got, want[k]) {
			t.Errorf("after sample %d the history held %v, want %v (written over later?)", k+1, got, want[k])
		}
	}
}

// TestStampTaken: a batch's Taken is the hosts its snapshot took anew,
// ascending and each once; merged with a batch never handed out, those
// that batch took too; no Delta (and no Taken) once either snapshot's
// hosts were not the last one's.
func TestStampTaken(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before        remote.Batch // the batch as the fold holds it
		merged, delta bool
		taken         []int
		want          remote.Batch
	}{
		{name: "a first snapshot", taken: []int{2, 0, 1}},
		{name: "a delta", delta: true, taken: []int{4, 1}, want: remote.Batch{Delta: true, Taken: []int{1, 4}}},
		{name: "nothing taken", delta: true, want: remote.Batch{Delta: true}},
		{name: "merged with a delta", before: remote.Batch{Delta: true, Taken: []int{1, 7}}, merged: true, delta: true,
			taken: []int{7, 3}, want: remote.Batch{Delta: true, Taken: []int{1, 3, 7}}},
		{name: "merged with a first snapshot", before: remote.Batch{}, merged: true, delta: true, taken: []int{3}},
		{name: "a batch not merged forgets the fold's leftovers", before: remote.Batch{Delta: true, Taken: []int{9}}, delta: true,
			taken: []int{2}, want: remote.Batch{Delta: true, Taken: []int{2}}},
		{name: "hosts changed", before: remote.Batch{Delta: true, Taken: []int{1}}, merged: true, taken: []int{0, 1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.before
			stamp(&b, tc.merged, tc.delta, tc.taken)
			if b.Delta != tc.want.Delta || !slices.Equal(b.Taken, tc.want.Taken) {
				t.Errorf("Delta %v Taken %v, want %v %v", b.Delta, b.Taken, tc.want.Delta, tc.want.Taken)
			}
		})
	}
}

// pulseDriver starts and stops its unit every period, n times: a host
// whose startup changes now and then.
type pulseDriver struct {
	name   string
	period time.Duration
	n      int
}

func (d *pulseDriver) Name() string { return d.name }

func (d *pulseDriver) Run(ctx context.Context, emit remote.Emit) error {
	for i := range d.n {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(d.period):
		}
		u := event.Unit{Name: "sglang.service", ActiveState: "activating", SubState: "start", ExecMainStart: time.Now()}
		if i%2 == 1 {
			u.ActiveState, u.SubState = "inactive", "dead"
		}
		emit(event.Event{Host: d.name, Kind: event.KindUnit, Time: time.Now(), Unit: &u})
	}
	<-ctx.Done()
	return nil
}

func (d *pulseDriver) Do(context.Context, remote.Action, remote.Emit) error { return nil }

// TestBatchTakenNamesEveryChangedHost: through a running fleet whose
// consumer is at times slow (batches merged), every batch after the
// first is a Delta, and a host it does not list as taken anew is the
// last batch's snapshot as it was; with Options.Deltas such a batch
// carries only the states of the hosts taken, and the snapshot a
// consumer keeps from them (Batch.Apply) ends as the hosts did: every
// unit stopped.
func TestBatchTakenNamesEveryChangedHost(t *testing.T) {
	for _, deltas := range []bool{false, true} {
		t.Run(fmt.Sprintf("deltas=%v", deltas), func(t *testing.T) {
			var drivers []remote.Driver
			for i := range 6 {
				drivers = append(drivers, &pulseDriver{name: fmt.Sprintf("gpu%d", i+1), period: time.Duration(7+3*i) * time.Millisecond, n: 20})
			}
			f, _, _ := startFleet(t, Options{Flush: 5 * time.Millisecond, Deltas: deltas}, drivers...)
			var kept []remote.HostState
			stopped := func() bool {
				return len(kept) == len(drivers) && !slices.ContainsFunc(kept, func(h remote.HostState) bool { return h.UnitState.ActiveState != "inactive" })
			}
			deltaBatches, deadline := 0, time.After(5*time.Second)
			for n := 0; deltaBatches < 15 || !stopped(); n++ {
				var b remote.Batch
				select {
				case b = <-f.Updates():
				case <-deadline:
					t.Fatalf("%d delta batches in 5 s, the hosts kept %+v", deltaBatches, kept)
				}
				switch {
				case n == 0 && b.Delta:
					t.Fatal("the first batch is a Delta")
				case n > 0 && !b.Delta:
					t.Fatalf("batch %d is no Delta", n)
				case b.Delta && deltas && (b.Hosts != nil || len(b.States) != len(b.Taken)):
					t.Fatalf("batch %d: %d hosts, %d states of %d taken", n, len(b.Hosts), len(b.States), len(b.Taken))
				}
				next := b.Apply(kept)
				if b.Delta {
					deltaBatches++
					for i := range next {
						if !slices.Contains(b.Taken, i) && !reflect.DeepEqual(next[i], kept[i]) {
							t.Fatalf("batch %d: host %s changed but is not in Taken %v", n, next[i].Name, b.Taken)
						}
					}
				}
				kept = next
				if n%3 == 0 {
					time.Sleep(20 * time.Millisecond) // slow: the fold merges what comes meanwhile
				}
			}
		})
	}
}

// TestUntilHandsDeltasWhole: a fleet that hands out only what changed
// (Options.Deltas) still gives Until's step every host in each batch,
// ending as the hosts did.
func TestUntilHandsDeltasWhole(t *testing.T) {
	var drivers []remote.Driver
	for i := range 4 {
		drivers = append(drivers, &pulseDriver{name: fmt.Sprintf("gpu%d", i+1), period: time.Duration(5+2*i) * time.Millisecond, n: 10})
	}
	specs := make([]HostSpec, len(drivers))
	for i, d := range drivers {
		specs[i] = HostSpec{Driver: d, Unit: "sglang.service"}
	}
	f, err := New(specs, Options{Flush: 5 * time.Millisecond, Deltas: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fl := Follow(ctx, f)
	defer func() { _ = fl.Stop(time.Second) }()
	deltas := 0
	err = fl.Until(ctx, 0, func(b remote.Batch) bool {
		if len(b.Hosts) != len(drivers) {
			t.Fatalf("a batch of %d hosts, want %d", len(b.Hosts), len(drivers))
		}
		if b.Delta {
			deltas++
		}
		return !slices.ContainsFunc(b.Hosts, func(h remote.HostState) bool { return h.UnitState.ActiveState != "inactive" })
	})
	if err != nil || deltas == 0 {
		t.Fatalf("Until: %v after %d delta batches", err, deltas)
	}
}
