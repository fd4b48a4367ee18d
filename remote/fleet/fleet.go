// Package fleet is the fleet: the hosts bringup watches, the one door
// actions go in through (Fleet.Do, the action queue), and the fan-in that
// folds every host's signals into startups and hands batched snapshots to
// the UI and to `bringup watch`. It speaks the contract of package remote;
// the UI sees it only through that.
package fleet

import (
	"context"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/startup"
)

// HostSpec is one host the fleet watches.
type HostSpec struct {
	Driver remote.Driver
	Unit   string
	Engine string // "sglang", "vllm", "auto"
}

// Options configures a Fleet.
type Options struct {
	// Packs are the compiled rule packs every host's phase engine runs
	// (the built-in ones and the config's rules:); nil means the built-in
	// packs.
	Packs    []*startup.CompiledPack
	Kernels  kernels.Catalog
	ReadOnly bool
	// Clock is the host-time clock for stuck detection (default: real time).
	Clock remote.Clock
	// Deltas makes each batch after the first carry only the snapshots
	// of the hosts taken anew (Batch.States), not a copy of every
	// host's: for a consumer that keeps the snapshot itself (the
	// console at thousands of hosts, where the copy was most of a
	// batch's cost). Until hands its step whole batches still, at the
	// cost of a copy each.
	Deltas bool
	// Flush is how soon after something urgent arrives a batch is
	// handed out (default 50 ms); nothing arriving, no flush runs.
	Flush time.Duration
	// MaxPendingLines bounds the journal lines held for a slow consumer;
	// older ones are dropped and counted (default 20 000).
	MaxPendingLines int
	// LogBudget bounds the bytes of log text held for the whole fleet,
	// every host together (default DefaultLogBudget): the fleet keeps at
	// most a PendingShare of it for a consumer that has not taken its
	// batch yet (older journal lines are dropped and counted), and a
	// consumer that keeps lines (the console) the rest, LogBudget().
	LogBudget int
	// LocalHashes is, per kernel, the content hash of the local build, for
	// the drift badge; nil when unknown.
	LocalHashes map[string]string
	// GPUHistory is how many GPU samples each host keeps (default 120).
	GPUHistory int
	// Settle is how long a failed host whose cause is not settled stays
	// Provisional, waiting for the journal lines that explain it, counted
	// from the failure or from its journal's last line after it,
	// whichever is later; startup.Settler decides which failures wait
	// (default 3 s:
	// systemd's D-Bus signal beats the journal follow by a few
	// milliseconds to a second, and a long log takes as long as it takes).
	Settle time.Duration
	// FirstLineWait and RunningWait are the settle's longer waits
	// (startup.FirstLineExtra, startup.RunningWait by default): before a
	// host's first journal line, and while a failed run's process still
	// runs.
	FirstLineWait, RunningWait time.Duration
	// Observers follow every host beside the fold and add what they
	// derive to its snapshot: History (the ETA, the memory the weights
	// reach), Throughput (the decode rate against the kernel modes run
	// before), KernelCheck (the kernel builds the hosts loaded). The fold
	// calls each in this order; none: the snapshots carry none of it.
	Observers []Observer
	// Records keeps the history records the observers make (a startup
	// that reached serving, a steady decode rate, a bench), handed to it
	// by a writer goroutine the fleet owns; nil: none are kept.
	// store.NewSink (remote/history/store) is one.
	Records Recorder
	// Previous finds a host's previous serving run with its decode rate,
	// for the console's rollout (PreviousRun); nil: none. store.Sink is
	// one.
	Previous PreviousSink
	// Deadlines bound each action (zero fields: the defaults).
	Deadlines Deadlines
	// SlowerBy is the drop in decode rate against the kernel modes a host
	// ran before that flags its modes as slower (0: history.DefaultSlowerBy),
	// as the console's rollout reads it (Throughput is given its own).
	SlowerBy float64
}

