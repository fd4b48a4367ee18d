package journal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/unitname"
)

// step is what one Stream call of fakeJournal does.
type step struct {
	down    bool   // fail with sshx.ErrNotConnected
	send    int    // entries to send before the stream ends; -1 = all, then stay open
	waitErr string // the command's error when the stream ends
	before  func(j *fakeJournal)
	back    int  // a buggy journalctl: start this many entries before the position
	partial bool // end with half of the next entry's line (cut mid-line)
}

// noExport is a waitErr for a host that refuses -o export, as journalctl
// refuses a format it does not know, worded as sshx words it (the
// command, its exit status and its standard error).
const noExport = `gpu1: "exec journalctl -q -u 'seq.service' -o export -f": Process exited with status 1 (stderr: Unknown output format 'export'.)`

// fakeJournal is a journal of numbered entries and a script of streams:
// it reads the resume point from the command the way journalctl would.
type fakeJournal struct {
	t       *testing.T
	mu      sync.Mutex
	entries []string // JSON lines; sent as export when the follow asks for it
	plan    []step
	cmds    []string
	gen     uint64
	wg      sync.WaitGroup
	// noExport makes every follow that asks for -o export fail at once
	// with the noExport error, as on a host whose journalctl (or a wrapper
	// standing in for it) refuses the format.
	noExport bool
	// jsonOnly sends JSON whatever the command asks for, like a wrapper
	// that rewrites the format.
	jsonOnly bool
	// exportStreams counts the streams sent as export.
	exportStreams int
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func entryLine(i int, msg string) string {
	return fmt.Sprintf(`{"__CURSOR":"%s","__REALTIME_TIMESTAMP":"%d","_SYSTEMD_UNIT":"seq.service","_PID":"7","PRIORITY":"6","MESSAGE":%q}`,
		cursorOf(i), 1796000000000000+int64(i)*1000, msg)
}

func cursorOf(i int) string {
	return fmt.Sprintf("s=aaaa;i=%x;b=%s;m=%x;t=%x;x=1", i, testBoot, i, 1796000000000000+int64(i)*1000)
}

func newFakeJournal(t *testing.T, n int, plan ...step) *fakeJournal {
	j := &fakeJournal{t: t, plan: plan}
	for i := 1; i <= n; i++ {
		j.entries = append(j.entries, entryLine(i, "seq "+strconv.Itoa(i)))
	}
	t.Cleanup(j.wg.Wait)
	return j
}

func (j *fakeJournal) Generation() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.gen
}

var (
	cursorArg = regexp.MustCompile(`--cursor='([^']*)'`)
	sinceArg  = regexp.MustCompile(`--since=@(\d+)\.(\d{6})`)
	tailArg   = regexp.MustCompile(` -n (\d+)`)
)

// start returns the index of the first entry a command shows, running
// Command's scripts the way the host's shell would.
func (j *fakeJournal) start(cmd string) int {
	if strings.HasPrefix(cmd, "f=$(") { // resume: the cursor if its entry exists, else the time
		c := cursorArg.FindStringSubmatch(cmd)[1]
		for k, line := range j.entries {
			if e, _ := Decode([]byte(line)); e.Cursor == c {
				return k
			}
		}
		return j.since(sinceArg.FindStringSubmatch(cmd))
	}
	if strings.HasPrefix(cmd, "t=$(") { // start: the tail, or from now
		n, _ := strconv.Atoi(tailArg.FindStringSubmatch(cmd)[1])
		return max(len(j.entries)-n, 0)
	}
	if m := cursorArg.FindStringSubmatch(cmd); m != nil {
		_, want, _ := seqOf(m[1])
		for k, line := range j.entries {
			e, _ := Decode([]byte(line))
			if _, i, _ := seqOf(e.Cursor); i >= want {
				return k // the entry itself, or the nearest later one
			}
		}
		return len(j.entries)
	}
	if m := sinceArg.FindStringSubmatch(cmd); m != nil {
		return j.since(m)
	}
	j.t.Errorf("command without a start: %s", cmd)
	return 0
}

