package logs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/config"
	"github.com/bringup-dev/bringup/cmd/bringup/livefleet"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/journal"
	"github.com/bringup-dev/bringup/remote/live"
	"github.com/bringup-dev/bringup/remote/sanitize"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/startup"
	"github.com/bringup-dev/bringup/remote/unitname"
)

// Usage is the command's synopsis.
const Usage = "bringup logs [-f] [--since DURATION|TIME] [-n N] [-H hosts | --config F] HOST"

// Streams are the command's standard streams and environment.
type Streams struct {
	Out, Err io.Writer
	Getenv   func(string) string
}

// connectWithin bounds the first connection: past it the one-shot read
// gives up, as status does.
const connectWithin = 15 * time.Second

// Command runs `bringup logs` with args and returns its exit code: 0
// when the lines were read (whatever they say), 1 when the host could
// not be read, 3 on a usage error, 130 on ctrl-c.
func Command(ctx context.Context, s Streams, args []string) int {
	fs := cli.NewFlags(s.Out, s.Err, "logs", Usage)
	var ff config.Flags
	ff.Register(fs.FlagSet)
	follow := fs.BoolP("follow", "f", false, "keep following new lines until ctrl-c; the diagnosis is printed whenever a run settles")
	since := fs.String("since", "", "lines since `DURATION` back (10m, 2h) or TIME (2026-01-02 15:04:05); default the current run's, from its start")
	n := fs.IntP("lines", "n", 0, "the last `N` lines (with --since: the last N of those)")
	if code, stop := cli.ParseArgs(fs, args); stop {
		return code
	}
	fail := func(code int, format string, a ...any) int {
		if cli.WasInterrupted(ctx) {
			return cli.ExitInterrupted
		}
		fmt.Fprintf(s.Err, "bringup logs: %s\n", sanitize.Text(fmt.Sprintf(format, a...)))
		return code
	}
	if *n < 0 {
		return fail(cli.ExitUsage, "-n %d: must be 0 or more", *n)
	}
	var from time.Time
	if *since != "" {
		t, err := ParseSince(*since, time.Now(), time.Local)
		if err != nil {
			return fail(cli.ExitUsage, "%v", err)
		}
		from = t
	}
	// A config that is a FIFO or on a hung mount must not hold the
	// command past ctrl-c.
	l, err := cli.Until(ctx, func() (loaded, error) {
		cfg, hosts, err := ff.Open(s.Getenv, fs.Args())
		return loaded{cfg, hosts}, err
	})
	if err != nil {
		return fail(cli.ExitUsage, "%v", err)
	}
	if len(l.hosts) != 1 {
		return fail(cli.ExitUsage, "one host at a time (%s)", names(l.hosts))
	}
	if l.cfg.Source.Spec().Name != config.SourceSSH {
		return fail(cli.ExitUsage, "logs reads the journal over SSH: add --source ssh")
	}
	rs, release, err := livefleet.Resolve(ctx, s.Err, l.cfg, l.hosts)
	if err != nil {
		return fail(cli.ExitFailed, "%v", err)
	}
	defer release()
	opts := startup.Options{Engine: rs[0].Engine, Kernels: l.cfg.Kernels}
	if len(l.cfg.Rules) > 0 {
		opts.Packs = startup.WithBuiltins(l.cfg.Rules)
	}
	r := reader{host: rs[0], p: NewPrinter(s.Out, opts, time.Local)}
	if err := r.run(ctx, *n, from, *follow); err != nil {
		return fail(cli.ExitFailed, "%v", err)
	}
	if cli.WasInterrupted(ctx) { // following, ctrl-c is the way out; still 130, as everywhere
		return cli.ExitInterrupted
	}
	return cli.ExitOK
}

type loaded struct {
	cfg   *config.Config
	hosts []config.Host
}

func names(hosts []config.Host) string {
	if len(hosts) == 0 {
		return "none named"
	}
	var ns []string
	for _, h := range hosts {
		ns = append(ns, h.Name)
	}
	return "got " + strings.Join(ns, ", ")
}

// reader reads one host's journal over its SSH connection into p.
type reader struct {
	host live.Options
	p    *Printer
}

