package ui

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/sanitize"
	"github.com/bringup-dev/bringup/remote/startup"
)

// runCmd runs an action command as the program would and feeds its result
// back. It must only be given commands that return at once (not ticks).
func runCmd(t *testing.T, m *Model, cmd tea.Cmd) {
	t.Helper()
	if cmd == nil {
		t.Fatal("no command to run")
	}
	msg := cmd()
	if _, ok := msg.(actionIssued); !ok {
		t.Fatalf("command returned %T, want actionIssued", msg)
	}
	m.Update(msg)
}

func TestSelectionMovesAndOpens(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	press(m, "j", "down", "j", "j", "j")
	if got := m.selectedName(); got != "gpu4" {
		t.Fatalf("after moving down past the end, selected %q, want gpu4", got)
	}
	press(m, "k", "up")
	if got := m.selectedName(); got != "gpu2" {
		t.Fatalf("selected %q, want gpu2", got)
	}
	press(m, "space")
	if !m.table.marked["gpu2"] {
		t.Fatal("space did not mark gpu2")
	}
	press(m, "enter")
	if m.focus.view() != focusHost || m.host.name != "gpu2" {
		t.Fatalf("enter: view %v open %q, want host view of gpu2", m.focus.view(), m.host.name)
	}
	press(m, "esc")
	if m.focus.view() != focusTable {
		t.Fatal("esc did not go back to the table")
	}
	if got := m.selectedName(); got != "gpu2" {
		t.Fatalf("back in the table, selected %q, want gpu2", got)
	}
}

func TestCursorFollowsHostAcrossBatches(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	press(m, "j", "j") // gpu3
	b := fleetFixture()
	b.Hosts[0], b.Hosts[2] = b.Hosts[2], b.Hosts[0]
	m.Update(batchMsg(b))
	if got := m.selectedName(); got != "gpu3" {
		t.Fatalf("selected %q after reorder, want gpu3", got)
	}
}

func TestActionsConfirmThenDo(t *testing.T) {
	cases := []struct {
		name string
		keys []string
		want remote.Action
		host string // default gpu3
	}{
		{"mode on", []string{"m", "j", "enter", "y"}, remote.Action{Kind: remote.ActSetMode, Kernel: "kdtree-verify", Mode: "on"}, ""},
		{"mode by digit", []string{"m", "1", "enter"}, remote.Action{Kind: remote.ActSetMode, Kernel: "kdtree-verify", Mode: "off"}, ""},
		// gpu3's mode is not capture-safe: its restart is the preflight's
		// (TestPreflight...); gpu4's passes.
		{"restart", []string{"j", "r", "y"}, remote.Action{Kind: remote.ActRestart}, "gpu4"},
		{"reset-failed", []string{"x", "enter"}, remote.Action{Kind: remote.ActResetFailed}, ""},
		{"redeploy", []string{"d", "y"}, remote.Action{Kind: remote.ActRedeploy, Kernel: "kdtree-verify"}, ""},
		{"undo", []string{"u", "y"}, remote.Action{Kind: remote.ActUndoMode, Kernel: "kdtree-verify"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, src := newTestModel(t, 80, 24)
			press(m, "j", "j") // gpu3
			host := tc.host
			if host == "" {
				host = "gpu3"
			}
			cmd := press(m, tc.keys...)
			if len(src.calls) != 0 {
				t.Fatal("Do called before the command ran: Update must not do IO")
			}
			runCmd(t, m, cmd)
			if len(src.calls) != 1 {
				t.Fatalf("Do called %d times, want 1", len(src.calls))
			}
			if c := src.calls[0]; c.host != host || c.a != tc.want {
				t.Fatalf("Do(%q, %+v), want Do(%s, %+v)", c.host, c.a, host, tc.want)
			}
			if !strings.Contains(m.status, host) || !strings.Contains(m.status, "issued") {
				t.Fatalf("status %q does not report the issued action", m.status)
			}
		})
	}
}

func TestConfirmationNamesHostAndEffect(t *testing.T) {
	m, _ := newTestModel(t, 120, 40)
	press(m, "j", "j", "m", "j", "enter")
	out := render(m)
	for _, want := range []string{`Set kdtree-verify to mode "on" on gpu3?`, "(takes effect at the", "[y/enter] confirm"} {
		if !strings.Contains(out, want) {
			t.Errorf("confirmation lacks %q:\n%s", want, out)
		}
	}
}

