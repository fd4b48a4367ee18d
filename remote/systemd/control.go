package systemd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	sd "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"

	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/unitname"
)

// Outcome is how an action on a unit ended: the result of its systemd job.
type Outcome string

// Job results (go-systemd's and systemd's names). Anything else systemd
// may report (invalid, assert, unsupported, collected, once) is kept as
// its own Outcome and counts as failed.
const (
	OutcomeNone       Outcome = ""           // the end was not seen: ctx ended, connection lost, refused
	OutcomeDone       Outcome = "done"       // the job finished successfully
	OutcomeCanceled   Outcome = "canceled"   // another job replaced it, or it was cancelled
	OutcomeTimeout    Outcome = "timeout"    // the job's timeout passed
	OutcomeFailed     Outcome = "failed"     // the unit failed (see its Result)
	OutcomeDependency Outcome = "dependency" // a required unit failed
	OutcomeSkipped    Outcome = "skipped"    // the job did not apply to the unit's state
)

// The errors each job outcome is (errors.Is) besides *JobError.
var (
	ErrJobCanceled   = errors.New("job canceled")
	ErrJobTimeout    = errors.New("job timed out")
	ErrJobFailed     = errors.New("job failed")
	ErrJobDependency = errors.New("a dependency of the unit failed")
	ErrJobSkipped    = errors.New("job skipped: it did not apply to the unit's state")
)

// outcomeErr maps a job result to its error; done has none.
func outcomeErr(o Outcome) error {
	switch o {
	case OutcomeDone:
		return nil
	case OutcomeCanceled:
		return ErrJobCanceled
	case OutcomeTimeout:
		return ErrJobTimeout
	case OutcomeDependency:
		return ErrJobDependency
	case OutcomeSkipped:
		return ErrJobSkipped
	case OutcomeNone, OutcomeFailed: // no result is a failure too
	}
	return ErrJobFailed
}

// JobError is a job that ended other than done.
type JobError struct {
	Host, Op, Unit string
	Outcome        Outcome
}

func (e *JobError) Error() string {
	msg := outcomeErr(e.Outcome).Error()
	if e.Outcome != OutcomeFailed && errors.Is(outcomeErr(e.Outcome), ErrJobFailed) {
		msg += " (result " + string(e.Outcome) + ")"
	}
	return fmt.Sprintf("%s: %s %s: %s", e.Host, e.Op, e.Unit, msg)
}

// Unwrap makes errors.Is(err, ErrJobFailed) and friends work.
func (e *JobError) Unwrap() error { return outcomeErr(e.Outcome) }

// The ways sudo refuses, as SudoError.Err.
var (
	ErrSudoPassword = errors.New("sudo needs a password")
	ErrSudoTTY      = errors.New("sudo requires a terminal (requiretty)")
	ErrSudoDenied   = errors.New("sudo refused the command")
)

// SudoError is sudo refusing to run an action for a non-root login.
type SudoError struct {
	Host   string
	Err    error  // ErrSudoPassword, ErrSudoTTY or ErrSudoDenied
	Stderr string // sudo's message (remote text)
}

func (e *SudoError) Error() string {
	switch {
	case errors.Is(e.Err, ErrSudoPassword):
		return fmt.Sprintf("sudo needs a password on %s: actions need the NOPASSWD sudoers rule that `bringup doctor %s` prints (or a root login)", e.Host, e.Host)
	case errors.Is(e.Err, ErrSudoTTY):
		return fmt.Sprintf("sudo requires a terminal on %s (requiretty): actions need sudo without requiretty, and the rule `bringup doctor %s` prints", e.Host, e.Host)
	}
	return fmt.Sprintf("sudo refused the command on %s: %s (`bringup doctor %s` prints the sudoers rule actions need)", e.Host, e.Stderr, e.Host)
}

func (e *SudoError) Unwrap() error { return e.Err }

// Controller acts on units of one host: through D-Bus when the login is
// root, through `sudo -n -- systemctl` (sshx.UnitCmd) otherwise (D-Bus would need a polkit
// rule for a non-root login, and polkit prompts). Every action is bounded
// by its ctx. Its methods are safe for concurrent use.
type Controller struct {
	d    Dialer
	host string

	mu    sync.Mutex // guards uid, known
	uid   int
	known bool
}

// NewController returns a Controller for the host d is connected to.
func NewController(d Dialer, host string) *Controller {
	return &Controller{d: d, host: host}
}

// UID is the login's uid on the host, asked once.
func (c *Controller) UID(ctx context.Context) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.known {
		return c.uid, nil
	}
	uid, err := remoteUID(ctx, c.d, c.host)
	if err != nil {
		return 0, err
	}
	c.uid, c.known = uid, true
	return uid, nil
}

// Restart restarts unit and waits for its job.
func (c *Controller) Restart(ctx context.Context, unit string) (Outcome, error) {
	return c.job(ctx, "restart", unit)
}

// Start starts unit and waits for its job.
func (c *Controller) Start(ctx context.Context, unit string) (Outcome, error) {
	return c.job(ctx, "start", unit)
}

