package remote

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/gpu"
	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/sanitize"
	"github.com/bringup-dev/bringup/remote/startup"
	"github.com/bringup-dev/bringup/remote/timegrid"
)

// ErrReadOnly is returned for every changing action in read-only mode.
var ErrReadOnly = errors.New("read-only mode: actions that change hosts are disabled")

// Clock tells the fleet the time. Simulated fleets pass their scaled clock
// so that stuck detection runs in host time.
type Clock interface{ Now() time.Time }

// RealClock is the host clock of real hosts: the local time (their
// timestamps are close to it; they come from the hosts themselves).
type RealClock struct{}

// Now is time.Now.
func (RealClock) Now() time.Time { return time.Now() }

// HostSpec is one host the fleet watches.
type HostSpec struct {
	Driver Driver
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
	Clock Clock
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
	// Settle is how long a failed host whose diagnosis is not settled
	// (startup.Diagnosis.Settled) stays Provisional, waiting for the
	// journal lines that explain it, counted from the failure or from its
	// journal's last line after it, whichever is later (default 3 s:
	// systemd's D-Bus signal beats the journal follow by a few
	// milliseconds to a second, and a long log takes as long as it takes).
	Settle time.Duration
	// History supplies expectations (ETA, the memory weights reach) and
	// keeps a record of every startup that reaches serving; nil: none.
	// store.NewSink (remote/history/store) is one.
	History HistorySink
	// Deadlines bound each action (zero fields: the defaults).
	Deadlines Deadlines
	// SlowerBy is the drop in decode rate against the kernel modes a host
	// ran before that flags its modes as slower (0: history.DefaultSlowerBy).
	SlowerBy float64
}

// DefaultLogBudget is Options.LogBudget's default: with 256 hosts the
// console holding their logs stays under 200 MiB in all.
const DefaultLogBudget = 128 << 20

// PendingShare is the part of the log budget (one in PendingShare) the
// fleet may hold in a batch its consumer has not taken yet.
const PendingShare = 8

// HistorySink is the fleet's door to the startup history. Expect is
// called from the fold loop, so it must answer from memory without IO;
// Record is called from a writer goroutine the fleet owns and may do IO,
// but must return (Run waits for the records queued before it ends).
type HistorySink interface {
	Expect(host, unit string, modes map[string]string) (history.Expectation, bool)
	Record(history.Record) error
}

// ThroughputSink is a HistorySink that also compares serving runs' decode
// rates by kernel modes (store.Sink is one). Compare is called from the
// fold loop, so it must answer from memory without IO.
type ThroughputSink interface {
	Compare(host, unit string, modes map[string]string, live, slowerBy float64) history.ModeAB
}

// historyQueue bounds the records waiting for the history writer; beyond
// it records are dropped (and counted) rather than slowing the fold loop.
const historyQueue = 16

// HistoryStats counts what became of the startup records.
type HistoryStats struct {
	Written int `json:"written"`
	// Dropped records found the writer's queue full.
	Dropped int `json:"dropped,omitempty"`
	// Failed records were refused by the sink; LastErr is the latest error.
	Failed  int    `json:"failed,omitempty"`
	LastErr string `json:"last_err,omitempty"`
}

// HostState is one host in a snapshot.
type HostState struct {
	Name    string          `json:"host"`
	Unit    string          `json:"unit"`
	Startup startup.Startup `json:"startup"`
	// UnitState is the last unit state read from the host.
	UnitState event.Unit  `json:"unit_state"`
	Conn      event.Conn  `json:"conn"`
	Probe     event.Probe `json:"probe"`
	// GPU is the recent GPU samples, oldest first.
	GPU []event.GPU `json:"gpu,omitempty"`
	// Modes are the kernel modes in the unit's environment (what the next
	// start uses).
	Modes []kernels.ActiveMode `json:"modes,omitempty"`
	// Action is the latest action on the host.
	Action *event.ActionResult `json:"action,omitempty"`
	// Dropped counts journal lines dropped because the consumer was slow.
	Dropped int `json:"dropped,omitempty"`
	// KernelHashes is, per kernel, the content hash of the build the
	// running service loaded (from its "sitecustomize loaded" line).
	KernelHashes map[string]string `json:"kernel_hashes,omitempty"`
	// Expected is what earlier startups of this host, unit and modes took
	// (Runs 0: no history).
	Expected history.Expectation `json:"expected,omitzero"`
	// ETA is when the startup is expected to serve (host time); zero when
	// unknown.
	ETA time.Time `json:"eta,omitzero"`
	// MemProgress estimates weight loading from GPU memory climbing toward
	// the level the last successful run reached. It is set only in the
	// weights phase while the logs give no count (journald sees a tqdm bar
	// only when its line ends).
	MemProgress startup.Progress `json:"mem_progress,omitzero"`
	// Provisional marks a failure seen (or followed by a journal line)
	// less than Options.Settle ago whose cause may still change: only the
	// unit's state (or a wrapper's line) explains it yet, or the journal
	// has not yet shown the process's end
	// (startup.Startup.LogEnded), so traceback lines that place it may
	// still come. systemd's D-Bus signal beats the journal follow; a
	// reader that wants the cause waits until this clears (Settled).
	Provisional bool `json:"provisional,omitempty"`
	// Throughput is the decode rate of the host's current kernel modes
	// (the run's steady rate, or earlier runs') against the modes it ran
	// before, from the history; zero without one.
	Throughput history.ModeAB `json:"throughput,omitzero"`
	// Bench is the latest smoke load run on the host since bringup
	// started (the console's b, `bringup bench`); nil: none.
	Bench *BenchRun `json:"bench,omitempty"`
}

