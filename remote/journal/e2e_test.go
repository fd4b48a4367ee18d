package journal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/sanitize"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// TestE2E runs the package's tests against real hosts: one testbed of two
// hosts, gpu1 for the follow, cut and cursor tests, gpu2 for the
// rate-limit test (which changes journald's configuration).
func TestE2E(t *testing.T) {
	tb := testbed.Start(t, 2)
	t.Run("FollowSGLang", func(t *testing.T) { testFollowSGLang(t, tb) })
	t.Run("EscapeSequencesDecodedExactly", func(t *testing.T) { testEscapes(t, tb) })
	t.Run("CursorLost", func(t *testing.T) { testCursorLost(t, tb) })
	t.Run("SuppressionSurfaced", func(t *testing.T) { testSuppression(t, tb) })
	t.Run("NoLossAcrossLinkCuts", func(t *testing.T) { testLinkCuts(t, tb) })
	t.Run("FallbackToJSON", func(t *testing.T) { testFallback(t, tb) })
}

// refuseExport stands in for journalctl on a host that refuses -o export
// (a wrapper allowing only JSON), answering as journalctl answers a
// format it does not know.
const refuseExport = `#!/bin/sh
for a in "$@"; do
  case "$a" in export) echo "Unknown output format 'export'." >&2; exit 1;; esac
done
exec /usr/bin/journalctl "$@"
`

// testFallback: on a host whose journalctl refuses -o export, Follow
// says so and reads JSON instead, with the tail and the exact bytes.
func testFallback(t *testing.T, tb *testbed.Testbed) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run(t, ctx, tb, "gpu1", `systemd-run --unit=fb.service --wait -q sh -c 'echo fallback 1; printf "fallback \033[1mbold\n"'`)
	run(t, ctx, tb, "gpu1", "cat > /usr/local/bin/journalctl <<'EOF'\n"+refuseExport+"EOF\nchmod 755 /usr/local/bin/journalctl")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if out, err := tb.Run(ctx, "gpu1", "rm -f /usr/local/bin/journalctl"); err != nil {
			t.Errorf("remove the wrapper: %v %s", err, out)
		}
	})
	if out, _ := tb.Run(ctx, "gpu1", "journalctl -u fb -o export -n 1 2>&1"); !strings.Contains(out, "Unknown output format 'export'.") {
		t.Fatalf("the wrapper is not the journalctl sessions run: %q", out)
	}
	c, down := conn(t, ctx, tb, "gpu1", nil)
	defer down()
	r := newRecorder(func(ev event.Event) bool { return ev.Journal != nil && ev.Journal.Message == "fallback \x1b[1mbold" })
	stop := follow(ctx, c, Options{Host: "gpu1", Unit: "fb"}, r)
	waitHit(t, r, 30*time.Second, "the bold line")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	evs := r.events()
	msgs, gaps := lines(evs)
	if evs[0].Kind != event.KindGap || !strings.Contains(evs[0].Gap.Message, "journalctl refused -o export") || len(gaps) != 1 {
		t.Errorf("gaps %v, first event %+v, want one marker saying export was refused", gaps, evs[0])
	}
	if !slices.Contains(msgs, "fallback 1") {
		t.Errorf("the tail's lines %q lack the first line", msgs)
	}
	t.Logf("fallback: %s", evs[0].Gap.Message)
	noFollowers(t, ctx, tb, "gpu1")
}

// conn connects to host through the testbed's ssh_config with keepalives
// short enough to notice a cut link in about two seconds.
func conn(t *testing.T, ctx context.Context, tb *testbed.Testbed, host string, states chan<- sshx.State) (*sshx.Conn, func()) {
	t.Helper()
	cfg, err := sshx.Resolve(ctx, host, sshx.ResolveOptions{ConfigFile: tb.SSHConfig()})
	if err != nil {
		t.Fatalf("resolve %s: %v", host, err)
	}
	cfg.ServerAliveInterval, cfg.ServerAliveCountMax, cfg.ConnectTimeout = time.Second, 2, 2*time.Second
	c := sshx.NewConn(cfg, sshx.ConnOptions{OnState: func(st sshx.State, _ error, _ time.Time) {
		if states != nil {
			select {
			case states <- st:
			default:
			}
		}
	}})
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Run(rctx)
	}()
	if _, err := c.Client(ctx); err != nil {
		cancel()
		<-done
		t.Fatalf("connect %s: %v", host, err)
	}
	return c, func() { cancel(); <-done }
}