// Stop stops unit and waits for its job.
func (c *Controller) Stop(ctx context.Context, unit string) (Outcome, error) {
	return c.job(ctx, "stop", unit)
}

// ResetFailed clears unit's failed state and its start-limit counter.
func (c *Controller) ResetFailed(ctx context.Context, unit string) error {
	_, err := c.job(ctx, "reset-failed", unit)
	return err
}

// DaemonReload makes systemd re-read unit files and drop-ins; it returns
// once the reload is over.
func (c *Controller) DaemonReload(ctx context.Context) error {
	_, err := c.job(ctx, "daemon-reload", "")
	return err
}

// job performs verb (a systemctl verb) on unit.
func (c *Controller) job(ctx context.Context, verb, unit string) (Outcome, error) {
	if verb != "daemon-reload" {
		if err := unitname.Check(unit); err != nil {
			return OutcomeNone, fmt.Errorf("%s: %s: %w", c.host, verb, err)
		}
	}
	uid, err := c.UID(ctx)
	if err != nil {
		return OutcomeNone, fmt.Errorf("%s %s: %w", verb, unit, err)
	}
	if uid != 0 {
		return c.systemctl(ctx, true, verb, unit)
	}
	conn, lost, err := c.systemd(ctx, uid)
	if err != nil {
		if ctx.Err() != nil {
			return OutcomeNone, fmt.Errorf("%s %s: %w", verb, unit, err)
		}
		// No usable bus: root's systemctl talks to PID 1 directly.
		return c.systemctl(ctx, false, verb, unit)
	}
	defer conn.Close()
	return c.busJob(ctx, conn, lost, verb, unit)
}

// ErrBusLost is a job whose result can no longer come: the D-Bus
// connection it was to come on closed first.
var ErrBusLost = errors.New("the D-Bus connection closed before systemd answered")

// systemd connects go-systemd to the host's bus (two connections: calls
// and signals), by the first path that works. lost is closed once either
// connection has closed (the bus daemon or the SSH channel went away):
// go-systemd then never delivers a job's result.
func (c *Controller) systemd(ctx context.Context, uid int) (conn *sd.Conn, lost <-chan struct{}, err error) {
	path := ""
	gone := make(chan struct{})
	var once sync.Once
	conn, err = sd.NewConnection(func() (*dbus.Conn, error) {
		var bus *dbus.Conn
		var err error
		if path == "" {
			bus, path, _, err = openBusAuto(ctx, c.d, c.host, uid, true)
		} else {
			bus, err = openBus(ctx, c.d, c.host, uid, path, true)
		}
		if err == nil {
			// The connection closes with ctx at the latest, which ends
			// this wait.
			context.AfterFunc(bus.Context(), func() { once.Do(func() { close(gone) }) })
		}
		return bus, err
	})
	return conn, gone, err
}

// busJob runs verb over D-Bus and waits for the job's result, until ctx
// ends or lost says that it can no longer come.
func (c *Controller) busJob(ctx context.Context, conn *sd.Conn, lost <-chan struct{}, verb, unit string) (Outcome, error) {
	// Buffered: go-systemd delivers results under a lock that blocks its
	// signal dispatch until the result is taken.
	ch := make(chan string, 1)
	var (
		err error
		job int
	)
	switch verb {
	case "restart":
		job, err = conn.RestartUnitContext(ctx, unit, "replace", ch)
	case "start":
		job, err = conn.StartUnitContext(ctx, unit, "replace", ch)
	case "stop":
		job, err = conn.StopUnitContext(ctx, unit, "replace", ch)
	case "reset-failed":
		err = conn.ResetFailedUnitContext(ctx, unit)
		ch <- string(OutcomeDone)
	case "daemon-reload":
		err = conn.ReloadContext(ctx)
		ch <- string(OutcomeDone)
	default:
		return OutcomeNone, fmt.Errorf("%s: unknown action %q", c.host, verb)
	}
	what := strings.TrimSpace(verb + " " + unit)
	if err != nil {
		return OutcomeNone, fmt.Errorf("%s: %s: %w", c.host, what, err)
	}
	select {
	case r := <-ch:
		return c.jobResult(Outcome(r), verb, unit)
	case <-ctx.Done():
		return OutcomeNone, fmt.Errorf("%s: %s: waiting for job %d: %w", c.host, what, job, ctx.Err())
	case <-lost:
		if ctx.Err() != nil {
			return OutcomeNone, fmt.Errorf("%s: %s: waiting for job %d: %w", c.host, what, job, ctx.Err())
		}
		select {
		case r := <-ch: // the result and the close came together
			return c.jobResult(Outcome(r), verb, unit)
		default:
		}
		return OutcomeNone, fmt.Errorf("%s: %s: job %d: %w; it may still run: check `systemctl list-jobs` on the host",
			c.host, what, job, ErrBusLost)
	}
}