// since returns the index of the first entry at or after --since=@s.us.
func (j *fakeJournal) since(m []string) int {
	sec, _ := strconv.ParseInt(m[1], 10, 64)
	us, _ := strconv.ParseInt(m[2], 10, 64)
	t := time.UnixMicro(sec*1e6 + us)
	for k, line := range j.entries {
		if e, _ := Decode([]byte(line)); !e.Realtime.Before(t) {
			return k
		}
	}
	return len(j.entries)
}

func (j *fakeJournal) Stream(ctx context.Context, cmd string) (io.ReadCloser, func() error, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.cmds = append(j.cmds, cmd)
	if len(j.plan) == 0 {
		j.t.Errorf("Stream called more often than planned: %s", cmd)
		return nil, nil, errors.New("unplanned")
	}
	st := j.plan[0]
	j.plan = j.plan[1:]
	if st.down {
		return nil, nil, fmt.Errorf("gpu1: %w", sshx.ErrNotConnected)
	}
	j.gen++
	if st.before != nil {
		st.before(j)
	}
	export := strings.Contains(cmd, "exec journalctl -q -u 'seq.service' -o export ")
	j.exportStreams += btoi(export && !j.noExport && !j.jsonOnly)
	if export && j.noExport {
		st = step{send: 0, waitErr: noExport}
	}
	from := max(j.start(cmd)-st.back, 0)
	lines := j.entries[from:]
	if export && !j.jsonOnly {
		lines = slices.Clone(lines)
		for i, l := range lines {
			lines[i] = strings.TrimSuffix(exportOf(l), "\n")
		}
	}
	var half string
	if st.send >= 0 && st.send < len(lines) {
		if st.partial {
			half = lines[st.send][:len(lines[st.send])/2]
		}
		lines = lines[:st.send]
	}
	pr, pw := io.Pipe()
	out := &fakeStream{PipeReader: pr, closed: make(chan struct{})}
	done := make(chan struct{})
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		defer close(done)
		for _, l := range lines {
			if _, err := io.WriteString(pw, l+"\n"); err != nil {
				return
			}
		}
		if half != "" {
			_, _ = io.WriteString(pw, half)
		}
		if st.send < 0 {
			// Stay open like journalctl -f until the session is closed.
			select {
			case <-ctx.Done():
			case <-out.closed:
			}
			pw.CloseWithError(io.EOF)
			return
		}
		pw.Close()
	}()
	wait := func() error {
		<-done
		if st.waitErr != "" {
			return errors.New(st.waitErr)
		}
		return nil
	}
	return out, wait, nil
}

// fakeStream is a stream whose Close, like closing an SSH session, ends
// the remote command.
type fakeStream struct {
	*io.PipeReader
	once   sync.Once
	closed chan struct{}
}

func (s *fakeStream) Close() error {
	s.once.Do(func() { close(s.closed) })
	return s.PipeReader.Close()
}

// collect follows j until pred says stop, and returns what was emitted.
func collect(t *testing.T, j Source, opts Options, until func([]event.Event) bool) []event.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if opts.Unit == "" {
		opts.Unit = "seq"
	}
	opts.Host = "gpu1"
	opts.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	var evs []event.Event
	err := Follow(ctx, j, opts, func(ev event.Event) bool {
		evs = append(evs, ev)
		return !until(evs)
	})
	if err != nil {
		t.Fatalf("Follow: %v (after %d events)", err, len(evs))
	}
	return evs
}

// lines returns the messages of journal events and the reasons of gaps.
func lines(evs []event.Event) (msgs, gaps []string) {
	for _, ev := range evs {
		switch ev.Kind {
		case event.KindJournal:
			msgs = append(msgs, ev.Journal.Message)
		case event.KindGap:
			gaps = append(gaps, ev.Gap.Reason)
		default: // a follower emits journal entries and gaps only
		}
	}
	return msgs, gaps
}

func seqLines(from, to int) []string {
	var s []string
	for i := from; i <= to; i++ {
		s = append(s, "seq "+strconv.Itoa(i))
	}
	return s
}

func untilMessage(last string) func([]event.Event) bool {
	return func(evs []event.Event) bool {
		ev := evs[len(evs)-1]
		return ev.Kind == event.KindJournal && ev.Journal.Message == last
	}
}