// HistoryStore is a startup history that answers every door the fleet
// has to one: store.Sink.
type HistoryStore interface {
	Expecter
	Comparer
	PreviousSink
	Recorder
}

// WithHistory returns opts with hs plugged in through every door: the
// History and Throughput observers (the latter flagging a drop of
// opts.SlowerBy), Records and Previous.
func (opts Options) WithHistory(hs HistoryStore) Options {
	opts.Observers = append(slices.Clip(opts.Observers), Throughput(hs, opts.SlowerBy), History(hs))
	opts.Records, opts.Previous = hs, hs
	return opts
}

// Fleet fans in every host's events, folds them into startups and hands
// out batches. Actions go in through Do. Create it with New, start it
// with Run, read Updates.
type Fleet struct {
	opts   Options
	specs  []HostSpec
	byName map[string]int
	in     chan event.Event
	out    chan remote.Batch
	nextID int
	mu     sync.Mutex // guards nextID, actx and queues
	// queues[i] are host i's actions that have not ended, in the order
	// given: each waits for those before it, so one host's actions run in
	// that order (a mode change, then the restart that picks it up),
	// except that a stop or reset-failed cancels the restarts before it.
	queues map[int][]*queued
	// actx is Run's context while Run runs (nil otherwise): actions are
	// accepted only then. accepting is closed once Run has set it.
	actx      context.Context
	accepting chan struct{}
	actions   sync.WaitGroup

	// hist is the history writer's queue, set by Run before the fold loop
	// starts and used only by it; nil without Options.Records.
	hist                                 chan history.Record
	histWritten, histDropped, histFailed atomic.Int64
	histErr                              atomic.Value // string

	// paces[i] is host i's Pace as last handed to its driver; paceMu
	// orders the fold loop's changes with the console's (View).
	paceMu sync.Mutex
	paces  []remote.Pace

	// freeMemory returns the heap's free memory to the system
	// (debug.FreeOSMemory; tests count calls), run by freeOnSteady on bg
	// when every host has turned steady; freeing says one is under way.
	freeMemory func()
	freeing    atomic.Bool
	bg         sync.WaitGroup
}

// Now is the fleet's clock's time: host time, the demo's simulated time
// under a simulated clock.
func (f *Fleet) Now() time.Time { return f.opts.Clock.Now() }

// New returns a fleet over the given hosts. Host names must be unique.
func New(hosts []HostSpec, opts Options) (*Fleet, error) {
	if opts.Clock == nil {
		opts.Clock = remote.RealClock{}
	}
	if opts.Flush <= 0 {
		opts.Flush = 50 * time.Millisecond
	}
	if opts.MaxPendingLines <= 0 {
		opts.MaxPendingLines = 20000
	}
	if opts.LogBudget <= 0 {
		opts.LogBudget = remote.DefaultLogBudget
	}
	if opts.GPUHistory <= 0 {
		opts.GPUHistory = 120
	}
	if opts.Settle <= 0 {
		opts.Settle = DefaultSettle
	}
	opts.Deadlines = opts.Deadlines.withDefaults()
	f := &Fleet{
		opts:   opts,
		specs:  hosts,
		byName: map[string]int{},
		in:     make(chan event.Event, 1024),
		out:    make(chan remote.Batch),

		accepting:  make(chan struct{}),
		paces:      make([]remote.Pace, len(hosts)),
		freeMemory: debug.FreeOSMemory,
	}
	for i, h := range hosts {
		name := h.Driver.Name()
		if _, dup := f.byName[name]; dup {
			return nil, fmt.Errorf("host %q listed twice", name)
		}
		f.byName[name] = i
	}
	return f, nil
}

// Driver returns host's driver (a real host's, for what only it can do:
// remote/bench's tunnel to the service).
func (f *Fleet) Driver(host string) (remote.Driver, bool) {
	i, ok := f.byName[host]
	if !ok {
		return nil, false
	}
	return f.specs[i].Driver, true
}