// BenchRun is one smoke load's result on a host: when it ended, which
// action it was, the kernel modes the service ran, and what it measured.
type BenchRun struct {
	Time   time.Time         `json:"time"`
	Action int               `json:"action"`
	Modes  map[string]string `json:"modes,omitempty"`
	event.Bench
}

// Settled reports whether h has reached an end a reader can act on: it
// serves, or it failed with a cause later journal lines will not change
// (not Provisional).
func (h HostState) Settled() bool {
	switch h.Startup.Phase {
	case startup.Serving:
		return true
	case startup.Failed:
		return !h.Provisional
	default:
		return false
	}
}

// HostChange is a startup change on one host.
type HostChange struct {
	Host string `json:"host"`
	// Seen is when the event that caused the change was received here.
	Seen time.Time `json:"seen"`
	startup.Change
	// ConnErr is why the host cannot be reached, on a change to unknown:
	// its connection's last error ("… connection refused"), so that the
	// change says why as status does.
	ConnErr string `json:"conn_error,omitempty"`
}

// hostChange is c of host h, with the connection's error when c makes
// the host unknown.
func hostChange(h *hostFold, seen time.Time, c startup.Change) HostChange {
	hc := HostChange{Host: h.state.Name, Seen: seen, Change: c}
	if c.Kind == startup.ChangePhase && c.Phase == startup.Unknown {
		hc.ConnErr = h.state.Conn.Err
	}
	return hc
}

// Batch is what the fleet hands out each flush: the snapshot of every host,
// and what happened since the last batch. A host that did not change is
// the same snapshot as in the batch before, its slices and maps shared:
// consumers read them and never write to them.
type Batch struct {
	Hosts   []HostState   `json:"hosts"`
	Events  []event.Event `json:"events,omitempty"`
	Changes []HostChange  `json:"changes,omitempty"`
	// Dropped counts events dropped from this batch (journal lines only;
	// state changes are never dropped).
	Dropped int `json:"dropped,omitempty"`

	text int // bytes of journal text in Events, against the pending budget
	// heldLines and heldText are what the batch the consumer has not
	// taken yet holds (the fold's ready batch), counted against the same
	// budget while this one accumulates.
	heldLines, heldText int
}

// Fleet fans in every host's events, folds them into startups and hands
// out batches. Actions go in through Do. Create it with NewFleet, start it
// with Run, read Updates.
type Fleet struct {
	opts   Options
	specs  []HostSpec
	byName map[string]int
	in     chan event.Event
	out    chan Batch
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
	// starts and used only by it; nil without a History sink.
	hist                                 chan history.Record
	histWritten, histDropped, histFailed atomic.Int64
	histErr                              atomic.Value // string

	// paces[i] is host i's Pace as last handed to its driver; paceMu
	// orders the fold loop's changes with the console's (View).
	paceMu sync.Mutex
	paces  []Pace

	// freeMemory returns the heap's free memory to the system
	// (debug.FreeOSMemory; tests count calls), run by freeOnSteady on bg
	// when every host has turned steady; freeing says one is under way.
	freeMemory func()
	freeing    atomic.Bool
	bg         sync.WaitGroup
}