func TestFollowResumesWithoutLossOrRepeat(t *testing.T) {
	j := newFakeJournal(t, 50,
		step{send: 10, waitErr: "connection lost"},
		step{down: true}, step{down: true},
		step{send: 15},
		step{send: -1},
	)
	evs := collect(t, j, Options{}, untilMessage("seq 50"))
	msgs, gaps := lines(evs)
	if want := seqLines(1, 50); strings.Join(msgs, ",") != strings.Join(want, ",") {
		t.Errorf("delivered %v", msgs)
	}
	if strings.Join(gaps, ",") != "reconnect,reconnect" {
		t.Errorf("gaps %v, want two reconnect markers", gaps)
	}
	if len(j.cmds) != 5 || !strings.Contains(j.cmds[0], " -n 200") ||
		!strings.Contains(j.cmds[3], "--no-tail --cursor='"+cursorOf(10)+"'") ||
		!strings.Contains(j.cmds[4], "--cursor='"+cursorOf(24)+"'") {
		t.Errorf("commands:\n%s", strings.Join(j.cmds, "\n"))
	}
	for _, ev := range evs {
		if ev.Kind == event.KindJournal && (ev.Host != "gpu1" || ev.Time.IsZero() || ev.Seen.IsZero() || ev.Journal.Unit != "seq.service") {
			t.Fatalf("event %+v %+v", ev, ev.Journal)
		}
	}
}

func TestFollowCutMidLine(t *testing.T) {
	// A connection dropped mid-line leaves half an entry: not an error, and
	// the entry comes whole after the resume.
	j := newFakeJournal(t, 10, step{send: 4, partial: true}, step{send: -1})
	msgs, gaps := lines(collect(t, j, Options{}, untilMessage("seq 10")))
	if strings.Join(msgs, ",") != strings.Join(seqLines(1, 10), ",") || strings.Join(gaps, ",") != "reconnect" {
		t.Errorf("delivered %v, gaps %v", msgs, gaps)
	}
}

func TestFollowTail(t *testing.T) {
	j := newFakeJournal(t, 30, step{send: -1})
	msgs, _ := lines(collect(t, j, Options{Tail: 5}, untilMessage("seq 30")))
	if strings.Join(msgs, ",") != strings.Join(seqLines(26, 30), ",") {
		t.Errorf("tail of 5: %v", msgs)
	}
	if !strings.Contains(j.cmds[0], " -n 5 ") || !strings.Contains(j.cmds[0], "exec journalctl -q -u 'seq.service' -o export -f --no-pager --output-fields=MESSAGE,") {
		t.Errorf("command %s", j.cmds[0])
	}
}

func TestFollowDropsRepeatsOfABuggyResume(t *testing.T) {
	// systemd#30288-style trouble: the resumed stream starts a few entries
	// early. They are dropped by cursor, and it is not a lost cursor.
	j := newFakeJournal(t, 20, step{send: 8}, step{send: -1, back: 3})
	msgs, gaps := lines(collect(t, j, Options{}, untilMessage("seq 20")))
	if strings.Join(msgs, ",") != strings.Join(seqLines(1, 20), ",") {
		t.Errorf("delivered %v", msgs)
	}
	if strings.Join(gaps, ",") != "reconnect" {
		t.Errorf("gaps %v", gaps)
	}
}

func TestFollowCursorVacuumed(t *testing.T) {
	vacuum := func(j *fakeJournal) { j.entries = j.entries[12:] } // entries 1..12 gone
	j := newFakeJournal(t, 30, step{send: 10}, step{send: -1, before: vacuum})
	evs := collect(t, j, Options{}, untilMessage("seq 30"))
	msgs, gaps := lines(evs)
	if want := append(seqLines(1, 10), seqLines(13, 30)...); strings.Join(msgs, ",") != strings.Join(want, ",") {
		t.Errorf("delivered %v", msgs)
	}
	if strings.Join(gaps, ",") != "reconnect,cursor-lost" {
		t.Errorf("gaps %v", gaps)
	}
	for _, ev := range evs {
		if ev.Kind == event.KindGap && ev.Gap.Reason == GapCursorLost && !strings.Contains(ev.Gap.Message, "may be missing") {
			t.Errorf("cursor-lost marker says %q", ev.Gap.Message)
		}
	}
}

