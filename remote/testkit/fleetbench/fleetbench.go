// Package fleetbench measures bringup's fleet on real test hosts side by
// side with the obvious alternative, plain `ssh host journalctl`, in one
// run: the latency a line gains on its way into the fleet while every
// host starts at once, how fast a long run's journal is caught up, how
// soon the table is full, what the fleet costs while the hosts serve
// quietly, and (Options.CausesEvery) how soon after a failure its cause
// is in the fleet's batch. The fleet is built the way `bringup watch` builds it
// (live.Resolve, live.Specs, fleet.New, fleet.Follow); the hosts
// are the testbed's (remote/testkit/testbed), removed again however Run ends.
package fleetbench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/live"
	"github.com/bringup-dev/bringup/remote/startup"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// Defaults for Options.
const (
	DefaultQuiet        = 60 * time.Second
	DefaultCatchupLines = 400_000
	DefaultCatchupRuns  = 3
)

// Options configure Run.
type Options struct {
	// Hosts is how many test hosts to boot (1 to testbed.MaxHosts).
	Hosts int
	// Quiet is the steady-state window (default DefaultQuiet).
	Quiet time.Duration
	// CatchupLines is how many lines the catch-up run holds (default
	// DefaultCatchupLines); CatchupRuns how many times each side reads
	// them (default DefaultCatchupRuns; the median counts).
	CatchupLines, CatchupRuns int
	// Testbed is passed to testbed.Up; its Hosts, Host and Detach are
	// set by Run.
	Testbed testbed.Options
	// SteadyProfile, when set, receives a CPU profile (runtime/pprof) of
	// the steady-state window: what the fleet spends its CPU on while the
	// hosts are quiet.
	SteadyProfile io.Writer
	// HeapProfile, when set, receives a heap profile (runtime/pprof) at
	// the end of the steady-state window.
	HeapProfile io.Writer
	// TableProfile, when set, receives a CPU profile of the fleet's start
	// up to the full table.
	TableProfile io.Writer
	// LatencyProfile, when set, receives a CPU profile of the latency
	// window: every unit started at once, until every host serves.
	LatencyProfile io.Writer
	// CatchupProfile, when set, receives a CPU profile of the fleet's
	// first catch-up read.
	CatchupProfile io.Writer
	// Source is SourceSSH (the default: the SSH path against raw ssh) or
	// SourceVictoriaLogs (the store path too, side by side: Summary.Store).
	Source string
	// TableRuns, when positive, makes the run a table-only one: after the
	// boot, TableRuns rounds of the raw table and a fresh fleet's full
	// table (Summary.TableRuns), and nothing else. One full table is a
	// single sample on a machine the hosts saturate; rounds on the same
	// booted hosts are what tell a change from noise.
	TableRuns int
	// CausesEvery, when positive, adds the time-to-cause phase after the
	// steady window (Summary.Causes): every CausesEvery-th host replays a
	// failed corpus log as its unit's run, the scale rig's choice of logs
	// (scalerig.Plan), all started at once; the hosts serve again after.
	CausesEvery int
	// Logf receives progress lines; default discards them.
	Logf func(format string, args ...any)
}

// Summary is one run's figures, as written to the JSON summary.
type Summary struct {
	Hosts   int       `json:"hosts"`
	Source  string    `json:"source"`
	Cores   int       `json:"cores"`
	Started time.Time `json:"started"`
	TookS   float64   `json:"took_s"`
	// Load is the machine's 1-minute load average at the start and the
	// end: the machine is shared, and the figures carry its load.
	Load   [2]float64      `json:"load"`
	Raised []testbed.Limit `json:"raised_limits,omitempty"`
	BootS  float64         `json:"boot_s"`
	// Inventory was the run's inventory directory (gone after the run).
	Inventory string `json:"inventory"`

	FullTable FullTable `json:"full_table"`
	// TableRuns are the rounds of Options.TableRuns, in order.
	TableRuns []FullTable `json:"table_runs,omitempty"`
	Latency   Latency     `json:"latency"`
	Steady    Steady      `json:"steady"`
	Catchup   Catchup     `json:"catchup"`
	// Causes is the time-to-cause phase's figures (Options.CausesEvery),
	// nil without.
	Causes  *Causes `json:"causes,omitempty"`
	Cleanup Cleanup `json:"cleanup"`
	// Store is the store path's figures (Options.Source
	// SourceVictoriaLogs), nil without.
	Store *Store `json:"store,omitempty"`
}

// FullTable is the time from the fleet's start to every host connected
// with its unit state known, against N parallel `ssh host systemctl show`.
type FullTable struct {
	BringupS float64 `json:"bringup_s"`
	RawS     float64 `json:"raw_s"`
	// ResolveS is live.Resolve before the fleet starts (ssh -G per host,
	// keys read), which a console also pays before its first frame.
	ResolveS float64 `json:"resolve_s"`
	Ratio    float64 `json:"ratio"` // bringup / raw
	// BringupCPUS is the CPU this process used from the fleet's start to
	// the full table, and MachineBusyPct the share of all the machine's
	// cores busy meanwhile (the hosts' sshd, systemd and journalctl
	// included): what bounds the time when the machine is full.
	BringupCPUS    float64 `json:"bringup_cpu_s"`
	MachineBusyPct float64 `json:"machine_busy_pct"`
}

