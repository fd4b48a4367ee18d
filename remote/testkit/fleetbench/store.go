package fleetbench

import (
	"context"
	"fmt"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/startup"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
	"github.com/bringup-dev/bringup/remote/vlogs"
)

// The sources Options.Source names.
const (
	// SourceSSH measures the SSH path against raw ssh (the default).
	SourceSSH = "ssh"
	// SourceVictoriaLogs adds the store path on the same hosts in the
	// same run: the testbed starts VictoriaLogs fed by every host's
	// systemd-journal-upload, and a second fleet reads the hosts from it
	// alone (no SSH connection), beside the SSH fleet and the raw readers.
	SourceVictoriaLogs = "victorialogs"
)

// Store is the store path's figures (Options.Source SourceVictoriaLogs),
// side by side with the SSH path's in the same run on the same hosts.
type Store struct {
	// ServingTable is a fresh fleet's start on the serving hosts to every
	// host shown serving, each path in turn (nothing else running).
	ServingTable ServingTable `json:"serving_table"`
	Latency      StoreLatency `json:"latency"`
	Steady       StoreSteady  `json:"steady"`
}

// ServingTable is the time a console opened on a serving fleet takes to
// show every host serving: the SSH path connects, reads each unit over
// D-Bus, the journal from the run's start and probes; the store path
// asks the store for each host's run and reads it from there.
type ServingTable struct {
	SSHS   float64 `json:"ssh_s"`
	StoreS float64 `json:"store_s"`
	Ratio  float64 `json:"ratio"` // store / ssh
}

// StoreLatency times the lines of the startups at the store fleet against
// the same lines (by host and cursor) at the raw readers and at the SSH
// fleet.
type StoreLatency struct {
	// Lines is how many lines the raw readers and the store fleet both
	// saw; Missing the lines the raw readers and the SSH fleet saw that
	// the store fleet did not hand out (before the run ended; a raw line
	// neither fleet shows is the SSH side's RawOnly); StoreOnly the
	// store's lines no raw reader saw.
	Lines     int `json:"lines"`
	Missing   int `json:"missing"`
	StoreOnly int `json:"store_only"`
	// Store is the store fleet's receipt less the journal's timestamp;
	// AddedVsRaw the store fleet's receipt less the raw reader's arrival;
	// AddedVsSSH less the SSH fleet's receipt of the same line;
	// Delivered the batch that carried it reaching the consumer.
	Store      Dist `json:"store"`
	AddedVsRaw Dist `json:"added_vs_raw"`
	AddedVsSSH Dist `json:"added_vs_ssh"`
	Delivered  Dist `json:"delivered"`
	// Ratio is Store p50 / SSH fleet p50 of the same lines.
	Ratio float64 `json:"ratio_p50"`
	// ServingS is the start of every unit to every host serving through
	// the store.
	ServingS float64 `json:"serving_s"`
}

// StoreSteady is each path's console alone over a quiet window, every
// host serving, in turn: the SSH fleet (Summary.Steady, repeated here)
// and then the store fleet, with VictoriaLogs' own cost beside it.
type StoreSteady struct {
	WindowS     float64 `json:"window_s"`
	SSHCPUPct   float64 `json:"ssh_cpu_pct"`
	SSHRSSMiB   float64 `json:"ssh_rss_mib"`
	StoreCPUPct float64 `json:"store_cpu_pct"`
	StoreRSSMiB float64 `json:"store_rss_mib"`
	// BaseRSSMiB is this process with no fleet, after returning freed
	// memory to the system: the part of StoreRSSMiB that is not the
	// store fleet's.
	BaseRSSMiB float64 `json:"base_rss_mib"`
	// VLCPUPct and VLRSSMiB are the victoria-logs process over the same
	// window: what the store path moves off the console (the hosts'
	// uploaders are not counted).
	VLCPUPct float64 `json:"victorialogs_cpu_pct"`
	VLRSSMiB float64 `json:"victorialogs_rss_mib"`
	Events   int     `json:"events"`
	CPURatio float64 `json:"cpu_ratio"` // store / ssh
	RSSRatio float64 `json:"rss_ratio"` // store / ssh
}

// newStoreFleet builds the fleet over hosts read from the run's store, as
// `bringup watch` builds it for source victorialogs (one vlogs.Source,
// a driver per host), without actions: the bench opens no SSH connection
// through it.
func (b *bench) newStoreFleet(hosts []string, unit string) (*fleet.Fleet, error) {
	src, err := vlogs.New(vlogs.Options{URL: b.tb.LogStoreURL(), Unit: unit})
	if err != nil {
		return nil, err
	}
	specs := make([]fleet.HostSpec, len(hosts))
	for i, h := range hosts {
		specs[i] = fleet.HostSpec{Driver: src.Host(h, nil), Unit: unit, Engine: testbed.EngineSGLang}
	}
	opts := fleet.Options{Kernels: kernels.DefaultCatalog(), ReadOnly: true, Observers: []fleet.Observer{fleet.KernelCheck()}}
	return fleet.New(specs, opts)
}

