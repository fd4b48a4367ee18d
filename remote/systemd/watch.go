package systemd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/unitname"
)

// Defaults for WatchOptions.
const (
	DefaultReconcile     = time.Minute
	DefaultFullReconcile = 5 * time.Minute
	DefaultPoll          = time.Second
)

// WatchOptions configure Watch.
type WatchOptions struct {
	Host string // the host's name, set on every event
	Unit string // e.g. sglang.service
	// Reconcile is how often the bus paths read NeedDaemonReload, the one
	// property systemd never signals (a unit file edited without a
	// daemon-reload); default DefaultReconcile. It only flags an edit made
	// outside bringup (bringup's own actions reload, which systemd does
	// signal), so a minute late is soon enough; every 5 s it was a D-Bus
	// round trip a host every 5 s on an otherwise quiet fleet, and every
	// 30 s still a tenth of a quiet 256-host console's CPU (measured).
	Reconcile time.Duration
	// FullReconcile is how often they re-read every property, to repair
	// whatever a lost or coalesced signal hid; default
	// DefaultFullReconcile. It is rare because it is the watch's main cost
	// on a quiet fleet: two GetAll calls return some 350 properties to
	// decode (measured: a fifth of the console's CPU at 64 serving hosts
	// when it ran every 5 s; still some 4 calls a second at 256 hosts
	// once a minute). Changes themselves come as signals.
	FullReconcile time.Duration
	// Relaxed, if set, says whether the host is steady and nobody has its
	// view open (remote.Pace): then NeedDaemonReload is read only every
	// relaxedReconcile Reconcile intervals (every 5 min by default), a
	// quiet fleet's last per-minute D-Bus round trip a host.
	Relaxed func() bool
	// Poll is the systemctl path's interval; default DefaultPoll.
	Poll time.Duration
	// Path forces a way of reading ("", "dbus", "stdio-bridge",
	// "systemctl"); "" tries them in that order.
	Path string
	// OnPath, if set, is told the path in use once it works, and why the
	// paths before it did not (nil when the first one worked).
	OnPath func(path string, why error)
	// Now is the clock for Seen (and Time when the host gives none);
	// default time.Now.
	Now func() time.Time
}

// Watch reports the unit's state through emit until ctx ends or emit
// returns false (then it returns nil): once at the start and again on
// every change, identical states deduplicated. An event's Time is the
// host's StateChangeTimestamp when ActiveState or SubState changed (and on
// the first event), and Seen otherwise.
//
// Watch does not reconnect: when the SSH connection or the bus drops it
// returns an error, and the caller calls it again once the connection is
// back (sshx.Conn.Run reconnects; Watch's first event then re-reads
// everything, so nothing is lost but intermediate states).
func Watch(ctx context.Context, d Dialer, o WatchOptions, emit func(event.Event) bool) error {
	if err := unitname.Check(o.Unit); err != nil {
		return fmt.Errorf("%s: watch: %w", o.Host, err)
	}
	if o.Reconcile <= 0 {
		o.Reconcile = DefaultReconcile
	}
	if o.FullReconcile <= 0 {
		o.FullReconcile = DefaultFullReconcile
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	w := &watcher{o: o, emit: emit}
	switch o.Path {
	case PathSystemctl:
		return w.poll(ctx, d, nil)
	case PathDBus, PathStdioBridge, "":
	default:
		return fmt.Errorf("%s: watch: unknown path %q", o.Host, o.Path)
	}
	// No `id -u` first: EXTERNAL authenticates by the socket's peer
	// credentials (the bus asks, godbus answers with an empty DATA), and
	// a shell and a process per host are what a fleet's first table
	// waits on when hundreds of hosts are reached at once.
	const uid = unknownUID
	var err error
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		conn *dbus.Conn
		path = o.Path
		why  error
	)
	if path == "" {
		conn, path, why, err = openBusAuto(bctx, d, o.Host, uid, false)
	} else {
		conn, err = openBus(bctx, d, o.Host, uid, path, false)
	}
	if err != nil {
		if o.Path != "" || ctx.Err() != nil {
			return fmt.Errorf("watch %s: %w", o.Unit, err)
		}
		return w.poll(ctx, d, err)
	}
	defer conn.Close()
	err = w.bus(bctx, conn, path, why)
	if w.started || o.Path != "" || ctx.Err() != nil {
		return err
	}
	// The bus answered but was no use (no systemd on it, access denied):
	// systemctl may still work.
	return w.poll(ctx, d, err)
}

// watcher holds one watch's last emitted state.
type watcher struct {
	o       WatchOptions
	emit    func(event.Event) bool
	started bool // the first event went out
	last    event.Unit
}

// report emits s unless it equals the last state; it returns false when
// the consumer has stopped.
func (w *watcher) report(s snapshot) bool {
	if w.started && sameUnit(s.unit, w.last) {
		return true
	}
	now := w.o.Now()
	at := now
	stateChanged := !w.started || s.unit.ActiveState != w.last.ActiveState || s.unit.SubState != w.last.SubState
	if stateChanged && !s.stateChange.IsZero() {
		at = s.stateChange
	}
	w.started, w.last = true, s.unit
	u := s.unit
	// The consumer may rewrite the slices (sanitising); ours stay intact.
	u.Environment, u.DropInPaths = slices.Clone(u.Environment), slices.Clone(u.DropInPaths)
	return w.emit(event.Event{Host: w.o.Host, Kind: event.KindUnit, Time: at, Seen: now, Unit: &u})
}

