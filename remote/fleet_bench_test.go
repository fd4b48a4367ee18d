package remote_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
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
	specs := make([]remote.HostSpec, hosts)
	for i := range specs {
		specs[i] = remote.HostSpec{Driver: &loopDriver{name: fmt.Sprintf("gpu%d", i+1), lines: lines, n: per},
			Unit: "sglang.service", Engine: "sglang"}
	}
	f, err := remote.NewFleet(specs, remote.Options{Kernels: kernels.DefaultCatalog(), Flush: 20 * time.Millisecond})
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
