// Package live is the driver for a real host: one SSH connection that
// carries the journal follow, the unit-state watch, the readiness probe
// and the GPU sampler, all emitting events for the fleet, and the actions
// run over the same connection.
package live

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/dropin"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/gpu"
	"github.com/bringup-dev/bringup/remote/hostclock"
	"github.com/bringup-dev/bringup/remote/journal"
	"github.com/bringup-dev/bringup/remote/probe"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/systemd"
	"github.com/bringup-dev/bringup/remote/unitname"
)

// Options configure a live host.
type Options struct {
	// Host is the host's identity: its name as the user wrote it, the
	// watched unit (e.g. sglang.service), and the engine ("sglang", "vllm"
	// or "auto": what the preflight assumes).
	remote.Host
	// SSH is the resolved connection configuration; Dial carries the
	// signers loaded before the TUI started.
	SSH  sshx.Config
	Dial sshx.DialOptions
	// Probe says what readiness probe to run; Probe.Addr "" means
	// 127.0.0.1:30000 as seen from the host.
	Probe         probe.Options
	ProbeInterval time.Duration
	// NoGPU turns the nvidia-smi sampler off.
	NoGPU       bool
	GPUInterval time.Duration
	// Tail is how many earlier journal lines to show first.
	Tail int
	// FromStart, when positive, starts the journal at the current run's
	// first line instead (reaching back at most this far), so that a run
	// already under way shows its whole startup.
	FromStart time.Duration
	// WatchPath forces how unit state is read ("" tries D-Bus, then
	// systemd-stdio-bridge, then systemctl polling).
	WatchPath string
	// Kernels is the catalog actions check modes against and deploy from
	// (LocalDir resolved to an absolute path by the caller).
	Kernels kernels.Catalog
	// TableFirst, shared by the fleet's hosts (Specs sets it), holds
	// each host's journal follow, probe, clock and GPU sampler until every
	// host has its state; nil: no wait.
	TableFirst *TableFirst
	// Now stamps local receipt times; nil means time.Now.
	Now func() time.Time
	// AnswerWithin bounds how long the host may take to answer a channel
	// open or an exec once logged in (0: sshx.DefaultAnswerWithin).
	AnswerWithin time.Duration
}

// Host is one real host. Create it with New; the fleet calls Run and Do.
type Host struct {
	opts Options
	conn *sshx.Conn

	// hostKeyRisk flags the weak host key settings of opts.SSH, carried on
	// every connection event for the console's warning.
	hostKeyRisk event.HostKeyRisk

	mu       sync.Mutex // guards pathNote, emit and changes
	pathNote string
	emit     remote.Emit // Run's; nil before Run
	// changes holds, per kernel, the last mode change made in this
	// session: what one-key undo puts back.
	changes map[string]dropin.Change

	// pace is the fleet's latest Pace for the host, read by the probe and
	// the GPU sampler.
	pace *pacer

	// arrivedOnce counts the host in at opts.TableFirst once.
	arrivedOnce sync.Once

	// reconnected is signalled (never blocking) each time the connection
	// comes up: the host's clock is measured again on the new one.
	reconnected chan struct{}
}

// arrive tells the fleet's TableFirst that this host has its state (or
// its first dial failed, or it waited firstStateWait for the state).
func (h *Host) arrive() { h.arrivedOnce.Do(h.opts.TableFirst.arrived) }

// New returns the driver for one host. It does not connect until Run.
func New(opts Options) *Host {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Unit == "" {
		opts.Unit = "sglang.service"
	}
	h := &Host{opts: opts, pace: newPacer(), reconnected: make(chan struct{}, 1)}
	for _, r := range opts.SSH.HostKeyRisks() {
		switch r.Setting {
		case sshx.SettingStrictNo:
			h.hostKeyRisk |= event.RiskStrictNo
		case sshx.SettingKnownHostsNull:
			h.hostKeyRisk |= event.RiskKnownHostsNull
		}
	}
	dial := opts.Dial
	dial.OnNewHostKey = func(k sshx.LearnedHostKey) {
		if opts.Dial.OnNewHostKey != nil {
			opts.Dial.OnNewHostKey(k)
		}
		if emit := h.emitter(); emit != nil {
			h.noteAs(emit, event.GapHostKey, k.String())
		}
	}
	h.conn = sshx.NewConn(opts.SSH, sshx.ConnOptions{Dial: dial, OnState: h.onState, AnswerWithin: opts.AnswerWithin})
	return h
}

// emitter is Run's emit, nil before Run.
func (h *Host) emitter() remote.Emit {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.emit
}