// recorder collects Follow's events and signals when one matches.
type recorder struct {
	mu   sync.Mutex
	evs  []event.Event
	want func(event.Event) bool
	hit  chan struct{}
	once sync.Once
}

func newRecorder(want func(event.Event) bool) *recorder {
	return &recorder{want: want, hit: make(chan struct{})}
}

func (r *recorder) emit(ev event.Event) bool {
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
	if r.want(ev) {
		r.once.Do(func() { close(r.hit) })
	}
	return true
}

func (r *recorder) events() []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event.Event(nil), r.evs...)
}

// follow runs Follow in the background; stop ends it and returns its error.
func follow(ctx context.Context, src Source, opts Options, r *recorder) (stop func() error) {
	fctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- Follow(fctx, src, opts, r.emit) }()
	return func() error {
		cancel()
		err := <-errc
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
}

func waitHit(t *testing.T, r *recorder, d time.Duration, what string) {
	t.Helper()
	select {
	case <-r.hit:
	case <-time.After(d):
		msgs, gaps := lines(r.events())
		t.Fatalf("no %s within %v; %d lines (last %q), gaps %v", what, d, len(msgs), lastOf(msgs), gaps)
	}
}

func lastOf(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

func run(t *testing.T, ctx context.Context, tb *testbed.Testbed, host, cmd string) string {
	t.Helper()
	out, err := tb.Run(ctx, host, cmd)
	if err != nil {
		t.Fatalf("%s: %s: %v\n%s", host, cmd, err, out)
	}
	return out
}

// noFollowers waits until no journalctl runs on host: Follow must leave
// no orphaned followers behind.
func noFollowers(t *testing.T, ctx context.Context, tb *testbed.Testbed, host string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, _ := tb.Run(ctx, host, "pgrep -c -x journalctl || true")
		if strings.TrimSpace(out) == "0" {
			return
		}
		if time.Now().After(deadline) {
			ps, _ := tb.Run(ctx, host, "ps -eo pid,etimes,args | grep [j]ournalctl")
			t.Fatalf("%s: journalctl still running after the follow ended:\n%s", host, ps)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

const (
	midStarting = "7d4958e842da4a758f6c1cdc7b36dcc5"
	midStarted  = "39f53479d3a045ac8e11786248231fbf"
)

func testFollowSGLang(t *testing.T, tb *testbed.Testbed) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, down := conn(t, ctx, tb, "gpu1", nil)
	defer down()
	r := newRecorder(func(ev event.Event) bool {
		return ev.Journal != nil && strings.Contains(ev.Journal.Message, "The server is fired up and ready to roll")
	})
	stop := follow(ctx, c, Options{Host: "gpu1", Unit: "sglang"}, r)
	time.Sleep(time.Second) // let the follow begin before the unit starts
	run(t, ctx, tb, "gpu1", "systemctl start sglang")
	inv := strings.TrimSpace(run(t, ctx, tb, "gpu1", "systemctl show -P InvocationID sglang"))
	waitHit(t, r, 90*time.Second, "ready line")
	if err := stop(); err != nil {
		t.Fatalf("Follow: %v", err)
	}
	noFollowers(t, ctx, tb, "gpu1")

	// From the current invocation's Started line on: systemd's line (from
	// PID 1, with its MESSAGE_ID and job fields), then the service's own.
	// systemd 252 logs no "Starting" line (7d4958e8…) for a Type=simple
	// unit: its start job completes at once.
	evs := r.events()
	from := -1
	for i, ev := range evs {
		if ev.Journal != nil && ev.Journal.MessageID == midStarted && ev.Journal.InvocationID == inv {
			from = i
		}
	}
	if from < 0 {
		t.Fatal("no Started line of the current invocation")
	}
	var (
		order     []string
		lastSeq   uint64
		byteArray bool
	)
	for i, ev := range evs {
		if ev.Kind != event.KindJournal {
			t.Errorf("unexpected %s event %+v", ev.Kind, ev.Gap)
			continue
		}
		j := ev.Journal
		if _, n, ok := seqOf(j.Cursor); !ok || n <= lastSeq {
			t.Errorf("cursor %q does not follow seqnum %d", j.Cursor, lastSeq)
		} else {
			lastSeq = n
		}
		if ev.Time.IsZero() || j.Unit != "sglang.service" {
			t.Errorf("entry %+v at %v", j, ev.Time)
		}
		if i < from {
			continue // the tail's earlier lines
		}
		switch {
		case j.MessageID == midStarting:
			order = append(order, "starting")
		case j.MessageID == midStarted:
			order = append(order, "started")
			if j.Fields["JOB_TYPE"] != "start" || j.Fields["JOB_RESULT"] != "done" || j.PID != 1 || j.InvocationID != inv {
				t.Errorf("Started line %+v", j)
			}
		case strings.Contains(j.Message, "TP0] Load weight begin"):
			order = append(order, "load")
			if j.PID <= 1 || j.InvocationID != inv {
				t.Errorf("service line %+v, want the service's pid and invocation %s", j, inv)
			}
		case strings.HasPrefix(j.Message, "\rLoading safetensors"):
			byteArray = true
		}
	}
	if strings.Join(order, ",") != "started,load" {
		t.Errorf("systemd's and the service's lines in order: got %v", order)
	}
	if !byteArray {
		t.Error("no progress-bar line decoded from its byte array")
	}
}

// opens tells when a Source's Stream has opened a stream.
type opens struct {
	Source
	ch chan struct{}
}

func (o opens) Stream(ctx context.Context, cmd string) (io.ReadCloser, func() error, error) {
	out, wait, err := o.Source.Stream(ctx, cmd)
	if err == nil {
		select {
		case o.ch <- struct{}{}:
		default:
		}
	}
	return out, wait, err
}

// seqgen prints "seq 1" … "seq N" at a steady rate.
const seqgen = `import sys, time
n, rate = int(sys.argv[1]), float(sys.argv[2])
t0 = time.monotonic()
for i in range(1, n + 1):
    sys.stdout.write("seq %d\n" % i)
    if i % 20 == 0:
        sys.stdout.flush()
        d = t0 + i / rate - time.monotonic()
        if d > 0:
            time.sleep(d)
sys.stdout.flush()
`

func testLinkCuts(t *testing.T, tb *testbed.Testbed) {
	const (
		lines = 20000
		rate  = 500 // lines/s: the run outlasts five cut-and-restore cycles (~6-7 s each)
		cuts  = 5
	)
	h, err := tb.Host("gpu1")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	run(t, ctx, tb, "gpu1", "cat > /usr/local/bin/seqgen.py <<'EOF'\n"+seqgen+"EOF\n"+
		fmt.Sprintf("printf '[Service]\\nExecStart=/usr/bin/python3 /usr/local/bin/seqgen.py %d %d\\n' > /etc/systemd/system/seqgen.service && systemctl daemon-reload", lines, rate))

	states := make(chan sshx.State, 64)
	c, down := conn(t, ctx, tb, "gpu1", states)
	defer down()
	seqRE := regexp.MustCompile(`^seq (\d+)$`)
	r := newRecorder(func(ev event.Event) bool {
		return ev.Journal != nil && ev.Journal.Message == fmt.Sprintf("seq %d", lines)
	})
	src := opens{Source: c, ch: make(chan struct{}, 1)}
	stop := follow(ctx, src, Options{Host: "gpu1", Unit: "seqgen", Tail: lines + 1000}, r)
	waitFor := func(what string, ch <-chan struct{}) {
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s within 30s", what)
		}
	}
	waitFor("journal stream", src.ch)
	start := time.Now()
	run(t, ctx, tb, "gpu1", "systemctl start seqgen")

	link := func(state string) {
		if out, err := exec.CommandContext(ctx, "ip", "link", "set", h.Link, state).CombinedOutput(); err != nil {
			t.Fatalf("ip link set %s %s: %v %s", h.Link, state, err, out)
		}
	}
	waitState := func(want sshx.State) {
		for {
			select {
			case st := <-states:
				if st == want {
					return
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("connection not %v within 30s", want)
			}
		}
	}
	cutsDuringRun := 0
	for i := 0; i < cuts; i++ {
		time.Sleep(time.Second)
		for len(states) > 0 {
			<-states
		}
		select {
		case <-r.hit:
		default:
			cutsDuringRun++
		}
		// Down for 3 s, and at least until the client has noticed: a cut
		// shorter than the keepalive timeout is one TCP rides out.
		link("down")
		time.Sleep(3 * time.Second)
		waitState(sshx.StateDown)
		link("up")
		waitState(sshx.StateUp)
		waitFor("journal stream after the reconnect", src.ch)
	}
	waitHit(t, r, 2*time.Minute, fmt.Sprintf("seq %d", lines))
	elapsed := time.Since(start)
	if err := stop(); err != nil {
		t.Fatalf("Follow: %v", err)
	}

	var got []int
	reconnects := 0
	for _, ev := range r.events() {
		switch {
		case ev.Kind == event.KindGap && ev.Gap.Reason == GapReconnect:
			reconnects++
		case ev.Kind == event.KindGap:
			t.Errorf("gap %s: %s", ev.Gap.Reason, ev.Gap.Message)
		case ev.Journal != nil:
			if m := seqRE.FindStringSubmatch(ev.Journal.Message); m != nil {
				n, _ := strconv.Atoi(m[1])
				got = append(got, n)
			}
		}
	}
	bad := 0
	for i, n := range got {
		if n != i+1 && bad < 10 {
			t.Errorf("line %d is seq %d", i+1, n)
			bad++
		}
	}
	if len(got) != lines {
		t.Errorf("delivered %d seq lines, want exactly %d", len(got), lines)
	}
	if reconnects < cuts {
		t.Errorf("%d reconnect markers for %d cuts", reconnects, cuts)
	}
	t.Logf("%d lines at %d/s through %d link cuts (%d while the generator ran): all delivered in %v, %d reconnect markers",
		len(got), rate, cuts, cutsDuringRun, elapsed.Round(time.Millisecond), reconnects)
	noFollowers(t, ctx, tb, "gpu1")
}

func testEscapes(t *testing.T, tb *testbed.Testbed) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const want = "\x1b]52;c;SGVsbG8=\x07\x1b]0;pwned\x07\x1b[2Jafter the escapes"
	run(t, ctx, tb, "gpu1", `systemd-run --unit=esc.service --wait -q sh -c 'printf "\033]52;c;SGVsbG8=\007\033]0;pwned\007\033[2Jafter the escapes\n"'`)
	raw := run(t, ctx, tb, "gpu1", "journalctl -u esc -o json --all --output-fields=MESSAGE --no-pager")
	if !strings.Contains(raw, `"MESSAGE":[27,93,53,50,59`) {
		t.Fatalf("journalctl did not print the line as a byte array: %s", raw)
	}
	c, down := conn(t, ctx, tb, "gpu1", nil)
	defer down()
	r := newRecorder(func(ev event.Event) bool {
		return ev.Journal != nil && strings.HasSuffix(ev.Journal.Message, "after the escapes")
	})
	stop := follow(ctx, c, Options{Host: "gpu1", Unit: "esc"}, r)
	waitHit(t, r, 30*time.Second, "escape line")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, ev := range r.events() {
		if ev.Journal == nil || !strings.HasSuffix(ev.Journal.Message, "after the escapes") {
			continue
		}
		if ev.Journal.Message != want {
			t.Errorf("decoded %q, want %q", ev.Journal.Message, want)
		}
		clean, _ := sanitize.Line(ev.Journal.Message, sanitize.DefaultMax)
		if strings.ContainsAny(clean, "\x1b\x07") {
			t.Errorf("sanitised line still has ESC or BEL: %q", clean)
		}
		t.Logf("decoded %q, shown as %q", ev.Journal.Message, clean)
	}
}

func testCursorLost(t *testing.T, tb *testbed.Testbed) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, down := conn(t, ctx, tb, "gpu1", nil)
	defer down()
	run(t, ctx, tb, "gpu1", `systemd-run --unit=cur1.service --wait -q sh -c 'for i in 1 2 3; do echo before $i; done'`)

	// Follow until "before 3", and keep the cursor where it stopped.
	r := newRecorder(func(ev event.Event) bool { return ev.Journal != nil && ev.Journal.Message == "before 3" })
	stop := follow(ctx, c, Options{Host: "gpu1", Unit: "cur1"}, r)
	waitHit(t, r, 30*time.Second, "before 3")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var cursor string
	for _, ev := range r.events() {
		if ev.Journal != nil {
			cursor = ev.Journal.Cursor
		}
	}

	t.Run("valid cursor resumes without repeats", func(t *testing.T) {
		run(t, ctx, tb, "gpu1", `systemd-run --unit=cur1.service --wait -q sh -c 'echo after 1'`)
		r := newRecorder(func(ev event.Event) bool { return ev.Journal != nil && ev.Journal.Message == "after 1" })
		stop := follow(ctx, c, Options{Host: "gpu1", Unit: "cur1", Cursor: cursor}, r)
		waitHit(t, r, 30*time.Second, "after 1")
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		msgs, gaps := lines(r.events())
		for _, m := range msgs {
			if strings.HasPrefix(m, "before") {
				t.Errorf("repeated %q", m)
			}
		}
		if len(gaps) != 0 {
			t.Errorf("gaps %v", gaps)
		}
	})

	t.Run("vacuumed cursor", func(t *testing.T) {
		// Rotate and vacuum everything archived: the cursor's entry is gone.
		run(t, ctx, tb, "gpu1", "journalctl --rotate && sleep 1.2 && journalctl --vacuum-time=1s -q")
		run(t, ctx, tb, "gpu1", `systemd-run --unit=cur1.service --wait -q sh -c 'echo after vacuum'`)
		if out := run(t, ctx, tb, "gpu1", "journalctl -q --no-pager -o cat -u cur1"); strings.Contains(out, "before 3") {
			t.Fatalf("vacuum left the old entries:\n%s", out)
		}
		r := newRecorder(func(ev event.Event) bool { return ev.Journal != nil && ev.Journal.Message == "after vacuum" })
		stop := follow(ctx, c, Options{Host: "gpu1", Unit: "cur1", Cursor: cursor}, r)
		waitHit(t, r, 30*time.Second, "after vacuum")
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if _, gaps := lines(r.events()); len(gaps) == 0 || gaps[0] != GapCursorLost {
			t.Errorf("gaps %v, want cursor-lost first", gaps)
		}
	})

	t.Run("rejected cursor", func(t *testing.T) {
		r := newRecorder(func(ev event.Event) bool { return ev.Journal != nil && ev.Journal.Message == "after vacuum" })
		stop := follow(ctx, c, Options{Host: "gpu1", Unit: "cur1", Cursor: "garbage"}, r)
		waitHit(t, r, 30*time.Second, "after vacuum")
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		evs := r.events()
		if evs[0].Kind != event.KindGap || evs[0].Gap.Reason != GapCursorLost || !strings.Contains(evs[0].Gap.Message, "Failed to seek to cursor") {
			t.Errorf("first event %+v %+v, want a cursor-lost gap naming journalctl's refusal", evs[0], evs[0].Gap)
		}
	})
	noFollowers(t, ctx, tb, "gpu1")
}

