package vlogs

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/backoff"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/journal"
	"github.com/bringup-dev/bringup/remote/unitname"
)

// Defaults for Options.
const (
	// DefaultLookBack bounds the catch-up: the current run is read from its
	// start (PID 1's "Starting" message) when that is this recent.
	DefaultLookBack = 2 * time.Hour
	// DefaultOffset is how far behind now the tail reads (VictoriaLogs'
	// `offset`): entries reaching the store later than this after their
	// own time would be skipped by its per-stream tail, so it is the
	// uploader's delay plus margin. It is the latency this source adds.
	DefaultOffset = 2 * time.Second
	// DefaultRefresh is the tail's refresh_interval.
	DefaultRefresh = 500 * time.Millisecond
	// DefaultSweep is how often the recent past is read again with a
	// plain query while the tail runs. VictoriaLogs' tail skips a row
	// whose time is at or before the newest it already sent for the row's
	// stream (app/vlselect/logsql, getTailRows), so a row reaching the
	// store later than the tail's offset is never sent (its docs: "If you
	// see gaps in the logs delivered by live tailing, then increase the
	// offset"). The sweep finds such rows; the seen-set drops what the
	// tail already gave. On the test hosts it found none.
	DefaultSweep = 3 * time.Second
	// overlap is how far before the newest entry delivered a resumed tail
	// starts again: entries in it are dropped by the seen-set, so that a
	// resume loses nothing the store had and repeats nothing.
	overlap = 30 * time.Second
	// runSlack is how far before PID 1's "Started" the run's lines are
	// read: the restart job's "Stopped" comes about 10 ms before it (a
	// real capture, testdata/pid1-unit-messages.jsonl), the failure of
	// the run before about a second before.
	runSlack = 250 * time.Millisecond
	// minPrune is the seen-set size below which it is not pruned.
	minPrune = 4096
)

// Options configure a Source.
type Options struct {
	// URL is the VictoriaLogs base URL, e.g. http://127.0.0.1:9428.
	URL string
	// Unit is the unit every host runs, e.g. sglang.service.
	Unit string
	// LookBack bounds the catch-up; default DefaultLookBack.
	LookBack time.Duration
	// Offset and Refresh are the tail's; defaults DefaultOffset and
	// DefaultRefresh.
	Offset, Refresh time.Duration
	// Sweep is how often the last overlap before the newest entry is
	// read again (see DefaultSweep); default DefaultSweep.
	Sweep time.Duration
	// MaxLine caps a message as the SSH follower does; default
	// journal.DefaultMaxLine.
	MaxLine int
	// Client makes the requests; default a client without a timeout (the
	// tail is one long response), through Via when set.
	Client *http.Client
	// Via, when set, carries every connection to the store (an SSH tunnel
	// to a bastion: live.Tunnel). The source holds it while its stream
	// runs and for each Survey and Discover.
	Via Tunnel
	// Now stamps receipt times; default time.Now.
	Now func() time.Time
}

