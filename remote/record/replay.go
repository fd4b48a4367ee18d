package record

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode"

	"bringup/remote"
	"bringup/remote/event"
)

// Recording is a loaded recording.
type Recording struct {
	Path string
	Header
	// Entries are the recorded events in file order.
	Entries []Entry
	// Truncated is set when the file's last line was cut short (the
	// recorder was killed mid-write); that line is left out.
	Truncated bool
}

// LineError is a recording line that cannot be read; it names the file,
// the line and, where one is at fault, the field.
type LineError struct {
	Path  string
	Line  int
	Field string
	Err   error
}

func (e *LineError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s:%d: %s: %v", e.Path, e.Line, e.Field, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// Load reads the recording at path.
func Load(path string) (*Recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	defer f.Close()
	return Read(path, f)
}

// Read reads a recording from r; path names it in errors.
func Read(path string, r io.Reader) (*Recording, error) {
	rec := &Recording{Path: path}
	br := bufio.NewReaderSize(r, 64<<10)
	hosts := map[string]bool{}
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		complete := bytes.HasSuffix(line, []byte("\n"))
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			if errors.Is(err, io.EOF) {
				break
			}
			if n == 1 {
				return nil, &LineError{Path: path, Line: n, Err: errors.New("empty line where the header belongs")}
			}
			continue
		}
		if n == 1 {
			if err := rec.readHeader(path, line, hosts); err != nil {
				return nil, err
			}
		} else if lerr := rec.readEntry(path, n, line, hosts); lerr != nil {
			if !complete {
				// The last line, cut off by a killed recorder: everything
				// before it is whole.
				rec.Truncated = true
				break
			}
			return nil, lerr
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if rec.Format == "" {
		return nil, &LineError{Path: path, Line: 1, Err: errors.New("empty file: not a bringup recording")}
	}
	return rec, nil
}

func (rec *Recording) readHeader(path string, line []byte, hosts map[string]bool) error {
	bad := func(field string, err error) error { return &LineError{Path: path, Line: 1, Field: field, Err: err} }
	var h Header
	if err := json.Unmarshal(line, &h); err != nil {
		return bad("", fmt.Errorf("not a bringup recording: %w", err))
	}
	if h.Format != Format {
		return bad("format", fmt.Errorf("%q: not a bringup recording of this version (want %q)", h.Format, Format))
	}
	if h.Started.IsZero() {
		return bad("started", errors.New("missing"))
	}
	if h.Speed <= 0 {
		return bad("speed", fmt.Errorf("%v: must be greater than 0", h.Speed))
	}
	if len(h.Hosts) == 0 {
		return bad("hosts", errors.New("no hosts"))
	}
	for i, host := range h.Hosts {
		if err := checkName(host.Name); err != nil {
			return bad(fmt.Sprintf("hosts[%d].name", i), err)
		}
		if err := checkName(host.Unit); err != nil {
			return bad(fmt.Sprintf("hosts[%d].unit", i), err)
		}
		if hosts[host.Name] {
			return bad(fmt.Sprintf("hosts[%d].name", i), fmt.Errorf("%q listed twice", host.Name))
		}
		hosts[host.Name] = true
	}
	if i := strings.IndexFunc(h.Source, func(r rune) bool { return !unicode.IsPrint(r) }); i >= 0 || len(h.Source) > 200 {
		return bad("source", fmt.Errorf("%q: not a short line of printable text", h.Source))
	}
	if err := h.Kernels.Validate(); err != nil {
		return bad("kernels", err)
	}
	rec.Header = h
	return nil
}

// checkName accepts the names a recording may put on screen as they are:
// host and unit names are printable, without spaces or control characters.
func checkName(s string) error {
	if s == "" {
		return errors.New("empty")
	}
	if len(s) > 255 {
		return fmt.Errorf("%d bytes long (at most 255)", len(s))
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }); i >= 0 {
		return fmt.Errorf("%q: character %q at byte %d is not allowed in a name", s, s[i], i)
	}
	return nil
}

func (rec *Recording) readEntry(path string, n int, line []byte, hosts map[string]bool) error {
	bad := func(field string, err error) error { return &LineError{Path: path, Line: n, Field: field, Err: err} }
	var e Entry
	if err := json.Unmarshal(line, &e); err != nil {
		return bad("", fmt.Errorf("bad entry: %w", err))
	}
	switch {
	case !hosts[e.Host]:
		return bad("host", fmt.Errorf("%q is not one of the recording's hosts", e.Host))
	case !knownKind(e.Kind):
		return bad("kind", fmt.Errorf("unknown kind %q", e.Kind))
	case e.At.IsZero():
		return bad("at", errors.New("missing"))
	case !hasPayload(e.Event):
		return bad(string(e.Kind), errors.New("missing: the event has no payload of its kind"))
	}
	rec.Entries = append(rec.Entries, e)
	return nil
}

