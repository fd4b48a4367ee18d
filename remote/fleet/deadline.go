package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bringup-dev/bringup/remote"
)

// Deadlines bound how long the fleet lets an action run on a host before
// it ends the action as failed and the host's next action goes ahead. The
// zero value means the defaults.
type Deadlines struct {
	// Systemd bounds the actions that wait for systemd's answer (their
	// spec's remote.DeadlineSystemd: restart, stop, a mode change's
	// daemon-reload…), from the moment the action starts (default 30 s). A restart's startup is
	// followed separately and is not part of it: for a Type=simple unit
	// systemd answers once the process is forked (after ExecStartPre).
	Systemd time.Duration
	// Redeploy is a redeploy's deadline before its bytes are counted: the
	// listing, staging, install and verify steps (default 2 min).
	Redeploy time.Duration
	// RedeployRate is the slowest transfer a redeploy may make, in bytes
	// per second: once the driver says how many bytes it sends
	// (remote.ExpectBytes), each adds 1/RedeployRate s to the deadline (default
	// 1 MiB/s).
	RedeployRate int64
	// Bench bounds a smoke load (default 10 min): its requests have their
	// own timeout; this ends one that a stalled service keeps going.
	Bench time.Duration
	// Grace is how long a driver has to return once its action was
	// cancelled or ran past its deadline; after it, the host's queue moves
	// on without waiting (default 5 s). The fleet still waits for the
	// driver before Run returns.
	Grace time.Duration
}

// The defaults of Deadlines.
const (
	DefaultSystemdDeadline  = 30 * time.Second
	DefaultRedeployDeadline = 2 * time.Minute
	DefaultRedeployRate     = 1 << 20
	DefaultActionGrace      = 5 * time.Second
	DefaultBenchDeadline    = 10 * time.Minute
)

func (d Deadlines) withDefaults() Deadlines {
	if d.Systemd <= 0 {
		d.Systemd = DefaultSystemdDeadline
	}
	if d.Redeploy <= 0 {
		d.Redeploy = DefaultRedeployDeadline
	}
	if d.RedeployRate <= 0 {
		d.RedeployRate = DefaultRedeployRate
	}
	if d.Grace <= 0 {
		d.Grace = DefaultActionGrace
	}
	if d.Bench <= 0 {
		d.Bench = DefaultBenchDeadline
	}
	return d
}

// For is the deadline of an action of kind k, before any bytes are
// counted: the one its spec names (a kind the table does not know waits
// for systemd).
func (d Deadlines) For(k remote.ActionKind) time.Duration {
	d = d.withDefaults()
	s, _ := k.Spec()
	switch s.Deadline {
	case remote.DeadlineTransfer:
		return d.Redeploy
	case remote.DeadlineLoad:
		return d.Bench
	case remote.DeadlineSystemd:
	}
	return d.Systemd
}

// preempts reports whether an action of kind k cancels the restarts still
// pending on its host and runs instead of waiting for them (its spec's
// Preempts).
func preempts(k remote.ActionKind) bool {
	s, _ := k.Spec()
	return s.Preempts
}

// DeadlineError is an action the fleet ended because it ran past its
// deadline.
type DeadlineError struct {
	Host   string
	Action remote.Action
	Unit   string
	After  time.Duration // the deadline it ran past
	Bytes  int64         // what a redeploy said it sends (remote.ExpectBytes); 0: not said
	// Err is what the driver returned once cancelled; nil when it had not
	// returned within Grace (the host's queue moved on without it).
	Err   error
	Grace time.Duration
}

