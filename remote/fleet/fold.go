package fleet

import (
	"context"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
	"github.com/bringup-dev/bringup/remote/timegrid"
)

// hostChange is c of host h, with the connection's error when c makes
// the host unknown.
func hostChange(h *hostFold, seen time.Time, c startup.Change) remote.HostChange {
	hc := remote.HostChange{Host: h.state.Name, Seen: seen, Change: c}
	if c.Kind == startup.ChangePhase && c.Phase == startup.Unknown {
		hc.ConnErr = h.state.Conn.Err
	}
	return hc
}

// hostFold is the fold loop's state for one host.
type hostFold struct {
	tracker *startup.Tracker
	state   remote.HostState
	// steady is the Pace.Steady last told to the host's driver.
	steady bool
	// observers follow the host for Options.Observers, in their order
	// (observe.go).
	observers []HostObserver

	// settle says when a failure's cause is settled, on the wall clock:
	// it hears of every journal line, since a failure settles only once
	// its journal has been quiet for Options.Settle.
	settle startup.Settler

	// snap is the host's last snapshot, handed out again while nothing
	// changed: on a quiet fleet most batches carry one host's probe or GPU
	// sample, and copying every host's state for it was the fold's main
	// cost (measured: a fifth of the console's CPU at 64 serving hosts).
	// snapOK is cleared by every event and tick change of the host;
	// timed says the snapshot holds what the clock alone changes (an ETA,
	// a provisional failure), so it is taken anew every time.
	snap          remote.HostState
	snapOK, timed bool
	// listed says the host is on the fold's stale list (snapshots.stale),
	// so that it is put there once however many events it gets.
	listed bool
}

// DefaultSettle is Options.Settle's default.
const DefaultSettle = 3 * time.Second

