package vlogs

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/journal"
)

// The captures in testdata are VictoriaLogs v1.52.1's own responses, taken
// on 2026-12-01 from a testbed run (`testbed up --hosts 2 --log-store
// --mode gpu2=validate`: Debian bookworm, systemd 252, each host's
// systemd-journal-upload feeding the store): gpu1 starts, is stopped and
// started again and serves; gpu2 fails CUDA graph capture under
// KDTREE_MODE=validate, then crash-loops twice under a Restart=on-failure
// drop-in and is stopped.
//
//	tail-two-hosts.jsonl      /select/logsql/tail, both hosts' unit lines and PID 1's about the unit
//	pid1-unit-messages.jsonl  /select/logsql/query UNIT:="sglang.service" | sort by (_time)
//	stats-run-start.jsonl     the catch-up's stats query (newest "Started" per host)

func lines(t *testing.T, name string) [][]byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, bytes.Clone(sc.Bytes()))
	}
	return out
}

func TestParseRowRealTail(t *testing.T) {
	perHost := map[string]int{}
	var capture, pid1 int
	for i, l := range lines(t, "tail-two-hosts.jsonl") {
		r, err := ParseRow(l, journal.DefaultMaxLine)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		perHost[r.Hostname]++
		if r.Entry.Unit != "sglang.service" {
			t.Errorf("line %d: unit %q, want sglang.service (from _SYSTEMD_UNIT or PID 1's UNIT)", i+1, r.Entry.Unit)
		}
		if r.Entry.Cursor == "" || r.Key != r.Entry.Cursor {
			t.Errorf("line %d: cursor %q key %q: the store keeps __CURSOR and it is the key", i+1, r.Entry.Cursor, r.Key)
		}
		if r.Entry.InvocationID == "" {
			t.Errorf("line %d: no invocation id", i+1)
		}
		if !r.Entry.Realtime.Equal(r.Time.Truncate(time.Microsecond)) {
			t.Errorf("line %d: realtime %v, _time %v", i+1, r.Entry.Realtime, r.Time)
		}
		if strings.Contains(r.Entry.Message, "Capture cuda graph failed") {
			capture++
		}
		if r.Entry.MessageID != "" {
			pid1++
		}
	}
	if perHost["gpu1"] != 94 || perHost["gpu2"] != 396 {
		t.Errorf("rows per host %v, want gpu1 94, gpu2 396", perHost)
	}
	if capture != 3 {
		t.Errorf("%d capture failures, want gpu2's 3 runs", capture)
	}
	if pid1 != 22 {
		t.Errorf("%d PID 1 messages, want the 22 of pid1-unit-messages.jsonl", pid1)
	}
}