// startStoreFleet starts the store fleet before the units start. It
// cannot wait for the tail to answer: VictoriaLogs sends the tail's
// response headers with its first row, and the units have none yet. The
// catch-up query and the tail's request are given a moment, as the raw
// readers are, and it reads from the run's start anyway.
func (b *bench) startStoreFleet(ctx context.Context, hosts []string) (*fleet.Follower, error) {
	f, err := b.newStoreFleet(hosts, testbed.UnitName)
	if err != nil {
		return nil, fmt.Errorf("store fleet: %w", err)
	}
	sfl := fleet.Follow(ctx, f)
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_ = sfl.Until(wctx, 0, func(remote.Batch) bool { return false })
	return sfl, ctx.Err()
}

// storeWatch collects the store fleet's lines during the startups, in its
// own goroutine, while the SSH fleet is read on the bench's.
type storeWatch struct {
	done chan struct{}
	// Set before done closes.
	lines     map[string]fleetLine // host + "\x00" + cursor
	servingAt time.Time
	err       error
}

// storeTail is how long the store fleet is read after every host serves
// through it: its lines trail the SSH path's by the tail's offset.
const storeTail = 4 * time.Second

// watchStore reads sfl until every host serves through it (then
// storeTail more), or ctx ends.
func watchStore(ctx context.Context, sfl *fleet.Follower, n int) *storeWatch {
	w := &storeWatch{done: make(chan struct{}), lines: map[string]fleetLine{}}
	take := func(bt remote.Batch) {
		now := time.Now()
		for _, ev := range bt.Events {
			if ev.Kind == event.KindJournal && ev.Journal != nil && ev.Journal.Cursor != "" {
				w.lines[ev.Host+"\x00"+ev.Journal.Cursor] = fleetLine{ts: ev.Time, seen: ev.Seen, delivered: now}
			}
		}
	}
	go func() {
		defer close(w.done)
		w.err = sfl.Until(ctx, 0, func(bt remote.Batch) bool {
			take(bt)
			return len(bt.Hosts) == n && all(bt.Hosts, func(h remote.HostState) bool { return h.Startup.Phase == startup.Serving })
		})
		if w.err != nil {
			w.err = fmt.Errorf("every host serving through the store: %w (%s)", w.err, summary(sfl.Last()))
			return
		}
		w.servingAt = time.Now()
		tctx, cancel := context.WithTimeout(ctx, storeTail)
		_ = sfl.Until(tctx, 0, func(bt remote.Batch) bool { take(bt); return false })
		cancel()
	}()
	return w
}

// storeLatency compares the store's lines with the raw readers' and the
// SSH fleet's, by host and cursor.
func storeLatency(w *storeWatch, hosts []string, raw []map[string]rawLine, ssh map[string]fleetLine, started time.Time) StoreLatency {
	var st, vsRaw, vsSSH, delivered, sshSame []time.Duration
	l := StoreLatency{ServingS: secs(w.servingAt.Sub(started))}
	matched := 0
	for i, lines := range raw {
		for cur, rl := range lines {
			k := hosts[i] + "\x00" + cur
			sl, ok := w.lines[k]
			if !ok {
				if _, inSSH := ssh[k]; inSSH {
					l.Missing++
				}
				continue
			}
			matched++
			st = append(st, sl.seen.Sub(sl.ts))
			vsRaw = append(vsRaw, sl.seen.Sub(rl.arrived))
			delivered = append(delivered, sl.delivered.Sub(sl.ts))
			if fl, ok := ssh[k]; ok {
				vsSSH = append(vsSSH, sl.seen.Sub(fl.seen))
				sshSame = append(sshSame, fl.seen.Sub(fl.ts))
			}
		}
	}
	l.Lines, l.StoreOnly = matched, len(w.lines)-matched
	l.Store, l.AddedVsRaw, l.AddedVsSSH, l.Delivered = distOf(st), distOf(vsRaw), distOf(vsSSH), distOf(delivered)
	l.Ratio = ratio(l.Store.P50ms, distOf(sshSame).P50ms)
	return l
}

// freeMemory returns what the heap freed to the system, so that RSS read
// next is the live fleet's and not a stopped one's.
func freeMemory() { debug.FreeOSMemory() }

