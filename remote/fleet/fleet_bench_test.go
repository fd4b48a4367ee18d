package fleet_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/sim/sglang"
)

// startupLines is one whole SGLang startup as its journal lines.
func startupLines() []string {
	s := sglang.New(sglang.Defaults())
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	var out []string
	for _, l := range s.Lines {
		if !l.Partial {
			out = append(out, l.Render(t0.Add(l.At)))
		}
	}
	return out
}

// loopDriver emits n journal lines, cycling through lines, then waits.
type loopDriver struct {
	name  string
	lines []string
	n     int
}

func (d *loopDriver) Name() string { return d.name }

func (d *loopDriver) Run(ctx context.Context, emit remote.Emit) error {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	emit(event.Event{Host: d.name, Kind: event.KindUnit, Time: t0,
		Unit: &event.Unit{Name: "sglang.service", ActiveState: "active", SubState: "running", InvocationID: "inv"}})
	for i := range d.n {
		if !emit(event.Event{Host: d.name, Kind: event.KindJournal, Time: t0.Add(time.Duration(i) * time.Millisecond),
			Journal: &event.Journal{InvocationID: "inv", Priority: 6, Message: d.lines[i%len(d.lines)]}}) {
			return ctx.Err()
		}
	}
	<-ctx.Done()
	return ctx.Err()
}

func (d *loopDriver) Do(context.Context, remote.Action, remote.Emit) error { return nil }

// BenchmarkFleetJournal is the whole path a journal line takes from a
// host's driver to the console: fan-in, sanitiser, phase engine, batching,
// with 8 hosts writing SGLang startup lines at once. One op is one line;
// lines/s is the fleet's throughput.
func BenchmarkFleetJournal(b *testing.B) {
	const hosts = 8
	lines := startupLines()
	per := b.N/hosts + 1
	specs := make([]fleet.HostSpec, hosts)
	for i := range specs {
		specs[i] = fleet.HostSpec{Driver: &loopDriver{name: fmt.Sprintf("gpu%d", i+1), lines: lines, n: per},
			Unit: "sglang.service", Engine: "sglang"}
	}
	f, err := fleet.New(specs, fleet.Options{Kernels: kernels.DefaultCatalog(), Flush: 20 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	b.ResetTimer()
	start := time.Now()
	go func() { done <- f.Run(ctx) }()
	got := 0
	for got < per*hosts {
		batch := <-f.Updates()
		got += batch.Dropped
		for _, e := range batch.Events {
			if e.Kind == event.KindJournal {
				got++
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(got)/time.Since(start).Seconds(), "lines/s")
	cancel()
	_ = <-done // Run's end after the cancel
}

// quietDriver is a serving host as a quiet fleet sees it: every period a
// probe answer with the access-log line it makes the service print, and
// a GPU sample, starting at offset.
type quietDriver struct {
	name           string
	offset, period time.Duration
}

func (d *quietDriver) Name() string { return d.name }

func (d *quietDriver) Run(ctx context.Context, emit remote.Emit) error {
	now := time.Now()
	emit(event.Event{Host: d.name, Kind: event.KindUnit, Time: now,
		Unit: &event.Unit{Name: "sglang.service", ActiveState: "active", SubState: "running", InvocationID: "inv", ExecMainStart: now}})
	emit(event.Event{Host: d.name, Kind: event.KindJournal, Time: now,
		Journal: &event.Journal{InvocationID: "inv", Priority: 6, Message: "[2026-12-02 01:00:00] The server is fired up and ready to roll!"}})
	t := time.NewTimer(d.offset)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case at := <-t.C:
			emit(event.Event{Host: d.name, Kind: event.KindProbe, Time: at, Probe: &event.Probe{OK: true, Status: 200, Path: "/health"}})
			emit(event.Event{Host: d.name, Kind: event.KindJournal, Time: at,
				Journal: &event.Journal{InvocationID: "inv", Priority: 6, Message: `INFO:     127.0.0.1:53542 - "GET /health HTTP/1.1" 200 OK`}})
			emit(event.Event{Host: d.name, Kind: event.KindGPU, Time: at, GPU: &event.GPU{Devices: []event.GPUDevice{{MemUsedMiB: 70000, MemTotalMiB: 81559}}}})
			t.Reset(d.period)
		}
	}
}

func (d *quietDriver) Do(context.Context, remote.Action, remote.Emit) error { return nil }

// BenchmarkQuietFleet256 is the fleet's own cost (fan-in, fold, batches,
// a consumer taking them) for 256 serving hosts at a steady host's
// sampling (a probe, its access-log line and a GPU sample every 30 s a
// host, spread out): one op is a second of it, cpu-%/op the process's CPU
// time in it as % of a core, batches/op how many batches went out.
func BenchmarkQuietFleet256(b *testing.B) {
	const hosts, period = 256, 30 * time.Second
	specs := make([]fleet.HostSpec, hosts)
	for i := range specs {
		specs[i] = fleet.HostSpec{Driver: &quietDriver{name: fmt.Sprintf("gpu%d", i+1), offset: time.Duration(i) * period / hosts, period: period},
			Unit: "sglang.service", Engine: "sglang"}
	}
	f, err := fleet.New(specs, fleet.Options{Kernels: kernels.DefaultCatalog()})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	var batches atomic.Int64
	go func() {
		for range f.Updates() {
			batches.Add(1)
		}
	}()
	time.Sleep(2 * time.Second) // every host serving, the start's batches out
	b.ResetTimer()
	cpu0, n0, t0 := cpuTime(b), batches.Load(), time.Now()
	time.Sleep(time.Duration(b.N) * time.Second)
	cpu, wall := cpuTime(b)-cpu0, time.Since(t0)
	b.StopTimer()
	b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "cpu-%/op")
	b.ReportMetric(float64(batches.Load()-n0)/wall.Seconds(), "batches/op")
	cancel()
	_ = <-done // Run reports what goes wrong on a host as events
}

// cpuTime is this process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
