package record

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/fleet"
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
		if host.Engine != "" {
			if err := checkName(host.Engine); err != nil {
				return bad(fmt.Sprintf("hosts[%d].engine", i), err)
			}
		}
		if hosts[host.Name] {
			return bad(fmt.Sprintf("hosts[%d].name", i), fmt.Errorf("%q listed twice", host.Name))
		}
		hosts[host.Name] = true
	}
	if err := checkText(h.Source, 200); err != nil {
		return bad("source", err)
	}
	if err := h.Kernels.Validate(); err != nil {
		return bad("kernels", err)
	}
	if field, err := checkCatalog(h.Kernels); err != nil {
		return bad(field, err)
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
		r, _ := utf8.DecodeRuneInString(s[i:])
		return fmt.Errorf("%q: character %q at byte %d is not allowed in a name", s, r, i)
	}
	return nil
}

// checkText accepts a short line of printable text (no control or
// format characters), shown as it is.
func checkText(s string, limit int) error {
	if i := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }); i >= 0 || len(s) > limit {
		return fmt.Errorf("%q: not a short line of printable text", s)
	}
	return nil
}

// checkCatalog holds the recording's kernel catalog to what a config file
// may say: the console shows its names, modes and descriptions as they
// are, outside the events the fleet sanitises. It returns the field at
// fault.
func checkCatalog(cat kernels.Catalog) (field string, err error) {
	type value struct {
		field, s string
		check    func(string) error
	}
	// A config sets no length on these; the bound only stops a crafted
	// file from handing the console megabytes.
	text := func(s string) error { return checkText(s, 4096) }
	for i, k := range cat.Kernels {
		f := fmt.Sprintf("kernels[%d]", i)
		vals := []value{{f + ".name", k.Name, checkName}, {f + ".env_var", k.EnvVar, checkName},
			{f + ".pythonpath", k.PythonPath, text}, {f + ".local_dir", k.LocalDir, text}, {f + ".remote_dir", k.RemoteDir, text}}
		for j, m := range k.Modes {
			mf := fmt.Sprintf("%s.modes[%d]", f, j)
			vals = append(vals, value{mf + ".name", m.Name, checkName}, value{mf + ".description", m.Description, text})
		}
		for _, v := range vals {
			if err := v.check(v.s); err != nil {
				return v.field, err
			}
		}
	}
	return "", nil
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
		event.KindConn, event.KindAction, event.KindGap, event.KindCommand, event.KindClock:
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
	case event.KindClock:
		return e.Clock != nil
	}
	return false
}

// ErrReplay refuses actions: a recording cannot be changed.
var ErrReplay = errors.New("this is a recording: nothing can be changed")

// Clock runs the recording's host clock from its start at speed times
// real time, and stops at its end: a finished replay shows the hosts as
// they were when the recording ended, not ageing phases nobody saw.
//
// The person watching may pause it and change its speed while it runs
// (the UI goroutine calls Pause, Resume and SetSpeed while the players
// read Now), so it is guarded by a mutex. Every change rebases the clock
// at the current host time, so host time never jumps.
type Clock struct {
	mu     sync.Mutex
	base   time.Time // host time at start
	end    time.Time // host time of the last recorded event
	start  time.Time // real time of the last rebase (the start of the replay, a resume, a speed change)
	speed  float64
	paused bool
	real   func() time.Time
	// changed is closed, and replaced, on every pause, resume and speed
	// change, so that waiting players look again at once.
	changed chan struct{}
	// playing counts the players yet to emit their last entry; played is
	// closed when none is left (EndContext).
	playing int
	played  chan struct{}
}

// ErrEnded is the cause of a context ended by Clock.EndContext: every
// host has played its last recorded event. A reader waiting for hosts to
// settle would wait for ever on a recording that ended before they did.
var ErrEnded = errors.New("the recording ended before every host settled")

// endGrace is how long after the players' last events EndContext waits
// before it ends its context: the fleet hands out what they emitted in a
// batch within its flush (50 ms), or within a second for what may wait
// (samples, a steady host's lines); twice that leaves room for a loaded
// machine.
const endGrace = 2 * time.Second

// EndContext returns a context that ends with cause ErrEnded once every
// host of the recording has played its last event and the fleet has had
// endGrace to fold and hand it out, or when ctx ends. Call the returned
// func to release it; it stops the goroutine that watches the players.
func (c *Clock) EndContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return c.endContext(ctx, endGrace)
}

func (c *Clock) endContext(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-c.played:
		case <-ctx.Done():
			return
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-t.C:
			cancel(ErrEnded)
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		cancel(nil)
		<-done
	}
}

// playerDone counts a player that has emitted its last entry.
func (c *Clock) playerDone() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.playing--
	if c.playing == 0 {
		close(c.played)
	}
}

// Bounds of Faster and Slower; a replay started outside them stays where
// it is rather than jump into them.
const (
	MinSpeed = 1
	MaxSpeed = 10000
)

// Now is the host time of the replay.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked()
}

func (c *Clock) nowLocked() time.Time {
	t := c.base
	if !c.paused {
		t = t.Add(time.Duration(float64(c.real().Sub(c.start)) * c.speed))
	}
	if t.After(c.end) {
		return c.end
	}
	return t
}

// rebaseLocked makes the current host time and real time the clock's new
// origin, before its speed or pause changes.
func (c *Clock) rebaseLocked() {
	c.base, c.start = c.nowLocked(), c.real()
}