func TestModeChooserMarksUnsafeAndCurrent(t *testing.T) {
	m, _ := newTestModel(t, 120, 40)
	press(m, "j", "j", "m")
	out := render(m)
	if !strings.Contains(out, "validate   (not capture-safe) ● current") {
		t.Fatalf("chooser does not mark validate:\n%s", out)
	}
}

func TestCancelDoesNotAct(t *testing.T) {
	for _, keys := range [][]string{
		{"m", "esc"}, {"m", "j", "enter", "n"}, {"m", "j", "enter", "esc"},
		{"r", "n"}, {"r", "esc"}, {"x", "esc"}, {"d", "n"}, {"r", "q", "esc"},
	} {
		m, src := newTestModel(t, 80, 24)
		press(m, keys...)
		if m.dialog != nil {
			t.Errorf("%v: dialog still open", keys)
		}
		if len(src.calls) != 0 {
			t.Errorf("%v: Do called %v", keys, src.calls)
		}
	}
}

// TestReadOnlyRefuses presses every key that changes a host, from the
// table and from the host view, in read-only mode.
func TestReadOnlyRefuses(t *testing.T) {
	var ks []string
	for _, b := range DefaultKeyMap().changing() {
		ks = append(ks, b.Keys()...)
	}
	// The set matters, not the order (the action keys come in the
	// table's order).
	if got := strings.Join(slices.Sorted(slices.Values(ks)), ""); got != "Rdmrux" {
		t.Fatalf("changing keys %q, want R, d, m, r, u and x", got)
	}
	for _, open := range []bool{false, true} {
		for _, k := range ks {
			m, src := newTestModel(t, 80, 24)
			src.ro = true
			if open {
				press(m, "enter")
			}
			press(m, k)
			if !strings.HasPrefix(m.status, "read-only: ") {
				t.Errorf("%s (host view %v): status %q, want read-only", k, open, m.status)
			}
			press(m, "y", "enter") // y copies here: no dialog is open to confirm
			if m.dialog != nil || m.focus.view() == focusRollout {
				t.Errorf("%s (host view %v): opened a dialog or view in read-only mode", k, open)
			}
			if len(src.calls) != 0 {
				t.Errorf("%s (host view %v): Do called in read-only mode", k, open)
			}
		}
	}
}

func TestActionResultsReachStatusAndLog(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	b := fleetFixture()
	b.Events = []event.Event{
		{Host: "gpu3", Kind: event.KindAction, Time: now, Action: &event.ActionResult{ID: 7, Name: "restart", Stage: event.ActionStarted}},
		{Host: "gpu3", Kind: event.KindAction, Time: now, Action: &event.ActionResult{ID: 7, Name: "restart", Stage: event.ActionDone}},
	}
	m.Update(batchMsg(b))
	if m.status != "gpu3: restart done" {
		t.Fatalf("status %q, want %q", m.status, "gpu3: restart done")
	}
	if len(m.remoteCommands.entries) != 2 {
		t.Fatalf("%d actions recorded, want 2", len(m.remoteCommands.entries))
	}
	r := m.ring("gpu3")
	if l := r.at(r.total - 1); l.Kind != lineAction || l.Text != "#7 restart done" {
		t.Fatalf("last log line %+v, want the action result", l)
	}
	press(m, "@")
	if out := render(m); !strings.Contains(out, "gpu3 #7   restart done") {
		t.Fatalf("@ does not list the action:\n%s", out)
	}
	press(m, "esc")
	if m.focus.top() != focusTable {
		t.Fatal("esc did not close the overlay")
	}
}

func TestStatusClearsItself(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	m.setStatus("old", false)
	m.setStatus("new", false)
	m.Update(statusExpiry{seq: m.statusSeq - 1})
	if m.status != "new" {
		t.Fatalf("a stale expiry cleared %q", m.status)
	}
	m.Update(statusExpiry{seq: m.statusSeq})
	if m.status != "" {
		t.Fatalf("status %q not cleared", m.status)
	}
}

