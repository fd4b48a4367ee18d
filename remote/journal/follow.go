package journal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/remote/backoff"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/unitname"
)

// Source runs a command on a host and streams its stdout; *sshx.Conn is
// one. Stream fails (wrapping sshx.ErrNotConnected) while the host is
// down; Generation changes on every reconnect.
type Source interface {
	Stream(ctx context.Context, cmd string) (out io.ReadCloser, wait func() error, err error)
	Generation() uint64
}

// DefaultTail is how many earlier lines Follow shows when it starts.
const DefaultTail = 200

// Gap reasons Follow emits (event.Gap.Reason).
const (
	GapReconnect  = "reconnect"   // the stream ended; Follow resumes after the last cursor, nothing lost
	GapCursorLost = "cursor-lost" // the last cursor is gone (vacuum, other boot or machine): lines may be missing
	GapSuppressed = "suppressed"  // journald dropped Count lines of the unit under its rate limit
	GapDropped    = "dropped"     // a line journalctl printed could not be decoded
	GapReboot     = "reboot"      // the host booted again (a new _BOOT_ID) since the last line
)

// Format is an output format of journalctl that Follow reads.
type Format string

// The formats Follow reads. Export is the default: journalctl writes it
// with no per-value formatting, and its JSON formatting is what limits the
// stream (TESTBED.md at the repository's root, §7). JSON is the fallback.
const (
	FormatExport Format = "export"
	FormatJSON   Format = "json"
)

// Options configure Follow.
type Options struct {
	Host string // the host's name, for events
	Unit string // the unit to follow; "sglang" means sglang.service, as with journalctl -u
	// Tail is how many earlier lines to show first (the last Tail entries
	// of the unit, which reach into the previous invocation when the
	// current one has fewer; every entry carries its invocation id).
	// 0 means DefaultTail; negative means none.
	Tail int
	// FromStart, when positive, starts a fresh follow at the current run's
	// first line (the unit's ExecMainStartTimestamp, less 2 s), reaching
	// back at most FromStart; the phase view then shows the whole startup.
	// A unit that never started falls back to the Tail.
	FromStart time.Duration
	// Started, with FromStart, is the current run's main process start as
	// the caller already read it (the unit's ExecMainStartTimestamp over
	// D-Bus, to the microsecond): the follow starts from it directly, one
	// journalctl, instead of asking systemctl in a shell first. Zero: ask.
	Started time.Time
	// Cursor, when set, is where an earlier follow stopped (a __CURSOR
	// saved by the caller): Follow starts after it instead of with the
	// tail, with the same checks as after a reconnect.
	Cursor string
	// MaxLine caps a message, in bytes; longer ones are cut and marked
	// Truncated. 0 means DefaultMaxLine.
	MaxLine int
	// Format is the output format asked of journalctl: "" or
	// FormatExport, export with JSON as the fallback (see Follow);
	// FormatJSON, JSON only.
	Format Format
	// Now stamps Seen; nil = time.Now. Sleep waits between attempts to
	// open the stream; nil = a real timer. Rand feeds the retry jitter;
	// nil = math/rand/v2.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	Rand  func() float64
}