func (e *DeadlineError) Error() string {
	var msg string
	if s, _ := e.Action.Kind.Spec(); s.Deadline == remote.DeadlineTransfer {
		size := ""
		if e.Bytes > 0 {
			size = fmt.Sprintf(" (%s to send)", byteSize(e.Bytes))
		}
		msg = fmt.Sprintf("%s on %s: not finished after %s%s; check the SSH link to %s and free space under the kernel's remote_dir",
			e.Action, e.Host, seconds(e.After), size, e.Host)
	} else {
		unit := e.Unit
		if unit == "" {
			unit = "the unit"
		}
		// What holds systemd up: a unit's job (hung in ExecStartPre or
		// ExecStop, or behind another unit's job), or for a mode change
		// its daemon-reload (a slow generator or unit file).
		held := fmt.Sprintf("a job hung in ExecStartPre or ExecStop, or waiting for another unit's job: `systemctl status %s`", unit)
		if s, _ := e.Action.Kind.Spec(); s.Reloads {
			held = "a daemon-reload still running: `systemctl status` says reloading; a slow generator holds it"
		}
		msg = fmt.Sprintf("%s on %s: no answer from systemd after %s; check `systemctl list-jobs` on %s (%s) and its D-Bus connection (`systemctl status dbus`, `bringup doctor %s`)",
			e.Action, e.Host, seconds(e.After), e.Host, held, e.Host)
	}
	if e.Err == nil {
		return msg + "; the driver had not returned " + seconds(e.Grace) + " after its cancel"
	}
	return msg + "; it was at: " + e.Err.Error()
}

// Unwrap makes errors.Is(err, context.DeadlineExceeded) hold.
func (e *DeadlineError) Unwrap() []error {
	if e.Err == nil {
		return []error{context.DeadlineExceeded}
	}
	return []error{context.DeadlineExceeded, e.Err}
}

// PreemptedError is a restart cancelled by a stop or reset-failed issued
// on its host after it.
type PreemptedError struct {
	Host   string
	Action remote.Action // the cancelled action
	By     remote.Action // the action that preempted it
	ByID   int
	// Err is what the driver returned once cancelled; nil when the action
	// had not started yet.
	Err error
}

func (e *PreemptedError) Error() string {
	msg := fmt.Sprintf("%s on %s: cancelled: %s (#%d) was issued after it and runs instead", e.Action, e.Host, e.By, e.ByID)
	if e.Err != nil {
		msg += "; it was at: " + e.Err.Error()
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrPreempted) hold.
func (e *PreemptedError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrPreempted}
	}
	return []error{ErrPreempted, e.Err}
}

// ErrPreempted is the error of an action cancelled by a later one.
var ErrPreempted = errors.New("preempted by a later action")

// actionClock is the deadline of one running action. The fleet starts it
// when the action starts; a driver that learns how much it has to send
// moves it (remote.ExpectBytes).
type actionClock struct {
	mu     sync.Mutex
	start  time.Time
	base   time.Duration
	rate   int64
	bytes  int64
	timer  *time.Timer
	fired  bool
	expire func()
}

// startClock runs expire once the action has run for base.
func startClock(base time.Duration, rate int64, expire func()) *actionClock {
	c := &actionClock{start: time.Now(), base: base, rate: rate}
	c.expire = func() {
		c.mu.Lock()
		c.fired = true
		c.mu.Unlock()
		expire()
	}
	c.timer = time.AfterFunc(base, c.expire)
	return c
}

// limit is the deadline as it stands, and the bytes it counts.
func (c *actionClock) limit() (time.Duration, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.base + c.perBytes(c.bytes), c.bytes
}

func (c *actionClock) perBytes(n int64) time.Duration {
	return time.Duration(float64(n) / float64(c.rate) * float64(time.Second))
}

// expect sets the bytes the action sends: its deadline becomes base plus
// their time at the slowest rate. Nothing changes once it has fired.
func (c *actionClock) expect(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fired || n <= c.bytes {
		return
	}
	c.bytes = n
	left := c.base + c.perBytes(n) - time.Since(c.start)
	if c.timer.Stop() {
		c.timer = time.AfterFunc(max(left, 0), c.expire)
	}
}

func (c *actionClock) stop() { c.timer.Stop() }

// seconds writes d for people: "30 s", "250 ms", "2m40s".
func seconds(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < 2*time.Minute && d%time.Second == 0:
		return fmt.Sprintf("%d s", d/time.Second)
	case d < 2*time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// byteSize writes n bytes for people.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