func TestFilterNextPrev(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	press(m, "j", "j", "enter", "/")
	if m.focus.top() != focusLogFilter {
		t.Fatal("/ did not open the filter input")
	}
	press(m, "c", "a", "p", "t", "u", "r", "e", "q") // q is typed, not quit
	if got := m.host.filterInput.Value(); got != "captureq" {
		t.Fatalf("filter input holds %q", got)
	}
	m.Update(tea.KeyPressMsg{Code: tea.KeyBackspace})
	press(m, "enter")
	if m.focus.top() == focusLogFilter || m.host.log.query != "capture" {
		t.Fatalf("typing %v query %q", m.focus.top() == focusLogFilter, m.host.log.query)
	}
	if m.host.log.matches != 2 { // "capturing" is not "capture"
		t.Fatalf("%d matches, want 2", m.host.log.matches)
	}
	r := m.ring("gpu3")
	last := m.host.log.cur
	if !strings.Contains(r.at(last).Text, "Capture cuda graph failed") {
		t.Fatalf("first match is %q, want the newest match", r.at(last).Text)
	}
	press(m, "N")
	prev := m.host.log.cur
	if prev >= last || !strings.Contains(strings.ToLower(r.at(prev).Text), "capture") {
		t.Fatalf("N went to %d (%q), want an earlier match", prev, r.at(prev).Text)
	}
	if m.host.log.follow {
		t.Fatal("jumping to a match must stop following")
	}
	press(m, "n")
	if m.host.log.cur != last {
		t.Fatalf("n went to %d, want back to %d", m.host.log.cur, last)
	}
	press(m, "n") // wraps
	if m.host.log.cur >= last || m.status != "search wrapped" {
		t.Fatalf("n past the last match: cur %d status %q", m.host.log.cur, m.status)
	}
}

func TestFollowAndNewLines(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	press(m, "j", "j", "enter", "f")
	if m.host.log.follow {
		t.Fatal("f did not stop following")
	}
	b := fleetFixture()
	b.Events = b.Events[:5]
	m.Update(batchMsg(b))
	if out := render(m); !strings.Contains(out, "5 new lines ↓") {
		t.Fatalf("no new-lines indicator:\n%s", out)
	}
	press(m, "G")
	if !m.host.log.follow {
		t.Fatal("G did not resume following")
	}
	press(m, "k")
	if m.host.log.follow {
		t.Fatal("scrolling up must stop following")
	}
	press(m, "w")
	if !m.host.log.wrap {
		t.Fatal("w did not turn wrap on")
	}
}

func TestQuitKeys(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	if cmd := press(m, "q"); cmd == nil || cmd() != tea.Quit() {
		t.Fatal("q does not quit")
	}
	m, _ = newTestModel(t, 80, 24)
	press(m, "j", "enter", "/")
	if cmd := press(m, "q"); cmd != nil {
		if _, ok := cmd().(tea.QuitMsg); ok {
			t.Fatal("q quit while typing a filter")
		}
	}
	if cmd := press(m, "ctrl+c"); cmd == nil || cmd() != tea.Quit() {
		t.Fatal("ctrl+c does not quit while typing")
	}
}

func TestSourceClosedStopsRearming(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	if _, cmd := m.Update(sourceClosed{}); cmd != nil {
		t.Fatal("re-armed after the source closed")
	}
	if !strings.Contains(render(m), "stream ended") {
		t.Fatal("header does not say the stream ended")
	}
}

// TestFleetTextShowsAsIs feeds text as the fleet hands it out (sanitised
// where it entered: escapes made visible as control pictures) and checks
// that the frame shows it as it is and adds no escape of its own under
// NO_COLOR. That the fleet sanitises every string is pinned in remote
// (TestFleetHandsOutOnlySanitisedText); the UI trusts it.
func TestFleetTextShowsAsIs(t *testing.T) {
	hostile := "evil \x1b[2J\x1b]0;pwned\x07 clear \u009b31m c1"
	shown := sanitize.String(hostile)
	for _, noColor := range []bool{true, false} {
		m, _ := newTestModel(t, 120, 40)
		m.opts.NoColor = noColor
		m.setStyles(true)
		b := fleetFixture()
		b.Events = []event.Event{
			{Host: "gpu3", Kind: event.KindJournal, Time: now, Journal: &event.Journal{Message: shown}},
			{Host: "gpu3", Kind: event.KindGap, Time: now, Gap: &event.Gap{Reason: "dropped", Message: sanitize.String("gap \x1b[H")}},
		}
		b.Hosts[2].Startup.Diag.Summary = sanitize.String("summary \x1b[31mred")
		m.Update(batchMsg(b))
		for _, keys := range [][]string{{"j", "j"}, {"enter"}} {
			press(m, keys...)
			out := render(m)
			if !strings.Contains(out, "evil") || keys[0] == "enter" && !strings.Contains(out, "evil ␛[2J␛]0;pwned␇ clear") {
				t.Fatalf("the line is not on screen as the fleet handed it out:\n%s", out)
			}
			if noColor && (strings.IndexByte(out, 0x1b) >= 0 || strings.IndexByte(out, 0x07) >= 0) {
				t.Fatalf("NO_COLOR frame holds control bytes: %q", out)
			}
			for _, bad := range []string{"\x1b[2J", "\x1b]", "\x07", "\x1b[H", "\u009b"} {
				if strings.Contains(out, bad) {
					t.Fatalf("frame holds %q", bad)
				}
			}
		}
	}
}

