// Package record keeps a fleet's events in a file and plays them back: the
// recorder wraps each host's driver and writes every event it emits, as one
// JSON object per line, and a recording loads into drivers that emit the
// same events again on a scaled clock. An incident recorded during a
// rollout can then be walked through, and shown, without the hosts.
//
// The file is JSON lines. The first line is the Header; each later line is
// one Entry: an event as the driver emitted it (before the fleet sanitises
// it: a recording is as untrusted as the hosts were, and goes through the
// same sanitiser on replay) with the host-clock reading when it came in.
package record

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/fleet"
)

// Format names the file format and its version in the header.
const Format = "bringup-record/1"

// errClosed refuses events that arrive after Close.
var errClosed = errors.New("recording closed")

// flushEvery bounds how much a killed process can lose: the buffer is
// written out at least this often while events arrive.
const flushEvery = time.Second

// Header is the first line of a recording: what the fleet was.
type Header struct {
	Format string `json:"format"`
	// Started is the host-clock time the recording began.
	Started time.Time `json:"started"`
	// Speed is how fast the host clock ran against real time while
	// recording (1 for real hosts, the simulation's speed for the demo);
	// replay runs at it unless told otherwise.
	Speed   float64         `json:"speed"`
	Source  string          `json:"source,omitempty"` // what was recorded, e.g. "demo seed", "live"
	Hosts   []Host          `json:"hosts"`
	Kernels kernels.Catalog `json:"kernels"`
	// KeepEnv says the units' Environment was recorded whole
	// (--record-env). Otherwise every value but those the replay needs
	// (the kernels' mode variables and PYTHONPATH) is Redacted, and so
	// are the secrets of ExecStart (RedactArgv): the Environment and the
	// command line of an inference unit carry tokens and keys, and a
	// recording is a file people pass around.
	KeepEnv bool `json:"keep_env,omitempty"`
}

// Redacted stands for an Environment value left out of a recording.
const Redacted = "<redacted>"

// Host is one recorded host.
type Host struct {
	Name   string `json:"name"`
	Unit   string `json:"unit"`
	Engine string `json:"engine,omitempty"`
}

// Entry is one recorded event: the event and the host-clock time at which
// the fleet would have received it (the replay schedules by it).
type Entry struct {
	At time.Time `json:"at"`
	event.Event
}

// Recorder writes events to a recording file. It is safe for concurrent
// use by every host's driver. Close it when the fleet has stopped.
type Recorder struct {
	clock remote.Clock // the host-time clock of the recording fleet
	path  string
	// keepVals names the Environment variables whose values are recorded;
	// nil when every value is (Header.KeepEnv).
	keepVals map[string]bool

	mu     sync.Mutex
	f      *os.File
	w      *bufio.Writer
	n      int
	err    error // the first write error; later writes are refused
	dirty  bool
	closed bool // Close ran: events still coming from a host are dropped

	stop chan struct{}
	done chan struct{}
}

// Create starts a recording at path (truncating it) with header h; h.Format
// and h.Started are filled in. Events are stamped with clock.
func Create(path string, h Header, clock remote.Clock) (*Recorder, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	h.Format = Format
	h.Started = clock.Now()
	if h.Speed <= 0 {
		h.Speed = 1
	}
	r := &Recorder{clock: clock, path: path, f: f, w: bufio.NewWriterSize(f, 64<<10),
		stop: make(chan struct{}), done: make(chan struct{})}
	if !h.KeepEnv {
		r.keepVals = map[string]bool{"PYTHONPATH": true}
		for _, k := range h.Kernels.Kernels {
			r.keepVals[k.EnvVar] = true
		}
	}
	if err := r.writeLine(h); err != nil {
		f.Close()
		return nil, err
	}
	go r.flusher()
	return r, nil
}

// flusher writes the buffer out every flushEvery until Close.
func (r *Recorder) flusher() {
	defer close(r.done)
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.mu.Lock()
			if r.dirty && r.err == nil {
				if err := r.w.Flush(); err != nil {
					r.err = fmt.Errorf("record %s: %w", r.path, err)
				}
				r.dirty = false
			}
			r.mu.Unlock()
		}
	}
}

func (r *Recorder) writeLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("record %s: encode: %w", r.path, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errClosed
	}
	if r.err != nil {
		return r.err
	}
	b = append(b, '\n')
	if _, err := r.w.Write(b); err != nil {
		r.err = fmt.Errorf("record %s: %w", r.path, err)
		return r.err
	}
	r.dirty = true
	return nil
}

// Add records ev. A write error is kept (Err, Close) rather than returned:
// a full disk must not stop the console watching the fleet.
func (r *Recorder) Add(ev event.Event) {
	if ev.Seen.IsZero() {
		ev.Seen = time.Now()
	}
	if u := ev.Unit; u != nil && r.keepVals != nil && (len(u.Environment) > 0 || u.ExecStart != "") {
		redacted := *u // a copy: the fleet gets the event as the host sent it
		redacted.Environment = RedactEnv(u.Environment, r.keepVals)
		redacted.ExecStart = RedactArgv(u.ExecStart)
		ev.Unit = &redacted
	}
	if err := r.writeLine(Entry{At: r.clock.Now(), Event: ev}); err == nil {
		r.mu.Lock()
		r.n++
		r.mu.Unlock()
	}
}

