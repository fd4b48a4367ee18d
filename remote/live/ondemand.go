package live

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/gpu"
	"github.com/bringup-dev/bringup/remote/probe"
	"github.com/bringup-dev/bringup/remote/systemd"
)

// DefaultIdle is how long an on-demand connection stays open once nothing
// needs it: a view closed and opened again, or a second action soon after
// the first, reuse it instead of paying the handshake again.
const DefaultIdle = 20 * time.Second

// unitReadTimeout bounds one read of the unit's properties.
const unitReadTimeout = 30 * time.Second

// OnDemand is the SSH side of a host otherwise followed another way (a log
// store): it opens the host's one SSH connection only while something
// needs it — an action, a read of the unit's properties, or the host's
// view being open (then it runs the probe and the GPU sampler on it, the
// same remote/probe and remote/gpu code a live host runs) — and closes it
// once nothing has for the idle time. A fleet read from the store thus
// holds no SSH connection to a host nobody looks at or acts on.
type OnDemand struct {
	opts Options
	idle time.Duration
	// readTimeout bounds one read of the unit's properties (it holds the
	// connection open meanwhile, a host that does not answer included).
	readTimeout time.Duration
	// wake holds one wake-up for Run's loop (buffered 1): a change of
	// demand that it must act on.
	wake chan struct{}

	mu       sync.Mutex // guards everything below
	d        demand
	sess     *session
	readWant bool // a read of the unit's properties is asked for
	running  bool // Run's loop is on: it samples and closes idle connections
}

// session is one open connection and what runs on it.
type session struct {
	h      *Host
	cancel context.CancelFunc
	wg     sync.WaitGroup // the connection's Run and the samplers
	// unsample stops the probe and the sampler; nil while they are off.
	unsample context.CancelFunc
	sampled  chan struct{} // closed when they have stopped
}

// NewOnDemand returns the SSH side of one host. It connects only when
// something needs the connection; idle (0: DefaultIdle) is how long an
// unused connection is kept while Run runs.
func NewOnDemand(opts Options, idle time.Duration) *OnDemand {
	if idle <= 0 {
		idle = DefaultIdle
	}
	return &OnDemand{opts: opts, idle: idle, readTimeout: unitReadTimeout, wake: make(chan struct{}, 1)}
}

// Name is the host's name.
func (o *OnDemand) Name() string { return o.opts.Name }

// demand is what the on-demand connection is wanted for at one moment.
type demand struct {
	viewed   bool      // the host's view is open: probe and GPU samples
	users    int       // actions and property reads under way
	open     bool      // a connection is open
	sampling bool      // the probe and the GPU sampler run on it
	idleFrom time.Time // since when nothing has needed it; zero while something does
}

// needed says whether anything wants the connection now.
func (d demand) needed() bool { return d.viewed || d.users > 0 }

// step is what Run's loop does about a demand.
type step struct {
	open, close      bool
	sample, unsample bool
	wakeAt           time.Time // when to decide again (the idle close); zero: on the next change
	markIdle         bool      // set idleFrom to now: nothing has needed the connection since now
}

// decide is the on-demand connection's policy: open it while something
// needs it, sample while the view is open, and close it once nothing has
// needed it for idle.
func decide(d demand, now time.Time, idle time.Duration) step {
	var s step
	s.open = d.needed() && !d.open
	s.sample = d.viewed && !d.sampling
	s.unsample = !d.viewed && d.sampling
	if d.needed() || !d.open {
		return s
	}
	if d.idleFrom.IsZero() {
		s.markIdle = true
		s.wakeAt = now.Add(idle)
		return s
	}
	if !now.Before(d.idleFrom.Add(idle)) {
		s.close = true
		return s
	}
	s.wakeAt = d.idleFrom.Add(idle)
	return s
}

// poke wakes Run's loop without blocking.
func (o *OnDemand) poke() {
	select {
	case o.wake <- struct{}{}:
	default: // a wake-up is already waiting
	}
}

// SetPace opens the connection for the probe and the GPU sampler while
// the host's view is open, and reads the unit's properties (its kernel
// modes) once for each opening. It never blocks (the fleet calls it from
// its loop and the console's Update).
func (o *OnDemand) SetPace(p remote.Pace) {
	o.mu.Lock()
	if p.Viewed != o.d.viewed {
		o.d.viewed = p.Viewed
		if p.Viewed {
			o.readWant = true
		}
	}
	o.mu.Unlock()
	o.poke()
}