func TestWidthAgreesWithAnsi(t *testing.T) {
	for _, s := range []string{"", "abc", "\x1b[38;2;1;2;3mab\x1b[m", "── x ──", "█▉░ 41/65", "gpu3 · ✗ failed", "日本語", "e\u0301", "⚠\ufe0f", "▁▂▃", "␛[2J", "\x1b]8;;x\x07a"} {
		if got, want := width(s), ansi.StringWidth(s); got != want {
			t.Errorf("width(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestModeShowsPendingRestart(t *testing.T) {
	m, _ := newTestModel(t, 120, 40)
	b := fleetFixture()
	b.Hosts[2].Modes = modes(kernels.DefaultCatalog(), "on")
	m.Update(batchMsg(b))
	if row := rowOf(render(m), "gpu3"); !strings.Contains(row, "on↻") {
		t.Fatalf("gpu3 row does not show the mode pending a restart: %q", row)
	}
}

func TestNewInvocationMarksTheLog(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	b := fleetFixture()
	b.Events = nil
	for _, inv := range []string{"aaaa", "aaaa", "bbbbbbbbbbbbbbbbbbbb"} {
		b.Events = append(b.Events, event.Event{Host: "gpu3", Kind: event.KindJournal, Time: now,
			Journal: &event.Journal{InvocationID: inv, Message: "line of " + inv}})
	}
	before := m.ring("gpu3").total
	m.Update(batchMsg(b))
	r := m.ring("gpu3")
	if got := r.total - before; got != 4 {
		t.Fatalf("%d lines pushed, want 3 and one marker", got)
	}
	if l := r.at(r.total - 2); l.Kind != lineMark || l.Text != "new invocation bbbbbbbbbbbb" {
		t.Fatalf("marker line %+v", l)
	}
}

// TestHeaderShowsReplayPosition checks that a replay's position, asked
// for on every frame, reaches the header.
func TestHeaderShowsReplayPosition(t *testing.T) {
	m, _ := newTestModel(t, 120, 24)
	pos := "▶ 10:41:03 of 10:52:10"
	m.opts.Position = func() string { return pos }
	if v := m.View().Content; !strings.Contains(firstLine(v), pos) {
		t.Fatalf("header %q lacks %q", firstLine(v), pos)
	}
	pos = "■ ended 10:52:10"
	if v := m.View().Content; !strings.Contains(firstLine(v), pos) {
		t.Fatalf("header %q lacks %q", firstLine(v), pos)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// TestNotLoadedUnitShows: a host that has no such unit (LoadState
// not-found) says so in its table row, its host view's title and to the
// state: filter, rather than passing for a stopped unit.
func TestNotLoadedUnitShows(t *testing.T) {
	m, _ := newTestModel(t, 120, 40)
	b := fleetFixture()
	b.Hosts[1].UnitState = event.Unit{Name: "sglang.service", LoadState: "not-found", ActiveState: "inactive", SubState: "dead"}
	b.Hosts[1].Startup = startup.Startup{Phase: startup.Stopped}
	m.Update(batchMsg(b))
	if row := rowOf(render(m), "gpu2"); !strings.Contains(row, "not-found") || strings.Contains(row, "inactive") {
		t.Fatalf("gpu2 row %q: want its unit state not-found", row)
	}
	f, err := parseHostFilter("state:not-found", []string{"gpu1", "gpu2", "gpu3", "gpu4"}, m.opts.Kernels)
	if err != nil {
		t.Fatal(err)
	}
	var matched []string
	for i := range b.Hosts {
		if f.match(&b.Hosts[i]) {
			matched = append(matched, b.Hosts[i].Name)
		}
	}
	if !slices.Equal(matched, []string{"gpu2"}) {
		t.Errorf("state:not-found shows %v, want gpu2", matched)
	}
	press(m, "j", "enter")
	if title := lines(render(m))[1]; !strings.Contains(title, "gpu2 · sglang.service · not-found") {
		t.Fatalf("host view title %q: want the unit not-found", title)
	}
}

// heldBytes recounts what s's rings hold, to check the running total.
func heldBytes(s *logStore) int {
	n := 0
	for _, r := range s.rings {
		for seq := r.first(); seq < r.total; seq++ {
			n += len(r.at(seq).Text)
		}
		n += cap(r.buf) * lineSlot
	}
	return n
}

// TestRingDropOldestKeepsNumbers: a budget trim takes the oldest lines,
// leaves one marker line in their place that counts them all, and keeps
// the sequence numbers of the lines left (a scrolled view stays put).
func TestRingDropOldestKeepsNumbers(t *testing.T) {
	r := newRing(1000)
	for i := range 300 {
		r.push(logLine{Time: base.Add(time.Duration(i) * time.Second), Text: fmt.Sprintf("line %d", i)})
	}
	before := r.bytes()
	freed := r.dropOldest(100)
	if r.at(150).Text != "line 150" || r.total != 300 || r.n != 201 {
		t.Fatalf("after dropping 100: total %d, n %d, line 150 is %q", r.total, r.n, r.at(150).Text)
	}
	m := r.at(r.first())
	if m.Kind != lineGap || m.Text != "… 100 older lines dropped to stay within the memory budget" || r.first() != 99 {
		t.Fatalf("marker %+v at %d", m, r.first())
	}
	if freed != before-r.bytes() || freed <= 0 {
		t.Fatalf("freed %d, bytes %d → %d", freed, before, r.bytes())
	}
	r.dropOldest(150) // the marker is replaced, the count goes on
	if m := r.at(r.first()); m.Text != "… 250 older lines dropped to stay within the memory budget" || r.at(299).Text != "line 299" || r.n != 51 {
		t.Fatalf("second marker %q, n %d", m.Text, r.n)
	}
	if cap(r.buf) > 4*minSlots {
		t.Errorf("the buffer did not shrink with the lines: %d slots for %d lines", cap(r.buf), r.n)
	}
}

// TestLogBudgetIdleHostsFirst: over budget, the idle (serving) host loses
// its oldest lines first and says so in its log; the host that is
// starting keeps every line.
func TestLogBudgetIdleHostsFirst(t *testing.T) {
	src := newFake()
	m := New(src, Options{Kernels: kernels.DefaultCatalog(), Now: func() time.Time { return now }, NoColor: true, LogBudget: 1 << 20})
	hosts := []remote.HostState{
		{Name: "idle", Startup: startup.Startup{Phase: startup.Serving}},
		{Name: "busy", Startup: startup.Startup{Phase: startup.Weights}},
	}
	text := strings.Repeat("x", 1000)
	for batch := range 20 {
		b := remote.Batch{Hosts: hosts}
		for i := range 40 { // 40 KiB a host a batch: 1.6 MiB in all
			at := base.Add(time.Duration(batch*40+i) * time.Millisecond)
			for _, h := range []string{"idle", "busy"} {
				b.Events = append(b.Events, event.Event{Host: h, Kind: event.KindJournal, Time: at, Journal: &event.Journal{Message: text}})
			}
		}
		m.Update(batchMsg(b))
	}
	if m.logs.held > 1<<20 || m.logs.held != heldBytes(&m.logs) {
		t.Fatalf("held %d bytes (recount %d), budget %d", m.logs.held, heldBytes(&m.logs), 1<<20)
	}
	idle, busy := m.ring("idle"), m.ring("busy")
	if busy.n != 800 || busy.budgetDropped != 0 {
		t.Errorf("the starting host lost lines: %d held, %d dropped", busy.n, busy.budgetDropped)
	}
	marker := idle.at(idle.first())
	if idle.budgetDropped == 0 || marker.Text != fmt.Sprintf("… %d older lines dropped to stay within the memory budget", idle.budgetDropped) {
		t.Fatalf("idle host: %d dropped, first line %q", idle.budgetDropped, marker.Text)
	}
	// Once the busy host settles, it is idle too and pays its share.
	hosts[1].Startup.Phase = startup.Serving
	b := remote.Batch{Hosts: hosts}
	for i := range 200 {
		b.Events = append(b.Events, event.Event{Host: "idle", Kind: event.KindJournal, Time: now.Add(time.Duration(i)), Journal: &event.Journal{Message: text}})
	}
	m.Update(batchMsg(b))
	if busy.budgetDropped == 0 || m.logs.held > 1<<20 {
		t.Errorf("after settling: busy dropped %d, held %d", busy.budgetDropped, m.logs.held)
	}
	press(m, "j", "enter", "g") // busy's host view, scrolled to its oldest line
	if out := render(m); !strings.Contains(out, "older lines dropped to stay within the memory budget") {
		t.Errorf("the host view does not show the marker:\n%s", out)
	}
}

// TestLogBudget256Hosts feeds the console 256 hosts' worth of long lines
// (16 KiB each, about twice the default budget) and measures what it
// holds: the running total stays within the budget and the Go heap the
// console keeps (all of it: rings, snapshot) under 200 MiB.
func TestLogBudget256Hosts(t *testing.T) {
	const hosts, lineLen, perHost = 256, 16 << 10, 60
	budget := remote.DefaultLogBudget - remote.DefaultLogBudget/remote.PendingShare
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heap0 := ms.HeapAlloc

	m := New(newFake(), Options{Kernels: kernels.DefaultCatalog(), Now: func() time.Time { return now }, NoColor: true})
	if m.logs.budget != budget {
		t.Fatalf("default budget %d, want %d", m.logs.budget, budget)
	}
	states := make([]remote.HostState, hosts)
	for i := range states {
		states[i] = remote.HostState{Name: fmt.Sprintf("gpu%03d", i), Startup: startup.Startup{Phase: startup.Serving}}
	}
	fill := strings.Repeat("w", lineLen-16)
	fed := 0
	for round := range perHost {
		b := remote.Batch{Hosts: states}
		for i := range hosts {
			msg := fmt.Sprintf("%06d %s", round*hosts+i, fill) // a string of its own, as from a host
			fed += len(msg)
			b.Events = append(b.Events, event.Event{Host: states[i].Name, Kind: event.KindJournal,
				Time: base.Add(time.Duration(round) * time.Second), Journal: &event.Journal{Message: msg}})
		}
		m.Update(batchMsg(b))
		if m.logs.held > budget {
			t.Fatalf("round %d: held %d bytes, budget %d", round, m.logs.held, budget)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	kept := int64(ms.HeapAlloc) - int64(heap0)
	t.Logf("fed %d MiB to %d hosts; held %d MiB (budget %d MiB); heap kept %d MiB", fed>>20, hosts, m.logs.held>>20, budget>>20, kept>>20)
	if m.logs.held != heldBytes(&m.logs) {
		t.Errorf("running total %d, recount %d", m.logs.held, heldBytes(&m.logs))
	}
	if kept > 200<<20 {
		t.Errorf("the console keeps %d MiB of heap for 256 hosts, want at most 200 MiB", kept>>20)
	}
	dropped := 0
	for _, r := range m.logs.rings {
		dropped += r.budgetDropped
	}
	if dropped == 0 {
		t.Errorf("nothing was dropped: the test did not reach the budget")
	}
	runtime.KeepAlive(m)
}

// TestHostKeyRiskAndNoticeShown: a host whose ssh_config lets host keys in
// unchecked is flagged in the header and named in its host view; a key
// learned on first contact shows in its log as the notice it is.
func TestHostKeyRiskAndNoticeShown(t *testing.T) {
	m, _ := newTestModel(t, 160, 24)
	b := fleetFixture()
	b.Hosts[1].Conn.HostKeyRisk = event.RiskStrictNo | event.RiskKnownHostsNull
	notice := "learned new host key for gpu2: ssh-ed25519 SHA256:abc, added to /root/.ssh/known_hosts:7"
	b.Events = []event.Event{{Host: "gpu2", Kind: event.KindGap, Time: now, Gap: &event.Gap{Reason: event.GapHostKey, Message: notice}}}
	m.Update(batchMsg(b))
	if h := firstLine(m.View().Content); !strings.Contains(h, "⚠ host keys unchecked: gpu2") {
		t.Errorf("header %q does not flag gpu2", h)
	}
	b.Hosts[2].Conn.HostKeyRisk = event.RiskStrictNo
	b.Events = nil
	m.Update(batchMsg(b))
	if h := firstLine(m.View().Content); !strings.Contains(h, "⚠ host keys unchecked: 2 hosts") {
		t.Errorf("header %q does not count both hosts", h)
	}
	press(m, "j", "enter")
	v := m.View().Content
	if !strings.Contains(v, "host keys unchecked (StrictHostKeyChecking no, UserKnownHostsFile /dev/null)") {
		t.Errorf("host view does not name the settings:\n%s", v)
	}
	if !strings.Contains(v, notice) || strings.Contains(v, "gap: host-key") {
		t.Errorf("host view log does not show the notice as it is:\n%s", v)
	}
}

// reconnectSource is a fake fleet whose connections can be restarted:
// it records the hosts asked and answers with err.
type reconnectSource struct {
	*fakeSource
	asked []string
	err   error
}

// Capabilities adds Reconnect to the fake's.
func (r *reconnectSource) Capabilities() remote.Capabilities {
	c := r.fakeSource.Capabilities()
	c.Reconnect = r.Reconnect
	return c
}

func (r *reconnectSource) Reconnect(host string) error {
	r.asked = append(r.asked, host)
	return r.err
}

// TestReconnectKey presses ctrl+r on the table and in the host view: the
// selected host's connection is asked to dial again, read-only or not
// (it changes nothing on the host), and the answer reaches the status.
func TestReconnectKey(t *testing.T) {
	for _, tc := range []struct {
		name       string
		open, ro   bool
		err        error
		wantStatus string
	}{
		{name: "table", wantStatus: "gpu1: reconnecting"},
		{name: "host view", open: true, wantStatus: "gpu1: reconnecting"},
		{name: "read-only", ro: true, wantStatus: "gpu1: reconnecting"},
		{name: "not stopped", err: fmt.Errorf("reconnect gpu1: %w", remote.ErrNotStopped),
			wantStatus: "reconnect gpu1: " + remote.ErrNotStopped.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &reconnectSource{fakeSource: newFake(), err: tc.err}
			src.ro = tc.ro
			m := New(src, Options{Kernels: kernels.DefaultCatalog(), Now: func() time.Time { return now }, NoColor: true})
			m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
			m.Update(batchMsg(fleetFixture()))
			if tc.open {
				press(m, "enter")
			}
			cmd := press(m, "ctrl+r")
			if cmd == nil {
				t.Fatal("ctrl+r returned no command")
			}
			if len(src.asked) != 0 {
				t.Fatal("Reconnect called inside Update; it belongs in a command")
			}
			m.Update(cmd())
			if len(src.asked) != 1 || src.asked[0] != "gpu1" {
				t.Fatalf("reconnect asked for %v, want [gpu1]", src.asked)
			}
			if m.status != tc.wantStatus || m.statusErr != (tc.err != nil) {
				t.Fatalf("status %q (error %v), want %q", m.status, m.statusErr, tc.wantStatus)
			}
			if len(src.calls) != 0 {
				t.Fatalf("ctrl+r issued actions %v", src.calls)
			}
		})
	}
	// The palette's reconnect takes several hosts.
	src := &reconnectSource{fakeSource: newFake()}
	m := New(src, Options{Kernels: kernels.DefaultCatalog(), Now: func() time.Time { return now }, NoColor: true})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	m.Update(batchMsg(fleetFixture()))
	m.Update(m.runPalette(paletteCall{cmd: "reconnect", hosts: []string{"gpu2", "gpu3"}})())
	if strings.Join(src.asked, ",") != "gpu2,gpu3" || m.status != "gpu2, gpu3: reconnecting" {
		t.Fatalf("palette reconnect asked %v, status %q", src.asked, m.status)
	}
	// A source without restartable connections says so.
	m, _ = newTestModel(t, 80, 24)
	press(m, "ctrl+r")
	if !strings.Contains(m.status, "cannot be restarted") || !m.statusErr {
		t.Fatalf("status %q, want that the connections cannot be restarted", m.status)
	}
}