// Latency times the same journal lines, by cursor, at a raw `ssh host
// journalctl -f -o json` reader and at the fleet, from the journal's own
// timestamp, while every host starts at once.
type Latency struct {
	// Lines is how many lines both sides saw; RawOnly and FleetOnly the
	// lines only one side saw (RawOnly also counts raw lines that did not
	// decode).
	Lines     int `json:"lines"`
	RawOnly   int `json:"raw_only"`
	FleetOnly int `json:"fleet_only"`
	// Raw is arrival at the raw reader; Fleet the event's Seen (the
	// journal follower's receipt); Added Fleet − Raw per line; Delivered
	// the batch that carried it reaching the consumer (after the fleet's
	// fold and its 50 ms flush).
	Raw       Dist `json:"raw"`
	Fleet     Dist `json:"fleet"`
	Added     Dist `json:"added"`
	Delivered Dist `json:"delivered"`
	// RawVsRaw is the control: a second raw reader on every host, the
	// same command as the first, timed against it line by line (second
	// − first). journald wakes its readers at most every 250 ms, and a
	// line written while one reader is still reading reaches the other a
	// wake-up later: what two plain readers show here is that race alone,
	// the part of Added no reader can avoid.
	RawVsRaw Dist `json:"raw_vs_raw"`
	// Ratio is Fleet p99 / Raw p99.
	Ratio float64 `json:"ratio_p99"`
	// Late are the lines the fleet got latest after the raw reader, the
	// worst first, for whoever looks into the tail.
	Late []LateLine `json:"late,omitempty"`
	// ServingS is the start of every unit to every host serving.
	ServingS float64 `json:"serving_s"`
}

// LateLine is one line the fleet got well after the raw reader.
type LateLine struct {
	Host    string  `json:"host"`
	AtS     float64 `json:"at_s"` // its journal time, after the units were started
	AddedMs float64 `json:"added_ms"`
	Message string  `json:"message"` // its start, as the fleet handed it out
}

// lateLines is how many LateLine a summary keeps.
const lateLines = 5

// Steady is what the fleet costs with every host serving and quiet,
// against N raw followers (ssh processes, output discarded).
type Steady struct {
	WindowS       float64 `json:"window_s"`
	BringupCPUPct float64 `json:"bringup_cpu_pct"` // of one core
	BringupRSSMiB float64 `json:"bringup_rss_mib"`
	// BaseRSSMiB is this process before the fleet started (the testbed's
	// own state): part of BringupRSSMiB that is not the fleet's.
	BaseRSSMiB float64 `json:"base_rss_mib"`
	RawCPUPct  float64 `json:"raw_cpu_pct"`
	RawRSSMiB  float64 `json:"raw_rss_mib"`
	Events     int     `json:"events"` // what the fleet handed out meanwhile
	// HeapMiB, StackMiB and IdleMiB are the Go runtime's view at the
	// window's end (runtime.MemStats HeapInuse, StackInuse, and HeapIdle
	// less HeapReleased: heap kept but unused, counted in RSS until the
	// runtime returns it): what the RSS is made of.
	HeapMiB  float64 `json:"heap_mib"`
	StackMiB float64 `json:"stack_mib"`
	IdleMiB  float64 `json:"idle_mib"`
	// LiveHeapMiB and CollectedRSSMiB are the heap in use and the RSS
	// once a collection has run and the free memory has gone back to the
	// system (debug.FreeOSMemory), after the window: a quiet process
	// allocates too little to collect on its own, so the RSS above still
	// holds the start's garbage (the fleet's and the bench's own raw
	// readers'), which these leave out.
	LiveHeapMiB     float64 `json:"live_heap_mib"`
	CollectedRSSMiB float64 `json:"collected_rss_mib"`
	CPURatio        float64 `json:"cpu_ratio"`
	RSSRatio        float64 `json:"rss_ratio"`
}

// Catchup reads a run of CatchupLines journal lines, the unit still
// running, from its start: raw `journalctl -o json` with bringup's fields
// to its end, and the fleet until it has handed out the last line.
type Catchup struct {
	Lines int           `json:"lines"`
	Runs  []CatchupPair `json:"runs"`
	// RawS and BringupS are the medians; Speedup RawS / BringupS (above 1:
	// bringup is faster than the raw pipe).
	RawS     float64 `json:"raw_s"`
	BringupS float64 `json:"bringup_s"`
	Speedup  float64 `json:"speedup"`
	// RawBytesPerLine is what journalctl sent per line.
	RawBytesPerLine float64 `json:"raw_bytes_per_line"`
	// ExportS is the control: the median of the same read as raw `ssh
	// host journalctl -o export` with bringup's fields, the pipe
	// bringup's journal follower reads. BringupS against it is what
	// bringup adds to the pipe; RawS against it is journalctl's JSON
	// formatting, the most any reader of that pipe gains over raw JSON.
	ExportS       float64 `json:"export_s"`
	ExportSpeedup float64 `json:"export_speedup"` // ExportS / BringupS
}