// An on-demand host opens its connection for an open view.
var _ remote.Pacer = (*OnDemand)(nil)

// ReadUnit asks for one read of the unit's properties over SSH
// (Environment: the kernel modes; ExecStart, drop-ins), reported by Run
// as a unit event. It never blocks; asks before the read starts are one.
func (o *OnDemand) ReadUnit() {
	o.mu.Lock()
	o.readWant = true
	o.mu.Unlock()
	o.poke()
}

// Run carries out the demand until ctx ends: it opens and closes the
// connection, runs the samplers while the view is open and the unit reads
// asked for, all reported through emit. It returns after everything it
// started has stopped; a connection an action still uses closes when
// that action ends.
func (o *OnDemand) Run(ctx context.Context, emit remote.Emit) error {
	o.mu.Lock()
	o.running = true
	o.mu.Unlock()
	var reads sync.WaitGroup
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wakeAt, read := o.apply(ctx, emit)
		if read {
			reads.Go(func() { o.readUnit(ctx, emit) })
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		if !wakeAt.IsZero() {
			timer.Reset(max(time.Until(wakeAt), 0))
		}
		select {
		case <-ctx.Done():
			reads.Wait()
			o.mu.Lock()
			o.running = false
			o.d.viewed = false
			var last *session
			if o.sess != nil {
				o.stopSamplingLocked()
				if o.d.users == 0 {
					last = o.takeLocked()
				}
			}
			o.mu.Unlock()
			if last != nil {
				last.close()
			}
			return nil
		case <-o.wake:
		case <-timer.C:
		}
	}
}

// apply takes one step of decide and reports when to decide again and
// whether to read the unit now.
func (o *OnDemand) apply(ctx context.Context, emit remote.Emit) (time.Time, bool) {
	o.mu.Lock()
	now := time.Now()
	s := decide(o.d, now, o.idle)
	if s.markIdle {
		o.d.idleFrom = now
	}
	if s.open {
		o.openLocked()
	}
	if s.sample {
		o.startSamplingLocked(ctx, emit)
	}
	var stopped chan struct{}
	if s.unsample {
		stopped = o.stopSamplingLocked()
	}
	var closing *session
	if s.close {
		closing = o.takeLocked()
	}
	read := o.readWant
	o.readWant = false
	o.mu.Unlock()
	if stopped != nil {
		<-stopped
	}
	if closing != nil {
		closing.close()
	}
	return s.wakeAt, read
}

// openLocked opens the connection (its Run; dialing starts at once).
func (o *OnDemand) openLocked() {
	h := New(o.opts)
	// Full rate: an on-demand host samples only while its view is open.
	h.SetPace(remote.Pace{Viewed: true})
	cctx, cancel := context.WithCancel(context.Background())
	s := &session{h: h, cancel: cancel}
	s.wg.Go(func() { _ = h.conn.Run(cctx) })
	o.sess = s
	o.d.open = true
}

// takeLocked detaches the session for close.
func (o *OnDemand) takeLocked() *session {
	s := o.sess
	o.sess = nil
	o.d.open, o.d.sampling, o.d.idleFrom = false, false, time.Time{}
	return s
}

// close ends the connection and waits for everything on it.
func (s *session) close() {
	if s.unsample != nil {
		s.unsample()
	}
	s.cancel()
	s.wg.Wait()
}

