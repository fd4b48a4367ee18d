package ui

import (
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup/corpus"
)

// realLongLines are the lines of the real-log corpus 240 to 600 bytes
// long (traceback frames, server_args, JSON arguments, NCCL and CUDA
// errors as SGLang and vLLM print them; 70 lines, 321 bytes on average):
// what a console at scale holds, longer than the 120-160 byte decode
// lines of the 64-host benchmark.
func realLongLines(b *testing.B) []string {
	b.Helper()
	logs, err := corpus.ReadAll(corpus.Dir())
	if err != nil {
		b.Fatal(err)
	}
	var out []string
	for _, l := range logs {
		for _, line := range strings.Split(l.Body, "\n") {
			if n := len(line); n >= 240 && n <= 600 && !strings.ContainsRune(line, 0) {
				out = append(out, line)
			}
		}
	}
	if len(out) < 50 {
		b.Fatalf("only %d corpus lines of 240-600 bytes", len(out))
	}
	return out
}

// console256 is the console over 256 hosts at 200×60, in colour, whose
// logs have been fed real ~300-byte lines until the fleet's log budget
// holds them (2 000 lines a host: 157 MiB through a 112 MiB budget), and
// the MB of heap it then retains.
func console256(b *testing.B) (*Model, remote.Batch, []string, float64) {
	b.Helper()
	const hosts, perHost = 256, 2000
	lines := realLongLines(b)
	batch := fleetOf(hosts, "gpu%03d")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, _ := newTestModel(b, 200, 60)
	m.opts.NoColor = false
	m.setStyles(true)
	m.Update(batchMsg(batch))
	k := 0
	for i := range hosts {
		feed := remote.Batch{Hosts: batch.Hosts}
		for range perHost {
			// Each line its own copy, as lines from the network are: the
			// retained heap is then what 256 hosts' text really takes.
			feed.Events = append(feed.Events, event.Event{Host: batch.Hosts[i].Name, Kind: event.KindJournal, Time: now,
				Journal: &event.Journal{Priority: 6, Message: strings.Clone(lines[k%len(lines)])}})
			k++
		}
		m.Update(batchMsg(feed))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	return m, batch, lines, float64(after.HeapAlloc-before.HeapAlloc) / (1 << 20)
}

// BenchmarkConsole256Hosts is a frame of the console holding 256 hosts at
// 200×60 with realistic line lengths (target: 2 ms), in each place a
// person looks: the fleet table, the table filtered, a key moving the
// cursor, a batch of new lines and snapshots arriving (as every 50 ms
// while hosts start), and the host view, following and filtered.
func BenchmarkConsole256Hosts(b *testing.B) {
	m, batch, lines, retained := console256(b)
	frame := func(b *testing.B, step func(i int)) {
		b.Helper()
		i := 0
		for b.Loop() {
			if step != nil {
				step(i)
			}
			_ = m.View()
			i++
		}
	}
	b.Run("table", func(b *testing.B) {
		frame(b, nil)
		b.ReportMetric(retained, "MB-retained") // what the console holds for the 256 hosts
	})
	b.Run("key", func(b *testing.B) {
		keys := []string{"j", "k"}
		frame(b, func(i int) { m.Update(keyMsg(keys[i%2])) })
	})
	b.Run("batch", func(b *testing.B) {
		// A batch as the fleet hands one out: every host's snapshot and a
		// line for one host in eight.
		next := remote.Batch{Hosts: batch.Hosts}
		for i := 0; i < len(batch.Hosts); i += 8 {
			next.Events = append(next.Events, event.Event{Host: batch.Hosts[i].Name, Kind: event.KindJournal, Time: now,
				Journal: &event.Journal{Priority: 6, Message: lines[i%len(lines)]}})
		}
		frame(b, func(int) { m.Update(batchMsg(next)) })
	})
	b.Run("filter", func(b *testing.B) {
		press(m, append([]string{"/"}, typed("phase:weights")...)...)
		press(m, "enter")
		if len(m.table.rows) == 0 || len(m.table.rows) == len(m.hosts) {
			b.Fatalf("filter phase:weights shows %d of %d hosts", len(m.table.rows), len(m.hosts))
		}
		frame(b, nil)
		press(m, "/", "esc")
	})
	// Each host-view case opens the host itself, so that -bench can pick
	// one alone.
	// The budget has taken the oldest lines, idle (serving) hosts' first:
	// the host opened is the one holding the most.
	held := func(host string) int { r := m.ring(host); return r.total - r.first() }
	fullest := batch.Hosts[0].Name
	for _, h := range batch.Hosts {
		if held(h.Name) > held(fullest) {
			fullest = h.Name
		}
	}
	openHost := func(b *testing.B) {
		b.Helper()
		if m.focus.view() != focusHost {
			press(m, append(append([]string{":"}, typed("host "+fullest)...), "enter")...)
		}
		if m.focus.view() != focusHost || held(m.host.name) < 1000 {
			b.Fatalf("no host view open on a host with a full ring (focus %v, host %q, %d lines)", m.focus.view(), m.host.name, held(m.host.name))
		}
	}
	b.Run("hostview", func(b *testing.B) {
		openHost(b)
		frame(b, nil)
	})
	b.Run("hostview-filter", func(b *testing.B) {
		openHost(b)
		m.host.log.setQuery("Error", m.ring(m.host.name))
		frame(b, nil)
		m.host.log.setQuery("", m.ring(m.host.name))
	})
}

// BenchmarkConsole1000Grouped is a frame of the console over 1 000 hosts
// at 200×60, in colour (target: 2 ms), flat and grouped by rack side by
// side in one run: the table as it stands, a key moving the cursor, a
// batch of every host's snapshot (the relayout of the groups included)
// and the table filtered. Grouped, the table shows the 32 racks' summary
// rows with the first failed rack open.
func BenchmarkConsole1000Grouped(b *testing.B) {
	lines := realLongLines(b)
	m := fleet1000(b, 200, 60, false)
	batch := remote.Batch{Hosts: m.hosts}
	k := 0
	for i := range m.hosts {
		feed := remote.Batch{Hosts: batch.Hosts}
		for range 50 {
			feed.Events = append(feed.Events, event.Event{Host: batch.Hosts[i].Name, Kind: event.KindJournal, Time: now,
				Journal: &event.Journal{Priority: 6, Message: strings.Clone(lines[k%len(lines)])}})
			k++
		}
		m.Update(batchMsg(feed))
	}
	next := remote.Batch{Hosts: batch.Hosts}
	for i := 0; i < len(batch.Hosts); i += 8 {
		next.Events = append(next.Events, event.Event{Host: batch.Hosts[i].Name, Kind: event.KindJournal, Time: now,
			Journal: &event.Journal{Priority: 6, Message: lines[i%len(lines)]}})
	}
	frame := func(b *testing.B, step func(i int)) {
		b.Helper()
		cpu0 := cpuTime(b)
		i := 0
		for b.Loop() {
			if step != nil {
				step(i)
			}
			_ = m.View()
			i++
		}
		// The machine is shared: the process's CPU time a frame says what
		// a frame costs when other work holds the cores (ns/op is wall time).
		b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(i), "cpu-ns/op")
	}
	for _, grouped := range []bool{false, true} {
		name := "flat"
		if grouped {
			name = "grouped"
		}
		setup := func(b *testing.B) {
			b.Helper()
			m.table.groupBy = 0
			m.table.expanded = map[string]bool{}
			m.table.refilter()
			m.table.cursor = 0
			if grouped {
				press(m, "t", "g", "enter") // by rack; open the first group, a failed one
				if m.table.groupBy != 1 || len(m.table.groups) != 32 || len(m.table.lines) != 32+32 {
					b.Fatalf("grouped: by %d, %d groups, %d lines", m.table.groupBy, len(m.table.groups), len(m.table.lines))
				}
			}
		}
		b.Run("table-"+name, func(b *testing.B) {
			setup(b)
			frame(b, nil)
		})
		b.Run("key-"+name, func(b *testing.B) {
			setup(b)
			keys := []string{"j", "k"}
			frame(b, func(i int) { m.Update(keyMsg(keys[i%2])) })
		})
		b.Run("batch-"+name, func(b *testing.B) {
			setup(b)
			frame(b, func(int) { m.Update(batchMsg(next)) })
		})
		b.Run("filter-"+name, func(b *testing.B) {
			setup(b)
			press(m, append([]string{"/"}, typed("phase:weights")...)...)
			press(m, "enter")
			if len(m.table.rows) == 0 || len(m.table.rows) == len(m.hosts) {
				b.Fatalf("filter phase:weights shows %d of %d hosts", len(m.table.rows), len(m.hosts))
			}
			frame(b, nil)
			press(m, "/", "esc")
		})
	}
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