func TestParseRowRefuses(t *testing.T) {
	for _, in := range []string{`{"_msg":"x"}`, `{"_time":"yesterday","_msg":"x"}`, `not json`, `{"_time":"2026-12-01T22:31:33Z","_PID":"x1"}`} {
		if _, err := ParseRow([]byte(in), 0); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
	// No cursor in the store (no -journald.includeEntryMetadata): the key
	// still tells entries apart.
	a, err := ParseRow([]byte(`{"_time":"2026-12-01T22:31:33.1Z","_stream_id":"s","_msg":"a","_HOSTNAME":"gpu1"}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ParseRow([]byte(`{"_time":"2026-12-01T22:31:33.1Z","_stream_id":"s","_msg":"b","_HOSTNAME":"gpu1"}`), 0)
	if a.Key == "" || a.Key == b.Key {
		t.Errorf("keys %q %q: want distinct", a.Key, b.Key)
	}
}

// TestUnitStateFromPID1 folds the real PID 1 messages into unit states.
func TestUnitStateFromPID1(t *testing.T) {
	states := map[string]*unitState{"gpu1": {}, "gpu2": {}}
	got := map[string][]string{}
	last := map[string]event.Unit{}
	for _, l := range lines(t, "pid1-unit-messages.jsonl") {
		r, err := ParseRow(l, 0)
		if err != nil {
			t.Fatal(err)
		}
		if u, ok := states[r.Hostname].apply("sglang.service", r.Entry); ok {
			got[r.Hostname] = append(got[r.Hostname], u.State()+" "+u.Result)
			last[r.Hostname] = u
			if u.Path != PathJournal {
				t.Errorf("path %q", u.Path)
			}
		}
	}
	want := map[string][]string{
		"gpu1": {"active/running success", "deactivating/stop success", "inactive/dead success", "active/running success"},
		"gpu2": {
			"active/running success", "failed/failed exit-code", // validate: capture fails
			"active/running success", "failed/failed exit-code", "activating/auto-restart exit-code", // Restart=on-failure
			"active/running success", "failed/failed exit-code", "activating/auto-restart exit-code",
			"active/running success", "deactivating/stop success", "inactive/dead success",
		},
	}
	for h, w := range want {
		if strings.Join(got[h], "|") != strings.Join(w, "|") {
			t.Errorf("%s:\n got %q\nwant %q", h, got[h], w)
		}
	}
	if n := last["gpu2"].NRestarts; n != 2 {
		t.Errorf("gpu2 restarts %d, want 2", n)
	}
	if id := last["gpu1"].InvocationID; id != "26274ecc883142e6a5de6c08a0b3e5ab" && !strings.HasPrefix(id, "26274ecc") {
		t.Errorf("gpu1 invocation %q, want the second run's", id)
	}
}

// store replays captured responses: the tail serves its rows, cut after
// cut rows on the first request (a dropped stream), in full after.
type store struct {
	t     *testing.T
	tail  [][]byte
	stats [][]byte
	cut   int
	// skip leaves these rows out of every tail response, as VictoriaLogs'
	// tail does with a row that became searchable after a later one of
	// its stream; a sweep's query returns them.
	skip map[int]bool
	// catchUp, when set, is how many rows a query before the first tail
	// returns (a catch-up page made while the rest had not reached the
	// store yet).
	catchUp  int
	mu       sync.Mutex
	requests []string
	tails    int // tail requests so far
}

func (s *store) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, r.URL.Path+" "+r.Form.Get("query")+" start_offset="+r.Form.Get("start_offset"))
	if r.URL.Path == "/select/logsql/tail" {
		s.tails++
	}
	n := s.tails
	s.mu.Unlock()
	switch r.URL.Path {
	case "/select/logsql/query":
		rows := s.stats
		if !strings.Contains(r.Form.Get("query"), "| stats") {
			// A catch-up page or a sweep: every row (rows before a
			// host's run are dropped, the seen-set drops the repeats).
			rows = s.tail
			if s.catchUp > 0 && n == 0 {
				rows = rows[:s.catchUp]
			}
		}
		for _, l := range rows {
			_, _ = w.Write(append(l, '\n'))
		}
	case "/select/logsql/tail":
		rows := s.tail
		if n == 1 && s.cut > 0 { // the first tail
			rows = rows[:s.cut]
		}
		for i, l := range rows {
			if !s.skip[i] {
				_, _ = w.Write(append(l, '\n'))
			}
		}
		w.(http.Flusher).Flush()
		if n == 1 && s.cut > 0 {
			return // the stream drops
		}
		<-r.Context().Done()
	default:
		http.NotFound(w, r)
	}
}

// collect runs a source over two hosts until want journal events arrived.
func collect(t *testing.T, st *store, want int, sweep time.Duration) (map[string][]event.Event, []string) {
	t.Helper()
	srv := httptest.NewServer(st)
	defer srv.Close()
	src, err := New(Options{URL: srv.URL, Unit: "sglang.service", Sweep: sweep, Now: func() time.Time {
		return time.Date(2026, 12, 1, 22, 33, 0, 0, time.UTC)
	}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	evs := map[string][]event.Event{}
	journals := 0
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, h := range []string{"gpu1", "gpu2"} {
		d := src.Host(h, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = d.Run(ctx, func(ev event.Event) bool {
				mu.Lock()
				defer mu.Unlock()
				evs[ev.Host] = append(evs[ev.Host], ev)
				if ev.Kind == event.KindJournal {
					journals++
					if journals == want {
						close(done)
					}
				}
				return true
			})
		}()
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Errorf("timed out at %d of %d journal events", journals, want)
	}
	time.Sleep(50 * time.Millisecond) // anything extra (a duplicate) would show now
	cancel()
	wg.Wait()
	st.mu.Lock()
	defer st.mu.Unlock()
	return evs, st.requests
}

// TestSourceCatchUpAndResume runs the source on the real responses with
// the stream dropped part way: every row of each host's current run
// arrives once, in order, after a visible gap marker; the unit state comes
// from PID 1's messages.
func TestSourceCatchUpAndResume(t *testing.T) {
	tail := lines(t, "tail-two-hosts.jsonl")
	stats := lines(t, "stats-run-start.jsonl")
	// The rows of each host's current run (from its newest Started, less
	// the slack), as the source must deliver them.
	starts := map[string]time.Time{}
	for _, l := range stats {
		h, ts, err := parseStart(l)
		if err != nil {
			t.Fatal(err)
		}
		starts[h] = ts
	}
	wantKeys := map[string][]string{}
	for _, l := range tail {
		r, _ := ParseRow(l, 0)
		if !r.Time.Before(starts[r.Hostname].Add(-runSlack)) {
			wantKeys[r.Hostname] = append(wantKeys[r.Hostname], r.Key)
		}
	}
	total := len(wantKeys["gpu1"]) + len(wantKeys["gpu2"])
	st := &store{t: t, tail: tail, stats: stats, cut: 300, catchUp: 100}
	evs, reqs := collect(t, st, total, time.Hour)
	for h, keys := range wantKeys {
		var got []string
		var gaps, units int
		var lastUnit event.Unit
		for _, ev := range evs[h] {
			switch ev.Kind {
			case event.KindJournal:
				got = append(got, ev.Journal.Cursor)
			case event.KindGap:
				gaps++
			case event.KindUnit:
				units++
				lastUnit = *ev.Unit
			default:
			}
		}
		if strings.Join(got, "\n") != strings.Join(keys, "\n") {
			t.Errorf("%s: %d entries delivered, want %d, each once, in order", h, len(got), len(keys))
		}
		if gaps != 1 {
			t.Errorf("%s: %d gap markers, want 1 for the dropped stream", h, gaps)
		}
		if units == 0 || lastUnit.Path != PathJournal {
			t.Errorf("%s: unit events %d, last %+v", h, units, lastUnit)
		}
	}
	if u := lastState(evs["gpu2"]); u.State() != "inactive/dead" {
		t.Errorf("gpu2 ends %s, want inactive/dead (stopped by hand)", u.State())
	}
	if u := lastState(evs["gpu1"]); u.State() != "active/running" || !strings.HasPrefix(u.InvocationID, "26274ecc") {
		t.Errorf("gpu1 ends %s %s, want active/running in its second run", u.State(), u.InvocationID)
	}
	// The starts, the catch-up page (both hosts' runs), the tail that
	// drops and the one that resumes.
	if len(reqs) != 4 || !strings.Contains(reqs[0], "stats by (_HOSTNAME)") || !strings.Contains(reqs[1], `_HOSTNAME:in("gpu1","gpu2") _time:[`) ||
		!strings.HasPrefix(reqs[2], "/select/logsql/tail") || !strings.HasPrefix(reqs[3], "/select/logsql/tail") {
		t.Errorf("requests:\n%s", strings.Join(reqs, "\n"))
	}
}

func lastState(evs []event.Event) event.Unit {
	var u event.Unit
	for _, ev := range evs {
		if ev.Kind == event.KindUnit {
			u = *ev.Unit
		}
	}
	return u
}

func TestActionsNeedSSH(t *testing.T) {
	src, err := New(Options{URL: "http://127.0.0.1:9428", Unit: "sglang"})
	if err != nil {
		t.Fatal(err)
	}
	err = src.Host("gpu1", nil).Do(context.Background(), remote.Action{Kind: remote.ActRestart}, nil)
	if err == nil || !strings.Contains(err.Error(), "gpu1: restart:") || !strings.Contains(err.Error(), "actions need SSH") {
		t.Errorf("err %v", err)
	}
	if _, err := New(Options{URL: "127.0.0.1:9428", Unit: "sglang"}); err == nil {
		t.Error("a URL without a scheme was taken")
	}
}

// TestSweepFindsWhatTheTailSkipped: rows the tail never sends arrive
// through the sweep, once each; nothing the tail sent is repeated.
func TestSweepFindsWhatTheTailSkipped(t *testing.T) {
	tail := lines(t, "tail-two-hosts.jsonl")
	stats := lines(t, "stats-run-start.jsonl")
	skip := map[int]bool{}
	for i := 440; i < 460; i++ {
		skip[i] = true
	}
	starts := map[string]time.Time{}
	for _, l := range stats {
		h, ts, _ := parseStart(l)
		starts[h] = ts
	}
	want := map[string]bool{}
	for _, l := range tail {
		r, _ := ParseRow(l, 0)
		if !r.Time.Before(starts[r.Hostname].Add(-runSlack)) {
			want[r.Key] = true
		}
	}
	evs, reqs := collect(t, &store{t: t, tail: tail, stats: stats, skip: skip}, len(want), 100*time.Millisecond)
	got := map[string]int{}
	for _, h := range []string{"gpu1", "gpu2"} {
		for _, ev := range evs[h] {
			if ev.Kind == event.KindJournal {
				got[ev.Journal.Cursor]++
			}
		}
	}
	for k := range want {
		if got[k] != 1 {
			t.Errorf("entry %s delivered %d times, want once", k, got[k])
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d entries, want %d", len(got), len(want))
	}
	sweeps := 0
	for _, r := range reqs {
		if strings.Contains(r, "| sort by (_time)") && strings.Contains(r, "_time:[2026-12-01T") {
			sweeps++
		}
	}
	if sweeps == 0 {
		t.Errorf("no sweep query among\n%s", strings.Join(reqs, "\n"))
	}
}

// TestJournalOrderOfEqualTimes: the first 300 lines of a real tail
// response (VictoriaLogs v1.52.1, a test host's flood.service printing
// "line N" in bursts of 50, captured 2026-12-01) come in another order
// where journald stamped a burst with one time; sorted by the cursor's
// sequence number they are in the order written.
func TestJournalOrderOfEqualTimes(t *testing.T) {
	var rows []Row
	for _, l := range lines(t, "tail-flood-equal-times.jsonl") {
		r, err := ParseRow(l, 0)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	number := func(r Row) int {
		var n int
		if _, err := fmt.Sscanf(r.Entry.Message, "line %d", &n); err != nil {
			t.Fatalf("%q: %v", r.Entry.Message, err)
		}
		return n
	}
	inversions := func(rs []Row) int {
		inv, hi := 0, 0
		for _, r := range rs {
			if n := number(r); n < hi {
				inv++
			} else {
				hi = n
			}
		}
		return inv
	}
	if inversions(rows) == 0 {
		t.Fatal("the capture is in order already: it tests nothing")
	}
	// Runs of one time, as the tail reader cuts them.
	var out []Row
	for i := 0; i < len(rows); {
		j := i
		for j < len(rows) && rows[j].Time.Equal(rows[i].Time) {
			j++
		}
		out = append(out, inJournalOrder(slices.Clone(rows[i:j]))...)
		i = j
	}
	if n := inversions(out); n != 0 {
		t.Errorf("%d lines after a later one once sorted", n)
	}
	for i, r := range out {
		if number(r) != i+1 {
			t.Fatalf("row %d is %q", i, r.Entry.Message)
		}
	}
	if seqnum("s=390aef01f64f42b7b8b05bb42e300fe7;i=43;b=26d8;m=dbe5a84e;t=6619a16a82fa4;x=5c31") != 0x43 || seqnum("") != 0 {
		t.Error("seqnum")
	}
}

// TestHostFilterFitsTheStore: a filter of 10 000 hosts' names is longer
// than VictoriaLogs takes (-search.maxQueryLen, 16 KiB by default): the
// tail then goes without it, and a survey asks in chunks that fit, every
// name in exactly one.
func TestHostFilterFitsTheStore(t *testing.T) {
	names := make([]string, 10000)
	for i := range names {
		names[i] = fmt.Sprintf("gpu-node-%05d.cluster", i)
	}
	if f := hostFilterOf(names[:2]); f != `_HOSTNAME:in("gpu-node-00000.cluster","gpu-node-00001.cluster")` {
		t.Errorf("filter of two: %s", f)
	}
	if f := hostFilterOf(names); f != "" {
		t.Errorf("a filter of 10 000 names, %d bytes, was kept", len(f))
	}
	var all []string
	for _, c := range hostChunks(names) {
		f := hostFilterOf(c)
		if f == "" || len(f) > maxHostFilter {
			t.Fatalf("a chunk of %d names makes a %d-byte filter", len(c), len(f))
		}
		all = append(all, c...)
	}
	if !slices.Equal(all, names) {
		t.Errorf("chunks hold %d names, want the 10 000 in order", len(all))
	}
	if len(hostChunks(names[:3])) != 1 || len(hostChunks(nil)) != 0 {
		t.Error("small lists")
	}
}

// TestSeenLine: a response line whose cursor was delivered is known by
// the cursor alone; one not delivered, or without a cursor, is not.
func TestSeenLine(t *testing.T) {
	tail := lines(t, "tail-two-hosts.jsonl")
	r, err := ParseRow(tail[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	st := &stream{seen: map[string]time.Time{r.Key: r.Time}}
	if !st.seenLine(tail[0]) {
		t.Error("a delivered row's line is not known")
	}
	if st.seenLine(tail[1]) {
		t.Error("a row not delivered is known")
	}
	if st.seenLine([]byte(`{"_msg":"x","_time":"2026-12-01T22:31:33Z"}`)) {
		t.Error("a line without a cursor is known")
	}
}