// CatchupPair is one read by each side.
type CatchupPair struct {
	RawS         float64 `json:"raw_s"`
	ExportS      float64 `json:"export_s"`
	RawLines     int64   `json:"raw_lines"`
	BringupS     float64 `json:"bringup_s"`
	BringupLines int     `json:"bringup_lines"`
	Dropped      int     `json:"dropped"`
}

// Cleanup says what was left after the hosts went down.
type Cleanup struct {
	Down             bool     `json:"down"`
	Err              string   `json:"err,omitempty"`
	Left             []string `json:"left,omitempty"`
	InventoryRemoved bool     `json:"inventory_removed"`
}

// Run boots the hosts, measures, and takes them down again, whether it
// ends well, with an error or with ctx (Ctrl-C): the hosts, namespaces and
// inventory are gone when it returns (Summary.Cleanup says so). The
// summary holds what was measured before any error.
func Run(ctx context.Context, o Options) (s *Summary, err error) {
	if o.Hosts < 1 || o.Hosts > testbed.MaxHosts {
		return nil, fmt.Errorf("fleetbench: %d hosts: want 1 to %d", o.Hosts, testbed.MaxHosts)
	}
	if o.Quiet <= 0 {
		o.Quiet = DefaultQuiet
	}
	if o.CatchupLines <= 0 {
		o.CatchupLines = DefaultCatchupLines
	}
	if o.CatchupRuns <= 0 {
		o.CatchupRuns = DefaultCatchupRuns
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	switch o.Source {
	case "":
		o.Source = SourceSSH
	case SourceSSH, SourceVictoriaLogs:
	default:
		return nil, fmt.Errorf("fleetbench: source %q: want %s or %s", o.Source, SourceSSH, SourceVictoriaLogs)
	}
	s = &Summary{Hosts: o.Hosts, Source: o.Source, Cores: runtime.NumCPU(), Started: time.Now().UTC()}
	if o.Source == SourceVictoriaLogs {
		s.Store = &Store{}
	}
	s.Load[0] = loadAvg()
	start := time.Now()
	defer func() {
		s.Load[1] = loadAvg()
		s.TookS = secs(time.Since(start))
	}()

	tbo := o.Testbed
	tbo.Hosts, tbo.Detach = o.Hosts, false
	tbo.LogStore = tbo.LogStore || o.Source == SourceVictoriaLogs
	tbo.Host = func(int) testbed.HostOptions { return testbed.HostOptions{KernelMode: "on"} }
	if tbo.Logf == nil {
		tbo.Logf = o.Logf
	}
	tb, err := testbed.Up(ctx, tbo)
	if err != nil {
		return s, fmt.Errorf("fleetbench: %w", err)
	}
	s.BootS, s.Raised, s.Inventory = secs(time.Since(start)), tb.Raised(), tb.Inventory()
	defer func() {
		// Down whatever ended the run: a cancelled ctx must not stop it.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
		defer cancel()
		s.Cleanup = down(dctx, tb)
		if !s.Cleanup.Down || len(s.Cleanup.Left) > 0 || !s.Cleanup.InventoryRemoved {
			err = errors.Join(err, fmt.Errorf("fleetbench: clean up: %+v", s.Cleanup))
		}
	}()
	b := &bench{o: o, tb: tb, s: s}
	if o.TableRuns > 0 {
		if err := b.tableRuns(ctx); err != nil {
			return s, fmt.Errorf("fleetbench: %w", err)
		}
		return s, nil
	}
	if err := b.fleetPhases(ctx); err != nil {
		return s, fmt.Errorf("fleetbench: %w", err)
	}
	if err := b.catchup(ctx); err != nil {
		return s, fmt.Errorf("fleetbench: catch-up: %w", err)
	}
	return s, nil
}

// down takes the testbed down and checks that nothing of it is left.
func down(ctx context.Context, tb *testbed.Testbed) Cleanup {
	var c Cleanup
	if err := tb.Down(ctx); err != nil {
		c.Err = err.Error()
	} else {
		c.Down = true
	}
	left, err := tb.Leftovers()
	if err != nil {
		c.Left = append(c.Left, "leftovers unknown: "+err.Error())
	}
	c.Left = append(c.Left, left...)
	_, err = os.Stat(tb.Inventory())
	c.InventoryRemoved = errors.Is(err, os.ErrNotExist)
	return c
}

func secs(d time.Duration) float64 { return d.Seconds() }

// bench is one run's state.
type bench struct {
	o  Options
	tb *testbed.Testbed
	s  *Summary
}

func (b *bench) names() []string {
	var out []string
	for _, h := range b.tb.Hosts() {
		out = append(out, h.Name)
	}
	return out
}

// newFleet builds the fleet over hosts following unit as `bringup watch`
// does (live.Resolve: ssh_config, keys, the journal from the current run's
// start; live.Specs; fleet.New), read-only: the bench takes no
// actions.
func (b *bench) newFleet(ctx context.Context, hosts []string, unit string) (*fleet.Fleet, error) {
	targets := make([]live.Target, len(hosts))
	for i, h := range hosts {
		targets[i] = live.Target{Host: remote.Host{Name: h, Unit: unit, Engine: testbed.EngineSGLang}, SSH: live.SSHTarget{Host: h}}
	}
	noAsk := func(file string) ([]byte, error) {
		return nil, fmt.Errorf("%s: the testbed's key has no passphrase", file)
	}
	hs, release, err := live.Resolve(ctx, targets, b.tb.SSHConfig(), noAsk)
	if err != nil {
		return nil, err
	}
	defer release()
	opts := fleet.Options{Kernels: kernels.DefaultCatalog(), ReadOnly: true, Observers: []fleet.Observer{fleet.KernelCheck()}}
	return fleet.New(live.Specs(hs, opts), opts)
}

// fleetPhases runs one fleet over every host for the full table, the
// start of every unit at once (latency) and the quiet that follows.
func (b *bench) fleetPhases(ctx context.Context) error {
	hosts := b.names()
	base, err := procRSS("self")
	if err != nil {
		return err
	}
	fl, err := b.fullTable(ctx, hosts)
	if err != nil {
		return err
	}
	defer func() { _ = fl.Stop(30 * time.Second) }()

	var sfl *fleet.Follower
	if b.s.Store != nil {
		if sfl, err = b.startStoreFleet(ctx, hosts); err != nil {
			return err
		}
		defer func() { _ = sfl.Stop(30 * time.Second) }()
	}
	if err := b.latency(ctx, fl, sfl, hosts); err != nil {
		return fmt.Errorf("latency: %w", err)
	}
	if sfl != nil {
		// Each console alone in its quiet window.
		if err := stopStoreFleet(sfl); err != nil {
			return fmt.Errorf("store fleet: %w", err)
		}
	}
	if err := b.steady(ctx, fl, hosts, base); err != nil {
		return fmt.Errorf("steady state: %w", err)
	}
	if b.o.CausesEvery > 0 {
		if err := b.causes(ctx, fl, hosts); err != nil {
			return fmt.Errorf("time to cause: %w", err)
		}
	}
	if b.s.Store == nil {
		return nil
	}
	if err := fl.Stop(30 * time.Second); err != nil {
		return fmt.Errorf("ssh fleet: %w", err)
	}
	return b.storePhases(ctx, hosts)
}

// fullTable measures the raw table, then a fresh fleet's full table
// (Summary.FullTable), and returns the fleet, still following.
func (b *bench) fullTable(ctx context.Context, hosts []string) (*fleet.Follower, error) {
	b.o.Logf("fleetbench: full table: raw systemctl show on %d hosts", len(hosts))
	raw, err := b.rawTable(ctx, hosts)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	f, err := b.newFleet(ctx, hosts, testbed.UnitName)
	if err != nil {
		return nil, err
	}
	if b.o.TableProfile != nil {
		if err := pprof.StartCPUProfile(b.o.TableProfile); err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
	}
	cpu0, err := cpuTime()
	if err != nil {
		return nil, err
	}
	busy0, total0, err := machineTicks()
	if err != nil {
		return nil, err
	}
	resolved := time.Now()
	b.o.Logf("fleetbench: full table: bringup's fleet starts")
	fl := fleet.Follow(ctx, f)
	arrivals := newArrivals(len(hosts))
	err = fl.Until(ctx, 0, func(bt remote.Batch) bool {
		return arrivals.see(bt.Hosts, time.Since(resolved)) == len(hosts)
	})
	full := time.Since(resolved)
	b.o.Logf("fleetbench: full table: %s", arrivals)
	if b.o.TableProfile != nil {
		pprof.StopCPUProfile()
		b.o.TableProfile = nil // one profile: the first table's
	}
	if err != nil {
		_ = fl.Stop(30 * time.Second)
		return nil, fmt.Errorf("full table: %w (%s)", err, summary(fl.Last()))
	}
	cpu1, err := cpuTime()
	if err == nil {
		var busy1, total1 int64
		if busy1, total1, err = machineTicks(); err == nil {
			b.s.FullTable = FullTable{BringupS: secs(full), RawS: secs(raw), ResolveS: secs(resolved.Sub(t0)), Ratio: ratio(secs(full), secs(raw)),
				BringupCPUS: secs(cpu1 - cpu0), MachineBusyPct: busyPct(busy0, total0, busy1, total1)}
		}
	}
	if err != nil {
		_ = fl.Stop(30 * time.Second)
		return nil, err
	}
	b.o.Logf("fleetbench: full table: bringup %s (after %s resolving; %.2f s of CPU, the machine %.0f %% busy), raw %s", full.Round(time.Millisecond),
		resolved.Sub(t0).Round(time.Millisecond), b.s.FullTable.BringupCPUS, b.s.FullTable.MachineBusyPct, raw.Round(time.Millisecond))
	return fl, nil
}

// tableRuns measures Options.TableRuns rounds of the full table, each a
// fresh fleet stopped before the next round, with a pause between for
// the hosts to go quiet.
func (b *bench) tableRuns(ctx context.Context) error {
	hosts := b.names()
	for i := range b.o.TableRuns {
		fl, err := b.fullTable(ctx, hosts)
		if err != nil {
			return fmt.Errorf("table round %d: %w", i+1, err)
		}
		if err := fl.Stop(30 * time.Second); err != nil {
			return fmt.Errorf("table round %d: stop: %w", i+1, err)
		}
		b.s.TableRuns = append(b.s.TableRuns, b.s.FullTable)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(tableRoundPause):
		}
	}
	return nil
}