// storePhases runs after the SSH steady state, with the SSH fleet
// stopped: a fresh SSH fleet and then a fresh store fleet on the serving
// hosts, each to every host shown serving, and the store fleet's quiet
// window.
func (b *bench) storePhases(ctx context.Context, hosts []string) error {
	sshS, err := b.servingTable(ctx, hosts, func() (*fleet.Fleet, error) { return b.newFleet(ctx, hosts, testbed.UnitName) })
	if err != nil {
		return fmt.Errorf("ssh serving table: %w", err)
	}
	freeMemory()
	base, err := procRSS("self")
	if err != nil {
		return err
	}
	t0 := time.Now()
	f, err := b.newStoreFleet(hosts, testbed.UnitName)
	if err != nil {
		return err
	}
	sfl := fleet.Follow(ctx, f)
	defer func() { _ = sfl.Stop(30 * time.Second) }()
	if err := untilServing(ctx, sfl, len(hosts)); err != nil {
		return fmt.Errorf("store serving table: %w", err)
	}
	storeS := secs(time.Since(t0))
	b.s.Store.ServingTable = ServingTable{SSHS: sshS, StoreS: storeS, Ratio: ratio(storeS, sshS)}
	b.o.Logf("fleetbench: serving table: ssh %.2f s, store %.2f s", sshS, storeS)

	events := 0
	count := func(bt remote.Batch) bool { events += len(bt.Events); return false }
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_ = sfl.Until(sctx, 0, count)
	cancel()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	events = 0
	vl := b.tb.LogStorePID()
	b.o.Logf("fleetbench: steady state through the store: quiet for %s", b.o.Quiet)
	cpu0, err := cpuTime()
	if err != nil {
		return err
	}
	vl0, err := procCPU(vl)
	if err != nil {
		return err
	}
	t1 := time.Now()
	wctx, cancel := context.WithTimeout(ctx, b.o.Quiet)
	_ = sfl.Until(wctx, 0, count)
	cancel()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	wall := time.Since(t1)
	cpu1, err := cpuTime()
	if err != nil {
		return err
	}
	vl1, err := procCPU(vl)
	if err != nil {
		return err
	}
	rss, err := procRSS("self")
	if err != nil {
		return err
	}
	vlRSS, err := procRSS(strconv.Itoa(vl))
	if err != nil {
		return err
	}
	ssh := b.s.Steady
	st := StoreSteady{WindowS: secs(wall), Events: events,
		SSHCPUPct: ssh.BringupCPUPct, SSHRSSMiB: ssh.BringupRSSMiB,
		StoreCPUPct: 100 * (cpu1 - cpu0).Seconds() / wall.Seconds(), StoreRSSMiB: mib(rss), BaseRSSMiB: mib(base),
		VLCPUPct: 100 * (vl1 - vl0).Seconds() / wall.Seconds(), VLRSSMiB: mib(vlRSS)}
	st.CPURatio, st.RSSRatio = ratio(st.StoreCPUPct, st.SSHCPUPct), ratio(st.StoreRSSMiB, st.SSHRSSMiB)
	b.s.Store.Steady = st
	b.o.Logf("fleetbench: steady state through the store: console %.2f %% of a core, RSS %.1f MiB; victoria-logs %.2f %%, %.1f MiB",
		st.StoreCPUPct, st.StoreRSSMiB, st.VLCPUPct, st.VLRSSMiB)
	return nil
}

// servingTable starts the fleet newFleet builds and times it to every
// host serving, then stops it.
func (b *bench) servingTable(ctx context.Context, hosts []string, newFleet func() (*fleet.Fleet, error)) (float64, error) {
	t0 := time.Now()
	f, err := newFleet()
	if err != nil {
		return 0, err
	}
	fl := fleet.Follow(ctx, f)
	err = untilServing(ctx, fl, len(hosts))
	took := secs(time.Since(t0))
	if serr := fl.Stop(30 * time.Second); err == nil && serr != nil {
		err = serr
	}
	return took, err
}

// untilServing reads fl until its n hosts all serve (2 minutes at most).
func untilServing(ctx context.Context, fl *fleet.Follower, n int) error {
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	err := fl.Until(wctx, 0, func(bt remote.Batch) bool {
		return len(bt.Hosts) == n && all(bt.Hosts, func(h remote.HostState) bool { return h.Startup.Phase == startup.Serving })
	})
	if err != nil {
		return fmt.Errorf("%w (%s)", err, summary(fl.Last()))
	}
	return nil
}

// stopStoreFleet stops the store fleet and frees what it held.
func stopStoreFleet(sfl *fleet.Follower) error {
	err := sfl.Stop(30 * time.Second)
	freeMemory()
	return err
}