// NewFleet returns a fleet over the given hosts. Host names must be unique.
func NewFleet(hosts []HostSpec, opts Options) (*Fleet, error) {
	if opts.Clock == nil {
		opts.Clock = RealClock{}
	}
	if opts.Flush <= 0 {
		opts.Flush = 50 * time.Millisecond
	}
	if opts.MaxPendingLines <= 0 {
		opts.MaxPendingLines = 20000
	}
	if opts.LogBudget <= 0 {
		opts.LogBudget = DefaultLogBudget
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
		out:    make(chan Batch),

		accepting:  make(chan struct{}),
		paces:      make([]Pace, len(hosts)),
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
func (f *Fleet) Driver(host string) (Driver, bool) {
	i, ok := f.byName[host]
	if !ok {
		return nil, false
	}
	return f.specs[i].Driver, true
}

// Hosts lists the host names in order.
func (f *Fleet) Hosts() []string {
	out := make([]string, len(f.specs))
	for i, h := range f.specs {
		out[i] = h.Driver.Name()
	}
	return out
}

// Updates delivers batches. It is closed when Run returns.
func (f *Fleet) Updates() <-chan Batch { return f.out }

// LocalHashes is, per kernel, the content hash of the local build
// (Options.LocalHashes): what the hosts should be running.
func (f *Fleet) LocalHashes() map[string]string { return maps.Clone(f.opts.LocalHashes) }

// Kernels is the kernel catalog the fleet was built with.
func (f *Fleet) Kernels() kernels.Catalog { return f.opts.Kernels }

// LogBudget is the bytes of log text a consumer that keeps lines (the
// console) may hold for all hosts: Options.LogBudget less the fleet's
// own pending share.
func (f *Fleet) LogBudget() int { return f.opts.LogBudget - f.opts.LogBudget/PendingShare }

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
		go func(d Driver) {
			defer drivers.Done()
			err := d.Run(ctx, f.emitter(ctx))
			if err != nil && ctx.Err() == nil {
				f.emitter(ctx)(event.Event{Host: d.Name(), Kind: event.KindConn, Time: time.Now(),
					Conn: &event.Conn{State: event.ConnUnreachable, Err: err.Error()}})
			}
		}(h.Driver)
	}
	var writer sync.WaitGroup
	if f.opts.History != nil {
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

// writeHistory hands each queued record to the sink until the queue is
// closed.
func (f *Fleet) writeHistory(q <-chan history.Record) {
	for r := range q {
		if err := f.opts.History.Record(r); err != nil {
			f.histFailed.Add(1)
			f.histErr.Store(err.Error())
			continue
		}
		f.histWritten.Add(1)
	}
}

// HistoryStats reports the startup records written, dropped and failed so
// far. It is safe to call from any goroutine.
func (f *Fleet) HistoryStats() HistoryStats {
	s := HistoryStats{Written: int(f.histWritten.Load()), Dropped: int(f.histDropped.Load()), Failed: int(f.histFailed.Load())}
	s.LastErr, _ = f.histErr.Load().(string)
	return s
}

// emitter returns the Emit that drivers use: it blocks while the fold loop
// is busy (back-pressure on the reader) and gives up when ctx ends.
func (f *Fleet) emitter(ctx context.Context) Emit {
	return func(ev event.Event) bool {
		select {
		case f.in <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
}

// Do starts action a on host and returns its id at once; the outcome comes
// back as KindAction events. Changing actions are refused in read-only
// mode, and every action while the fleet is not running (ErrNotRunning).
//
// A host's actions run one at a time in the order given, except that a
// stop or reset-failed cancels the restarts still pending on the host and
// runs instead of waiting for them. Each action has a deadline
// (Options.Deadlines, counted from its start): past it the action is
// cancelled and ends as failed (*DeadlineError), and the host's next
// action goes ahead.
func (f *Fleet) Do(host string, a Action) (int, error) {
	i, ok := f.byName[host]
	if !ok {
		return 0, fmt.Errorf("unknown host %q", host)
	}
	if f.opts.ReadOnly && a.Kind.Changes() {
		return 0, fmt.Errorf("%s on %s: %w", a, host, ErrReadOnly)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	ctx := f.actx
	if ctx == nil || ctx.Err() != nil {
		return 0, fmt.Errorf("%s on %s: %w", a, host, ErrNotRunning)
	}
	f.nextID++
	actx, cancel := context.WithCancelCause(ctx)
	q := &queued{id: f.nextID, action: a, cancel: cancel, done: make(chan struct{})}
	ahead := slices.Clone(f.queues[i])
	if preempts(a.Kind) {
		for _, p := range ahead {
			if p.action.Kind == ActRestart {
				p.cancel(&PreemptedError{Host: host, Action: p.action, By: a, ByID: q.id})
			}
		}
	}
	if f.queues == nil {
		f.queues = map[int][]*queued{}
	}
	f.queues[i] = append(f.queues[i], q)
	f.actions.Add(1)
	go f.runAction(ctx, actx, i, q, ahead)
	return q.id, nil
}

// ErrCancelled is the cause of an action the person cancelled (Cancel).
var ErrCancelled = errors.New("cancelled")

// ErrNoSuchAction is Cancel's answer for an action that has ended (or
// was never given on that host).
var ErrNoSuchAction = errors.New("no such action under way")

// Cancel ends host's action id, queued or running: its context is
// cancelled with ErrCancelled, the driver stops what it waits for, and
// the action ends as failed with that cause (a bench reports what it
// measured until then first). It returns at once. It changes nothing on
// the host by itself, so read-only mode allows it.
func (f *Fleet) Cancel(host string, id int) error {
	i, ok := f.byName[host]
	if !ok {
		return fmt.Errorf("unknown host %q", host)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, q := range f.queues[i] {
		if q.id == id {
			q.cancel(ErrCancelled)
			return nil
		}
	}
	return fmt.Errorf("cancel #%d on %s: %w", id, host, ErrNoSuchAction)
}

// queued is one accepted action that has not ended.
type queued struct {
	id     int
	action Action
	cancel context.CancelCauseFunc // ends it, queued or running
	done   chan struct{}           // closed when the host's queue moves past it
}

// errPastDeadline is the cause an action is cancelled with when its
// deadline passes.
var errPastDeadline = errors.New("past its deadline")

// runAction waits for the actions ahead of q on host i, runs q under
// actx (which its deadline, a preempting action or the fleet's end
// cancel) and reports its outcome. Events go out under the fleet's ctx,
// so that an action's cancellation is still reported.
func (f *Fleet) runAction(ctx, actx context.Context, i int, q *queued, ahead []*queued) {
	defer f.actions.Done()
	released := false
	release := func() {
		if !released {
			released = true
			f.dequeue(i, q)
		}
	}
	defer release()
	defer q.cancel(nil)
	spec, a := f.specs[i], q.action
	host := spec.Driver.Name()
	emit := f.emitter(ctx)
	report := func(stage event.ActionStage, err error) {
		r := &event.ActionResult{ID: q.id, Name: a.String(), Stage: stage}
		if err != nil {
			r.Err = err.Error()
		}
		emit(event.Event{Host: host, Kind: event.KindAction, Time: f.opts.Clock.Now(), Action: r})
	}
	for _, p := range ahead {
		select {
		case <-p.done:
		case <-actx.Done():
			// Preempted before it started (or the fleet stopped: then
			// nothing is reported, as nobody listens).
			report(event.ActionFailed, f.actionErr(actx, host, spec.Unit, a, nil, nil))
			return
		}
	}
	report(event.ActionStarted, nil)
	// Progress a driver reports belongs to this action: give it the id
	// the driver does not know.
	progress := func(ev event.Event) bool {
		if ev.Kind == event.KindAction && ev.Action != nil && ev.Action.ID == 0 {
			r := *ev.Action
			r.ID = q.id
			if r.Name == "" {
				r.Name = a.String()
			}
			ev.Action = &r
		}
		return emit(ev)
	}
	dl := f.opts.Deadlines
	clock := startClock(dl.For(a.Kind), dl.RedeployRate, func() { q.cancel(errPastDeadline) })
	defer clock.stop()
	result := make(chan error, 1)
	go func() { result <- spec.Driver.Do(context.WithValue(actx, clockKey{}, clock), a, progress) }()
	var err error
	select {
	case err = <-result:
	case <-actx.Done():
		select {
		case err = <-result:
		case <-time.After(dl.Grace):
			// The driver has not returned: the outcome is reported and the
			// host's queue moves on; the driver is still waited for, so
			// that Run returns only after it (its late error changes
			// nothing: the failure is out).
			report(event.ActionFailed, f.actionErr(actx, host, spec.Unit, a, clock, nil))
			release()
			_ = <-result
			return
		}
	}
	if err != nil {
		report(event.ActionFailed, f.actionErr(actx, host, spec.Unit, a, clock, err))
		return
	}
	report(event.ActionDone, nil)
}

// actionErr is the error an action ended with: what cancelled it (its
// deadline, a preempting action), with what the driver returned (err; nil
// when it had not returned), or err alone.
func (f *Fleet) actionErr(actx context.Context, host, unit string, a Action, clock *actionClock, err error) error {
	cause := context.Cause(actx)
	var pe *PreemptedError
	switch {
	case errors.Is(cause, errPastDeadline) && clock != nil:
		after, bytes := clock.limit()
		return &DeadlineError{Host: host, Action: a, Unit: unit, After: after, Bytes: bytes, Err: err, Grace: f.opts.Deadlines.Grace}
	case errors.As(cause, &pe):
		e := *pe
		e.Err = err
		return &e
	case err == nil:
		return cause
	}
	return err
}

// dequeue takes q off host i's queue and lets the actions behind it go.
func (f *Fleet) dequeue(i int, q *queued) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queues[i] = slices.DeleteFunc(f.queues[i], func(p *queued) bool { return p == q })
	close(q.done)
}

// hostFold is the fold loop's state for one host.
type hostFold struct {
	tracker *startup.Tracker
	state   HostState
	// steady is the Pace.Steady last told to the host's driver.
	steady bool

	// What the history says for the host's unit and modes (Runs 0: none).
	expect history.Expectation
	// inv is the StartedAt of the invocation the fields below are about.
	inv time.Time
	// weightMem is the mean MiB per GPU when the weights phase ended.
	weightMem int
	// recorded says the invocation's record has been handed out.
	recorded bool
	// failKey names the unsettled failure seen at failWall (wall clock);
	// provisional says the last snapshot marked it Provisional.
	failKey     string
	failWall    time.Time
	provisional bool
	// lineWall is when the host's last journal line arrived (wall clock):
	// a failure settles only once its journal has been quiet for Settle.
	lineWall time.Time

	// snap is the host's last snapshot, handed out again while nothing
	// changed: on a quiet fleet most batches carry one host's probe or GPU
	// sample, and copying every host's state for it was the fold's main
	// cost (measured: a fifth of the console's CPU at 64 serving hosts).
	// snapOK is cleared by every event and tick change of the host;
	// timed says the snapshot holds what the clock alone changes (an ETA,
	// a provisional failure), so it is taken anew every time.
	snap          HostState
	snapOK, timed bool
	// listed says the host is on the fold's stale list (snapshots.stale),
	// so that it is put there once however many events it gets.
	listed bool
	// statsLines is the tracker's count of stats lines last looked at;
	// tputInv the invocation (its StartedAt) tputRecorded is about: its
	// steady decode rate has been handed to the history. live is that
	// rate (0: not steady yet), ab the comparison by kernel modes.
	statsLines   int
	tputInv      time.Time
	tputRecorded bool
	live         float64
	ab           history.ModeAB
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
			state: HostState{Name: h.Driver.Name(), Unit: h.Unit,
				Conn: event.Conn{State: event.ConnConnecting}},
		}
		hosts[i].state.Startup = hosts[i].tracker.State()
		f.refreshExpect(hosts[i])
	}
	snaps := &snapshots{}
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
	var pending, ready Batch
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
	var out chan Batch // nil while ready holds nothing
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
			if provisional && snaps.settled(hosts, wall, f.opts.Settle) {
				dirty, urgent = true, true
			}
			if dirty && flushDue(urgent, lazySince, wall, f.opts.Flush, lazyWait) {
				if out != nil {
					// The consumer has not taken ready yet: one batch
					// of both, the budget kept over the whole.
					pending = f.merge(hosts, snaps, ready, pending)
				}
				var taken []int
				pending.Hosts, taken = snaps.take(hosts, now, wall, f.opts.Settle)
				ready, pending = pending, Batch{heldLines: len(pending.Events), heldText: pending.text}
				out = f.out
				provisional = snaps.provisional(hosts)
				dirty = false
				urgent, lazySince = false, time.Time{}
				was := steady
				steady = f.paceSteady(hosts, ready.Hosts, taken, steady)
				if was < len(hosts) && steady == len(hosts) {
					f.freeOnSteady()
				}
			}
			switch {
			case provisional:
				arm(f.opts.Flush) // every flush looks whether its wait is over
			case dirty:
				arm(wait(wall))
			}
		case out <- ready:
			ready = Batch{}
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

// viewed says whether host i's view is open in the console (Fleet.View).
func (f *Fleet) viewed(i int) bool {
	f.paceMu.Lock()
	defer f.paceMu.Unlock()
	return f.paces[i].Viewed
}

// paceSteady tells each driver whose host became steady, or stopped
// being so, among the hosts taken anew (indices into hosts and states),
// and returns how many hosts are steady now, given steady before.
func (f *Fleet) paceSteady(hosts []*hostFold, states []HostState, taken []int, steady int) int {
	for _, i := range taken {
		if st := steadyHost(states[i]); st != hosts[i].steady {
			hosts[i].steady = st
			if st {
				steady++
			} else {
				steady--
			}
			f.setSteady(i, st)
		}
	}
	return steady
}

// freeOnSteady returns the heap's free memory to the system, once, when
// every host has turned steady (from the fold loop, on that transition):
// the start's garbage (handshakes, catch-up reads, the first D-Bus
// reads) is otherwise kept resident for good, since a quiet fleet
// allocates too little for the collector to run and the runtime returns
// only what it scavenges slowly (measured at 256 hosts: 234-257 MiB
// resident after a quiet minute, 152-158 MiB after this). It runs on its
// own goroutine, which Run waits for: a forced collection of the live
// heap takes tens of milliseconds the fold loop should not stall for;
// one already under way is not doubled.
func (f *Fleet) freeOnSteady() {
	if !f.freeing.CompareAndSwap(false, true) {
		return
	}
	f.bg.Add(1)
	go func() {
		defer f.bg.Done()
		defer f.freeing.Store(false)
		f.freeMemory()
	}()
}

// snapshots is the fold's last snapshot of every host and the hosts that
// must be taken anew for the next: those with an event or tick change
// since (mark), and those whose snapshot the clock alone changes (timed).
// A batch's snapshot then costs one copy of the last one plus the stale
// hosts, instead of a look at every host (measured: the fold's per-batch
// snapshot was a fifth of a quiet 256-host console's CPU).
type snapshots struct {
	last  []HostState
	stale []int // indices into hosts, each listed once (hostFold.listed)
	taken []int // the hosts the last take took anew
}

// mark lists host i (h) to be taken anew at the next snapshot.
func (s *snapshots) mark(i int, h *hostFold) {
	h.snapOK = false
	if !h.listed {
		h.listed = true
		s.stale = append(s.stale, i)
	}
}

// take returns the snapshot of every host at host time now (wall is the
// local clock that Provisional failures are timed on) and the hosts it
// took anew. The slice is new (the consumer keeps the last one); a host
// not taken anew is its last snapshot, its slices and maps shared.
func (s *snapshots) take(hosts []*hostFold, now, wall time.Time, settle time.Duration) ([]HostState, []int) {
	var out []HostState
	if len(s.last) == len(hosts) {
		out = slices.Clone(s.last)
	} else {
		out = make([]HostState, len(hosts))
	}
	s.taken = append(s.taken[:0], s.stale...)
	keep := s.stale[:0]
	for _, i := range s.taken {
		h := hosts[i]
		out[i] = h.take(now, wall, settle)
		if h.listed = h.timed; h.timed {
			keep = append(keep, i)
		}
	}
	s.stale, s.last = keep, out
	return out, s.taken
}

// provisional says whether a host's failure was provisional at the last
// take (such a host is timed, so it is on the stale list).
func (s *snapshots) provisional(hosts []*hostFold) bool {
	return slices.ContainsFunc(s.stale, func(i int) bool { return hosts[i].provisional })
}

// settled says whether a provisional failure's wait is over at wall.
func (s *snapshots) settled(hosts []*hostFold, wall time.Time, settle time.Duration) bool {
	return slices.ContainsFunc(s.stale, func(i int) bool {
		h := hosts[i]
		return h.provisional && !wall.Before(h.settleFrom().Add(settle))
	})
}

// take is h's snapshot at host time now, taken anew; wall is the local
// clock that Provisional failures are timed on. The GPU history is shared
// (apply never writes over a sample a snapshot holds: gpuAppend).
func (h *hostFold) take(now, wall time.Time, settle time.Duration) HostState {
	s := h.state
	s.Startup = h.tracker.State()
	s.Provisional = h.provisionalAt(s.Startup, wall, settle)
	s.Expected = h.expect
	eta, timed := history.ETA(h.expect, s.Startup, now)
	if timed {
		s.ETA = eta
	}
	s.MemProgress = memProgress(s.Startup, h.expect, h.state.GPU)
	s.Throughput = h.ab
	s.GPU = h.state.GPU[:len(h.state.GPU):len(h.state.GPU)]
	s.Modes = append([]kernels.ActiveMode(nil), h.state.Modes...)
	s.KernelHashes = maps.Clone(h.state.KernelHashes)
	if h.state.Action != nil {
		a := *h.state.Action
		s.Action = &a
	}
	h.snap, h.snapOK, h.timed = s, true, timed || s.Provisional
	return s
}

// gpuAppend appends sample to the GPU history gs, keeping its last keep
// samples, without ever writing over a sample already in gs: snapshots
// share the history's backing array. Samples go into spare room at the
// end; when there is none the last keep-1 move to a new array with room
// for as many again, so a sample costs amortised O(1) instead of a copy
// of the whole history per snapshot.
func gpuAppend(gs []event.GPU, sample event.GPU, keep int) []event.GPU {
	if len(gs) == cap(gs) && len(gs) >= keep {
		n := make([]event.GPU, keep-1, 2*keep)
		copy(n, gs[len(gs)-(keep-1):])
		gs = n
	}
	gs = append(gs, sample)
	if n := len(gs) - keep; n > 0 {
		gs = gs[n:]
	}
	return gs
}

// provisionalAt says whether st's failure is provisional at wall: its
// cause not settled or the journal not read to the process's end, and
// first seen less than settle ago.
func (h *hostFold) provisionalAt(st startup.Startup, wall time.Time, settle time.Duration) bool {
	h.provisional = false
	// A run the unit's state has not named may be an earlier one replayed
	// from the journal's backlog, its own end included: it settles by
	// the clock alone, after its lines have gone quiet, by when the
	// backlog has reached the current run.
	named := h.state.UnitState.InvocationID != "" && h.state.UnitState.InvocationID == st.InvocationID
	if st.Phase != startup.Failed || named && st.Diag.Settled() && st.LogEnded {
		return false
	}
	key := st.InvocationID + "|" + st.PhaseSince.String()
	if key != h.failKey {
		h.failKey, h.failWall = key, wall
	}
	h.provisional = wall.Before(h.settleFrom().Add(settle))
	return h.provisional
}

// settleFrom is when the settle wait of h's failure starts: when it was
// first seen, or the journal line that came last after it. A failed run's
// log can take longer than the wait to arrive (a long log caught up, a
// follow started after the unit's state was read): while its lines still
// come, the traceback that places the failure may be among them.
func (h *hostFold) settleFrom() time.Time {
	if h.lineWall.After(h.failWall) {
		return h.lineWall
	}
	return h.failWall
}

// apply sanitises ev (the one place remote text enters), folds it into its
// host, lists the host (and any whose lines it drops) for the next
// snapshot in snaps and records ev in the pending batch. It returns the
// host's index (false: no such host, ev is dropped).
func (f *Fleet) apply(hosts []*hostFold, snaps *snapshots, pending *Batch, ev event.Event) (int, bool) {
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
	case event.KindGPU:
		if ev.GPU != nil {
			h.state.GPU = gpuAppend(h.state.GPU, *ev.GPU, f.opts.GPUHistory)
		}
	case event.KindAction:
		if ev.Action != nil {
			a := *ev.Action
			h.state.Action = &a
			if a.Bench != nil {
				f.benched(h, ev.Time, a)
			}
		}
	case event.KindJournal:
		h.lineWall = time.Now()
		if ev.Journal != nil && strings.Contains(ev.Journal.Message, "sitecustomize loaded from") {
			if l, ok := ParseLoadedKernel(ev.Journal.Message); ok {
				if h.state.KernelHashes == nil {
					h.state.KernelHashes = map[string]string{}
				}
				h.state.KernelHashes[l.Kernel] = l.Hash
			}
		}
	default: // gaps and commands are only passed on
	}
	changes := h.tracker.Apply(ev)
	for _, c := range changes {
		pending.Changes = append(pending.Changes, hostChange(h, ev.Seen, c))
	}
	if n := h.tracker.StatsLines(); n != h.statsLines {
		h.statsLines = n
		f.followThroughput(h)
	}
	if len(changes) > 0 || ev.Kind == event.KindUnit {
		f.followHistory(h, changes)
	}
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

// merge is one batch of older, a batch the consumer has not taken yet,
// and newer, what came since, with the pending budget kept over the
// whole (the oldest lines go first). Its snapshot is to be taken anew.
func (f *Fleet) merge(hosts []*hostFold, snaps *snapshots, older, newer Batch) Batch {
	older.Hosts, older.heldLines, older.heldText = nil, 0, 0
	older.Events = append(older.Events, newer.Events...)
	older.Changes = append(older.Changes, newer.Changes...)
	older.Dropped += newer.Dropped
	older.text += newer.text
	f.trim(hosts, snaps, &older)
	return older
}

// trim drops b's oldest journal lines while it holds, with what the
// batch not yet taken holds, more than the pending budget allows
// (Options.MaxPendingLines lines, the log budget's pending share of
// text), counting each against b and its host.
func (f *Fleet) trim(hosts []*hostFold, snaps *snapshots, b *Batch) {
	n := len(b.Events) + b.heldLines - f.opts.MaxPendingLines
	over := b.text + b.heldText - f.opts.LogBudget/PendingShare
	if n <= 0 && over <= 0 {
		return
	}
	b.Events = dropJournal(b.Events, n, over, func(host string, size int) {
		b.Dropped++
		b.text -= size
		if j, ok := f.byName[host]; ok {
			hosts[j].state.Dropped++
			snaps.mark(j, hosts[j])
		}
	})
}

// dropJournal removes the oldest journal events (never state changes):
// at least n of them, and enough to free over bytes of text, telling
// counted which host lost each and its size.
func dropJournal(evs []event.Event, n, over int, counted func(host string, size int)) []event.Event {
	out := evs[:0]
	for _, ev := range evs {
		if (n > 0 || over > 0) && ev.Kind == event.KindJournal {
			size := 0
			if ev.Journal != nil {
				size = len(ev.Journal.Message)
			}
			n, over = n-1, over-size
			counted(ev.Host, size)
			continue
		}
		out = append(out, ev)
	}
	return out
}

// sanitizeEvent passes every remote string of ev through the sanitiser:
// the UI and every other reader trust what the fleet hands out, so a field
// missed here reaches the terminal raw (a replayed recording can put
// anything in any field). Only the journal cursor is left byte-exact: it
// is an opaque token for journald, never shown.
func sanitizeEvent(ev *event.Event) {
	if j := ev.Journal; j != nil {
		var cut bool
		j.Message, cut = sanitize.Line(j.Message, sanitize.DefaultMax)
		j.Truncated = j.Truncated || cut
		j.Unit = sanitize.String(j.Unit)
		j.InvocationID = sanitize.String(j.InvocationID)
		j.MessageID = sanitize.String(j.MessageID)
		for k, v := range j.Fields {
			j.Fields[k] = sanitize.String(v)
		}
	}
	if u := ev.Unit; u != nil {
		u.Name = sanitize.String(u.Name)
		u.LoadState = sanitize.String(u.LoadState)
		u.ActiveState = sanitize.String(u.ActiveState)
		u.SubState = sanitize.String(u.SubState)
		u.Result = sanitize.String(u.Result)
		u.InvocationID = sanitize.String(u.InvocationID)
		u.ExecStart = sanitize.String(u.ExecStart)
		u.Path = sanitize.String(u.Path)
		for i, v := range u.Environment {
			u.Environment[i] = sanitize.String(v)
		}
		for i, v := range u.DropInPaths {
			u.DropInPaths[i] = sanitize.String(v)
		}
	}
	if c := ev.Conn; c != nil {
		c.State = event.ConnState(sanitize.String(string(c.State)))
		c.Err = sanitize.String(c.Err)
	}
	if p := ev.Probe; p != nil {
		p.Path = sanitize.String(p.Path)
		p.Err = sanitize.String(p.Err)
	}
	if a := ev.Action; a != nil {
		a.Name = sanitize.String(a.Name)
		a.Stage = event.ActionStage(sanitize.String(string(a.Stage)))
		a.Detail = sanitize.String(a.Detail)
		a.Err = sanitize.String(a.Err)
		if b := a.Bench; b != nil {
			c := *b // the driver's copy stays its own
			c.Model, c.FirstError = sanitize.String(c.Model), sanitize.String(c.FirstError)
			a.Bench = &c
		}
	}
	if g := ev.Gap; g != nil {
		g.Reason = sanitize.String(g.Reason)
		g.Message = sanitize.String(g.Message)
	}
	if c := ev.Command; c != nil {
		c.Via = sanitize.String(c.Via)
		c.Text = sanitize.String(c.Text)
		c.Result = sanitize.String(c.Result)
		c.Err = sanitize.String(c.Err)
	}
	if g := ev.GPU; g != nil {
		for i := range g.Devices {
			g.Devices[i].Name = sanitize.String(g.Devices[i].Name)
		}
	}
}

// refreshExpect asks the history what to expect of h's unit and modes.
func (f *Fleet) refreshExpect(h *hostFold) {
	if f.opts.History == nil {
		return
	}
	e, ok := f.opts.History.Expect(h.state.Name, h.state.Unit, kernels.ModeMap(h.state.Modes))
	if !ok {
		e = history.Expectation{}
	}
	h.expect = e
}

// followThroughput runs after a stats line of h: once the serving run's
// decode rate is steady it is queued for the history (once a run) and
// compared with the kernel modes the host ran before. Stats lines come a
// few a second at most, so the copy of the state here is cheap enough.
func (f *Fleet) followThroughput(h *hostFold) {
	if f.opts.History == nil {
		return
	}
	st := h.tracker.State()
	if !st.StartedAt.Equal(h.tputInv) {
		h.tputInv, h.tputRecorded, h.live = st.StartedAt, false, 0
	}
	if st.Phase == startup.Serving && st.Stats != nil {
		if v, ok := history.Steady(st.Stats.Decode); ok {
			h.live = v
			if !h.tputRecorded {
				h.tputRecorded = true
				f.queue(history.Throughput(st.Stats.Latest.Time, h.state.Name, h.state.Unit, st.Engine,
					kernels.ModeMap(st.Modes), st.InvocationID, v))
			}
		}
	}
	f.refreshAB(h, st)
}

// refreshAB compares h's decode rate under the modes its run started with
// against the modes it ran before, when the history can.
func (f *Fleet) refreshAB(h *hostFold, st startup.Startup) {
	ts, ok := f.opts.History.(ThroughputSink)
	if !ok {
		return
	}
	modes := st.Modes
	if len(modes) == 0 {
		modes = h.state.Modes
	}
	live := h.live
	if !st.StartedAt.Equal(h.tputInv) {
		live = 0 // a new run: its rate is not known yet
	}
	mm := kernels.ModeMap(modes)
	h.ab = ts.Compare(h.state.Name, h.state.Unit, mm, live, f.opts.SlowerBy)
	// The bench just run counts before the history writer has stored it.
	if b := h.state.Bench; b != nil && !b.Interrupted && b.OK > 0 && history.ModesKey(b.Modes) == history.ModesKey(mm) {
		h.ab = h.ab.WithBench(history.ModesKey(mm), b.OutputTPS)
	}
}

// benched keeps a bench's result on h, from the event that carries it,
// and queues it for the history with the kernel modes the run started
// with, when it is a measurement of a serving run: complete (not
// stopped part way) and with something measured.
func (f *Fleet) benched(h *hostFold, at time.Time, a event.ActionResult) {
	st := h.tracker.State()
	modes := st.Modes
	if len(modes) == 0 {
		modes = h.state.Modes
	}
	if at.IsZero() {
		at = f.opts.Clock.Now()
	}
	h.state.Bench = &BenchRun{Time: at, Action: a.ID, Modes: kernels.ModeMap(modes), Bench: *a.Bench}
	if f.opts.History == nil || a.Bench.Interrupted || a.Bench.OK == 0 || st.Phase != startup.Serving {
		return
	}
	f.queue(history.BenchRecord(at, h.state.Name, h.state.Unit, st.Engine, kernels.ModeMap(modes), st.InvocationID, *a.Bench))
	f.refreshAB(h, st)
}

// queue hands r to the history writer, or drops it when the writer is
// behind.
func (f *Fleet) queue(r history.Record) {
	select {
	case f.hist <- r:
	default:
		f.histDropped.Add(1)
	}
}

// followHistory runs after h's startup changed or its unit was read: it
// refreshes the expectation (the modes or the history may have changed),
// notes the GPU memory when weights end, and queues the record of a
// startup that reached serving. Changes are a few per phase, so this adds
// nothing per journal line.
func (f *Fleet) followHistory(h *hostFold, changes []startup.Change) {
	if f.opts.History == nil {
		return
	}
	f.refreshExpect(h)
	for _, c := range changes {
		if c.Kind != startup.ChangePhase {
			continue
		}
		st := h.tracker.State()
		if !st.StartedAt.Equal(h.inv) {
			h.inv, h.weightMem, h.recorded = st.StartedAt, 0, false
		}
		if h.weightMem == 0 && c.Phase.Rank() > startup.Weights.Rank() && len(h.state.GPU) > 0 {
			h.weightMem = gpu.MemPerGPU(h.state.GPU[len(h.state.GPU)-1])
		}
		if c.Phase == startup.Serving && !h.recorded {
			h.recorded = true
			f.queueRecord(h, st, c.Time)
		}
		f.refreshAB(h, st)
	}
}

// queueRecord hands the record of st, which reached serving at at, to the
// history writer, or drops it when the writer is behind. A startup that
// was not seen from its start (bringup attached mid-way, spans out of
// order) is not a measurement and is not recorded.
func (f *Fleet) queueRecord(h *hostFold, st startup.Startup, at time.Time) {
	if !wholeStartup(st.Spans) || !at.After(st.StartedAt) {
		return
	}
	r := history.Record{Time: at, Host: h.state.Name, Unit: h.state.Unit, Engine: st.Engine,
		Modes: kernels.ModeMap(h.state.Modes), InvocationID: st.InvocationID, Spans: st.Spans,
		Total: at.Sub(st.StartedAt), WeightMemMiB: h.weightMem}
	if r.WeightMemMiB == 0 && len(h.state.GPU) > 0 {
		r.WeightMemMiB = gpu.MemPerGPU(h.state.GPU[len(h.state.GPU)-1])
	}
	f.queue(r)
}

// wholeStartup reports whether spans run from starting through weights to
// serving, each beginning where the one before ended.
func wholeStartup(spans []startup.Span) bool {
	if len(spans) < 2 || spans[0].Phase != startup.Starting || spans[len(spans)-1].Phase != startup.Serving {
		return false
	}
	weights := false
	for i, sp := range spans {
		if sp.Inferred {
			return false
		}
		weights = weights || sp.Phase == startup.Weights
		if i > 0 && sp.Start.Before(spans[i-1].Start) {
			return false
		}
	}
	return weights
}

// memProgress is weight loading estimated from GPU memory: only in the
// weights phase (stuck in it included: a quiet tqdm bar is what trips the
// stuck threshold), while the logs give no count, with a reference level
// from history and a sample to compare. Done and Total are GiB over all
// GPUs.
func memProgress(st startup.Startup, exp history.Expectation, samples []event.GPU) startup.Progress {
	inWeights := st.Phase == startup.Weights || st.Phase == startup.Stuck && st.StuckIn == startup.Weights
	if !inWeights || st.Progress.Known() || exp.WeightMemMiB <= 0 || len(samples) == 0 {
		return startup.Progress{}
	}
	done, total := gpu.WeightProgress(samples[len(samples)-1], exp.WeightMemMiB)
	if total <= 0 {
		return startup.Progress{}
	}
	return startup.Progress{Done: done / 1024, Total: max(1, total/1024), Label: "GiB est."}
}

// Reconnecter is a driver whose connection can stop on a failure that is
// never retried on its own (a host key refused, authentication failed) and
// wait for the person to say the cause is fixed. *live.Host is one.
type Reconnecter interface {
	// Retry dials again now and reports whether the connection was
	// stopped that way; one that is up or retrying by itself is left alone.
	Retry() bool
}

// ErrNotStopped is Reconnect's answer for a host whose connection is not
// waiting for the person: it is up, or retrying on its own.
var ErrNotStopped = errors.New("the connection is not stopped (it is up or reconnecting on its own)")

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
	r, ok := f.specs[i].Driver.(Reconnecter)
	if !ok {
		return fmt.Errorf("reconnect %s: its connection cannot be restarted (a simulated or replayed host)", host)
	}
	if !r.Retry() {
		return fmt.Errorf("reconnect %s: %w", host, ErrNotStopped)
	}
	return nil
}