// jobResult is the outcome of a job that ended, and its error.
func (c *Controller) jobResult(o Outcome, verb, unit string) (Outcome, error) {
	if o == OutcomeDone {
		return o, nil
	}
	return o, &JobError{Host: c.host, Op: verb, Unit: unit, Outcome: o}
}

// systemctl runs verb with systemctl over exec, through sudo (or not),
// and maps its failure messages to job outcomes and sudo refusals. The
// command lines are sshx's (UnitCmd, DaemonReloadCmd), the ones the
// sudoers rule allows. It runs under ExecTerm: systemctl waits for its
// job, and when ctx ends first it must stop waiting on the host too.
func (c *Controller) systemctl(ctx context.Context, sudo bool, verb, unit string) (Outcome, error) {
	rc := sshx.UnitCmd(verb, unit)
	if verb == "daemon-reload" {
		rc = sshx.DaemonReloadCmd()
	}
	cmd := rc.Line(sudo)
	_, errOut, code, err := execTerm(ctx, c.d, cmd)
	if err != nil {
		return OutcomeNone, fmt.Errorf("%s: %s: %w", c.host, cmd, err)
	}
	if code == 0 {
		return OutcomeDone, nil
	}
	msg := string(errOut)
	if sudo {
		if serr := SudoRefusal(c.host, msg); serr != nil {
			return OutcomeNone, serr
		}
	}
	if o := jobOutcomeFromMessage(msg); o != OutcomeNone {
		return o, &JobError{Host: c.host, Op: verb, Unit: unit, Outcome: o}
	}
	return OutcomeNone, fmt.Errorf("%s: %s: exit %d: %s", c.host, cmd, code, trimOut(errOut))
}

// SudoRefusal recognises sudo's own refusals (sudo 1.9 wording) in a
// command's stderr and returns them as a *SudoError, or nil: every package
// that runs `sudo -n` classifies them here, in one place.
func SudoRefusal(host, stderr string) error {
	var e error
	switch {
	case strings.Contains(stderr, "sudo: a password is required"):
		e = ErrSudoPassword
	case strings.Contains(stderr, "a terminal is required"), strings.Contains(stderr, "you must have a tty"):
		e = ErrSudoTTY
	case strings.Contains(stderr, "is not in the sudoers file"), strings.Contains(stderr, "is not allowed to execute"),
		strings.Contains(stderr, "may not run sudo"), strings.Contains(stderr, "sudo: command not found"):
		e = ErrSudoDenied
	default:
		return nil
	}
	return &SudoError{Host: host, Err: e, Stderr: trimOut([]byte(stderr))}
}

// jobOutcomeFromMessage maps systemctl's job failure messages (systemd
// 252, bus-wait-for-jobs.c) to outcomes; OutcomeNone when none matches.
func jobOutcomeFromMessage(stderr string) Outcome {
	switch {
	case strings.Contains(stderr, "canceled."):
		return OutcomeCanceled
	case strings.Contains(stderr, "timed out."), strings.Contains(stderr, "because a timeout was exceeded"):
		return OutcomeTimeout
	case strings.Contains(stderr, "A dependency job for"):
		return OutcomeDependency
	case strings.Contains(stderr, "Job for ") && strings.Contains(stderr, " failed"):
		return OutcomeFailed
	}
	return OutcomeNone
}

// ReadEnvironment reads unit's Environment property (KEY=VALUE), the
// environment its next start gets: over D-Bus (any login may read), else
// from `systemctl show`.
func (c *Controller) ReadEnvironment(ctx context.Context, unit string) ([]string, error) {
	if err := unitname.Check(unit); err != nil {
		return nil, fmt.Errorf("%s: read environment: %w", c.host, err)
	}
	uid, err := c.UID(ctx)
	if err != nil {
		return nil, fmt.Errorf("read environment of %s: %w", unit, err)
	}
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	conn, _, _, err := openBusAuto(bctx, c.d, c.host, uid, true)
	if err == nil {
		defer conn.Close()
		var path dbus.ObjectPath
		obj := conn.Object(busName, managerPath)
		if err = obj.CallWithContext(ctx, managerIface+".LoadUnit", 0, unit).Store(&path); err == nil {
			var v dbus.Variant
			if err = conn.Object(busName, path).CallWithContext(ctx, propsIface+".Get", 0, serviceIface, "Environment").Store(&v); err == nil {
				return strs(v), nil
			}
		}
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%s: read environment of %s: %w", c.host, unit, ctx.Err())
	}
	cmd := "systemctl show -p Environment --value -- " + sshx.ShellQuote(unit)
	out, errOut, code, xerr := c.d.Exec(ctx, cmd)
	switch {
	case xerr != nil:
		return nil, fmt.Errorf("%s: read environment of %s: %w", c.host, unit, errors.Join(err, xerr))
	case code != 0:
		return nil, fmt.Errorf("%s: %s: exit %d: %s", c.host, cmd, code, trimOut(errOut))
	}
	env, perr := splitQuoted(strings.TrimRight(string(out), "\n"))
	if perr != nil {
		return nil, fmt.Errorf("%s: read environment of %s: %w", c.host, unit, perr)
	}
	return env, nil
}