// run connects, prints the lines asked for and the diagnosis; following,
// it goes on until ctx ends.
func (r reader) run(ctx context.Context, n int, since time.Time, follow bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	first := make(chan error, 1)
	conn := sshx.NewConn(r.host.SSH, sshx.ConnOptions{Dial: r.host.Dial, OnState: func(st sshx.State, err error, _ time.Time) {
		switch st {
		case sshx.StateUp:
			err = nil
		case sshx.StateDown, sshx.StateUnreachable:
		default:
			return
		}
		select { // the first answer only: later ones are the follow's to ride out
		case first <- err:
		default:
		}
	}})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = conn.Run(ctx)
	}()
	defer func() { cancel(); <-done }()
	select {
	case err := <-first:
		if err != nil {
			return fmt.Errorf("%s: %w", r.host.Name, err)
		}
	case <-time.After(connectWithin):
		return fmt.Errorf("%s: no connection within %s", r.host.Name, connectWithin)
	case <-ctx.Done():
		return nil
	}
	unit, err := unitname.Normalize(r.host.Unit)
	if err != nil {
		return fmt.Errorf("%s: unit: %w", r.host.Name, err)
	}
	cursor, err := r.backlog(ctx, conn, unit, n, since)
	if err != nil {
		return err
	}
	// With no line read, the follow starts from its own tail: by default
	// the unit had no line at all, so nothing old comes twice, and a line
	// written between the read and the follow is not lost. After --since,
	// it starts from now.
	tail := 0
	if !since.IsZero() {
		tail = -1
	}
	if !follow {
		r.p.Verdict()
		return nil
	}
	if r.p.Settled() {
		r.p.Verdict()
	}
	return r.follow(ctx, conn, unit, cursor, tail)
}

// backlog prints the lines asked for, with the unit's state read first,
// and returns the last line's cursor ("" when none).
func (r reader) backlog(ctx context.Context, conn *sshx.Conn, unit string, n int, since time.Time) (string, error) {
	stdout, _, _, err := conn.Exec(ctx, StateQuery(unit))
	if err != nil {
		return "", fmt.Errorf("%s: unit state: %w", r.host.Name, err)
	}
	state := strings.Fields(string(stdout))
	out, wait, err := conn.Stream(ctx, Query(unit, n, since))
	if err != nil {
		return "", fmt.Errorf("%s: journal: %w", r.host.Name, err)
	}
	defer out.Close()
	var cursor string
	er := journal.NewExportReader(out, journal.DefaultMaxLine)
	for {
		e, err := er.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var bad *journal.EntryError
			if errors.As(err, &bad) { // one entry that cannot be read is a gap, not the end
				r.p.Line(event.Event{Kind: event.KindGap, Gap: &event.Gap{Reason: journal.GapDropped, Message: err.Error()}})
				continue
			}
			return cursor, fmt.Errorf("%s: journal: %w", r.host.Name, err)
		}
		cursor = e.Cursor
		r.p.Line(journal.ToEvent(r.host.Name, e))
	}
	if err := wait(); err != nil && ctx.Err() == nil {
		return cursor, fmt.Errorf("%s: journal: %w", r.host.Name, err)
	}
	if len(state) == 2 {
		r.p.State(state[0], state[1], time.Time{})
	}
	return cursor, nil
}

// follow prints the lines after cursor (when cursor is "", from the
// journal's tail: see journal.Options.Tail) until ctx ends; a run's diagnosis is printed once it settles: the
// run served or failed and its lines have been quiet for the settle
// window, so that the traceback that names the cause is in.
func (r reader) follow(ctx context.Context, conn *sshx.Conn, unit, cursor string, tail int) error {
	events := make(chan event.Event, 64)
	done := make(chan error, 1)
	go func() {
		done <- journal.Follow(ctx, conn, journal.Options{Host: r.host.Name, Unit: unit, Cursor: cursor, Tail: tail}, func(ev event.Event) bool {
			select {
			case events <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	defer settle.Stop()
	for {
		select {
		case <-ctx.Done():
			_ = <-done // interrupted: what the follow ended with no longer matters
			return nil
		case err := <-done:
			if ctx.Err() != nil {
				return nil
			}
			return err
		case ev := <-events:
			r.p.Line(ev)
			if r.p.Settled() {
				settle.Reset(fleet.DefaultSettle)
			}
		case <-settle.C:
			if r.p.Settled() {
				r.p.Verdict()
			}
		}
	}
}