// Tunnel is a way to the store that must be held open: Hold opens it
// and returns its release (holds may overlap), DialContext opens a
// connection through it while it is held.
type Tunnel interface {
	Hold() (release func())
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// Source is one tail stream for the unit across many hosts. Each host's
// driver (Host) attaches while the fleet runs it; the stream runs while
// any host is attached, so the fleet's drivers own it together.
type Source struct {
	opts Options

	mu sync.Mutex // guards want, hosts, cancel, done
	// want is every host a driver was made for: the stream starts once
	// all of them are attached, so that none misses the catch-up.
	want   map[string]bool
	hosts  map[string]*sink
	cancel context.CancelFunc
	done   chan struct{}
}

// sink is one attached host: where its events go and its unit state.
type sink struct {
	name  string
	emit  remote.Emit
	start time.Time // the current run's start in the store; zero: unknown
	// readUnit asks the host's SSH side for one read of the unit's
	// properties; nil when it has none.
	readUnit func()

	mu    sync.Mutex // guards state and asked; held while a state is emitted, so states go out in order
	state unitState
	// asked is the run whose failure asked for the unit's properties
	// (runKey), so that each failed run asks once.
	asked string
}

// New returns a source. It opens nothing until a host's Run.
func New(opts Options) (*Source, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("log store url %q: want http://HOST:PORT", opts.URL)
	}
	if opts.Unit, err = unitname.Normalize(opts.Unit); err != nil {
		return nil, fmt.Errorf("log store: unit: %w", err)
	}
	opts.URL = strings.TrimRight(opts.URL, "/")
	if opts.LookBack <= 0 {
		opts.LookBack = DefaultLookBack
	}
	if opts.Offset <= 0 {
		opts.Offset = DefaultOffset
	}
	if opts.Refresh <= 0 {
		opts.Refresh = DefaultRefresh
	}
	if opts.Sweep <= 0 {
		opts.Sweep = DefaultSweep
	}
	if opts.MaxLine <= 0 {
		opts.MaxLine = journal.DefaultMaxLine
	}
	if opts.Client == nil {
		opts.Client = &http.Client{}
		if opts.Via != nil {
			// No proxy from the environment: the tunnel is the way.
			opts.Client.Transport = &http.Transport{DialContext: opts.Via.DialContext, MaxIdleConnsPerHost: 4}
		}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Source{opts: opts, want: map[string]bool{}, hosts: map[string]*sink{}}, nil
}

// Host returns the driver of one host, named as its journal's _HOSTNAME.
// actions, if not nil, performs its actions (an SSH driver); the store
// carries none. When actions is also a Companion, it is run alongside
// the stream, told when the host's view opens and closes, and asked for
// the unit's properties when a run fails.
func (s *Source) Host(name string, actions Actor) *Host {
	s.mu.Lock()
	s.want[name] = true
	s.mu.Unlock()
	h := &Host{src: s, name: name, actions: actions}
	h.companion, _ = actions.(Companion)
	return h
}

// Actor performs actions on a host: the part of remote.Driver the store
// cannot do.
type Actor interface {
	Do(ctx context.Context, a remote.Action, emit remote.Emit) error
}

// Companion is an Actor that also brings what only the host itself can
// tell (live.OnDemand, over SSH opened on demand): the probe and GPU
// samples while the host's view is open (SetPace's Viewed), and the
// unit's properties — Environment, whose kernel modes the store's
// journal does not carry, ExecStart, drop-ins — when ReadUnit asks.
// Run owns its goroutines until ctx ends; its unit events are merged into
// the state the store's journal gives (Source keeps one state a host),
// every other event goes to the fleet as it is.
type Companion interface {
	Actor
	remote.Pacer
	Run(ctx context.Context, emit remote.Emit) error
	// ReadUnit asks for one read of the unit's properties, reported
	// through Run's emit; it must not block.
	ReadUnit()
}

// Host is one host followed through the store.
type Host struct {
	src       *Source
	name      string
	actions   Actor
	companion Companion // actions as a Companion; nil when it is not one
}

var (
	_ remote.Driver = (*Host)(nil)
	_ remote.Pacer  = (*Host)(nil)
)

// Name is the host's name.
func (h *Host) Name() string { return h.name }

// Run attaches the host to the shared stream until ctx ends, and runs its
// companion, if any, alongside.
func (h *Host) Run(ctx context.Context, emit remote.Emit) error {
	var readUnit func()
	if h.companion != nil {
		readUnit = h.companion.ReadUnit
	}
	// Attached first: the companion's readings go to the host's sink.
	h.src.attach(h.name, emit, readUnit)
	var wg sync.WaitGroup
	if c := h.companion; c != nil {
		wg.Go(func() {
			_ = c.Run(ctx, func(ev event.Event) bool {
				if ev.Kind == event.KindUnit && ev.Unit != nil {
					h.src.setProps(h.name, *ev.Unit)
					return true
				}
				return emit(ev)
			})
		})
	}
	<-ctx.Done()
	h.src.detach(h.name)
	wg.Wait()
	return nil
}

// SetPace tells the companion, if any, whether the host's view is open
// (it samples then). It never blocks.
func (h *Host) SetPace(p remote.Pace) {
	if h.companion != nil {
		h.companion.SetPace(p)
	}
}

// ErrNoActions is the error of an action on a host that only the store
// follows: the store carries the journal, not systemd.
var ErrNoActions = errors.New("this host is followed through the log store only; actions need SSH to it")

// Do performs a over the host's SSH driver.
func (h *Host) Do(ctx context.Context, a remote.Action, emit remote.Emit) error {
	if h.actions == nil {
		return fmt.Errorf("%s: %s: %w", h.name, a, ErrNoActions)
	}
	return h.actions.Do(ctx, a, emit)
}

// attach registers a host and starts the stream for the first one.
func (s *Source) attach(name string, emit remote.Emit, readUnit func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hosts[name] = &sink{name: name, emit: emit, readUnit: readUnit}
	if s.cancel != nil || len(s.hosts) < len(s.want) {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	go func(done chan struct{}) {
		defer close(done)
		s.run(ctx)
	}(s.done)
}

// detach removes a host; the last one out stops the stream and waits for
// it.
func (s *Source) detach(name string) {
	s.mu.Lock()
	delete(s.hosts, name)
	if len(s.hosts) > 0 || s.cancel == nil {
		s.mu.Unlock()
		return
	}
	cancel, done := s.cancel, s.done
	s.cancel, s.done = nil, nil
	s.mu.Unlock()
	cancel()
	<-done
}

// sinkOf is the attached host of a _HOSTNAME, nil when none.
func (s *Source) sinkOf(hostname string) *sink {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hosts[hostname]
}

// names lists the attached hosts, sorted.
func (s *Source) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.hosts))
	for n := range s.hosts {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// each calls fn for every attached host.
func (s *Source) each(fn func(*sink)) {
	s.mu.Lock()
	sinks := make([]*sink, 0, len(s.hosts))
	for _, k := range s.hosts {
		sinks = append(sinks, k)
	}
	s.mu.Unlock()
	for _, k := range sinks {
		fn(k)
	}
}

// stream is the state of the follow across tail requests. The tail's
// reader and the sweep both deliver, under mu.
type stream struct {
	mu     sync.Mutex
	newest time.Time            // the newest entry delivered
	seen   map[string]time.Time // keys of entries delivered, by their time
	// pruneAt is the seen-set's size that triggers the next pruning:
	// twice what the last one kept, so pruning costs O(1) an entry.
	pruneAt int
}

// run follows the store until ctx ends: a catch-up of the current run,
// then the tail, resumed after every drop from the newest entry
// delivered.
func (s *Source) run(ctx context.Context) {
	defer s.hold()()
	st := &stream{seen: map[string]time.Time{}, pruneAt: minPrune}
	since := s.catchUpStart(ctx)
	// Each host's current run is read in pages, each from its own hosts'
	// earliest start; the tail then starts near now instead of at the
	// earliest start of all (where one host's long run made every host's
	// history be read again). Failing that, the tail reads from since.
	until := s.opts.Now().Add(-s.opts.Offset)
	if err := s.catchUp(ctx, st, until); err == nil {
		since = until.Add(-overlap)
	}
	bo := backoff.New(nil) // the one reconnect pacing: 1 s × 1.6, cap 2 min, ±20 %
	for ctx.Err() == nil {
		began := s.opts.Now()
		err := s.tail(ctx, st, since)
		if ctx.Err() != nil {
			return
		}
		if s.opts.Now().Sub(began) > 10*time.Second {
			bo.Reset() // it ran: a new drop, not the same failure
		}
		d := bo.Next()
		at := "the start"
		if !st.newest.IsZero() {
			since = st.newest.Add(-overlap)
			at = st.newest.Format("15:04:05")
		}
		now := s.opts.Now()
		s.each(func(k *sink) {
			k.emit(event.Event{Host: k.name, Kind: event.KindConn, Time: now, Seen: now,
				Conn: &event.Conn{State: event.ConnDown, Err: "log store: " + err.Error(), Retry: now.Add(d)}})
			k.emit(event.Event{Host: k.name, Kind: event.KindGap, Time: now, Seen: now, Gap: &event.Gap{
				Reason: journal.GapReconnect, Message: "log store stream ended (" + err.Error() + "); resuming after " + at}})
		})
		select {
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
	}
}

// hold holds the tunnel (Options.Via), if any, until the returned
// function is called. A failed connection is each request's error.
func (s *Source) hold() func() {
	if s.opts.Via == nil {
		return func() {}
	}
	return s.opts.Via.Hold()
}

// catchUpStart finds each attached host's current run in the store (the
// newest "Started UNIT" from PID 1 within LookBack; systemd 252 logs no
// "Starting" for a Type=simple service), records it, and
// returns where the tail must start: the earliest of them, or LookBack
// ago when some host has none.
func (s *Source) catchUpStart(ctx context.Context) time.Time {
	now := s.opts.Now()
	earliest := now.Add(-s.opts.LookBack)
	q := fmt.Sprintf("_time:%ds UNIT:=%s MESSAGE_ID:=%s %s | stats by (_HOSTNAME) max(_time) as start",
		int64(s.opts.LookBack/time.Second), strconv.Quote(s.opts.Unit), msgStarted, s.hostFilter())
	starts := map[string]time.Time{}
	err := s.query(ctx, q, func(line []byte) error {
		h, t, err := parseStart(line)
		if err == nil {
			starts[h] = t
		}
		return err
	})
	if err != nil {
		return earliest // the tail then reads the whole look-back
	}
	all := true
	var first time.Time
	s.each(func(k *sink) {
		t, ok := starts[k.name]
		if !ok {
			all = false
			return
		}
		k.start = t
		if first.IsZero() || t.Before(first) {
			first = t
		}
	})
	if !all || first.IsZero() {
		return earliest
	}
	return first.Add(-runSlack)
}

// maxHostFilter bounds the host filter one query carries: VictoriaLogs
// refuses a query longer than its -search.maxQueryLen (16 KiB by
// default), which 10 000 hosts' names are many times over.
const maxHostFilter = 12 << 10

// hostFilter is the LogsQL filter for the attached hosts, or "" when it
// would be longer than maxHostFilter: the query then reads the unit's
// lines of every host and the rows of hosts not attached are dropped
// (deliver, and the stats rows no host asks for).
func (s *Source) hostFilter() string {
	return hostFilterOf(s.names())
}

// hostFilterOf is the LogsQL filter for names, "" when it would be longer
// than maxHostFilter.
func hostFilterOf(names []string) string {
	var b strings.Builder
	b.WriteString("_HOSTNAME:in(")
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(n))
		if b.Len() > maxHostFilter {
			return ""
		}
	}
	b.WriteByte(')')
	return b.String()
}