// startSamplingLocked runs the probe and the GPU sampler on the session
// until the view closes or ctx ends.
func (o *OnDemand) startSamplingLocked(ctx context.Context, emit remote.Emit) {
	s := o.sess
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	s.unsample, s.sampled = cancel, done
	o.d.sampling = true
	h := s.h
	var wg sync.WaitGroup
	wg.Go(func() {
		// Client, not Await: a refused key is said once, not waited on.
		if _, err := h.conn.Client(sctx); err != nil {
			if sctx.Err() == nil {
				h.note(emit, fmt.Sprintf("no probe or GPU samples for the open view: %v", err))
			}
			return
		}
		_ = probe.RunPaced(sctx, h.conn, h.opts.Probe, h.opts.Name, h.opts.ProbeInterval, h.pace.probePacing(), emit)
	})
	if !h.opts.NoGPU {
		wg.Go(func() {
			if _, err := h.conn.Client(sctx); err != nil {
				return
			}
			if err := gpu.RunPaced(sctx, h.conn, h.opts.Name, h.pace.gpuPacing(h.opts.GPUInterval), emit); errors.Is(err, gpu.ErrNoNvidiaSMI) {
				h.note(emit, "no nvidia-smi on the host: no GPU panel")
			}
		})
	}
	s.wg.Go(func() {
		defer close(done)
		wg.Wait()
		// Said once the probe has stopped, so that no answer follows it:
		// the phase engine stops waiting for probes (a later run serves
		// on its unit and ready line, as before the view opened).
		now, path := h.opts.Now(), h.opts.Probe.Path
		if path == "" {
			path = probe.DefaultPath
		}
		emit(event.Event{Host: h.opts.Name, Kind: event.KindProbe, Time: now, Seen: now, Probe: &event.Probe{
			Path: path, Stopped: true, Err: "probe off: the host view is closed"}})
	})
}

// stopSamplingLocked stops the samplers; the returned channel (nil when
// none ran) closes once they have stopped.
func (o *OnDemand) stopSamplingLocked() chan struct{} {
	s := o.sess
	o.d.sampling = false
	if s == nil || s.unsample == nil {
		return nil
	}
	s.unsample()
	done := s.sampled
	s.unsample, s.sampled = nil, nil
	return done
}

// acquire opens the connection if it is not open and holds it; release
// lets it go (and closes it at once when Run is not there to close it
// later).
func (o *OnDemand) acquire() (*Host, func()) {
	o.mu.Lock()
	if o.sess == nil {
		o.openLocked()
	}
	o.d.users++
	o.d.idleFrom = time.Time{}
	h := o.sess.h
	o.mu.Unlock()
	return h, func() {
		o.mu.Lock()
		o.d.users--
		var closing *session
		if !o.running && !o.d.needed() && o.sess != nil {
			closing = o.takeLocked()
		}
		o.mu.Unlock()
		if closing != nil {
			closing.close()
		}
		o.poke()
	}
}

// readUnit reads the unit's properties once over SSH (the unit watch's
// first reading: D-Bus, else systemd-stdio-bridge, else systemctl show)
// and reports them as a unit event.
func (o *OnDemand) readUnit(ctx context.Context, emit remote.Emit) {
	h, release := o.acquire()
	defer release()
	ctx, cancel := context.WithTimeout(ctx, o.readTimeout)
	defer cancel()
	if _, err := h.conn.Client(ctx); err != nil {
		if !errors.Is(ctx.Err(), context.Canceled) {
			h.note(emit, fmt.Sprintf("unit properties (kernel modes) not read over SSH: %v", err))
		}
		return
	}
	opts := systemd.WatchOptions{Host: o.opts.Name, Unit: h.opts.Unit, Path: o.opts.WatchPath, Now: h.opts.Now}
	err := systemd.Watch(ctx, h.conn, opts, func(ev event.Event) bool {
		emit(ev)
		return false // one reading
	})
	if err != nil && !errors.Is(ctx.Err(), context.Canceled) {
		h.note(emit, fmt.Sprintf("unit properties (kernel modes) not read over SSH: %v", err))
	}
}

// changesEnvironment says whether an action of kind k may change the
// unit's Environment (its spec's Reloads: systemd re-read the unit): the
// properties are read again after them, so that the table's mode and the
// next run's follow.
func changesEnvironment(k remote.ActionKind) bool {
	s, _ := k.Spec()
	return s.Reloads
}

// Do performs a over the host's on-demand connection (opening it if it is
// not open) as a live host does. After a mode change the unit's
// properties are read again. A mode change's one-key undo is kept only
// while the connection stays open.
func (o *OnDemand) Do(ctx context.Context, a remote.Action, emit remote.Emit) error {
	h, release := o.acquire()
	defer release()
	// The action's commands run on the connection as it is (they do not
	// wait for one): connect first, failing at once on a refused key.
	if _, err := h.conn.Client(ctx); err != nil {
		return fmt.Errorf("%s: %s over SSH: %w", o.opts.Name, a, err)
	}
	err := h.Do(ctx, a, emit)
	if changesEnvironment(a.Kind) {
		o.ReadUnit()
	}
	return err
}