// HandDeltas makes the fleet hand out batches as Options.Deltas says:
// for a consumer that keeps the snapshot itself (the console), given a
// fleet built for any. Call it before Run.
func (f *Fleet) HandDeltas() { f.opts.Deltas = true }

// Hosts lists the host names in order.
func (f *Fleet) Hosts() []string {
	out := make([]string, len(f.specs))
	for i, h := range f.specs {
		out[i] = h.Driver.Name()
	}
	return out
}

// Updates delivers batches. It is closed when Run returns.
func (f *Fleet) Updates() <-chan remote.Batch { return f.out }

// LocalHashes is, per kernel, the content hash of the local build
// (Options.LocalHashes): what the hosts should be running.
func (f *Fleet) LocalHashes() map[string]string { return maps.Clone(f.opts.LocalHashes) }

// Kernels is the kernel catalog the fleet was built with.
func (f *Fleet) Kernels() kernels.Catalog { return f.opts.Kernels }

// LogBudget is the bytes of log text a consumer that keeps lines (the
// console) may hold for all hosts: Options.LogBudget less the fleet's
// own pending share.
func (f *Fleet) LogBudget() int { return f.opts.LogBudget - f.opts.LogBudget/remote.PendingShare }

// ReadOnly reports whether changing actions are refused.
func (f *Fleet) ReadOnly() bool { return f.opts.ReadOnly }

// Run starts every host's driver and folds their events until ctx ends.
// It returns after every driver and action it started has stopped. A
// fleet runs once.
func (f *Fleet) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f.mu.Lock()
	f.actx = ctx
	f.mu.Unlock()
	close(f.accepting)

	var drivers sync.WaitGroup
	for _, h := range f.specs {
		drivers.Add(1)
		go func(d remote.Driver) {
			defer drivers.Done()
			err := d.Run(ctx, f.emitter(ctx))
			if err != nil && ctx.Err() == nil {
				f.emitter(ctx)(event.Event{Host: d.Name(), Kind: event.KindConn, Time: time.Now(),
					Conn: &event.Conn{State: event.ConnUnreachable, Err: err.Error()}})
			}
		}(h.Driver)
	}
	var writer sync.WaitGroup
	if f.opts.Records != nil {
		f.hist = make(chan history.Record, historyQueue)
		writer.Add(1)
		go func() {
			defer writer.Done()
			f.writeHistory(f.hist)
		}()
	}
	f.fold(ctx)
	// No action is accepted from here on, so none is added while Wait
	// below waits.
	f.mu.Lock()
	f.actx = nil
	f.mu.Unlock()
	if f.hist != nil {
		close(f.hist) // the writer finishes what is queued, then stops
	}
	writer.Wait()
	drivers.Wait()
	f.actions.Wait()
	f.bg.Wait()
	close(f.out)
	return nil
}

// emitter returns the Emit that drivers use: it blocks while the fold loop
// is busy (back-pressure on the reader) and gives up when ctx ends.
func (f *Fleet) emitter(ctx context.Context) remote.Emit {
	return func(ev event.Event) bool {
		select {
		case f.in <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
}

// Reconnect asks host's connection, stopped on a failure bringup never
// retries by itself, to dial again: the person has trusted the key or
// loaded the right one into the agent. It does not change the host, so
// read-only mode allows it. It returns at once; the dial's outcome comes
// back as the host's connection events.
func (f *Fleet) Reconnect(host string) error {
	i, ok := f.byName[host]
	if !ok {
		return fmt.Errorf("unknown host %q", host)
	}
	r, ok := f.specs[i].Driver.(remote.Reconnecter)
	if !ok {
		return fmt.Errorf("reconnect %s: its connection cannot be restarted (a simulated or replayed host)", host)
	}
	if !r.Retry() {
		return fmt.Errorf("reconnect %s: %w", host, remote.ErrNotStopped)
	}
	return nil
}
