// Package logfile reads a saved service log — a paste from a ticket,
// `journalctl -u UNIT` output in its short, short-iso, short-precise, cat or
// json format, or a file of engine output — into the journal events a live
// host would have sent, so that `bringup explain` runs the same phase engine
// on it as the console does on a live host.
//
// Times come from the log itself: journald's timestamp in JSON, journalctl's
// prefix, else the engine's own prefix (SGLang's `[2025-01-24 09:39:20 TP0]`,
// vLLM's `INFO 08-05 09:09:26`); a line without one gets the time of the
// line before. Every message passes through the one sanitiser.
package logfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/journal"
	"github.com/bringup-dev/bringup/remote/sanitize"
	"github.com/bringup-dev/bringup/remote/startup"
)

// Format is the shape a log was read as.
type Format string

// The formats Read tells apart, line by line.
const (
	FormatJSON    Format = "json"    // journalctl -o json
	FormatJournal Format = "journal" // journalctl short, short-iso, short-precise
	FormatPlain   Format = "plain"   // engine output, journalctl -o cat, a paste
)

// Options says what the log itself cannot.
type Options struct {
	// Host names the host the events are from.
	Host string
	// Year dates stamps that carry none (vLLM's `08-05 09:09:26`,
	// journalctl's `Jan 28 10:40:03`).
	Year int
}

// Log is a saved log read into events, with what Scan saw of it.
type Log struct {
	Events []event.Event
	Summary
}

// maxLine is the longest line read; journalctl -o json of a 48 KiB
// message with byte arrays runs to a few hundred KiB.
const maxLine = 4 << 20

// maxUntimed is how many lines Scan holds back while none has carried a
// time, to give them the first time a later line carries (a paste often
// starts with lines that have none). Past it the held lines go out with
// the log's default time: the memory a log takes is bounded by what it
// says, never by its length.
const maxUntimed = 50_000

// Summary is what Scan saw of a whole log.
type Summary struct {
	// Lines is how many lines became events.
	Lines int
	// Format is the format most of its lines had.
	Format Format
	// Timed reports whether any line carried a time: without one, every
	// event has the same time and durations mean nothing.
	Timed bool
}

// Read reads a whole log into memory. name is used in errors
// ("name:12: …"), which name the line; a line that is not valid in its
// format is an error rather than silently dropped. Scan reads one line at
// a time instead.
func Read(r io.Reader, name string, opts Options) (Log, error) {
	var out Log
	sum, err := Scan(r, name, opts, func(ev event.Event) error {
		out.Events = append(out.Events, ev)
		return nil
	})
	if err != nil {
		return Log{}, err
	}
	out.Summary = sum
	return out, nil
}

// Scan reads a log line by line and hands each event to fn in order, as
// Read would have returned them; an error from fn stops it. Only the
// leading lines without a time are held (maxUntimed at most).
func Scan(r io.Reader, name string, opts Options, fn func(event.Event) error) (Summary, error) {
	return ScanLines(r, name, opts, func(ev event.Event, _ Line) error { return fn(ev) })
}

// Line is where an event came from in the log.
type Line struct {
	// N is its line number, from 1.
	N int
	// OwnTime says the line carried its time; without, the event has the
	// time of the line before (or, leading the log, of the first line
	// that has one), and a duration measured to it means little.
	OwnTime bool
}