// hostChunks splits names into lists whose filters fit maxHostFilter.
func hostChunks(names []string) [][]string {
	var out [][]string
	size := 0
	start := 0
	for i, n := range names {
		w := len(strconv.Quote(n)) + 1
		if i > start && size+w > maxHostFilter-len("_HOSTNAME:in()") {
			out = append(out, names[start:i])
			start, size = i, 0
		}
		size += w
	}
	if start < len(names) {
		out = append(out, names[start:])
	}
	return out
}

// rowFields are the fields a plain query asks for: what ParseRow and
// journal.Entry read (the SSH follower's --output-fields) and the row's
// identity. A journald row in the store holds about three times as much
// (_CMDLINE, _EXE, CODE_FILE…), which the console would read and parse
// only to drop.
var rowFields = "_time, _msg, _HOSTNAME, _stream_id, __CURSOR, __SEQNUM, __MONOTONIC_TIMESTAMP, _BOOT_ID, " +
	strings.ReplaceAll(journal.OutputFields, ",", ", ")

// pageSpan is how far apart the starts of one catch-up page's hosts may
// be: a page is read from its earliest start, so a host whose run began
// long before the others' gets a page of its own.
const pageSpan = 5 * time.Minute

// catchUp reads every attached host's current run up to until with plain
// queries, a page of hosts at a time: hosts in order of their run's start
// (LookBack ago when none was found), a page as many as one filter holds
// whose starts lie within pageSpan of its first, read from that start. A
// full table so needs each host's current run, not the history of every
// host since the oldest run's start.
func (s *Source) catchUp(ctx context.Context, st *stream, until time.Time) error {
	type hostStart struct {
		name string
		from time.Time
	}
	var hosts []hostStart
	lookBack := s.opts.Now().Add(-s.opts.LookBack)
	s.each(func(k *sink) {
		from := lookBack
		if !k.start.IsZero() {
			from = k.start.Add(-runSlack)
		}
		hosts = append(hosts, hostStart{k.name, from})
	})
	slices.SortFunc(hosts, func(a, b hostStart) int {
		return cmp.Or(a.from.Compare(b.from), cmp.Compare(a.name, b.name))
	})
	for len(hosts) > 0 {
		n := 1
		for n < len(hosts) && hosts[n].from.Sub(hosts[0].from) <= pageSpan {
			n++
		}
		names := make([]string, n)
		for i := range n {
			names[i] = hosts[i].name
		}
		slices.Sort(names)
		chunk := hostChunks(names)[0]
		page := map[string]bool{}
		for _, name := range chunk {
			page[name] = true
		}
		from := hosts[0].from
		hosts = slices.DeleteFunc(hosts, func(h hostStart) bool { return page[h.name] })
		if !from.Before(until) {
			continue
		}
		q := fmt.Sprintf("%s %s _time:[%s, %s] | fields %s | sort by (_time)", s.unitFilter(), hostFilterOf(chunk),
			from.UTC().Format(time.RFC3339Nano), until.UTC().Format(time.RFC3339Nano), rowFields)
		var rows []Row
		err := s.query(ctx, q, func(line []byte) error {
			if r, err := ParseRow(line, s.opts.MaxLine); err == nil && page[r.Hostname] {
				rows = append(rows, r)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, r := range inJournalOrder(rows) {
			s.deliver(st, r)
		}
	}
	return nil
}

// unitFilter selects the unit's own lines and PID 1's about it.
func (s *Source) unitFilter() string {
	u := strconv.Quote(s.opts.Unit)
	return "(_SYSTEMD_UNIT:=" + u + " OR UNIT:=" + u + ")"
}

// query runs a LogsQL query and hands each response line to fn.
func (s *Source) query(ctx context.Context, q string, fn func([]byte) error) error {
	resp, err := s.post(ctx, "/select/logsql/query", url.Values{"query": {q}})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return eachLine(resp.Body, fn)
}

// post sends a form to the store and checks the status.
func (s *Source) post(ctx context.Context, path string, form url.Values) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.opts.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("log store %s: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("log store %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		_ = resp.Body.Close()
		return nil, fmt.Errorf("log store %s: %s: %s", path, resp.Status, strings.TrimSpace(string(b)))
	}
	return resp, nil
}

// eachLine calls fn for each non-empty line of r.
func eachLine(r io.Reader, fn func([]byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		if err := fn(sc.Bytes()); err != nil {
			return err
		}
	}
	return sc.Err()
}

// tail follows /select/logsql/tail from since until the response ends.
func (s *Source) tail(ctx context.Context, st *stream, since time.Time) error {
	startOffset := max(s.opts.Now().Sub(since), time.Second) + s.opts.Offset
	form := url.Values{
		"query":            {s.unitFilter() + " " + s.hostFilter()},
		"start_offset":     {fmt.Sprintf("%dms", startOffset.Milliseconds())},
		"offset":           {fmt.Sprintf("%dms", s.opts.Offset.Milliseconds())},
		"refresh_interval": {fmt.Sprintf("%dms", s.opts.Refresh.Milliseconds())},
	}
	resp, err := s.post(ctx, "/select/logsql/tail", form)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	now := s.opts.Now()
	s.each(func(k *sink) {
		k.emit(event.Event{Host: k.name, Kind: event.KindConn, Time: now, Seen: now, Conn: &event.Conn{State: event.ConnUp}})
	})
	sctx, stopSweep := context.WithCancel(ctx)
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		s.sweep(sctx, st)
	}()
	defer func() {
		stopSweep()
		<-swept
	}()
	// The reader hands lines over; rows of one timestamp are held until
	// the run ends (a later time, or a pause: the store writes each
	// refresh's rows at once) and delivered in journal order.
	lines := make(chan []byte, 256)
	readErr := make(chan error, 1)
	defer func() {
		// Ends the reader (its read fails) and waits for it.
		_ = resp.Body.Close()
		for range lines {
		}
	}()
	go func() {
		defer close(lines)
		readErr <- eachLine(resp.Body, func(line []byte) error {
			select {
			case lines <- bytes.Clone(line):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	var run []Row
	flush := func() {
		for _, r := range inJournalOrder(run) {
			s.deliver(st, r)
		}
		run = run[:0]
	}
	pause := time.NewTimer(time.Hour)
	defer pause.Stop()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				flush()
				if err := <-readErr; err != nil {
					return err
				}
				return io.ErrUnexpectedEOF // a tail never ends on its own
			}
			r, err := ParseRow(line, s.opts.MaxLine)
			if err != nil {
				continue // a row the journal rules refuse is not shown (as over SSH)
			}
			if len(run) > 0 && !r.Time.Equal(run[0].Time) {
				flush()
			}
			run = append(run, r)
			pause.Reset(runPause)
		case <-pause.C:
			flush()
		}
	}
}

// runPause is how long a run of rows with one timestamp waits for more
// before it is delivered: the store writes a refresh's rows at once.
const runPause = 30 * time.Millisecond

// inJournalOrder sorts rows of one timestamp by host and journal sequence
// number (the cursor's i=). journald stamps a whole read from a service's
// stdout with one time, and the store returns rows of equal time in no
// particular order (a captured tail of a test host's flood had 328 of
// 3000 lines after a later one); the sequence number is the order they
// were written in. Rows without a cursor keep the order they came in.
func inJournalOrder(rows []Row) []Row {
	slices.SortStableFunc(rows, func(a, b Row) int {
		if c := cmp.Compare(a.Hostname, b.Hostname); c != 0 {
			return c
		}
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		return cmp.Compare(seqnum(a.Key), seqnum(b.Key))
	})
	return rows
}

// seqnum is the i= field of a journal cursor (hex), 0 when there is none.
func seqnum(cursor string) uint64 {
	for f := range strings.SplitSeq(cursor, ";") {
		if v, ok := strings.CutPrefix(f, "i="); ok {
			n, err := strconv.ParseUint(v, 16, 64)
			if err == nil {
				return n
			}
		}
	}
	return 0
}

// sweep reads the overlap before the newest entry delivered again, every
// Sweep, until ctx ends: what the tail skipped arrives then (late, by up
// to Sweep), what it gave is dropped by the seen-set.
func (s *Source) sweep(ctx context.Context, st *stream) {
	t := time.NewTicker(s.opts.Sweep)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st.mu.Lock()
		newest := st.newest
		st.mu.Unlock()
		if newest.IsZero() {
			continue
		}
		// Behind the tail's frontier only: what is newer, the tail sends
		// in order, and a sweep ahead of it would put its rows out of
		// order.
		q := fmt.Sprintf("%s %s _time:[%s, %s] | fields %s | sort by (_time)", s.unitFilter(), s.hostFilter(),
			newest.Add(-overlap).UTC().Format(time.RFC3339Nano), newest.UTC().Format(time.RFC3339Nano), rowFields)
		var rows []Row
		err := s.query(ctx, q, func(line []byte) error {
			if st.seenLine(line) {
				return nil
			}
			if r, err := ParseRow(line, s.opts.MaxLine); err == nil {
				rows = append(rows, r)
			}
			return nil
		})
		if err != nil {
			continue // retried at the next tick; a dead store ends the tail
		}
		for _, r := range inJournalOrder(rows) {
			s.deliver(st, r)
		}
	}
}

// cursorKey is how a row's journald cursor starts in VictoriaLogs' JSON.
var cursorKey = []byte(`"__CURSOR":"`)

// seenLine reports whether a response line's entry was delivered
// already, by its cursor, without decoding the line: a sweep reads the
// last overlap again every Sweep, and nearly all of it was delivered (at
// 10 000 hosts starting, decoding those repeats was a fifth of the
// console's CPU). A cursor holds no quote or backslash, so it ends at the
// next quote; a line without one is decoded as before.
func (st *stream) seenLine(line []byte) bool {
	i := bytes.Index(line, cursorKey)
	if i < 0 {
		return false
	}
	v := line[i+len(cursorKey):]
	j := bytes.IndexByte(v, '"')
	if j <= 0 || bytes.IndexByte(v[:j], '\\') >= 0 {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	_, ok := st.seen[string(v[:j])]
	return ok
}

// deliver turns one tail row into the host's events, once.
func (s *Source) deliver(st *stream, r Row) {
	k := s.sinkOf(r.Hostname)
	if k == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, dup := st.seen[r.Key]; dup {
		return
	}
	if !k.start.IsZero() && r.Time.Before(k.start.Add(-runSlack)) {
		return // before the host's current run: the catch-up starts there
	}
	st.seen[r.Key] = r.Time
	if r.Time.After(st.newest) {
		st.newest = r.Time
	}
	if len(st.seen) >= st.pruneAt {
		// A resume starts overlap before the newest entry: older keys
		// can no longer come back.
		for key, t := range st.seen {
			if t.Before(st.newest.Add(-2 * overlap)) {
				delete(st.seen, key)
			}
		}
		st.pruneAt = max(minPrune, 2*len(st.seen))
	}
	seen := s.opts.Now()
	ev := journal.ToEvent(k.name, r.Entry)
	ev.Seen = seen
	k.mu.Lock()
	if u, changed := k.state.apply(s.opts.Unit, r.Entry); changed {
		// Decided before the emit: the fleet owns (and sanitises in
		// place) what it is handed.
		key, ask := wantsUnitRead(u, k.asked)
		// The state first: the tracker reads the line after it under
		// the new state, as it does for D-Bus signals that precede them.
		k.emit(event.Event{Host: k.name, Kind: event.KindUnit, Time: r.Time, Seen: seen, Unit: &u})
		if ask && k.readUnit != nil {
			// The journal does not carry the unit's Environment: read it
			// over SSH, so that the diagnosis names the kernel mode.
			k.asked = key
			k.readUnit()
		}
	}
	k.mu.Unlock()
	k.emit(ev)
}

// wantsUnitRead says whether unit state u, as the journal gave it, calls
// for reading the unit's properties over SSH: the run has failed (failed,
// or a restart scheduled after a failing result) and its failure has not
// asked yet (asked is the run key that last did). key is u's run key.
func wantsUnitRead(u event.Unit, asked string) (key string, ask bool) {
	failing := u.ActiveState == "failed" || u.SubState == "auto-restart" && u.Result != "" && u.Result != "success"
	if !failing {
		return "", false
	}
	key = runKey(u)
	return key, key != asked
}

// runKey tells one run of the unit from another: its invocation id, or
// when the journal gave none, its start time.
func runKey(u event.Unit) string {
	if u.InvocationID != "" {
		return u.InvocationID
	}
	return u.ExecMainStart.UTC().Format(time.RFC3339Nano)
}

// setProps merges the unit's properties read over SSH (p) into host
// name's state from the journal, and reports the state with them once
// the journal has given one (until then they wait for it).
func (s *Source) setProps(name string, p event.Unit) {
	k := s.sinkOf(name)
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if u, ok := k.state.withProps(p); ok {
		now := s.opts.Now()
		k.emit(event.Event{Host: k.name, Kind: event.KindUnit, Time: now, Seen: now, Unit: &u})
	}
}

// parseStart reads one row of the catch-up's stats query.
func parseStart(line []byte) (string, time.Time, error) {
	var m struct {
		Host  string `json:"_HOSTNAME"`
		Start string `json:"start"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return "", time.Time{}, fmt.Errorf("log store stats row: %w", err)
	}
	t, err := time.Parse(time.RFC3339Nano, m.Start)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("log store stats row: start: %w", err)
	}
	return m.Host, t, nil
}