// notify tells OnPath which path is in use, once.
func (w *watcher) notify(path string, why error) {
	if w.o.OnPath != nil {
		w.o.OnPath(path, why)
	}
}

// signalBuffer holds signals while emit blocks; godbus delivers out of
// order once a channel is full, so it is generous.
const signalBuffer = 4096

// bus watches the unit over conn: PropertiesChanged on the unit's object
// applied as it arrives, and a full re-read after a daemon-reload and every
// Reconcile.
//
// D-Bus keeps one sender's messages in order, so every signal systemd sent
// before answering a re-read arrives before the answer: those are older
// than what the re-read returned and are dropped (by godbus's receive
// sequence), or they would briefly take the state back.
func (w *watcher) bus(ctx context.Context, conn *dbus.Conn, path string, why error) error {
	o := w.o
	fail := func(step string, err error) error {
		// The bus connection lives on ctx, so a cancel also closes it and
		// either can be seen first: the cancel is the cause.
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%s: watch %s via %s: %s: %w", o.Host, o.Unit, path, step, err)
	}
	sigs := make(chan *dbus.Signal, signalBuffer)
	conn.Signal(sigs)
	defer conn.RemoveSignal(sigs)
	unitPath, props, cutoff, step, err := subscribeUnit(ctx, conn, o.Unit)
	if err != nil {
		return fail(step, err)
	}
	w.notify(path, why)
	if !w.report(fromBus(o.Unit, path, props)) {
		return nil
	}
	tick := time.NewTicker(o.Reconcile)
	defer tick.Stop()
	ticks := 0 // Reconcile ticks since NeedDaemonReload was last read
	full := time.NewTicker(o.FullReconcile)
	defer full.Stop()
	for {
		reread := false
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-conn.Context().Done():
			return fail("connection", errors.New("closed"))
		case <-full.C:
			reread = true
		case <-tick.C:
			ticks++
			if !reconcileDue(o.Relaxed != nil && o.Relaxed(), ticks) {
				continue
			}
			ticks = 0
			v, err := readProp(ctx, conn, unitPath, unitIface, "NeedDaemonReload")
			if err != nil {
				return fail("re-read", err)
			}
			props["NeedDaemonReload"] = v
			if !w.report(fromBus(o.Unit, path, props)) {
				return nil
			}
		case s, ok := <-sigs:
			if !ok {
				return fail("connection", errors.New("closed"))
			}
			if s.Sequence != dbus.NoSequence && s.Sequence < cutoff {
				continue
			}
			var emitNow bool
			emitNow, reread = apply(props, s, unitPath)
			if emitNow && !w.report(fromBus(o.Unit, path, props)) {
				return nil
			}
		}
		if reread {
			if props, cutoff, err = readBus(ctx, conn, o.Unit, unitPath); err != nil {
				return fail("re-read", err)
			}
			if !w.report(fromBus(o.Unit, path, props)) {
				return nil
			}
		}
	}
}

// apply folds signal s into props. It says whether the state is complete
// enough to emit (systemd signals a service's Service interface first and
// its Unit interface right after, so a Service-only change waits for its
// pair) and whether a full re-read is due (the end of a daemon-reload,
// which changes Environment, DropInPaths and ExecStart without a
// PropertiesChanged). Invalidated properties are ignored: of those read
// here only ExecStart is, on every change, for its runtime fields, not
// for its argv.
func apply(props map[string]dbus.Variant, s *dbus.Signal, unitPath dbus.ObjectPath) (emit, reread bool) {
	switch {
	case s.Name == reloadingName:
		var reloading bool
		if len(s.Body) == 1 {
			reloading, _ = s.Body[0].(bool)
		}
		return false, !reloading
	case s.Name != propsChanged || s.Path != unitPath || len(s.Body) < 2:
		return false, false
	}
	iface, _ := s.Body[0].(string)
	changed, _ := s.Body[1].(map[string]dbus.Variant)
	keep(props, changed)
	return iface == unitIface, false
}

// poll watches the unit with `systemctl show` every Poll. why is why the
// bus paths were not used.
func (w *watcher) poll(ctx context.Context, d Dialer, why error) error {
	o := w.o
	cmd := showCommand(o.Unit)
	tick := time.NewTicker(o.Poll)
	defer tick.Stop()
	for {
		out, errOut, code, err := d.Exec(ctx, cmd)
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return fmt.Errorf("%s: watch %s via systemctl: %w", o.Host, o.Unit, err)
		}
		if code != 0 {
			return fmt.Errorf("%s: watch %s via systemctl: %q: exit %d: %s", o.Host, o.Unit, cmd, code, trimOut(errOut))
		}
		s, err := parseShow(o.Unit, out)
		if err != nil {
			return fmt.Errorf("%s: watch %s via systemctl: %w", o.Host, o.Unit, err)
		}
		if !w.started {
			w.notify(PathSystemctl, why)
		}
		if !w.report(s) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// relaxedReconcile is how many Reconcile intervals apart a relaxed host's
// NeedDaemonReload is read.
const relaxedReconcile = 5

// reconcileDue says whether the Reconcile tick numbered ticks since the
// last read reads NeedDaemonReload: every tick, or every
// relaxedReconcile-th while the host is relaxed.
func reconcileDue(relaxed bool, ticks int) bool {
	return !relaxed || ticks >= relaxedReconcile
}