// arrivals records when each host first had its row in the table:
// connected and its unit's state read. A full table is the last of them;
// which hosts came last, and whether their first dial failed, is what
// tells a machine out of CPU from hosts that waited on something.
type arrivals struct {
	up       map[string]time.Duration // first seen connected
	at       map[string]time.Duration
	troubled map[string]string // a host seen down or with an error before its row, the last error
	order    []string
}

func newArrivals(n int) *arrivals {
	return &arrivals{up: make(map[string]time.Duration, n), at: make(map[string]time.Duration, n), troubled: map[string]string{}}
}

// see notes the hosts of a batch at since, and says how many have their
// row.
func (a *arrivals) see(hs []remote.HostState, since time.Duration) int {
	for _, h := range hs {
		if _, ok := a.at[h.Name]; ok {
			continue
		}
		if _, ok := a.up[h.Name]; !ok && h.Conn.State == event.ConnUp {
			a.up[h.Name] = since
		}
		if h.Conn.State == event.ConnUp && h.UnitState.ActiveState != "" {
			a.at[h.Name] = since
			a.order = append(a.order, h.Name)
			continue
		}
		if h.Conn.Err != "" || h.Conn.State == event.ConnDown || h.Conn.State == event.ConnUnreachable {
			a.troubled[h.Name] = string(h.Conn.State) + ": " + h.Conn.Err
		}
	}
	return len(a.at)
}