// fold is the single goroutine that owns all host state. It batches what
// arrives and hands a batch out every flush, holding on to it (and adding
// to it) while the consumer is slow.
func (f *Fleet) fold(ctx context.Context) {
	hosts := make([]*hostFold, len(f.specs))
	for i, h := range f.specs {
		hosts[i] = &hostFold{
			tracker: startup.NewTracker(startup.Options{Engine: h.Engine, Kernels: f.opts.Kernels, Compiled: f.opts.Packs}),
			settle:  startup.NewSettlerWith(f.opts.Settle, f.opts.FirstLineWait, f.opts.RunningWait),
			state: remote.HostState{Name: h.Driver.Name(), Unit: h.Unit,
				Conn: event.Conn{State: event.ConnConnecting}},
		}
		hosts[i].state.Startup = hosts[i].tracker.State()
		f.follow(hosts[i])
	}
	snaps := &snapshots{deltas: f.opts.Deltas}
	for i, h := range hosts {
		snaps.mark(i, h)
	}
	// The flush timer runs only while something waits to go out (or a
	// provisional failure's wait is to be watched): an idle fleet's fold
	// sleeps, where a 50 ms ticker woke it 20 times a second. The stuck
	// check needs the clock alone, once a second.
	flush := time.NewTimer(f.opts.Flush) // the first snapshot
	defer flush.Stop()
	due := time.Now().Add(f.opts.Flush) // when flush fires; zero: not armed
	// arm has flush fire in d, unless it is armed to fire sooner.
	arm := func(d time.Duration) {
		if at := time.Now().Add(d); due.IsZero() || at.Before(due) {
			flush.Reset(d) // go ≥ 1.23 timers: no stale tick survives a Reset
			due = at
		}
	}
	// The stuck check, and a flush of what may wait (samples), fall on
	// timegrid's instants, where the hosts' keepalive checks and steady
	// probes fall too: one wake-up of the process for all of them.
	stuckPeriod := stuckEvery * f.opts.Flush
	stuckNext := func() time.Duration { return timegrid.Align(time.Now(), stuckPeriod/2, stuckPeriod) }
	stuck := time.NewTimer(stuckNext())
	defer stuck.Stop()

	// pending accumulates what arrives until a flush seals it into ready,
	// with a snapshot taken then, so that a batch's snapshot always
	// includes its events. ready is offered to the consumer (out is f.out
	// while it holds a batch) and stays offered while new events go to
	// pending: taking it back at each arrival starved a consumer that was
	// not waiting at the very moment of a flush, on a loaded machine for
	// seconds (measured at 256 hosts starting: lines seen p99 1.1 s,
	// delivered p99 5.5 s). A flush while ready still waits merges pending
	// into it under a fresh snapshot.
	var pending, ready batch
	dirty := true
	// urgent says pending holds something a person waits for (a line, a
	// state or phase change); lazySince, when pending holds only what may
	// wait (samples, a steady host's lines: urgentEvent), when the first
	// came. Both are cleared when pending is sealed.
	urgent := true
	var lazySince time.Time
	lazyWait := stuckEvery * f.opts.Flush
	// wait is how long from now the next flush should wait for what is
	// pending.
	wait := func(now time.Time) time.Duration {
		return flushWait(urgent, lazySince, now, f.opts.Flush, lazyWait)
	}
	var out chan remote.Batch // nil while ready holds nothing
	// provisional says some host's failure was provisional at the last
	// snapshot: every flush looks whether its wait is over.
	provisional := false
	steady := 0 // hosts whose Pace is steady, for freeOnSteady
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-f.in:
			changes := len(pending.Changes)
			if i, ok := f.apply(hosts, snaps, &pending, ev); ok {
				if urgentEvent(ev.Kind, len(pending.Changes) > changes, hosts[i].steady && !f.viewed(i)) {
					urgent = true
				} else if lazySince.IsZero() {
					lazySince = time.Now()
				}
			}
			dirty = true
			arm(wait(time.Now()))
		case <-stuck.C:
			stuck.Reset(stuckNext())
			now, wall := f.opts.Clock.Now(), time.Now()
			for i, h := range hosts {
				for _, c := range h.tracker.Tick(now) {
					pending.Changes = append(pending.Changes, hostChange(h, wall, c))
					dirty, urgent = true, true
					snaps.mark(i, h)
				}
			}
			if dirty {
				arm(f.opts.Flush)
			}
		case <-flush.C:
			due = time.Time{}
			now, wall := f.opts.Clock.Now(), time.Now()
			// A provisional failure whose wait is over settles in a
			// snapshot of its own, journal lines or not (a provisional
			// host is timed: it stays on the stale list).
			if provisional && snaps.settled(hosts, wall) {
				dirty, urgent = true, true
			}
			if dirty && flushDue(urgent, lazySince, wall, f.opts.Flush, lazyWait) {
				merged := out != nil
				if merged {
					// The consumer has not taken ready yet: one batch
					// of both, the budget kept over the whole.
					pending = f.merge(hosts, snaps, ready, pending)
				}
				var taken []int
				pending.Hosts, taken = snaps.take(hosts, now, wall)
				stamp(&pending.Batch, merged, snaps.delta, taken)
				snaps.hand(&pending.Batch)
				ready, pending = pending, batch{heldLines: len(pending.Events), heldText: pending.text}
				out = f.out
				provisional = snaps.provisional(hosts)
				dirty = false
				urgent, lazySince = false, time.Time{}
				was := steady
				steady = f.paceSteady(hosts, snaps.last, taken, steady)
				if was < len(hosts) && steady == len(hosts) {
					f.freeOnSteady()
				}
			}
			if provisional {
				// The settler says when the first wait is over (later
				// if a line comes meanwhile: the flush then looks again).
				arm(max(f.opts.Flush, time.Until(snaps.wake(hosts))))
			}
			if dirty {
				arm(wait(wall))
			}
		case out <- ready.Batch:
			ready = batch{}
			out = nil
			pending.heldLines, pending.heldText = 0, 0
		}
	}
}

// stuckEvery is how many flushes apart the fold asks every host's tracker
// whether it is stuck (Tracker.Tick): once a second at the default 50 ms
// flush. A phase is stuck after minutes without progress, so a second
// late is nothing, while a check every flush was a fifth of a quiet
// 64-host fleet's CPU (measured: 1 280 Tick calls a second).
const stuckEvery = 20

// urgentEvent says whether an event of kind k (changed: it changed a
// host's startup; relaxed: the host is steady and nobody has its view
// open) should reach the consumer at the next flush. A GPU sample, or a
// probe answer that changed nothing, may wait for the batch's other news
// (at most stuckEvery flushes, a second by default): on a quiet fleet of
// hundreds of hosts they are most of what arrives, and every batch copies
// every host's snapshot (measured: the snapshots were a third of a quiet
// 256-host fleet's CPU). So may a relaxed host's journal line that
// changed nothing: a serving host's access-log lines, which every probe
// makes (at 256 hosts they alone made eight batches a second). A line
// that changes the startup (a traceback failing it) is urgent, and so is
// every line of a starting or viewed host.
func urgentEvent(k event.Kind, changed, relaxed bool) bool {
	switch {
	case changed:
		return true
	case k == event.KindGPU || k == event.KindProbe:
		return false
	case k == event.KindJournal:
		return !relaxed
	}
	return true
}

