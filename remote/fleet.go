package remote

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"bringup/kernels"
	"bringup/remote/event"
	"bringup/remote/sanitize"
	"bringup/remote/startup"
)

// ErrReadOnly is returned for every changing action in read-only mode.
var ErrReadOnly = errors.New("read-only mode: actions that change hosts are disabled")

// Clock tells the fleet the time. Simulated fleets pass their scaled clock
// so that stuck detection runs in host time.
type Clock interface{ Now() time.Time }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// HostSpec is one host the fleet watches.
type HostSpec struct {
	Driver Driver
	Unit   string
	Engine string // "sglang", "vllm", "auto"
}

// Options configures a Fleet.
type Options struct {
	Kernels  kernels.Catalog
	ReadOnly bool
	// Clock is the host-time clock for stuck detection (default: real time).
	Clock Clock
	// Flush is how often batches are handed out (default 50 ms).
	Flush time.Duration
	// MaxPendingLines bounds the journal lines held for a slow consumer;
	// older ones are dropped and counted (default 20 000).
	MaxPendingLines int
	// GPUHistory is how many GPU samples each host keeps (default 120).
	GPUHistory int
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
}

// HostChange is a startup change on one host.
type HostChange struct {
	Host string `json:"host"`
	// Seen is when the event that caused the change was received here.
	Seen time.Time `json:"seen"`
	startup.Change
}

// Batch is what the fleet hands out each flush: the snapshot of every host,
// and what happened since the last batch.
type Batch struct {
	Hosts   []HostState   `json:"hosts"`
	Events  []event.Event `json:"events,omitempty"`
	Changes []HostChange  `json:"changes,omitempty"`
	// Dropped counts events dropped from this batch (journal lines only;
	// state changes are never dropped).
	Dropped int `json:"dropped,omitempty"`
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
	mu     sync.Mutex // guards nextID, actx and lastAction
	// lastAction[i] is closed when host i's latest action ends; the next
	// action waits for it, so one host's actions run in the order given
	// (a mode change, then the restart that picks it up).
	lastAction map[int]chan struct{}
	actx       context.Context
	actions    sync.WaitGroup
}

// NewFleet returns a fleet over the given hosts. Host names must be unique.
func NewFleet(hosts []HostSpec, opts Options) (*Fleet, error) {
	if opts.Clock == nil {
		opts.Clock = realClock{}
	}
	if opts.Flush <= 0 {
		opts.Flush = 50 * time.Millisecond
	}
	if opts.MaxPendingLines <= 0 {
		opts.MaxPendingLines = 20000
	}
	if opts.GPUHistory <= 0 {
		opts.GPUHistory = 120
	}
	f := &Fleet{
		opts:   opts,
		specs:  hosts,
		byName: map[string]int{},
		in:     make(chan event.Event, 1024),
		out:    make(chan Batch),
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

// Kernels is the kernel catalog the fleet was built with.
func (f *Fleet) Kernels() kernels.Catalog { return f.opts.Kernels }

// ReadOnly reports whether changing actions are refused.
func (f *Fleet) ReadOnly() bool { return f.opts.ReadOnly }

// Run starts every host's driver and folds their events until ctx ends.
// It returns after every driver and action it started has stopped.
func (f *Fleet) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f.mu.Lock()
	f.actx = ctx
	f.mu.Unlock()

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
	f.fold(ctx)
	drivers.Wait()
	f.actions.Wait()
	close(f.out)
	return nil
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
// back as KindAction events. Changing actions are refused in read-only mode.
func (f *Fleet) Do(host string, a Action) (int, error) {
	i, ok := f.byName[host]
	if !ok {
		return 0, fmt.Errorf("unknown host %q", host)
	}
	if f.opts.ReadOnly {
		return 0, fmt.Errorf("%s %s on %s: %w", a.Kind, a, host, ErrReadOnly)
	}
	f.mu.Lock()
	ctx := f.actx
	f.nextID++
	id := f.nextID
	if f.lastAction == nil {
		f.lastAction = map[int]chan struct{}{}
	}
	prev, done := f.lastAction[i], make(chan struct{})
	f.lastAction[i] = done
	f.mu.Unlock()
	if ctx == nil || ctx.Err() != nil {
		return 0, fmt.Errorf("%s on %s: fleet is not running", a, host)
	}
	emit := f.emitter(ctx)
	d := f.specs[i].Driver
	f.actions.Add(1)
	go func() {
		defer f.actions.Done()
		defer close(done)
		if prev != nil {
			select {
			case <-prev:
			case <-ctx.Done():
				return
			}
		}
		report := func(stage event.ActionStage, err error) {
			r := &event.ActionResult{ID: id, Name: a.String(), Stage: stage}
			if err != nil {
				r.Err = err.Error()
			}
			emit(event.Event{Host: host, Kind: event.KindAction, Time: f.opts.Clock.Now(), Action: r})
		}
		report(event.ActionStarted, nil)
		// Progress a driver reports belongs to this action: give it the id
		// the driver does not know.
		progress := func(ev event.Event) bool {
			if ev.Kind == event.KindAction && ev.Action != nil && ev.Action.ID == 0 {
				r := *ev.Action
				r.ID = id
				if r.Name == "" {
					r.Name = a.String()
				}
				ev.Action = &r
			}
			return emit(ev)
		}
		if err := d.Do(ctx, a, progress); err != nil {
			report(event.ActionFailed, err)
			return
		}
		report(event.ActionDone, nil)
	}()
	return id, nil
}

// hostFold is the fold loop's state for one host.
type hostFold struct {
	tracker *startup.Tracker
	state   HostState
}

// fold is the single goroutine that owns all host state. It batches what
// arrives and hands a batch out every flush, holding on to it (and adding
// to it) while the consumer is slow.
func (f *Fleet) fold(ctx context.Context) {
	hosts := make([]*hostFold, len(f.specs))
	for i, h := range f.specs {
		hosts[i] = &hostFold{
			tracker: startup.NewTracker(startup.Options{Engine: h.Engine, Kernels: f.opts.Kernels}),
			state: HostState{Name: h.Driver.Name(), Unit: h.Unit,
				Conn: event.Conn{State: event.ConnConnecting}},
		}
		hosts[i].state.Startup = hosts[i].tracker.State()
	}
	ticker := time.NewTicker(f.opts.Flush)
	defer ticker.Stop()

	// pending accumulates until the consumer takes it. Sending is enabled
	// only right after a tick has put a fresh snapshot on it, and disabled
	// again when a new event lands, so a batch's snapshot always includes
	// its events.
	var pending Batch
	dirty := true
	var out chan Batch // nil while sending is off
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-f.in:
			f.apply(hosts, &pending, ev)
			dirty = true
			out = nil
		case <-ticker.C:
			now := f.opts.Clock.Now()
			for _, h := range hosts {
				for _, c := range h.tracker.Tick(now) {
					pending.Changes = append(pending.Changes, HostChange{Host: h.state.Name, Seen: time.Now(), Change: c})
					dirty = true
				}
			}
			if dirty {
				pending.Hosts = snapshot(hosts)
				out = f.out
				dirty = false
			}
		case out <- pending:
			pending = Batch{}
			out = nil
		}
	}
}