func TestFollowCursorRejected(t *testing.T) {
	j := newFakeJournal(t, 30,
		step{send: 10},
		step{send: 0, waitErr: "Process exited with status 1 (stderr: Failed to seek to cursor: Invalid argument)"},
		step{send: -1},
	)
	msgs, gaps := lines(collect(t, j, Options{}, untilMessage("seq 30")))
	if strings.Join(msgs, ",") != strings.Join(seqLines(1, 30), ",") {
		t.Errorf("delivered %v", msgs)
	}
	if strings.Join(gaps, ",") != "reconnect,cursor-lost" {
		t.Errorf("gaps %v", gaps)
	}
	if !strings.Contains(j.cmds[2], "--no-tail --since=@1796000000.010000") {
		t.Errorf("resume by time: %s", j.cmds[2])
	}
}

func TestFollowSuppressionAndUndecodable(t *testing.T) {
	j := newFakeJournal(t, 3, step{send: -1})
	sup := `{"__CURSOR":"s=aaaa;i=10;b=x;m=1;t=1;x=1","__REALTIME_TIMESTAMP":"1796000000100000","MESSAGE_ID":"` + SuppressedID +
		`","MESSAGE":"Suppressed 17500 messages from seq.service","_SYSTEMD_UNIT":"systemd-journald.service","OBJECT_SYSTEMD_UNIT":"seq.service","N_DROPPED":"17500"}`
	j.entries = append(j.entries, `{"MESSAGE":`, sup, entryLine(0x11, "after"))
	evs := collect(t, j, Options{}, untilMessage("after"))
	msgs, gaps := lines(evs)
	if strings.Join(msgs, ",") != "seq 1,seq 2,seq 3,after" || strings.Join(gaps, ",") != "dropped,suppressed" {
		t.Fatalf("messages %v gaps %v", msgs, gaps)
	}
	g := evs[4].Gap
	if g.Count != 17500 || g.Message != "Suppressed 17500 messages from seq.service" || !evs[4].Time.Equal(time.UnixMicro(1796000000100000)) {
		t.Errorf("suppressed gap %+v at %v", g, evs[4].Time)
	}
}

func TestFollowStopsWhenEmitRefuses(t *testing.T) {
	j := newFakeJournal(t, 10, step{send: -1})
	evs := collect(t, j, Options{}, func(evs []event.Event) bool { return len(evs) == 3 })
	if len(evs) != 3 {
		t.Errorf("%d events after emit refused", len(evs))
	}
}

func TestFollowEndsWithContext(t *testing.T) {
	j := newFakeJournal(t, 5, step{send: -1})
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan int, 10)
	err := Follow(ctx, j, Options{Host: "gpu1", Unit: "seq"}, func(ev event.Event) bool {
		got <- 1
		if len(got) == 5 {
			cancel()
		}
		return true
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Follow = %v, want context.Canceled", err)
	}
	// The stream's writer has ended: t.Cleanup waits for it.
}

// TestFollowRefusesBadUnit: a name that is not exactly one unit never
// reaches journalctl. A glob there would follow every matching unit and
// mix their lines into this one's diagnosis; the refusal wraps
// unitname.ErrInvalid, so the host driver does not retry it.
func TestFollowRefusesBadUnit(t *testing.T) {
	for _, u := range []string{"", "a b", "x';rm -rf /;'", "a\nb", "sglang*", "sglang?.service", "sgl[ab].service", "sglang.servce"} {
		j := newFakeJournal(t, 0)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second) // an accepted name would follow until then
		err := Follow(ctx, j, Options{Host: "gpu1", Unit: u}, func(event.Event) bool { return true })
		cancel()
		if !errors.Is(err, unitname.ErrInvalid) || !strings.Contains(err.Error(), "gpu1") {
			t.Errorf("unit %q: err %v, want unitname.ErrInvalid naming the host", u, err)
		}
		if len(j.cmds) > 0 {
			t.Errorf("unit %q reached the host: %s", u, j.cmds[0])
		}
	}
}