// knownKind reports whether k is a kind of event this build knows.
func knownKind(k event.Kind) bool {
	switch k {
	case event.KindJournal, event.KindUnit, event.KindProbe, event.KindGPU,
		event.KindConn, event.KindAction, event.KindGap, event.KindCommand:
		return true
	}
	return false
}

// hasPayload reports whether the payload field matching the event's kind is set.
func hasPayload(e event.Event) bool {
	switch e.Kind {
	case event.KindJournal:
		return e.Journal != nil
	case event.KindUnit:
		return e.Unit != nil
	case event.KindProbe:
		return e.Probe != nil
	case event.KindGPU:
		return e.GPU != nil
	case event.KindConn:
		return e.Conn != nil
	case event.KindAction:
		return e.Action != nil
	case event.KindGap:
		return e.Gap != nil
	case event.KindCommand:
		return e.Command != nil
	}
	return false
}

// ErrReplay refuses actions: a recording cannot be changed.
var ErrReplay = errors.New("this is a recording: nothing can be changed")

// Clock runs the recording's host clock from its start at speed times
// real time, and stops at its end: a finished replay shows the hosts as
// they were when the recording ended, not ageing phases nobody saw.
type Clock struct {
	base  time.Time // host time at the start of the replay
	end   time.Time // host time of the last recorded event
	start time.Time // real time at the start of the replay
	speed float64
	real  func() time.Time
}

// Now is the host time of the replay.
func (c *Clock) Now() time.Time {
	t := c.base.Add(time.Duration(float64(c.real().Sub(c.start)) * c.speed))
	if t.After(c.end) {
		return c.end
	}
	return t
}

// Ended reports whether the replay has reached the end of the recording.
func (c *Clock) Ended() bool { return !c.Now().Before(c.end) }

// Speed is the replay's speed against real time.
func (c *Clock) Speed() float64 { return c.speed }

// End is the host time of the recording's last event (its start when it
// has none).
func (rec *Recording) End() time.Time {
	end := rec.Started
	for _, e := range rec.Entries {
		if e.At.After(end) {
			end = e.At
		}
	}
	return end
}

// Play returns the recording's hosts as fleet specs whose drivers emit the
// recorded events on the returned clock, which starts now at the
// recording's start and runs speed times real time (speed ≤ 0: the speed
// it was recorded at). real is the source of real time (nil: time.Now).
func (rec *Recording) Play(speed float64, real func() time.Time) ([]remote.HostSpec, *Clock) {
	if speed <= 0 {
		speed = rec.Speed
	}
	if real == nil {
		real = time.Now
	}
	clock := &Clock{base: rec.Started, end: rec.End(), start: real(), speed: speed, real: real}
	byHost := map[string][]Entry{}
	for _, e := range rec.Entries {
		byHost[e.Host] = append(byHost[e.Host], e)
	}
	specs := make([]remote.HostSpec, len(rec.Hosts))
	for i, h := range rec.Hosts {
		specs[i] = remote.HostSpec{
			Driver: &player{name: h.Name, entries: byHost[h.Name], clock: clock},
			Unit:   h.Unit, Engine: h.Engine,
		}
	}
	return specs, clock
}

// player is one recorded host.
type player struct {
	name    string
	entries []Entry
	clock   *Clock
}

func (p *player) Name() string { return p.name }

// Run emits each entry when the replay clock reaches it, then waits for
// the end: a finished replay keeps showing how the hosts ended.
func (p *player) Run(ctx context.Context, emit remote.Emit) error {
	for _, e := range p.entries {
		if wait := e.At.Sub(p.clock.Now()); wait > 0 {
			t := time.NewTimer(time.Duration(float64(wait) / p.clock.speed))
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		if !emit(e.Event) {
			return ctx.Err()
		}
	}
	<-ctx.Done()
	return ctx.Err()
}

// Do refuses every action.
func (p *player) Do(_ context.Context, a remote.Action, _ remote.Emit) error {
	return fmt.Errorf("%s on %s: %w", a, p.name, ErrReplay)
}