// flood prints n lines at once, waits out journald's rate-limit interval
// and prints one more, which is when journald reports what it dropped.
const flood = `import sys, time
n = int(sys.argv[1])
for i in range(1, n + 1):
    sys.stdout.write("flood %d\n" % i)
sys.stdout.flush()
time.sleep(3)
print("flood done", flush=True)
`

func testSuppression(t *testing.T, tb *testbed.Testbed) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// journald's limit with a short interval (the default is 30 s), on
	// gpu2 only; put back to the testbed's "no limit" afterwards.
	const dropin = "/etc/systemd/journald.conf.d/zz-journal-test.conf"
	run(t, ctx, tb, "gpu2", "printf '[Journal]\\nRateLimitIntervalSec=2s\\nRateLimitBurst=1000\\n' > "+dropin+" && systemctl restart systemd-journald")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if out, err := tb.Run(ctx, "gpu2", "rm -f "+dropin+" && systemctl restart systemd-journald"); err != nil {
			t.Errorf("restore journald: %v %s", err, out)
		}
	})
	run(t, ctx, tb, "gpu2", "cat > /usr/local/bin/flood.py <<'EOF'\n"+flood+"EOF\n")

	c, down := conn(t, ctx, tb, "gpu2", nil)
	defer down()
	r := newRecorder(func(ev event.Event) bool { return ev.Journal != nil && ev.Journal.Message == "flood done" })
	stop := follow(ctx, c, Options{Host: "gpu2", Unit: "flood"}, r)
	time.Sleep(time.Second)
	const n = 20000
	run(t, ctx, tb, "gpu2", fmt.Sprintf("systemd-run --unit=flood.service -q python3 /usr/local/bin/flood.py %d", n))
	waitHit(t, r, time.Minute, "flood done")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	floods, suppressed := 0, 0
	for _, ev := range r.events() {
		switch {
		case ev.Kind == event.KindGap && ev.Gap.Reason == GapSuppressed:
			suppressed += ev.Gap.Count
			t.Logf("gap: %s (%d)", ev.Gap.Message, ev.Gap.Count)
		case ev.Journal != nil && strings.HasPrefix(ev.Journal.Message, "flood ") && ev.Journal.Message != "flood done":
			floods++
		}
	}
	if suppressed == 0 || floods+suppressed != n {
		t.Errorf("%d flood lines shown + %d reported suppressed, want a suppression and a sum of %d", floods, suppressed, n)
	}
}