// signalLocked wakes the players waiting on the clock.
func (c *Clock) signalLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Ended reports whether the replay has reached the end of the recording.
func (c *Clock) Ended() bool { return !c.Now().Before(c.end) }

// Speed is the replay's speed against real time.
func (c *Clock) Speed() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.speed
}

// Paused reports whether the replay is paused.
func (c *Clock) Paused() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused
}

// Pause stops host time where it is until Resume.
func (c *Clock) Pause() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setPausedLocked(true)
}

// Resume lets host time run on from where Pause stopped it.
func (c *Clock) Resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setPausedLocked(false)
}

// TogglePause pauses a running replay and resumes a paused one; it
// reports whether the replay is now paused.
func (c *Clock) TogglePause() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setPausedLocked(!c.paused)
	return c.paused
}

func (c *Clock) setPausedLocked(paused bool) {
	switch {
	case paused == c.paused:
		return
	case paused:
		c.rebaseLocked()
	default:
		c.start = c.real() // host time goes on from base
	}
	c.paused = paused
	c.signalLocked()
}

// SetSpeed runs the replay at speed times real time from now on; host
// time goes on from where it is. A speed ≤ 0 is ignored.
func (c *Clock) SetSpeed(speed float64) {
	c.scaleSpeed(func(float64) float64 { return speed })
}

// Faster doubles the speed, up to MaxSpeed, and returns it.
func (c *Clock) Faster() float64 {
	return c.scaleSpeed(func(s float64) float64 { return min(s*2, max(s, MaxSpeed)) })
}

// Slower halves the speed, down to MinSpeed, and returns it.
func (c *Clock) Slower() float64 {
	return c.scaleSpeed(func(s float64) float64 { return max(s/2, min(s, MinSpeed)) })
}

// scaleSpeed sets the speed to f of the current one (ignored when ≤ 0)
// and returns the speed in force.
func (c *Clock) scaleSpeed(f func(float64) float64) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	speed := f(c.speed)
	if speed <= 0 || speed == c.speed {
		return c.speed
	}
	c.rebaseLocked()
	c.speed = speed
	c.signalLocked()
	return c.speed
}

// until is how long, in real time at the current speed, until host time
// reaches at (≤ 0: it has), and the channel closed at the clock's next
// change. While paused the wait is as long as a Duration goes.
func (c *Clock) until(at time.Time) (time.Duration, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	left := at.Sub(c.nowLocked())
	switch {
	case left <= 0:
		return 0, c.changed
	case c.paused:
		return math.MaxInt64, c.changed
	}
	return max(time.Duration(float64(left)/c.speed), 1), c.changed
}

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
// it was recorded at). realNow is the source of real time (nil: time.Now).
func (rec *Recording) Play(speed float64, realNow func() time.Time) ([]fleet.HostSpec, *Clock) {
	if speed <= 0 {
		speed = rec.Speed
	}
	if realNow == nil {
		realNow = time.Now
	}
	clock := &Clock{base: rec.Started, end: rec.End(), start: realNow(), speed: speed, real: realNow, changed: make(chan struct{}),
		playing: len(rec.Hosts), played: make(chan struct{})}
	if len(rec.Hosts) == 0 {
		close(clock.played)
	}
	byHost := map[string][]Entry{}
	for _, e := range rec.Entries {
		byHost[e.Host] = append(byHost[e.Host], e)
	}
	specs := make([]fleet.HostSpec, len(rec.Hosts))
	for i, h := range rec.Hosts {
		specs[i] = fleet.HostSpec{
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

// maxStep bounds each wait of a player: it looks at the clock again at
// least this often (in real time), so a clock whose source of real time is
// not the wall clock (a test's) still lets it out.
const maxStep = 100 * time.Millisecond

// Run emits each entry when the replay clock reaches it, says it has
// (Clock.EndContext), then waits for the end: a finished replay keeps
// showing how the hosts ended. It waits
// in bounded steps and wakes on every change of the clock, so a pause or
// a new speed takes effect at once.
func (p *player) Run(ctx context.Context, emit remote.Emit) error {
	t := time.NewTimer(maxStep)
	t.Stop()
	defer t.Stop()
	for _, e := range p.entries {
		for {
			wait, changed := p.clock.until(e.At)
			if wait <= 0 {
				break
			}
			t.Reset(min(wait, maxStep))
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-changed:
				t.Stop() // since Go 1.23 no stale tick follows Stop
			case <-t.C:
			}
		}
		if !emit(e.Event) {
			return ctx.Err()
		}
	}
	p.clock.playerDone()
	<-ctx.Done()
	return ctx.Err()
}

// Do refuses every action.
func (p *player) Do(_ context.Context, a remote.Action, _ remote.Emit) error {
	return fmt.Errorf("%s on %s: %w", a, p.name, ErrReplay)
}

// Position is the console header's word on where the replay stands: the
// host time it shows and the recording's end, paused (⏸) or playing (▶)
// and at what speed, or ended (■).
func (c *Clock) Position() string {
	endText := c.end.Local().Format("15:04:05")
	if c.Ended() {
		return "■ ended " + endText
	}
	mark := "▶"
	if c.Paused() {
		mark = "⏸"
	}
	return fmt.Sprintf("%s %s of %s ×%g", mark, c.Now().Local().Format("15:04:05"), endText, c.Speed())
}