// lazyDue is when what may wait, pending since lazySince, goes out: at
// the first instant of a grid every wait (timegrid) at least one flush
// after it, so within wait and a flush, and together with the stuck
// check and the hosts' timers that fall on the same instants.
func lazyDue(lazySince time.Time, flush, wait time.Duration) time.Time {
	return lazySince.Add(timegrid.Align(lazySince, flush, wait))
}

// flushDue says whether a flush at now hands out what is pending: at
// once when it is urgent, else from its lazyDue on.
func flushDue(urgent bool, lazySince, now time.Time, flush, wait time.Duration) bool {
	return urgent || !lazySince.IsZero() && !now.Before(lazyDue(lazySince, flush, wait))
}

// flushWait is how long from now the flush that hands out what is
// pending should wait: one flush when it is urgent, else until its
// lazyDue (flushDue), at least one flush.
func flushWait(urgent bool, lazySince, now time.Time, flush, wait time.Duration) time.Duration {
	if urgent || lazySince.IsZero() {
		return flush
	}
	return max(flush, lazyDue(lazySince, flush, wait).Sub(now))
}

// apply sanitises ev (the one place remote text enters), folds it into its
// host, tells the host's observers, lists the host (and any whose lines it drops) for the next
// snapshot in snaps and records ev in the pending batch. It returns the
// host's index (false: no such host, ev is dropped).
func (f *Fleet) apply(hosts []*hostFold, snaps *snapshots, pending *batch, ev event.Event) (int, bool) {
	i, ok := f.byName[ev.Host]
	if !ok {
		return 0, false
	}
	h := hosts[i]
	snaps.mark(i, h)
	if ev.Seen.IsZero() {
		ev.Seen = time.Now()
	}
	sanitizeEvent(&ev)
	switch ev.Kind {
	case event.KindUnit:
		if ev.Unit != nil {
			h.state.UnitState = *ev.Unit
			h.state.Modes = nil // unknown until the properties are read
			if !ev.Unit.PropsUnread {
				h.state.Modes = f.opts.Kernels.ModesIn(ev.Unit.Environment)
			}
		}
	case event.KindConn:
		if ev.Conn != nil {
			h.state.Conn = *ev.Conn
		}
	case event.KindProbe:
		if ev.Probe != nil {
			h.state.Probe = *ev.Probe
		}
	case event.KindClock:
		if ev.Clock != nil {
			h.state.Clock = *ev.Clock
		}
	case event.KindGPU:
		if ev.GPU != nil {
			h.state.GPU = gpuAppend(h.state.GPU, *ev.GPU, f.opts.GPUHistory)
		}
	case event.KindAction:
		if ev.Action != nil {
			a := *ev.Action
			h.state.Action = &a
			if a.Bench != nil {
				f.keepBench(h, ev.Time, a)
			}
		}
	case event.KindJournal:
		h.settle.Heard(time.Now())
	default: // gaps and commands are only passed on
	}
	changes := h.tracker.Apply(ev)
	for _, c := range changes {
		pending.Changes = append(pending.Changes, hostChange(h, ev.Seen, c))
	}
	f.observe(h, ev, changes)
	if ev.Kind == event.KindGPU {
		return i, true // kept in the snapshot; no need to repeat in the event list
	}
	pending.Events = append(pending.Events, ev)
	if ev.Journal != nil {
		pending.text += len(ev.Journal.Message)
	}
	f.trim(hosts, snaps, pending)
	return i, true
}

// keepBench keeps a bench's result on h, from the event that carries it,
// with the kernel modes the run started with (those of the unit when the
// tracker knows none): the snapshot's Bench.
func (f *Fleet) keepBench(h *hostFold, at time.Time, a event.ActionResult) {
	modes := h.tracker.State().Modes
	if len(modes) == 0 {
		modes = h.state.Modes
	}
	if at.IsZero() {
		at = f.opts.Clock.Now()
	}
	h.state.Bench = &remote.BenchRun{Time: at, Action: a.ID, Modes: kernels.ModeMap(modes), Bench: *a.Bench}
}