// String is the rows' arrival times and the last hosts'.
func (a *arrivals) String() string {
	ds := make([]time.Duration, 0, len(a.order))
	ups := make([]time.Duration, 0, len(a.up))
	for _, n := range a.order {
		ds = append(ds, a.at[n])
	}
	for _, d := range a.up {
		ups = append(ups, d)
	}
	u := distOf(ups)
	d := distOf(ds) // sorts ds
	p90 := 0.0
	if len(ds) > 0 {
		p90 = ms(ds[min(len(ds)-1, int(math.Ceil(0.9*float64(len(ds))))-1)])
	}
	var last []string
	for _, n := range a.order[max(0, len(a.order)-5):] {
		last = append(last, fmt.Sprintf("%s %s %s", n, a.at[n].Round(time.Millisecond), a.troubled[n]))
	}
	return fmt.Sprintf("connected at p50/max %.0f/%.0f ms; rows at p50/p90/p99/max %.0f/%.0f/%.0f/%.0f ms; %d hosts had a failed dial first; last: %s",
		u.P50ms, u.MaxMs, d.P50ms, p90, d.P99ms, d.MaxMs, len(a.troubled), strings.Join(last, "; "))
}

// tableRoundPause lets the hosts' sshd and journalctl of one round end
// before the next begins.
const tableRoundPause = 10 * time.Second

// rawTable is the raw full table: every host's unit state through its
// own ssh, all at once.
func (b *bench) rawTable(ctx context.Context, hosts []string) (time.Duration, error) {
	start := time.Now()
	err := eachHost(hosts, func(_ int, h string) error {
		_, _, _, err := rawRun(ctx, b.tb.SSHConfig(), h, "systemctl show -p ActiveState -p SubState "+testbed.UnitName)
		return err
	})
	return time.Since(start), err
}

// eachHost runs f for every host at once and joins their errors.
func eachHost(hosts []string, f func(i int, host string) error) error {
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i, h)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// fleetLine is one line as the fleet handed it out.
type fleetLine struct {
	ts, seen, delivered time.Time
	msg                 string
}