// RedactEnv returns env (KEY=VALUE entries) with every value whose key
// is not in keep replaced by Redacted; the keys stay, so a reader still
// sees what was set.
func RedactEnv(env []string, keep map[string]bool) []string {
	out := make([]string, len(env))
	for i, kv := range env {
		k, _, ok := strings.Cut(kv, "=")
		switch {
		case !ok:
			out[i] = Redacted
		case keep[k]:
			out[i] = kv
		default:
			out[i] = k + "=" + Redacted
		}
	}
	return out
}

// RedactArgv returns a command line (a unit's ExecStart) with the values
// of secret-named options (`--api-key X`, `--hf-token=X`), of secret-named
// variable assignments (`env HF_TOKEN=X python …`) and the credentials of
// URLs (`https://user:pass@host`) replaced by Redacted. Everything else
// stays: the replay's preflight reads the CUDA graph flags and the engine
// from it. Whitespace between words is kept as it was.
func RedactArgv(argv string) string {
	if argv == "" {
		return ""
	}
	var b strings.Builder
	redactNext := false
	for i := 0; i < len(argv); {
		j := i
		for j < len(argv) && isSpace(argv[j]) {
			j++
		}
		b.WriteString(argv[i:j])
		if j == len(argv) {
			break
		}
		k := j
		for k < len(argv) && !isSpace(argv[k]) {
			k++
		}
		word := argv[j:k]
		i = k
		if redactNext && !strings.HasPrefix(word, "-") {
			redactNext = false
			b.WriteString(Redacted)
			continue
		}
		redactNext = false
		name, value, assigned := strings.Cut(word, "=")
		switch {
		case strings.HasPrefix(name, "-") && secretName(strings.TrimLeft(name, "-")):
			if !assigned {
				redactNext = true
				b.WriteString(word)
				continue
			}
			b.WriteString(name + "=" + Redacted)
		case assigned && isEnvName(name) && secretName(name) && value != "":
			b.WriteString(name + "=" + Redacted)
		default:
			b.WriteString(redactURLCredentials(word))
		}
	}
	return b.String()
}

// secretWords are the parts of an option or variable name (split at - and
// _) that mark its value as a secret. Whole parts only: --tokenizer-path
// and --ssl-keyfile name files, not secrets.
var secretWords = map[string]bool{
	"key": true, "apikey": true, "token": true, "secret": true, "password": true,
	"passwd": true, "pass": true, "credential": true, "credentials": true,
}

func secretName(name string) bool {
	for part := range strings.FieldsFuncSeq(strings.ToLower(name), func(r rune) bool { return r == '-' || r == '_' }) {
		if secretWords[part] {
			return true
		}
	}
	return false
}

// isEnvName reports whether s is a shell variable name.
func isEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, c := range []byte(s) {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// redactURLCredentials replaces the user:password of a URL in word.
func redactURLCredentials(word string) string {
	scheme, rest, ok := strings.Cut(word, "://")
	if !ok {
		return word
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndexByte(rest[:end], '@')
	if at < 0 {
		return word
	}
	return scheme + "://" + Redacted + rest[at:]
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' }

// Count is how many events were recorded.
func (r *Recorder) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Err is the first write error, if any.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Close flushes and syncs the file and closes it; it reports the first
// error of the whole recording.
func (r *Recorder) Close() error {
	close(r.stop)
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	err := r.err
	if err == nil {
		err = r.w.Flush()
	}
	if err == nil {
		err = r.f.Sync()
	}
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	if err != nil && r.err == nil {
		err = fmt.Errorf("record %s: %w", r.path, err)
	}
	return err
}

// Wrap returns d with every event it emits (from Run and from Do) also
// recorded.
func (r *Recorder) Wrap(d remote.Driver) remote.Driver { return recorded{d: d, r: r} }

type recorded struct {
	d remote.Driver
	r *Recorder
}

func (x recorded) Name() string { return x.d.Name() }

func (x recorded) tap(emit remote.Emit) remote.Emit {
	return func(ev event.Event) bool {
		if ev.Seen.IsZero() {
			ev.Seen = time.Now()
		}
		x.r.Add(ev)
		return emit(ev)
	}
}

func (x recorded) Run(ctx context.Context, emit remote.Emit) error {
	return x.d.Run(ctx, x.tap(emit))
}

func (x recorded) Do(ctx context.Context, a remote.Action, emit remote.Emit) error {
	return x.d.Do(ctx, a, x.tap(emit))
}

// Start creates a recording at path of the fleet that specs and opts
// describe (speed and source go into its header) and wraps each driver of
// specs so that every event it emits is recorded; the units' Environment
// values are redacted unless keepEnv.
func Start(path string, specs []fleet.HostSpec, opts fleet.Options, speed float64, source string, keepEnv bool) (*Recorder, error) {
	h := Header{Speed: speed, Source: source, Kernels: opts.Kernels, KeepEnv: keepEnv}
	for _, s := range specs {
		h.Hosts = append(h.Hosts, Host{Name: s.Driver.Name(), Unit: s.Unit, Engine: s.Engine})
	}
	clock := opts.Clock
	if clock == nil {
		clock = remote.RealClock{}
	}
	rec, err := Create(path, h, clock)
	if err != nil {
		return nil, err
	}
	for i := range specs {
		specs[i].Driver = rec.Wrap(specs[i].Driver)
	}
	return rec, nil
}