func snapshot(hosts []*hostFold) []HostState {
	out := make([]HostState, len(hosts))
	for i, h := range hosts {
		s := h.state
		s.Startup = h.tracker.State()
		s.GPU = append([]event.GPU(nil), h.state.GPU...)
		s.Modes = append([]kernels.ActiveMode(nil), h.state.Modes...)
		if h.state.Action != nil {
			a := *h.state.Action
			s.Action = &a
		}
		out[i] = s
	}
	return out
}

// apply sanitises ev (the one place remote text enters), folds it into its
// host and records it in the pending batch.
func (f *Fleet) apply(hosts []*hostFold, pending *Batch, ev event.Event) {
	i, ok := f.byName[ev.Host]
	if !ok {
		return
	}
	h := hosts[i]
	if ev.Seen.IsZero() {
		ev.Seen = time.Now()
	}
	sanitizeEvent(&ev)
	switch ev.Kind {
	case event.KindUnit:
		if ev.Unit != nil {
			h.state.UnitState = *ev.Unit
			h.state.Modes = f.opts.Kernels.ModesIn(ev.Unit.Environment)
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
			h.state.GPU = append(h.state.GPU, *ev.GPU)
			if n := len(h.state.GPU) - f.opts.GPUHistory; n > 0 {
				h.state.GPU = append(h.state.GPU[:0], h.state.GPU[n:]...)
			}
		}
	case event.KindAction:
		if ev.Action != nil {
			a := *ev.Action
			h.state.Action = &a
		}
	}
	for _, c := range h.tracker.Apply(ev) {
		pending.Changes = append(pending.Changes, HostChange{Host: h.state.Name, Seen: ev.Seen, Change: c})
	}
	if ev.Kind == event.KindGPU {
		return // kept in the snapshot; no need to repeat in the event list
	}
	pending.Events = append(pending.Events, ev)
	if n := len(pending.Events) - f.opts.MaxPendingLines; n > 0 {
		pending.Events = dropJournal(pending.Events, n, func(host string) {
			pending.Dropped++
			if j, ok := f.byName[host]; ok {
				hosts[j].state.Dropped++
			}
		})
	}
}

// dropJournal removes the n oldest journal events (never state changes),
// telling counted which host lost each.
func dropJournal(evs []event.Event, n int, counted func(host string)) []event.Event {
	out := evs[:0]
	for _, ev := range evs {
		if n > 0 && ev.Kind == event.KindJournal {
			n--
			counted(ev.Host)
			continue
		}
		out = append(out, ev)
	}
	return out
}

// sanitizeEvent passes every remote string of ev through the sanitiser.
func sanitizeEvent(ev *event.Event) {
	if j := ev.Journal; j != nil {
		var cut bool
		j.Message, cut = sanitize.Line(j.Message, sanitize.DefaultMax)
		j.Truncated = j.Truncated || cut
		for k, v := range j.Fields {
			j.Fields[k] = sanitize.String(v)
		}
	}
	if u := ev.Unit; u != nil {
		u.ActiveState = sanitize.String(u.ActiveState)
		u.SubState = sanitize.String(u.SubState)
		u.Result = sanitize.String(u.Result)
		u.ExecStart = sanitize.String(u.ExecStart)
		for i, v := range u.Environment {
			u.Environment[i] = sanitize.String(v)
		}
		for i, v := range u.DropInPaths {
			u.DropInPaths[i] = sanitize.String(v)
		}
	}
	if c := ev.Conn; c != nil {
		c.Err = sanitize.String(c.Err)
	}
	if p := ev.Probe; p != nil {
		p.Err = sanitize.String(p.Err)
	}
	if a := ev.Action; a != nil {
		a.Detail = sanitize.String(a.Detail)
		a.Err = sanitize.String(a.Err)
	}
	if g := ev.Gap; g != nil {
		g.Message = sanitize.String(g.Message)
	}
	if g := ev.GPU; g != nil {
		for i := range g.Devices {
			g.Devices[i].Name = sanitize.String(g.Devices[i].Name)
		}
	}
}