func TestCommand(t *testing.T) {
	const follow = "exec journalctl -q -u 'sglang.service' -o export -f --no-pager --output-fields=" + OutputFields + " --no-tail "
	const followJSON = "exec journalctl -q -u 'sglang.service' -o json --all -f --no-pager --output-fields=" + OutputFields + " --no-tail "
	const sed = ` | sed -n 's/.*"__CURSOR":"\([^"]*\)".*/__CURSOR=\1/p'`
	o := Options{Unit: "sglang.service"}
	oj := Options{Unit: "sglang.service", Format: FormatJSON}
	at := time.UnixMicro(1796000000000042)
	for _, tt := range []struct {
		name   string
		opts   Options
		cursor string
		since  time.Time
		want   string
	}{
		{"start with the tail", o, "", time.Time{},
			`t=$(date +%s.%6N); c=$(journalctl -q -u 'sglang.service' -n 200 -o export --output-fields=MESSAGE_ID 2>/dev/null | head -n1); c=${c#__CURSOR=}; ` +
				`if [ -n "$c" ]; then ` + follow + `--cursor="$c"; fi; ` + follow + `--since=@"$t"`},
		{"start without a tail", Options{Unit: "sglang.service", Tail: -1}, "", time.Time{}, follow + `--since=@"$(date +%s.%6N)"`},
		{"cursor only, quoted", o, "s=a'b", time.Time{}, follow + `--cursor='s=a'\''b'`},
		{"since only", o, "", at, follow + "--since=@1796000000.000042"},
		{"resume", o, "s=1;i=2", at,
			`f=$(journalctl -q -u 'sglang.service' --cursor='s=1;i=2' -o export --output-fields=MESSAGE_ID 2>/dev/null | head -n1); ` +
				`if [ "$f" = '__CURSOR=s=1;i=2' ]; then ` + follow + `--cursor='s=1;i=2'; fi; ` + follow + "--since=@1796000000.000042"},
		// The JSON fallback: the same scripts, the queries' cursor taken
		// out of their JSON line.
		{"json: start with the tail", oj, "", time.Time{},
			`t=$(date +%s.%6N); c=$(journalctl -q -u 'sglang.service' -n 200 -o json --output-fields=MESSAGE_ID 2>/dev/null | head -n1` + sed + `); c=${c#__CURSOR=}; ` +
				`if [ -n "$c" ]; then ` + followJSON + `--cursor="$c"; fi; ` + followJSON + `--since=@"$t"`},
		{"json: cursor only", oj, "s=1", time.Time{}, followJSON + `--cursor='s=1'`},
		{"json: resume", oj, "s=1;i=2", at,
			`f=$(journalctl -q -u 'sglang.service' --cursor='s=1;i=2' -o json --output-fields=MESSAGE_ID 2>/dev/null | head -n1` + sed + `); ` +
				`if [ "$f" = '__CURSOR=s=1;i=2' ]; then ` + followJSON + `--cursor='s=1;i=2'; fi; ` + followJSON + "--since=@1796000000.000042"},
	} {
		if got := Command(tt.opts, tt.cursor, tt.since); got != tt.want {
			t.Errorf("%s:\ngot  %s\nwant %s", tt.name, got, tt.want)
		}
	}
	if got := cursorTime(testCursor); !got.Equal(time.UnixMicro(0x66174a391f7a3)) {
		t.Errorf("cursorTime = %v", got)
	}
}

// TestFollowMarksAReboot: a line from a new boot (another _BOOT_ID) comes
// after a "reboot" gap saying so; lines of one boot carry none.
func TestFollowMarksAReboot(t *testing.T) {
	j := newFakeJournal(t, 0, step{send: -1})
	withBoot := func(i int, boot, msg string) string {
		return strings.Replace(entryLine(i, msg), `"PRIORITY"`, `"_BOOT_ID":"`+boot+`","PRIORITY"`, 1)
	}
	next := strings.Repeat("b", 32)
	j.entries = append(j.entries, withBoot(1, testBoot, "before"), withBoot(2, testBoot, "still"), withBoot(3, next, "after"))
	evs := collect(t, j, Options{}, untilMessage("after"))
	msgs, gaps := lines(evs)
	if strings.Join(msgs, ",") != "before,still,after" || strings.Join(gaps, ",") != GapReboot {
		t.Fatalf("messages %v gaps %v", msgs, gaps)
	}
	if g := evs[2]; g.Kind != event.KindGap || !strings.Contains(g.Gap.Message, "host rebooted (boot "+testBoot[:8]+" → bbbbbbbb)") {
		t.Errorf("third event %+v, want the reboot gap before the new boot's line", g.Gap)
	}
}