// Command returns the remote command Follow runs for opts at a resume
// point. journalctl runs under exec, so that the session's SIGTERM and
// hangup reach it directly, and the backlog and the follow come from one
// process, so nothing falls between them.
//
// What it works around, measured on systemd 252 (Debian 12):
//   - `-f -n N` (and `-f -n 0`) on a unit with no entries yet does not
//     follow properly: a unit started afterwards printed 3000 lines and
//     the follower showed 1 (with -n 200: the last 122). `-f --since`
//     shows them all. So the start asks for the cursor of the N-th last
//     entry first and follows from it with --cursor, or, when the unit has
//     no entries, from the host's clock read before that query;
//   - `-f` implies `-n 10`, which also caps the catch-up after a cursor:
//     `-f --after-cursor` printed 10 of 39 waiting entries, then only new
//     ones. Every follow from a cursor or a time passes --no-tail;
//   - a cursor that no longer names an entry is not an error: journalctl
//     seeks to the nearest entry. A resume (cursor with since set to the
//     last entry's time) therefore first checks that the cursor's entry
//     still exists and follows from since otherwise; Follow expects the
//     cursor's own entry first (--cursor, not --after-cursor) and reports
//     a lost cursor when it is not there.
//
// The follow and the queries before it use opts.Format; a query prints its
// entry's cursor as "__CURSOR=…" in either (from JSON, through sed).
func Command(opts Options, cursor string, since time.Time) string {
	unit := sshx.ShellQuote(opts.Unit)
	format := "export"
	if opts.Format == FormatJSON {
		format = "json --all"
	}
	follow := "exec journalctl -q -u " + unit + " -o " + format + " -f --no-pager --output-fields=" + OutputFields + " --no-tail "
	// first prints the cursor of the first entry journalctl shows with args.
	first := func(args string) string {
		q := "journalctl -q -u " + unit + " " + args + " -o " + strings.Fields(format)[0] + " --output-fields=MESSAGE_ID 2>/dev/null | head -n1"
		if opts.Format == FormatJSON {
			q += ` | sed -n 's/.*"__CURSOR":"\([^"]*\)".*/__CURSOR=\1/p'`
		}
		return q
	}
	switch {
	case cursor != "" && !since.IsZero():
		c := sshx.ShellQuote(cursor)
		return "f=$(" + first("--cursor="+c) + "); " +
			"if [ \"$f\" = " + sshx.ShellQuote("__CURSOR="+cursor) + " ]; then " + follow + "--cursor=" + c + "; fi; " +
			follow + "--since=@" + usec(since)
	case cursor != "":
		return follow + "--cursor=" + sshx.ShellQuote(cursor)
	case !since.IsZero():
		return follow + "--since=@" + usec(since)
	}
	if opts.FromStart > 0 && !opts.Started.IsZero() {
		// The same start as the shell's below, less the whole seconds'
		// rounding: 2 s before the main process, at most FromStart back.
		from := opts.Started.Add(-fromStartMargin)
		if lo := opts.now().Add(-opts.FromStart); from.Before(lo) {
			from = lo
		}
		return follow + "--since=@" + usec(from)
	}
	fromStart := ""
	if opts.FromStart > 0 {
		// s: the main process's start in whole seconds (systemd 252 prints
		// "@1796004227" with --timestamp=unix; "@0" or "" when it never
		// ran), bounded by the look-back.
		fromStart = fmt.Sprintf("s=$(systemctl show -p ExecMainStartTimestamp --timestamp=unix --value %s 2>/dev/null); s=${s#@}; "+
			"case \"$s\" in ''|0|*[!0-9]*) ;; *) lo=$(( $(date +%%s) - %d )); [ \"$s\" -lt \"$lo\" ] && s=$lo; %s--since=@$((s - 2)) ;; esac; ",
			unit, int64(opts.FromStart/time.Second), follow)
	}
	if opts.Tail < 0 {
		return fromStart + follow + "--since=@\"$(date +%s.%6N)\""
	}
	n := opts.Tail
	if n == 0 {
		n = DefaultTail
	}
	return fromStart + fmt.Sprintf("t=$(date +%%s.%%6N); c=$(%s); c=${c#__CURSOR=}; "+
		"if [ -n \"$c\" ]; then %s--cursor=\"$c\"; fi; %s--since=@\"$t\"", first(fmt.Sprintf("-n %d", n)), follow, follow)
}

// fromStartMargin is how far before the main process's start a follow
// from the run's start begins: the unit's own "Starting" and ExecStartPre
// lines come before it.
const fromStartMargin = 2 * time.Second

// now is opts.Now or the clock.
func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// usec formats t as journalctl's @seconds.micros.
func usec(t time.Time) string {
	us := t.UnixMicro()
	return fmt.Sprintf("%d.%06d", us/1e6, us%1e6)
}

// ToEvent makes the journal event of e from host.
func ToEvent(host string, e Entry) event.Event {
	return event.Event{
		Host: host,
		Kind: event.KindJournal,
		Time: e.Realtime,
		Journal: &event.Journal{
			Cursor:       e.Cursor,
			Unit:         e.Unit,
			InvocationID: e.InvocationID,
			PID:          e.PID,
			Priority:     e.Priority,
			MessageID:    e.MessageID,
			Message:      e.Message,
			Truncated:    e.Truncated,
			Fields:       e.Fields,
		},
	}
}