// ScanLines is Scan, with each event's line.
func ScanLines(r io.Reader, name string, opts Options, fn func(event.Event, Line) error) (Summary, error) {
	if opts.Year == 0 {
		opts.Year = 2000
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var (
		sum         Summary
		counts      = map[Format]int{}
		p           = parser{opts: opts}
		held        []event.Event // leading lines with no time yet
		heldAt      []int         // their line numbers
		holding     = true
		lines, bins int    // lines with text, and those of them that are binary data
		head        []byte // the first bytes read, to say what binary data is
	)
	release := func(at time.Time) error {
		holding = false
		for i, ev := range held {
			ev.Time = at
			if err := fn(ev, Line{N: heldAt[i]}); err != nil {
				return err
			}
		}
		held, heldAt = nil, nil
		return nil
	}
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(head) < 8 {
			head = append(head, line[:min(len(line), 8-len(head))]...)
		}
		if len(bytes.TrimSpace(line)) > 0 {
			lines++
			if binary(line) {
				bins++
			}
		}
		ev, f, ok, err := p.line(line)
		if err != nil {
			return Summary{}, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		if !ok {
			continue
		}
		counts[f]++
		sum.Lines++
		ev.Host = opts.Host
		switch {
		case holding && ev.Time.IsZero() && len(held) < maxUntimed:
			held, heldAt = append(held, ev), append(heldAt, n)
			continue
		case holding && ev.Time.IsZero():
			if err := release(p.defaultTime()); err != nil {
				return Summary{}, err
			}
		case holding:
			if err := release(ev.Time); err != nil {
				return Summary{}, err
			}
		}
		own := p.ownTime
		if ev.Time.IsZero() {
			ev.Time = p.defaultTime()
		}
		if err := fn(ev, Line{N: n, OwnTime: own}); err != nil {
			return Summary{}, err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Summary{}, fmt.Errorf("%s: a line is longer than %d MiB", name, maxLine>>20)
		}
		return Summary{}, fmt.Errorf("%s: %w", name, err)
	}
	if bins > 0 && 2*bins >= lines {
		return Summary{}, fmt.Errorf("%s: not a log: %d of its %d lines are binary data, not text%s", name, bins, lines, binaryHint(head))
	}
	if err := release(p.defaultTime()); err != nil {
		return Summary{}, err
	}
	sum.Format = FormatPlain
	for _, f := range []Format{FormatJSON, FormatJournal} {
		if counts[f] > counts[sum.Format] {
			sum.Format = f
		}
	}
	sum.Timed = p.timed
	return sum, nil
}

// binary reports whether a line is binary data rather than text: more
// than an eighth of its bytes are control bytes no log line holds (NUL
// and the like; tabs, carriage returns, backspaces and escapes are a
// log's) or not UTF-8. A log in Latin-1 or with a stray control byte
// stays text; random bytes are about half such bytes.
func binary(line []byte) bool {
	odd := 0
	for i := 0; i < len(line); {
		r, size := utf8.DecodeRune(line[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			odd++
		case r < 0x20 && r != '\t' && r != '\r' && r != '\b' && r != '\f' && r != '\v' && r != 0x1b, r == 0x7f:
			odd++
		}
		i += max(size, 1)
	}
	return odd*8 > len(line)
}

// binaryHint says what binary data looks like, from its first bytes, when
// it is a kind of file a log is often kept in.
func binaryHint(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return " (gzip-compressed: zcat it into bringup explain -)"
	case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return " (zstd-compressed: zstdcat it into bringup explain -)"
	case bytes.HasPrefix(head, []byte("\xfd7zXZ")):
		return " (xz-compressed: xzcat it into bringup explain -)"
	case bytes.HasPrefix(head, []byte("LPKSHHRH")):
		return " (a journal file: journalctl --file FILE -o json | bringup explain -)"
	}
	return ""
}

// parser carries what one line tells the next: the last time and date seen.
type parser struct {
	opts  Options
	last  time.Time // the last time read from a line
	date  time.Time // the last full date, for time-only stamps
	timed bool
	// ownTime says the line just read carried a time (note read one).
	ownTime bool
}

// line turns one line into an event; ok is false for lines that carry no
// message (journalctl's "-- Boot … --" markers).
func (p *parser) line(b []byte) (event.Event, Format, bool, error) {
	p.ownTime = false
	b = bytes.TrimRight(b, "\r\n")
	if len(b) > 0 && b[0] == '{' && bytes.Contains(b, []byte(`"MESSAGE"`)) {
		e, err := journal.Decode(b)
		if err != nil {
			return event.Event{}, "", false, fmt.Errorf("journal JSON: %w", err)
		}
		ev := journal.ToEvent("", e)
		ev.Journal.Message, _ = sanitize.Line(ev.Journal.Message, sanitize.DefaultMax)
		// journald's clock steps back too (an NTP correction, a merged
		// journal): its time goes through note like any other, and an
		// entry without one takes the line before's.
		if !e.Realtime.IsZero() {
			p.note(e.Realtime)
		}
		ev.Time = p.last
		return ev, FormatJSON, true, nil
	}
	// journald drops a stream line's trailing whitespace; so does this,
	// so that a saved log and the same text live say the same.
	s := strings.TrimRight(string(b), " \t")
	if strings.HasPrefix(s, "-- ") && strings.HasSuffix(s, " --") {
		return event.Event{}, "", false, nil
	}
	j := &event.Journal{Priority: 6}
	f := FormatPlain
	if jl, ok := startup.ParseJournalLine(s); ok {
		f, s = FormatJournal, s[jl.Len:]
		p.note(p.journalTime(jl))
		// PID 1's lines (systemd[1]) are the unit's lifecycle to the
		// tracker, as they are live.
		j.PID = jl.PID
	} else if at, ok := p.engineTime(s); ok {
		p.note(at)
	}
	j.Message, _ = sanitize.Line(s, sanitize.DefaultMax)
	return event.Event{Kind: event.KindJournal, Time: p.last, Journal: j}, f, true, nil
}

// journalTime dates a journalctl stamp: short stamps carry no year (the
// option's, or that of the line before), and a month name in another
// language is taken as the month of the line before.
func (p *parser) journalTime(jl startup.JournalLine) time.Time {
	if jl.ISO {
		return jl.Time
	}
	year, month := p.opts.Year, jl.Time.Month()
	if !p.last.IsZero() {
		year = p.last.Year()
		if !jl.MonthKnown {
			month = p.last.Month()
		}
	}
	t := jl.Time
	return time.Date(year, month, t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// note records a time read from a line. Times never go backwards: clocks of
// processes and of a collector can disagree by a second, and the phase
// engine measures spans by them.
func (p *parser) note(at time.Time) {
	p.timed, p.ownTime = true, true
	if at.After(p.last) || p.last.IsZero() {
		p.last = at
	}
	p.date = time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC)
}

// defaultTime is the time of lines while no line has carried one: the
// first day of the option's year.
func (p *parser) defaultTime() time.Time {
	return time.Date(p.opts.Year, 1, 1, 0, 0, 0, 0, time.UTC)
}

// engineTime reads the time an engine's logger put on a line
// (startup.EngineStamp finds it behind a paste's prefixes).
func (p *parser) engineTime(s string) (time.Time, bool) {
	stamp := startup.EngineStamp(s)
	if stamp == "" {
		return time.Time{}, false
	}
	if t, err := time.Parse("2006-01-02 15:04:05", stamp); err == nil {
		return t, true
	}
	if t, err := time.Parse("01-02 15:04:05", stamp); err == nil {
		return t.AddDate(p.opts.Year, 0, 0), true
	}
	if t, err := time.Parse("15:04:05", stamp); err == nil {
		// SGLang 0.3 printed the time alone: the date of the line before,
		// or the option's year when no line had one (the durations are
		// what matter).
		date := p.date
		if date.IsZero() {
			date = time.Date(p.opts.Year, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		return date.Add(t.Sub(time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC))), true
	}
	return time.Time{}, false
}