// TestFollowReadsExport: by default the follow asks for -o export and
// decodes it (the fake renders its entries as journalctl would), through
// reconnects.
func TestFollowReadsExport(t *testing.T) {
	j := newFakeJournal(t, 40, step{send: 15, waitErr: "connection lost"}, step{send: 5, partial: true}, step{send: -1})
	msgs, gaps := lines(collect(t, j, Options{}, untilMessage("seq 40")))
	if strings.Join(msgs, ",") != strings.Join(seqLines(1, 40), ",") || strings.Join(gaps, ",") != "reconnect,reconnect" {
		t.Errorf("delivered %v, gaps %v", msgs, gaps)
	}
	if j.exportStreams != 3 {
		t.Errorf("%d of 3 streams were export:\n%s", j.exportStreams, strings.Join(j.cmds, "\n"))
	}
}

// TestFollowFallsBackToJSON: a host that refuses -o export is read as
// JSON from then on, through reconnects, with nothing lost; the marker
// says why.
func TestFollowFallsBackToJSON(t *testing.T) {
	j := newFakeJournal(t, 30, step{}, step{send: 10, waitErr: "connection lost"}, step{send: -1})
	j.noExport = true
	evs := collect(t, j, Options{}, untilMessage("seq 30"))
	msgs, gaps := lines(evs)
	if strings.Join(msgs, ",") != strings.Join(seqLines(1, 30), ",") || strings.Join(gaps, ",") != "reconnect,reconnect" {
		t.Fatalf("delivered %v, gaps %v", msgs, gaps)
	}
	if g := evs[0].Gap; !strings.HasPrefix(g.Message, "journalctl refused -o export (gpu1: ") ||
		!strings.HasSuffix(g.Message, "(stderr: Unknown output format 'export'.)); reading its JSON output instead") {
		t.Errorf("fallback marker %q", g.Message)
	}
	if !strings.Contains(j.cmds[0], "-o export -f") || !strings.Contains(j.cmds[1], "-o json --all -f") ||
		!strings.Contains(j.cmds[2], "-o json --output-fields=MESSAGE_ID 2>/dev/null | head -n1 | sed") || strings.Contains(j.cmds[2], "-o export") {
		t.Errorf("commands:\n%s", strings.Join(j.cmds, "\n"))
	}
}

// TestFollowKeepsExport: a stream that ends without entries for another
// reason (a refused cursor, a cut link) does not switch the format.
func TestFollowKeepsExport(t *testing.T) {
	j := newFakeJournal(t, 20,
		step{send: 10},
		// As sshx words it: the command, quoted, names export itself.
		step{send: 0, waitErr: `gpu1: "exec journalctl -q -u 'seq.service' -o export -f --cursor='x'": Process exited with status 1 (stderr: Failed to seek to cursor: Invalid argument)`},
		step{send: 0, waitErr: `gpu1: "exec journalctl -q -u 'seq.service' -o export -f": Process exited with status 255`},
		step{send: -1},
	)
	msgs, _ := lines(collect(t, j, Options{}, untilMessage("seq 20")))
	if strings.Join(msgs, ",") != strings.Join(seqLines(1, 20), ",") {
		t.Errorf("delivered %v", msgs)
	}
	for i, c := range j.cmds {
		if strings.Contains(c, "-o json") {
			t.Errorf("command %d switched to JSON: %s", i, c)
		}
	}
}

// TestFollowReadsJSONWhateverWasAsked: a stream that is JSON although
// export was asked for (a wrapper that rewrites the format) is decoded as
// JSON: Follow looks at its first byte.
func TestFollowReadsJSONWhateverWasAsked(t *testing.T) {
	j := newFakeJournal(t, 10, step{send: -1})
	j.jsonOnly = true
	msgs, gaps := lines(collect(t, j, Options{}, untilMessage("seq 10")))
	if strings.Join(msgs, ",") != strings.Join(seqLines(1, 10), ",") || len(gaps) != 0 || !strings.Contains(j.cmds[0], "-o export") {
		t.Errorf("delivered %v, gaps %v, command %s", msgs, gaps, j.cmds[0])
	}
}