// follower is Follow's state across streams.
type follower struct {
	opts Options
	emit func(event.Event) bool
	unit string // opts.Unit with its type suffix

	cursor   string    // the last entry delivered
	seqID    string    // its cursor's s= (seqnum id) and i= (seqnum)
	seq      uint64    //
	realtime time.Time // its timestamp
	boot     string    // its _BOOT_ID
	seekLost bool      // journalctl refused the cursor: resume by time
}

// Follow streams the unit's journal from src until ctx ends or emit
// returns false (then it returns nil). It starts with the last Tail
// entries and follows in the same journalctl process. When the stream
// ends while ctx is alive, it emits a Gap "reconnect" marker, waits for
// the host (retrying Stream with a short jittered backoff while it fails)
// and resumes at the last cursor, so that no line is lost or repeated:
// entries whose cursor is at or before the last one delivered are dropped.
// If the cursor no longer names an entry, it emits Gap "cursor-lost" and
// goes on from the nearest later entry (or from the last timestamp, when
// journalctl refuses the cursor outright). journald's "Suppressed N
// messages" notice for the unit becomes Gap "suppressed" with Count N.
// Follow returns only after the stream it opened has been closed.
func Follow(ctx context.Context, src Source, opts Options, emit func(event.Event) bool) error {
	// One exact unit: journalctl -u reads a name with *?[ as a pattern
	// and would mix other units' lines into this one's diagnosis.
	unit, err := unitname.Normalize(opts.Unit)
	if err != nil {
		return fmt.Errorf("journal %s: %w", opts.Host, err)
	}
	opts.Unit = unit
	if opts.MaxLine <= 0 {
		opts.MaxLine = DefaultMaxLine
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Sleep == nil {
		opts.Sleep = sshx.Sleep
	}
	f := &follower{opts: opts, emit: emit, unit: unit}
	if opts.Cursor != "" {
		if !validCursor(opts.Cursor) {
			return fmt.Errorf("journal %s: invalid cursor %q", opts.Host, opts.Cursor)
		}
		f.cursor = opts.Cursor
		f.seqID, f.seq, _ = seqOf(opts.Cursor)
		f.realtime = cursorTime(opts.Cursor)
	}
	if f.opts.Format == "" {
		f.opts.Format = FormatExport
	}
	bo := &backoff.Backoff{Base: 250 * time.Millisecond, Factor: 1.6, Max: time.Second, Jitter: 0.2, Rand: opts.Rand}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		cursor, since := f.cursor, f.realtime
		if since.IsZero() {
			since = cursorTime(cursor)
		}
		if f.seekLost {
			cursor = ""
		}
		out, wait, err := src.Stream(ctx, Command(f.opts, cursor, since))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err := opts.Sleep(ctx, bo.Next()); err != nil {
				return err
			}
			continue
		}
		gen := src.Generation()
		res := f.stream(ctx, out, wait, cursor)
		if res.stopped {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if res.entries > 0 {
			bo.Reset()
		}
		if !f.ended(res, gen != src.Generation()) {
			return nil
		}
		if res.entries == 0 {
			// The command ended without output (refused, or the link
			// dropped at once): do not respawn it in a tight loop.
			if err := opts.Sleep(ctx, bo.Next()); err != nil {
				return err
			}
		}
	}
}

// ended emits the marker for a stream that ended and sets the next resume
// point. It returns false when the consumer has stopped.
func (f *follower) ended(res streamResult, reconnected bool) bool {
	why := "end of output"
	if res.err != nil {
		why = res.err.Error()
	}
	if reconnected {
		why += "; connection replaced"
	}
	if res.err != nil && strings.Contains(res.err.Error(), "Failed to seek to cursor") {
		f.seekLost = true
		msg := "journal cursor rejected (" + why + "); resuming from the last line's time: lines may be missing"
		if f.realtime.IsZero() {
			msg = "journal cursor rejected (" + why + "); resuming from the last lines: lines may be missing"
		}
		return f.gap(event.Gap{Reason: GapCursorLost, Message: msg})
	}
	if refusedExport(f.opts.Format, res) {
		f.opts.Format = FormatJSON
		return f.gap(event.Gap{Reason: GapReconnect, Message: "journalctl refused -o export (" + why + "); reading its JSON output instead"})
	}
	at := "the start"
	if f.cursor != "" {
		at = "the line of " + f.realtime.UTC().Format("15:04:05.000000")
	}
	return f.gap(event.Gap{Reason: GapReconnect, Message: "journal stream ended (" + why + "); resuming after " + at})
}