// onState reports connection changes as events.
func (h *Host) onState(st sshx.State, err error, retry time.Time) {
	if st == sshx.StateDown || st == sshx.StateUnreachable {
		h.arrive() // no state to wait for from here for now
	}
	if st == sshx.StateUp {
		select {
		case h.reconnected <- struct{}{}:
		default: // one pending is enough
		}
	}
	emit := h.emitter()
	if emit == nil {
		return
	}
	c := &event.Conn{State: connState(st), Retry: retry, HostKeyRisk: h.hostKeyRisk}
	if err != nil {
		c.Err = err.Error()
	}
	now := h.opts.Now()
	emit(event.Event{Host: h.opts.Name, Kind: event.KindConn, Time: now, Seen: now, Conn: c})
}

// Retry dials the host again after a failure that is never retried on its
// own (host key refused, authentication failed), once the person has
// fixed the cause. It reports whether the connection was stopped that way.
func (h *Host) Retry() bool { return h.conn.Retry() }

// A live host's connection can be restarted from the console.
var _ remote.Reconnecter = (*Host)(nil)

// Name is the host's name.
func (h *Host) Name() string { return h.opts.Name }

// Run connects and streams the host's events until ctx ends. The
// connection reconnects on its own with backoff; each stream resumes on
// the new connection (the journal from its last cursor).
func (h *Host) Run(ctx context.Context, emit remote.Emit) error {
	// A name that is not exactly one unit is refused before any
	// connection, for good: no retry mends it (the fleet shows the error).
	if err := unitname.Check(h.opts.Unit); err != nil {
		return fmt.Errorf("%s: unit: %w", h.opts.Name, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h.mu.Lock()
	h.emit = emit
	h.mu.Unlock()

	var wg sync.WaitGroup
	run := func(f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f()
		}()
	}
	run(func() { _ = h.conn.Run(ctx) })
	stateRead := make(chan struct{})
	var (
		stateOnce sync.Once
		started   time.Time // the first state's ExecMainStart, written before stateRead closes
	)
	run(func() {
		h.watchUnit(ctx, func(ev event.Event) bool {
			if ev.Kind == event.KindUnit && ev.Unit != nil {
				stateOnce.Do(func() {
					started = ev.Unit.ExecMainStart
					close(stateRead)
				})
			}
			return emit(ev)
		})
	})
	// The journal, the probe and the sampler start once the host is first
	// reached and its unit's state read, and the fleet's other hosts have
	// theirs (see afterFirstState and TableFirst): a follow's start is two
	// journalctl and a shell on the host, the CPU the hosts still being
	// reached need. A probe that only finds the connection down says
	// nothing and would slow the probe's own schedule down. The run's
	// lines then come after its state; a failure seen before the host's
	// first line waits longer to settle (startup.FirstLineExtra).
	afterState := func() bool { return h.afterFirstState(ctx, stateRead) }
	run(func() {
		if !afterState() {
			return
		}
		// The run's start as the state said it: the follow needs no
		// shell and systemctl on the host to find it.
		var from time.Time
		select {
		case <-stateRead:
			from = started
		default: // no state within firstStateWait: the follow asks
		}
		_ = journal.Follow(ctx, h.conn, journal.Options{Host: h.opts.Name, Unit: h.opts.Unit, Tail: h.opts.Tail,
			FromStart: h.opts.FromStart, Started: from, Now: h.opts.Now}, emit)
	})
	run(func() {
		if !afterState() {
			return
		}
		_ = probe.RunPaced(ctx, h.conn, h.opts.Probe, h.opts.Name, h.opts.ProbeInterval, h.pace.probePacing(), emit)
	})
	run(func() {
		if !afterState() {
			return
		}
		h.measureClock(ctx, emit)
	})
	if !h.opts.NoGPU {
		run(func() {
			if !afterState() {
				return
			}
			err := gpu.RunPaced(ctx, h.conn, h.opts.Name, h.pace.gpuPacing(h.opts.GPUInterval), emit)
			if errors.Is(err, gpu.ErrNoNvidiaSMI) {
				h.note(emit, "no nvidia-smi on the host: no GPU panel")
			}
		})
	}
	wg.Wait()
	return nil
}

// firstStateWait bounds how long, once connected, the probe and sampler
// wait for the unit's first state (afterFirstState): a watch that cannot
// read it (no D-Bus, no systemctl) must not keep them from starting.
const firstStateWait = 5 * time.Second

// afterFirstState waits until the host is first reached and its unit's
// state read (stateRead closed), or firstStateWait after the connection;
// then, with a TableFirst, until the fleet's other hosts are as far, at
// most TableFirstWait more. It reports false if ctx ended first. The
// unit's state is what the fleet table shows first, and it costs the
// host one D-Bus call; the GPU sampler starts a process there, the probe
// a connection to the service (see TableFirst).
func (h *Host) afterFirstState(ctx context.Context, stateRead <-chan struct{}) bool {
	if _, err := h.conn.Await(ctx); err != nil {
		return false
	}
	t := time.NewTimer(firstStateWait)
	defer t.Stop()
	select {
	case <-stateRead:
	case <-t.C:
	case <-ctx.Done():
		return false
	}
	h.arrive()
	return h.opts.TableFirst.wait(ctx, TableFirstWait)
}

// measureClock measures the host's clock once per connection (the first
// once the table has its states, each later one as it comes up) and
// emits it: one date round trip on the connection the streams use. A
// host whose date cannot say nanoseconds keeps no offset, which the
// deployment verdict reads as a clock that agrees.
func (h *Host) measureClock(ctx context.Context, emit remote.Emit) {
	var measured uint64
	for {
		if _, err := h.conn.Await(ctx); err != nil {
			return
		}
		if gen := h.conn.Generation(); gen != measured {
			c, err := h.clockOnce(ctx)
			if err == nil && !emit(event.Event{Host: h.opts.Name, Kind: event.KindClock, Time: h.opts.Now(), Seen: h.opts.Now(), Clock: &c}) {
				return
			}
			measured = gen
		}
		select {
		case <-ctx.Done():
			return
		case <-h.reconnected:
		}
	}
}

// clockOnce is one round trip of hostclock.Command.
func (h *Host) clockOnce(ctx context.Context) (event.Clock, error) {
	ctx, cancel := context.WithTimeout(ctx, clockWait)
	defer cancel()
	sent := time.Now()
	out, _, code, err := h.conn.Exec(ctx, hostclock.Command)
	received := time.Now()
	switch {
	case err != nil:
		return event.Clock{}, fmt.Errorf("%s: clock: %w", h.opts.Name, err)
	case code != 0:
		return event.Clock{}, fmt.Errorf("%s: clock: %s exited %d", h.opts.Name, hostclock.Command, code)
	}
	at, err := hostclock.Parse(string(out))
	if err != nil {
		return event.Clock{}, fmt.Errorf("%s: clock: %w", h.opts.Name, err)
	}
	return hostclock.Measure(sent, at, received)
}

// clockWait bounds one clock round trip: a slower answer measures
// nothing worth having.
const clockWait = 10 * time.Second

// watchUnit keeps the unit watch running across reconnects: Watch
// returns when the connection drops, and starts over (re-reading every
// property) once it is back.
func (h *Host) watchUnit(ctx context.Context, emit remote.Emit) {
	opts := systemd.WatchOptions{
		Host: h.opts.Name, Unit: h.opts.Unit, Path: h.opts.WatchPath, Now: h.opts.Now,
		// Relaxed when the probe is: steady, its view closed.
		Relaxed: func() bool { return probeRelaxed(h.pace.get()) },
		OnPath: func(path string, why error) {
			if why != nil {
				h.note(emit, fmt.Sprintf("unit state read through %s (%v)", path, why))
			}
		},
	}
	for ctx.Err() == nil {
		// Await, not Client: after a failure that waits for Retry, the
		// watch must start again once the person has fixed it.
		if _, err := h.conn.Await(ctx); err != nil {
			return
		}
		gen := h.conn.Generation()
		err := systemd.Watch(ctx, h.conn, opts, emit)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, unitname.ErrInvalid) {
			h.note(emit, "unit watch: "+err.Error())
			return // permanent: the same name would be refused again
		}
		if err != nil && h.conn.Generation() == gen {
			// Same connection, yet the watch failed: not a drop. Say so
			// and retry slowly rather than spin.
			h.note(emit, "unit watch: "+err.Error())
			select {
			case <-ctx.Done():
				return
			case <-time.After(5 * time.Second):
			}
		}
	}
}