// latency starts a raw follower on every host, then every unit at once,
// and times each line at both until every host serves; with sfl (the
// store fleet), at it too, until every host serves through it as well.
func (b *bench) latency(ctx context.Context, fl, sfl *fleet.Follower, hosts []string) error {
	rctx, stopRaw := context.WithCancel(ctx)
	defer stopRaw()
	raws := make([]*rawFollower, len(hosts))
	controls := make([]*rawFollower, len(hosts)) // RawVsRaw's second readers
	since := time.Now()                          // every unit starts after it
	err := eachHost(hosts, func(i int, h string) error {
		var err error
		if raws[i], err = startRawFollower(rctx, b.tb.SSHConfig(), h, testbed.UnitName, since); err != nil {
			return err
		}
		controls[i], err = startRawFollower(rctx, b.tb.SSHConfig(), h, testbed.UnitName, since)
		return err
	})
	stopAll := func() {
		for _, r := range append(raws, controls...) {
			if r != nil {
				r.stop()
			}
		}
	}
	if err != nil {
		stopAll()
		return err
	}
	// journalctl prints "ready" before it attaches; give it a moment, so
	// that its start is not timed as the first lines' latency (it misses
	// none of them: it reads from since).
	time.Sleep(2 * time.Second)

	fleetLines := map[string]fleetLine{} // host + "\x00" + cursor
	take := func(bt remote.Batch) {
		now := time.Now()
		for _, ev := range bt.Events {
			if ev.Kind == event.KindJournal && ev.Journal != nil && ev.Journal.Cursor != "" {
				msg := ev.Journal.Message
				if r := []rune(msg); len(r) > 80 {
					msg = string(r[:80])
				}
				fleetLines[ev.Host+"\x00"+ev.Journal.Cursor] = fleetLine{ts: ev.Time, seen: ev.Seen, delivered: now, msg: msg}
			}
		}
	}
	var sw *storeWatch
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if sfl != nil {
		sw = watchStore(wctx, sfl, len(hosts))
	}
	b.o.Logf("fleetbench: latency: starting %s on %d hosts at once", testbed.UnitName, len(hosts))
	if b.o.LatencyProfile != nil {
		if err := pprof.StartCPUProfile(b.o.LatencyProfile); err != nil {
			stopAll()
			return fmt.Errorf("cpu profile: %w", err)
		}
	}
	started := time.Now()
	if err := eachHost(hosts, func(_ int, h string) error {
		_, err := b.tb.Run(ctx, h, "systemctl start "+testbed.UnitName)
		return err
	}); err != nil {
		if b.o.LatencyProfile != nil {
			pprof.StopCPUProfile()
		}
		stopAll()
		return err
	}
	err = fl.Until(wctx, 0, func(bt remote.Batch) bool {
		take(bt)
		return len(bt.Hosts) == len(hosts) && all(bt.Hosts, func(h remote.HostState) bool { return h.Startup.Phase == startup.Serving })
	})
	if b.o.LatencyProfile != nil {
		pprof.StopCPUProfile()
	}
	if err != nil {
		cancel()
		if sw != nil {
			<-sw.done
		}
		stopAll()
		return fmt.Errorf("every host serving: %w (%s)", err, summary(fl.Last()))
	}
	serving := time.Since(started)
	// The raw readers and the fleet finish what is in flight; the store
	// fleet, its lines later by the tail's offset, until it has served.
	tctx, cancelTail := context.WithTimeout(ctx, 2*time.Second)
	_ = fl.Until(tctx, 0, func(bt remote.Batch) bool { take(bt); return false })
	cancelTail()
	if sw != nil {
		<-sw.done
		if sw.err != nil {
			stopAll()
			return sw.err
		}
	}
	var rawD, fleetD, added, delivered, rawVsRaw []time.Duration
	l := Latency{ServingS: secs(serving)}
	matched := map[string]bool{}
	rawLines := make([]map[string]rawLine, len(raws))
	for i, r := range raws {
		lines, bad := r.stop()
		rawLines[i] = lines
		l.RawOnly += bad
		second, _ := controls[i].stop()
		for cur, rl := range lines {
			if c, ok := second[cur]; ok {
				rawVsRaw = append(rawVsRaw, c.arrived.Sub(rl.arrived))
			}
		}
		for cur, rl := range lines {
			k := hosts[i] + "\x00" + cur
			fli, ok := fleetLines[k]
			if !ok {
				l.RawOnly++
				continue
			}
			matched[k] = true
			l.Late = append(l.Late, LateLine{Host: hosts[i], AtS: secs(fli.ts.Sub(started)), AddedMs: ms(fli.seen.Sub(rl.arrived)), Message: fli.msg})
			rawD = append(rawD, rl.arrived.Sub(rl.ts))
			fleetD = append(fleetD, fli.seen.Sub(fli.ts))
			added = append(added, fli.seen.Sub(rl.arrived))
			delivered = append(delivered, fli.delivered.Sub(fli.ts))
		}
	}
	slices.SortFunc(l.Late, func(a, b LateLine) int { return cmp.Compare(b.AddedMs, a.AddedMs) })
	l.Late = l.Late[:min(len(l.Late), lateLines)]
	l.Lines, l.FleetOnly = len(rawD), len(fleetLines)-len(matched)
	l.Raw, l.Fleet, l.Added, l.Delivered = distOf(rawD), distOf(fleetD), distOf(added), distOf(delivered)
	l.RawVsRaw = distOf(rawVsRaw)
	l.Ratio = ratio(l.Fleet.P99ms, l.Raw.P99ms)
	b.s.Latency = l
	b.o.Logf("fleetbench: latency: %d lines, every host serving %s after the start; p99 raw %.1f ms, fleet %.1f ms",
		l.Lines, serving.Round(time.Millisecond), l.Raw.P99ms, l.Fleet.P99ms)
	if sw != nil {
		sl := storeLatency(sw, hosts, rawLines, fleetLines, started)
		b.s.Store.Latency = sl
		b.o.Logf("fleetbench: latency through the store: %d lines (%d missing), every host serving %.1f s after the start; p50/p99 %.0f/%.0f ms, added to the ssh fleet's p50/p99 %.0f/%.0f ms",
			sl.Lines, sl.Missing, sl.ServingS, sl.Store.P50ms, sl.Store.P99ms, sl.AddedVsSSH.P50ms, sl.AddedVsSSH.P99ms)
		if sl.Lines == 0 {
			return errors.New("no line seen by both the raw readers and the store fleet")
		}
	}
	if l.Lines == 0 {
		return errors.New("no line seen by both the raw readers and the fleet")
	}
	return nil
}