// refusedExport reports whether an export stream that ended as res shows
// that the host will not give export at all, so that Follow falls back to
// JSON: the command printed no entry and failed, its standard error
// naming the format. journalctl itself has had -o export since systemd
// 38, so the refusal to expect is not its own but a wrapper's: a forced
// command or sudo rule that allows only `-o json`, or a journalctl
// stand-in. journalctl's own refusal of a format reads "Unknown output
// format 'export'."; a wrapper's is matched by the word in what the
// command printed on its standard error (sshx ends the error with
// "(stderr: …)"; the rest quotes the command, which names export itself).
// A stream that ends without entries for another reason (a cut link, a
// refused cursor, handled before) does not name the format there, and a
// stream whose output turns out to be JSON is read as JSON whatever was
// asked (Follow looks at its first byte), so neither needs the fallback.
func refusedExport(format Format, res streamResult) bool {
	if format == FormatJSON || res.entries > 0 || res.err == nil {
		return false
	}
	msg := res.err.Error()
	if i := strings.LastIndex(msg, "(stderr: "); i >= 0 {
		return strings.Contains(strings.ToLower(msg[i:]), "export")
	}
	return strings.Contains(msg, "Unknown output format")
}

// gap emits g. Its Time is the host time of the last line delivered, when
// there is one, so that the marker sorts right after it.
func (f *follower) gap(g event.Gap) bool {
	now := f.opts.Now()
	at := f.realtime
	if at.IsZero() {
		at = now
	}
	return f.emit(event.Event{Host: f.opts.Host, Kind: event.KindGap, Time: at, Seen: now, Gap: &g})
}

// streamResult says how one stream ended.
type streamResult struct {
	entries int   // entries read (delivered or not)
	err     error // the command's or the transport's error
	stopped bool  // emit returned false
}

// stream reads one journalctl stream to its end. resumed is the cursor the
// command was started at ("" for a tail or time start): its first entry
// must carry it.
func (f *follower) stream(ctx context.Context, out io.ReadCloser, wait func() error, resumed string) (res streamResult) {
	stop := context.AfterFunc(ctx, func() { out.Close() })
	defer func() {
		stop()
		res.err = finish(out, wait, res.err, res.stopped || ctx.Err() != nil)
	}()
	next := entries(out, f.opts.MaxLine)
	checkFirst := resumed != ""
	sinceCut := f.seekLost && !f.realtime.IsZero()
	for {
		e, err := next()
		var bad *EntryError
		switch {
		case errors.As(err, &bad):
			if !f.gap(event.Gap{Reason: GapDropped, Count: 1, Message: bad.Error()}) {
				res.stopped = true
				return res
			}
			continue
		case err != nil:
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				res.err = err
			}
			return res
		}
		res.entries++
		if checkFirst {
			if e.Cursor == resumed {
				checkFirst = false
				continue // the entry delivered last: the cursor holds
			}
			if f.duplicate(e.Cursor) {
				continue // a repeat from before the cursor; keep looking
			}
			checkFirst = false
			f.seekLost = false
			sinceCut = !f.realtime.IsZero()
			msg := "journal cursor no longer found (journal vacuumed or rotated, host rebooted or replaced): lines after " +
				f.realtime.UTC().Format(time.RFC3339Nano) + " may be missing"
			if !f.gap(event.Gap{Reason: GapCursorLost, Message: msg}) {
				res.stopped = true
				return res
			}
		}
		if sinceCut {
			// After a lost cursor journalctl starts at the nearest entry by
			// time; skip what is older than the last line delivered.
			if e.Realtime.Before(f.realtime) || e.Cursor == f.cursor {
				continue
			}
			sinceCut = false
			f.seekLost = false
		}
		if f.duplicate(e.Cursor) {
			continue
		}
		if !f.deliver(e) {
			res.stopped = true
			return res
		}
	}
}