// note emits a visible line in the host's log, once per distinct text.
func (h *Host) note(emit remote.Emit, msg string) { h.noteAs(emit, "note", msg) }

// noteAs emits a note with its own reason (event.GapHostKey), which
// readers that show only some notes (bringup watch) pick out.
func (h *Host) noteAs(emit remote.Emit, reason, msg string) {
	h.mu.Lock()
	dup := h.pathNote == msg
	h.pathNote = msg
	h.mu.Unlock()
	if dup {
		return
	}
	now := h.opts.Now()
	emit(event.Event{Host: h.opts.Name, Kind: event.KindGap, Time: now, Seen: now,
		Gap: &event.Gap{Reason: reason, Message: msg}})
}

func connState(s sshx.State) event.ConnState {
	switch s {
	case sshx.StateUp:
		return event.ConnUp
	case sshx.StateDown:
		return event.ConnDown
	case sshx.StateUnreachable:
		return event.ConnUnreachable
	case sshx.StateConnecting:
	}
	return event.ConnConnecting
}

// DialTCP opens a TCP connection to addr as seen from the host, over the
// host's one SSH connection (the tunnel the readiness probe uses).
func (h *Host) DialTCP(ctx context.Context, addr string) (net.Conn, error) {
	return h.conn.DialTCP(ctx, addr)
}

// ProbeAddr is the service's address as seen from the host.
func (h *Host) ProbeAddr() string {
	if h.opts.Probe.Addr != "" {
		return h.opts.Probe.Addr
	}
	return probe.DefaultAddr
}
