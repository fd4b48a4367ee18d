package fleet

import (
	"fmt"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
)

// quietFold is a fold of n serving hosts with full GPU histories, as a
// quiet fleet's fold loop holds them.
func quietFold(b *testing.B, n int) (*Fleet, []*hostFold, *snapshots, time.Time) {
	b.Helper()
	specs := make([]HostSpec, n)
	for i := range specs {
		specs[i] = HostSpec{Driver: &scriptDriver{name: fmt.Sprintf("gpu%d", i)}, Unit: "sglang.service"}
	}
	f, err := New(specs, Options{Kernels: kernels.DefaultCatalog()})
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	hosts := make([]*hostFold, n)
	snaps := &snapshots{}
	var pending batch
	for i := range hosts {
		hosts[i] = &hostFold{tracker: startup.NewTracker(startup.Options{Kernels: f.opts.Kernels}), settle: startup.NewSettler(DefaultSettle),
			state: remote.HostState{Name: specs[i].Driver.Name(), Unit: "sglang.service"}}
		f.apply(hosts, snaps, &pending, event.Event{Host: hosts[i].state.Name, Kind: event.KindUnit, Time: t0,
			Unit: &event.Unit{Name: "sglang.service", ActiveState: "active", SubState: "running", ExecMainStart: t0}})
		for s := range f.opts.GPUHistory {
			f.apply(hosts, snaps, &pending, gpuSample(hosts[i].state.Name, t0.Add(time.Duration(s)*time.Second)))
		}
	}
	return f, hosts, snaps, t0
}

func gpuSample(host string, at time.Time) event.Event {
	return event.Event{Host: host, Kind: event.KindGPU, Time: at, GPU: &event.GPU{
		Devices: []event.GPUDevice{{Index: 0, Name: "H100", MemUsedMiB: 70000, MemTotalMiB: 81559, UtilPct: 3}}}}
}

// BenchmarkQuietBatch256 is one batch of a quiet 256-host fleet: one
// host's GPU sample and probe folded in, and the batch's snapshot taken;
// side by side with the same batch taking every host anew (what a batch
// cost before the fold kept its stale list, and what one after a
// fleet-wide change still costs).
func BenchmarkQuietBatch256(b *testing.B) {
	for _, every := range []bool{false, true} {
		name := "changed-only"
		if every {
			name = "every-host"
		}
		b.Run(name, func(b *testing.B) {
			f, hosts, snaps, t0 := quietFold(b, 256)
			var pending batch
			snaps.take(hosts, t0, t0)
			b.ReportAllocs()
			b.ResetTimer()
			for n := range b.N {
				at := t0.Add(time.Hour + time.Duration(n)*time.Millisecond)
				name := hosts[n%len(hosts)].state.Name
				f.apply(hosts, snaps, &pending, gpuSample(name, at))
				f.apply(hosts, snaps, &pending, event.Event{Host: name, Kind: event.KindProbe, Time: at, Probe: &event.Probe{OK: true, Status: 200, Path: "/health"}})
				if every {
					for i, h := range hosts {
						snaps.mark(i, h)
					}
				}
				all, _ := snaps.take(hosts, at, at)
				pending = batch{Batch: remote.Batch{Hosts: all}}
			}
		})
	}
}

// BenchmarkBusyBatch is one batch of a large fleet while units start: 20
// hosts each with a GPU sample and a probe folded in, and the batch's
// snapshot taken, at 1 000 and 10 000 hosts side by side, each as a copy
// of every host's snapshot and as the states of the hosts taken anew
// (Options.Deltas): the latter's cost should follow the 20 hosts, not
// the fleet.
func BenchmarkBusyBatch(b *testing.B) {
	const changed = 20
	for _, n := range []int{1000, 10000} {
		for _, deltas := range []bool{false, true} {
			b.Run(fmt.Sprintf("hosts=%d/deltas=%v", n, deltas), func(b *testing.B) {
				f, hosts, snaps, t0 := quietFold(b, n)
				snaps.deltas = deltas
				var pending batch
				all, taken := snaps.take(hosts, t0, t0)
				pending = batch{Batch: remote.Batch{Hosts: all}}
				stamp(&pending.Batch, false, snaps.delta, taken)
				snaps.hand(&pending.Batch)
				b.ReportAllocs()
				b.ResetTimer()
				k := 0
				for op := range b.N {
					at := t0.Add(time.Hour + time.Duration(op)*time.Millisecond)
					for range changed {
						name := hosts[k%len(hosts)].state.Name
						k += 97 // spread over the fleet
						f.apply(hosts, snaps, &pending, gpuSample(name, at))
						f.apply(hosts, snaps, &pending, event.Event{Host: name, Kind: event.KindProbe, Time: at, Probe: &event.Probe{OK: true, Status: 200, Path: "/health"}})
					}
					all, taken := snaps.take(hosts, at, at)
					pending = batch{Batch: remote.Batch{Hosts: all}}
					stamp(&pending.Batch, false, snaps.delta, taken)
					snaps.hand(&pending.Batch)
					if len(pending.Taken) != changed || deltas != (pending.Hosts == nil) {
						b.Fatalf("%d hosts taken anew (want %d), whole snapshot %v", len(pending.Taken), changed, pending.Hosts != nil)
					}
				}
			})
		}
	}
}