// entries returns the decoder of a stream: JSON when its first byte is
// '{' (a journalctl asked for JSON, or a wrapper that gives JSON whatever
// was asked), export otherwise. Either returns the stream's entries one by
// one, an *EntryError for one it cannot decode, and io.EOF or
// io.ErrUnexpectedEOF at the end.
func entries(out io.Reader, maxMsg int) func() (Entry, error) {
	br := bufio.NewReaderSize(out, 64<<10)
	if b, _ := br.Peek(1); len(b) == 0 || b[0] != '{' {
		r := NewExportReader(br, maxMsg)
		return r.Next
	}
	r := NewReader(br, lineLimit(maxMsg))
	return func() (Entry, error) {
		for {
			line, tail, oversize, err := r.Next()
			switch {
			case err != nil:
				return Entry{}, err
			case oversize:
				return DecodeOversize(line, tail), nil
			case len(line) == 0:
				continue
			}
			e, err := DecodeLimit(line, maxMsg)
			if err != nil {
				return Entry{}, &EntryError{Size: len(line), Err: err}
			}
			return e, nil
		}
	}
}

// finish closes the stream and collects the command's exit. Unless the
// stream is being abandoned (now), wait first gets a moment to report the
// exit status and stderr (which say why journalctl stopped) before the
// session is closed under it.
func finish(out io.ReadCloser, wait func() error, readErr error, now bool) error {
	if now {
		out.Close()
	}
	done := make(chan error, 1)
	go func() { done <- wait() }()
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	var err error
	select {
	case err = <-done:
	case <-t.C:
		out.Close()
		err = <-done
	}
	out.Close()
	if err == nil {
		err = readErr
	}
	return err
}

// duplicate reports whether cursor is at or before the last delivered
// entry: journalctl orders entries of one sequence-number domain (s=) by
// their sequence number (i=), so a repeat or an older entry after a resume
// shows as i not above the last one.
func (f *follower) duplicate(cursor string) bool {
	if cursor == "" {
		return false
	}
	if cursor == f.cursor {
		return true
	}
	s, i, ok := seqOf(cursor)
	return ok && s == f.seqID && i <= f.seq
}

// deliver emits e (as a journal event, or a Gap for journald's suppression
// notice about the unit) and records it as the resume point.
func (f *follower) deliver(e Entry) bool {
	if e.BootID != "" {
		if f.boot != "" && e.BootID != f.boot {
			msg := fmt.Sprintf("host rebooted (boot %.8s → %.8s): what ran before it ended there", f.boot, e.BootID)
			if !f.gap(event.Gap{Reason: GapReboot, Message: msg}) {
				return false
			}
		}
		f.boot = e.BootID
	}
	if e.Cursor != "" {
		f.cursor = e.Cursor
		if s, i, ok := seqOf(e.Cursor); ok {
			f.seqID, f.seq = s, i
		}
	}
	if !e.Realtime.IsZero() {
		f.realtime = e.Realtime
	}
	if n, ok := e.Suppressed(); ok && (e.ObjectUnit == f.unit || e.ObjectUnit == "" && strings.HasSuffix(e.Message, " "+f.unit)) {
		now := f.opts.Now()
		g := event.Gap{Reason: GapSuppressed, Count: n, Message: e.Message}
		return f.emit(event.Event{Host: f.opts.Host, Kind: event.KindGap, Time: e.Realtime, Seen: now, Gap: &g})
	}
	ev := ToEvent(f.opts.Host, e)
	ev.Seen = f.opts.Now()
	return f.emit(ev)
}

// seqOf returns the seqnum id (s=) and seqnum (i=, hex) of a cursor.
func seqOf(cursor string) (string, uint64, bool) {
	var s, i string
	for part := range strings.SplitSeq(cursor, ";") {
		switch {
		case strings.HasPrefix(part, "s="):
			s = part[2:]
		case strings.HasPrefix(part, "i="):
			i = part[2:]
		}
	}
	n, err := strconv.ParseUint(i, 16, 64)
	if s == "" || err != nil {
		return "", 0, false
	}
	return s, n, true
}

// cursorTime returns the realtime a cursor carries (t=, hex µs), or zero.
func cursorTime(cursor string) time.Time {
	for part := range strings.SplitSeq(cursor, ";") {
		if t, ok := strings.CutPrefix(part, "t="); ok {
			if us, err := strconv.ParseInt(t, 16, 64); err == nil && us > 0 {
				return time.UnixMicro(us)
			}
		}
	}
	return time.Time{}
}