// steady measures the fleet and N quiet raw followers over the quiet
// window, every host serving.
func (b *bench) steady(ctx context.Context, fl *fleet.Follower, hosts []string, base int64) error {
	q, err := startQuietFollowers(ctx, b.tb.SSHConfig(), hosts, testbed.UnitName)
	if err != nil {
		return err
	}
	defer q.stop()
	events := 0
	count := func(bt remote.Batch) bool { events += len(bt.Events); return false }
	// Let the followers connect and the fleet settle after the startups.
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_ = fl.Until(sctx, 0, count)
	cancel()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	events = 0
	b.o.Logf("fleetbench: steady state: %d hosts serving, quiet for %s", len(hosts), b.o.Quiet)
	cpu0, err := cpuTime()
	if err != nil {
		return err
	}
	raw0, _, err := q.usage()
	if err != nil {
		return err
	}
	if b.o.SteadyProfile != nil {
		if err := pprof.StartCPUProfile(b.o.SteadyProfile); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
	}
	t0 := time.Now()
	wctx, cancel := context.WithTimeout(ctx, b.o.Quiet)
	_ = fl.Until(wctx, 0, count)
	cancel()
	if b.o.SteadyProfile != nil {
		pprof.StopCPUProfile()
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	wall := time.Since(t0)
	cpu1, err := cpuTime()
	if err != nil {
		return err
	}
	raw1, rawRSS, err := q.usage()
	if err != nil {
		return err
	}
	rss, err := procRSS("self")
	if err != nil {
		return err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if b.o.HeapProfile != nil {
		if err := pprof.Lookup("heap").WriteTo(b.o.HeapProfile, 0); err != nil {
			return fmt.Errorf("heap profile: %w", err)
		}
	}
	freeMemory() // collects first
	var afterGC runtime.MemStats
	runtime.ReadMemStats(&afterGC)
	collected, err := procRSS("self")
	if err != nil {
		return err
	}
	st := Steady{WindowS: secs(wall), Events: events,
		LiveHeapMiB: mib(int64(afterGC.HeapInuse)), CollectedRSSMiB: mib(collected),
		HeapMiB: mib(int64(ms.HeapInuse)), StackMiB: mib(int64(ms.StackInuse)), IdleMiB: mib(int64(ms.HeapIdle - ms.HeapReleased)),
		BringupCPUPct: 100 * (cpu1 - cpu0).Seconds() / wall.Seconds(), BringupRSSMiB: mib(rss), BaseRSSMiB: mib(base),
		RawCPUPct: 100 * (raw1 - raw0).Seconds() / wall.Seconds(), RawRSSMiB: mib(rawRSS)}
	st.CPURatio, st.RSSRatio = ratio(st.BringupCPUPct, st.RawCPUPct), ratio(st.BringupRSSMiB, st.RawRSSMiB)
	b.s.Steady = st
	b.o.Logf("fleetbench: steady state: bringup %.2f %% of a core, RSS %.1f MiB (Go heap in use %.1f, stacks %.1f, heap idle not returned %.1f; after a collection: heap %.1f, RSS %.1f); raw %.2f %%, %.1f MiB",
		st.BringupCPUPct, st.BringupRSSMiB, st.HeapMiB, st.StackMiB, st.IdleMiB, st.LiveHeapMiB, st.CollectedRSSMiB, st.RawCPUPct, st.RawRSSMiB)
	return nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// catchupUnit is the unit whose run holds the catch-up lines.
const catchupUnit = "bench-catchup.service"

// catchupDone is the line the catch-up unit prints after its lines.
const catchupDone = "bench catch-up: all lines written"

// catchupScript prints n lines in formats a serving SGLang prints (the
// request and batch lines of
// https://github.com/sgl-project/sglang/issues/1526, SGLang ~0.3, with
// their counters varied), then catchupDone, then keeps the run alive.
const catchupScript = `import sys, time
n = int(sys.argv[1])
fmts = [
    "[17:39:58 TP0] Prefill batch. #new-seq: 1, #new-token: %d, #cached-token: 0, cache hit rate: 0.00%%, token usage: 0.00, #running-req: 0, #queue-req: 0",
    "[17:39:59 TP0] Decode batch. #running-req: 1, #token: %d, token usage: 0.00, gen throughput (token/s): 50.56, #queue-req: 0",
    "INFO:     127.0.0.1:%d - \"POST /generate HTTP/1.1\" 200 OK",
]
out = sys.stdout
buf = []
for i in range(n):
    buf.append(fmts[i % 3] % (i % 60000))
    if len(buf) == 1000:
        out.write("\n".join(buf) + "\n")
        buf = []
if buf:
    out.write("\n".join(buf) + "\n")
out.write("` + catchupDone + `\n")
out.flush()
while True:
    time.sleep(3600)
`

// catchup fills one host's journal with a run of CatchupLines lines and
// reads it, raw and through a fleet, CatchupRuns times each, alternating
// which goes first.
func (b *bench) catchup(ctx context.Context) error {
	host := b.names()[0]
	n := b.o.CatchupLines
	b.o.Logf("fleetbench: catch-up: %s prints %d lines into %s", host, n, catchupUnit)
	cmd := "cat > /run/bench-catchup.py <<'EOF'\n" + catchupScript + "EOF\n" +
		"systemd-run --quiet --unit=" + catchupUnit + " python3 -u /run/bench-catchup.py " + strconv.Itoa(n)
	if out, err := b.tb.Run(ctx, host, cmd); err != nil {
		return fmt.Errorf("start %s: %w: %s", catchupUnit, err, out)
	}
	filled := time.Now()
	for {
		out, _ := b.tb.Run(ctx, host, "journalctl -q -u "+catchupUnit+" -n 1 -o cat --no-pager")
		if strings.TrimSpace(out) == catchupDone {
			break
		}
		if time.Since(filled) > 5*time.Minute {
			return fmt.Errorf("journald did not store the %d lines in 5 min (last: %q)", n, strings.TrimSpace(out))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	b.o.Logf("fleetbench: catch-up: journald holds them after %s", time.Since(filled).Round(100*time.Millisecond))
	// One read first, not timed: the journal files into the page cache,
	// so that neither side's first read pays for the disk.
	if _, _, _, err := rawRun(ctx, b.tb.SSHConfig(), host, dumpCmd(catchupUnit)); err != nil {
		return err
	}
	c := Catchup{Lines: n}
	var rawS, exportS, fleetS, perLine []float64
	for i := range b.o.CatchupRuns {
		var p CatchupPair
		sides := []func() error{
			func() error {
				took, bytes, lines, err := rawRun(ctx, b.tb.SSHConfig(), host, dumpCmd(catchupUnit))
				p.RawS, p.RawLines = secs(took), lines
				if lines > 0 {
					perLine = append(perLine, float64(bytes)/float64(lines))
				}
				return err
			},
			func() error {
				took, _, lines, err := rawRun(ctx, b.tb.SSHConfig(), host, exportCmd(catchupUnit))
				p.ExportS = secs(took)
				if err == nil && lines < int64(n) {
					err = fmt.Errorf("raw export read %d lines, want at least %d", lines, n)
				}
				return err
			},
			func() error {
				if i == 0 && b.o.CatchupProfile != nil {
					if err := pprof.StartCPUProfile(b.o.CatchupProfile); err != nil {
						return fmt.Errorf("cpu profile: %w", err)
					}
					defer pprof.StopCPUProfile()
				}
				took, lines, dropped, err := b.fleetCatchup(ctx, host)
				p.BringupS, p.BringupLines, p.Dropped = secs(took), lines, dropped
				return err
			},
		}
		if i%2 == 1 {
			slices.Reverse(sides)
		}
		for _, side := range sides {
			if err := side(); err != nil {
				return err
			}
		}
		b.o.Logf("fleetbench: catch-up %d: raw %.2f s (%d lines), raw export %.2f s, bringup %.2f s (%d lines, %d dropped)", i+1, p.RawS, p.RawLines, p.ExportS, p.BringupS, p.BringupLines, p.Dropped)
		c.Runs = append(c.Runs, p)
		rawS, exportS, fleetS = append(rawS, p.RawS), append(exportS, p.ExportS), append(fleetS, p.BringupS)
	}
	c.RawS, c.ExportS, c.BringupS, c.RawBytesPerLine = median(rawS), median(exportS), median(fleetS), median(perLine)
	c.Speedup, c.ExportSpeedup = ratio(c.RawS, c.BringupS), ratio(c.ExportS, c.BringupS)
	b.s.Catchup = c
	_, _ = b.tb.Run(ctx, host, "systemctl stop "+catchupUnit)
	return nil
}

// fleetCatchup follows the catch-up unit on host with a fresh fleet until
// it hands out catchupDone, and returns how long that took, the unit's
// lines it handed out before it and the lines it dropped.
func (b *bench) fleetCatchup(ctx context.Context, host string) (time.Duration, int, int, error) {
	start := time.Now()
	f, err := b.newFleet(ctx, []string{host}, catchupUnit)
	if err != nil {
		return 0, 0, 0, err
	}
	fl := fleet.Follow(ctx, f)
	defer func() { _ = fl.Stop(30 * time.Second) }()
	lines, dropped := 0, 0
	wctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	err = fl.Until(wctx, 0, func(bt remote.Batch) bool {
		dropped += bt.Dropped
		for _, ev := range bt.Events {
			j := ev.Journal
			if ev.Kind != event.KindJournal || j == nil || j.MessageID != "" {
				continue // systemd's own lines about the unit carry a MESSAGE_ID
			}
			if j.Message == catchupDone {
				return true
			}
			lines++
		}
		return false
	})
	took := time.Since(start)
	if err != nil {
		return took, lines, dropped, fmt.Errorf("fleet catch-up on %s: %w after %d lines", host, err, lines)
	}
	return took, lines, dropped, nil
}

func all(hs []remote.HostState, ok func(remote.HostState) bool) bool {
	return !slices.ContainsFunc(hs, func(h remote.HostState) bool { return !ok(h) })
}

// summary says, for an error, where each host stood.
func summary(hs []remote.HostState) string {
	var parts []string
	for _, h := range hs {
		parts = append(parts, fmt.Sprintf("%s %s %s %s", h.Name, h.Conn.State, h.UnitState.State(), h.Startup.Phase))
	}
	return strings.Join(parts, "; ")
}
