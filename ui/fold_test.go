package ui

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
	"github.com/bringup-dev/bringup/remote/startup/corpus"
)

// corpusLog is one corpus log's body, by name.
func corpusLog(t testing.TB, name string) []string {
	t.Helper()
	l, err := corpus.Read(corpus.Dir() + "/" + name + ".log")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(l.Body, "\n")
}

// ringOf is a ring holding lines, with room for all of them.
func ringOf(lines []string) *ring {
	r := newRing(len(lines) + 1)
	for _, l := range lines {
		r.push(logLine{Text: l})
	}
	return r
}

// rowsOf is the folded pane's rows as text: each row's line, a folded
// group's with its label and count.
func rowsOf(r *ring, v *logView) []string {
	var rows []string
	for seq := r.first(); seq < r.total; seq = v.after(r, seq) {
		t := r.at(seq).Text
		if g := v.foldedAt(seq); g != nil {
			t = g.label(t) + g.mark()
		}
		rows = append(rows, t)
	}
	return rows
}

// checkFold checks what folding promises, over every line r holds: a
// line folds only into a row of the same line (the same once numbers are
// blanked, of the same kind) printed by another rank, within foldWindow
// lines; lines without a rank tag never fold; the count of folded lines
// is right; every line is a row or folded into one.
func checkFold(t *testing.T, name string, r *ring, f *foldIndex) {
	t.Helper()
	hidden := 0
	for seq := r.first(); seq < r.total; seq++ {
		head := f.headOf(seq)
		if head == seq {
			continue
		}
		hidden++
		l, h := r.at(seq), r.at(head)
		lt, lok := startup.ParseRankTag(l.Text)
		ht, hok := startup.ParseRankTag(h.Text)
		switch {
		case !lok || !hok:
			t.Errorf("%s: line %d folded without a rank tag: %q into %q", name, seq, l.Text, h.Text)
		case lt.ID == ht.ID:
			t.Errorf("%s: line %d folded into the same rank's line: %q", name, seq, l.Text)
		case !startup.SameBlanked(l.Text, h.Text) || l.Kind != h.Kind:
			t.Errorf("%s: line %d folded into another line:\n  %q\n  %q", name, seq, l.Text, h.Text)
		case seq-head > foldWindow || head < r.first():
			t.Errorf("%s: line %d folded into line %d, out of reach", name, seq, head)
		}
		if g := f.group(head); g == nil || !slices.Contains(g.members, seq) {
			t.Errorf("%s: line %d folded into %d, whose group does not hold it", name, seq, head)
		}
	}
	if hidden != f.hidden {
		t.Errorf("%s: %d lines folded, the index counts %d", name, hidden, f.hidden)
	}
}

// TestFoldCorpus folds every log of the real-log corpus (SGLang and vLLM
// startups with 2 to 16 ranks, from public issues) and checks the rows of
// a few by hand: TP, DP×TP, DP×TP×EP and vLLM V0/V1 tags, and lines of
// several ranks that must not fold.
func TestFoldCorpus(t *testing.T) {
	logs, err := corpus.ReadAll(corpus.Dir())
	if err != nil {
		t.Fatal(err)
	}
	folded := 0
	for _, l := range logs {
		r := ringOf(strings.Split(l.Body, "\n"))
		f := newFoldIndex(r)
		checkFold(t, l.Name, r, f)
		folded += f.hidden
	}
	if folded < 100 {
		t.Errorf("the corpus folds %d lines; its multi-rank logs hold far more copies", folded)
	}

	for _, tt := range []struct {
		log      string
		want     []string // rows that must be there
		notFound []string // rows that must not
	}{
		{"sglang-4417-mtp-multinode-weights-pool-cut", []string{
			"[2025-03-14 06:55:25 TP0-4,6-7] Using model weights format ['*.safetensors'] ×7",
			"[2025-03-14 06:56:42 TP0-1,3,7] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=35.52 GB, mem usage=40.46 GB. ×4, values vary",
			"[2025-03-14 06:56:46 TP0,2-3,5-6] Memory pool end. avail mem=16.08 GB ×5, values vary",
		}, nil},
		{"sglang-1479-capture-time-prefix", []string{
			"[23:17:01 TP0-7] Capture cuda graph begin. This can take up to several minutes. ×8",
			"[23:17:08 TP4] Exception in run_tp_server:",
		}, nil},
		{"sglang-17402-dp-tp-gloo-interleaved-running-fresh", []string{
			"[2026-01-20 02:39:57 DP0-1 TP0-1] Init torch distributed begin. ×3",
			"[2026-01-20 02:39:49] Launch DP0 starting at GPU #0.", // the main process's lines stay
			"[2026-01-20 02:39:49] Launch DP1 starting at GPU #2.",
		}, nil},
		{"sglang-17392-dp-tp-ep-capture-bars-cut", []string{
			"[2026-05-07 13:39:13 DP0-3 TP0-3 EP0-3] Capture cuda graph begin. This can take up to several minutes. avail mem=27.46 GB ×4, values vary",
		}, nil},
		// A rank's line cut short by the paste is another line.
		{"sglang-31600-hicache-attn-cp-host-alloc-jit-unsupported-cut-running-fresh4", []string{
			"[2026-07-18 03:03:06 ATTN_CP0-7 TP0-7] Allocating 120.00 GB host memory for hierarchical KV cache. ×8",
			"[2026-07-18 03:04:05 ATTN_CP1,4-7 TP1,4-7] Unsupported element_size = 656 for JIT HiCache kernel ×5",
			"[2026-07-18 03:04:05 ATTN_CP3 TP3] Unsupported element_size = 656 for J",
		}, nil},
		// Ranks' different lines stay apart, in the order printed.
		{"sglang-6160-gemma3-tp4-after-memory-pool-scheduler-exception-cut-fresh3", []string{
			"[2025-05-09 19:11:16 TP0-3] KV Cache is allocated. #tokens: 86461, K size: 5.11 GB, V size: 5.11 GB ×4",
			"[2025-05-09 19:11:16 TP0-3] Memory pool end. avail mem=4.38 GB ×4",
			"[2025-05-09 19:11:16 TP2] Scheduler hit an exception: Traceback (most recent call last):",
		}, nil},
		{"vllm-7593-tp8-l4-capture-cut-running", []string{
			"INFO 08-19 07:51:03 model_runner.py:732] Loading model weights took 2.3463 GB", // the V0 driver prints untagged
			"(VllmWorkerProcess pid=13105) INFO 08-19 07:51:03 model_runner.py:732] Loading model weights took 2.3463 GB ×6",
		}, nil},
		{"vllm-31936-dsv32-rtxpro6000-no-attn-backend-bold-fresh", []string{
			"(Worker_TP1-2,4-6_EP1-2,4-6 pid=2532) INFO 12-29 15:21:11 [multiproc_executor.py:709] Parent process exited, terminating worker ×5",
		}, nil},
		{"vllm-15277-gguf-deepseek2-tp4-vllmworker-init-cut-running-fresh4", []string{
			"(VllmWorker rank=0-3 pid=2187913) INFO 06-01 22:06:31 [parallel_state.py:1004] rank 3 in world size 4 is assigned as DP rank 0, PP rank 0, TP rank 3 ×4, values vary",
		}, nil},
	} {
		lines := corpusLog(t, tt.log)
		r := ringOf(lines)
		v := newLogView()
		v.setFold(true, r)
		rows := rowsOf(r, &v)
		for _, w := range tt.want {
			if !slices.Contains(rows, w) {
				t.Errorf("%s: no row %q in\n%s", tt.log, w, strings.Join(rows, "\n"))
			}
		}
		// Unfolded, every line is a row as it was printed.
		v.setFold(false, r)
		if got := rowsOf(r, &v); !slices.Equal(got, lines) {
			t.Errorf("%s: unfolded rows are not the log's lines", tt.log)
		}
	}
}

// TestFoldIncremental feeds the corpus's multi-rank logs one line at a
// time, as the journal delivers them, and checks that the index kept up
// to date agrees with one built afresh; then through a ring too small for
// them, and under the fleet's memory budget, where lines leave it.
func TestFoldIncremental(t *testing.T) {
	var all []string
	for _, name := range []string{"sglang-4417-mtp-multinode-weights-pool-cut", "sglang-17402-dp-tp-gloo-interleaved-running-fresh",
		"vllm-31936-dsv32-rtxpro6000-no-attn-backend-bold-fresh", "sglang-1479-capture-time-prefix", "vllm-7593-tp8-l4-capture-cut-running"} {
		all = append(all, corpusLog(t, name)...)
	}
	r := newRing(len(all))
	f := newFoldIndex(r)
	for _, l := range all {
		r.push(logLine{Text: l})
		f.sync(r)
	}
	fresh := newFoldIndex(r)
	v1, v2 := logView{fold: f, expanded: -1}, logView{fold: fresh, expanded: -1}
	if a, b := rowsOf(r, &v1), rowsOf(r, &v2); !slices.Equal(a, b) {
		t.Fatalf("incremental rows differ from a fresh fold:\n%s\n--\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	checkFold(t, "incremental", r, f)

	// A ring of 40 lines, the logs fed through it three times.
	small := newRing(40)
	fs := newFoldIndex(small)
	for range 3 {
		for _, l := range all {
			small.push(logLine{Text: l})
			fs.sync(small)
			checkFold(t, "evicting", small, fs)
		}
	}
	// The budget takes the oldest lines and leaves its marker.
	small.dropOldest(7)
	fs.sync(small)
	checkFold(t, "budget", small, fs)
	if l := small.at(small.first()); l.Kind != lineGap || fs.headOf(small.first()) != small.first() {
		t.Fatalf("the budget's marker must be a row of its own: %+v", l)
	}
	for _, l := range all[:20] {
		small.push(logLine{Text: l})
		fs.sync(small)
		checkFold(t, "after budget", small, fs)
	}
}

// rankLines is a startup's log as SGLang prints it on 8 ranks, the ranks'
// copies interleaved, then a line only TP7 prints.
func rankLines(n int) []string {
	var out []string
	for i := range n {
		for tp := range 8 {
			out = append(out, fmt.Sprintf("[2026-11-30 10:04:%02d TP%d] Load weight begin. avail mem=%.2f GB", i%60, tp, 75.2-float64(i%10)/10))
		}
		out = append(out, fmt.Sprintf("[2026-11-30 10:04:%02d] Received a request %d", i%60, i))
	}
	return out
}

// feedHost puts lines into host's journal through a batch, as the fleet
// would.
func feedHost(m *Model, host string, lines []string) {
	b := remote.Batch{Hosts: m.hosts}
	for _, l := range lines {
		b.Events = append(b.Events, event.Event{Host: host, Kind: event.KindJournal, Time: now,
			Journal: &event.Journal{Priority: 6, Message: l}})
	}
	m.Update(batchMsg(b))
}

// TestFoldInHostView: the host view folds by default; z unfolds and folds
// again, with a status line; lines arriving join their group's row; the
// pane title says how many lines are folded.
func TestFoldInHostView(t *testing.T) {
	m, _ := newTestModel(t, 160, 48)
	press(m, "enter") // gpu1
	feedHost(m, "gpu1", rankLines(3))
	out := render(m)
	row := "[2026-11-30 10:04:00 TP0-7] Load weight begin. avail mem=75.20 GB ×8"
	if !strings.Contains(out, row) || !strings.Contains(out, "21 folded") {
		t.Fatalf("no folded row %q or count:\n%s", row, out)
	}
	if strings.Contains(out, "TP3] Load weight begin") {
		t.Fatalf("a folded rank's line shows:\n%s", out)
	}
	press(m, "z")
	out = render(m)
	if !strings.Contains(out, "[2026-11-30 10:04:00 TP3] Load weight begin.") || strings.Contains(out, "×8") || strings.Contains(out, "folded ·") {
		t.Fatalf("z did not unfold:\n%s", out)
	}
	if !strings.Contains(m.status, "unfolded") {
		t.Fatalf("status %q", m.status)
	}
	press(m, "z")
	if !strings.Contains(render(m), row) || !strings.Contains(m.status, "folded") {
		t.Fatalf("z did not fold again: %q", m.status)
	}
	// Arriving copies join the row that is on screen.
	feedHost(m, "gpu1", []string{"[2026-11-30 10:05:00 TP0] Memory pool end. avail mem=16.08 GB"})
	if !strings.Contains(render(m), "[2026-11-30 10:05:00 TP0] Memory pool end. avail mem=16.08 GB") {
		t.Fatal("a new line does not show")
	}
	feedHost(m, "gpu1", []string{"[2026-11-30 10:05:00 TP1] Memory pool end. avail mem=16.07 GB"})
	if out := render(m); !strings.Contains(out, "[2026-11-30 10:05:00 TP0-1] Memory pool end. avail mem=16.08 GB ×2, values vary") {
		t.Fatalf("the arriving copy did not join its row:\n%s", out)
	}
	// The choice holds for the next host opened.
	press(m, "z", "esc", "j", "enter")
	if m.host.log.fold != nil {
		t.Fatal("unfolding did not hold for the next host")
	}
	press(m, "?")
	if !strings.Contains(render(m), "fold ranks on/off") {
		t.Fatal("the help does not list z")
	}
}

// TestFoldFilterReachesFoldedLines: / with n and N stops at a match inside
// a folded row (opening that row so the match shows), but only once per
// row when the row's own line matches too.
func TestFoldFilterReachesFoldedLines(t *testing.T) {
	m, _ := newTestModel(t, 160, 48)
	press(m, "enter")
	lines := rankLines(3)
	// TP5's copy of the second group is the only line that says 74.
	lines[9+5] = "[2026-11-30 10:04:01 TP5] Load weight begin. avail mem=74.00 GB"
	feedHost(m, "gpu1", lines)
	r := m.ring("gpu1")
	press(m, append(append([]string{"/"}, typed("mem=74")...), "enter")...)
	if m.host.log.cur < 0 || !strings.Contains(r.at(m.host.log.cur).Text, "TP5] Load weight begin. avail mem=74.00") {
		t.Fatalf("the match inside the folded row was not reached: cur %d", m.host.log.cur)
	}
	out := render(m)
	if !strings.Contains(out, "›10:12:34 [2026-11-30 10:04:01 TP5] Load weight begin. avail mem=74.00 GB") {
		t.Fatalf("the match's row is not open and marked:\n%s", out)
	}
	if !strings.Contains(out, "[2026-11-30 10:04:00 TP0-7] Load weight begin. avail mem=75.20 GB ×8") {
		t.Fatalf("the other rows must stay folded:\n%s", out)
	}

	// "Load weight" matches every copy: n stops once per row.
	press(m, "/", "backspace", "backspace", "backspace", "backspace", "backspace", "backspace")
	press(m, append(typed("load weight"), "enter")...)
	var stops []int
	for range 4 {
		press(m, "n")
		stops = append(stops, m.host.log.cur)
	}
	slices.Sort(stops)
	if len(slices.Compact(stops)) != 3 {
		t.Fatalf("n stopped at %v over three rows, want each row once", stops)
	}
	for _, s := range stops {
		if m.host.log.fold.group(s) == nil {
			t.Fatalf("n stopped at line %d, not a row's own line", s)
		}
	}
	// Unfolded, n goes through every copy.
	press(m, "z")
	seen := map[int]bool{}
	for range 24 {
		press(m, "n")
		seen[m.host.log.cur] = true
	}
	if len(seen) != 24 {
		t.Fatalf("unfolded, n visited %d lines, want all 24 copies", len(seen))
	}
}

// TestFoldScrollAndFollow: paging moves by rows, not lines; g and G reach
// the oldest and the newest rows; following keeps the newest at the
// bottom as copies arrive.
func TestFoldScrollAndFollow(t *testing.T) {
	m, _ := newTestModel(t, 160, 48)
	press(m, "enter")
	feedHost(m, "gpu1", rankLines(200)) // 1800 lines, 400 rows
	r := m.ring("gpu1")
	h := m.host.logHeight(m.hostState(m.host.name))
	last := func() string {
		ls := lines(render(m))
		return ls[len(ls)-3] // the last log row, above the status line and the help
	}
	if !strings.Contains(last(), "Received a request 199") {
		t.Fatalf("following, the newest row is not at the bottom: %q\n%s", last(), render(m))
	}
	press(m, "g")
	if m.host.log.start(r, h) != r.first() {
		t.Fatal("g did not go to the oldest line")
	}
	top := m.host.log.start(r, h)
	press(m, "pgdown")
	next := m.host.log.start(r, h)
	rows := 0
	for s := top; s < next; s = m.host.log.after(r, s) {
		rows++
	}
	if rows != h-1 {
		t.Fatalf("a page moved %d rows, want %d", rows, h-1)
	}
	press(m, "k")
	if m.host.log.start(r, h) != m.host.log.before(next) {
		t.Fatal("k did not move one row up")
	}
	press(m, "G")
	if !m.host.log.follow {
		t.Fatal("G did not follow")
	}
	// A copy of the newest row arrives: it folds, nothing scrolls.
	before := render(m)
	feedHost(m, "gpu1", []string{"[2026-11-30 10:04:19 TP0] Load weight begin. avail mem=75.10 GB"})
	feedHost(m, "gpu1", []string{"[2026-11-30 10:04:19 TP1] Load weight begin. avail mem=75.10 GB"})
	if !strings.Contains(last(), "TP0-1] Load weight begin. avail mem=75.10 GB ×2") {
		t.Fatalf("the arriving copies are not the newest row: %q", last())
	}
	if before == render(m) {
		t.Fatal("nothing changed")
	}
	// Scrolled back, the view stays put while lines arrive.
	press(m, "pgup")
	at := m.host.log.start(r, h)
	feedHost(m, "gpu1", rankLines(5))
	if m.host.log.start(r, h) != at || m.host.log.follow {
		t.Fatal("new lines moved a scrolled-back view")
	}
	if !strings.Contains(render(m), "new lines ↓") {
		t.Fatal("no new-lines indicator")
	}
}

// BenchmarkLogPaneFold is one frame of the host view at 160×48 over a full
// 5 000-line ring of 8 ranks' lines, folded against unfolded, following
// and scrolled to the middle: folding must keep a frame O(screen). Also
// what folding adds to each arriving line (push + sync against push).
func BenchmarkLogPaneFold(b *testing.B) {
	for _, fold := range []bool{false, true} {
		for _, where := range []string{"follow", "middle", "wrap"} {
			name := "unfolded/" + where
			if fold {
				name = "folded/" + where
			}
			b.Run(name, func(b *testing.B) {
				m, _ := newTestModel(b, 160, 48)
				m.opts.NoColor = false
				m.setStyles(true)
				press(m, "enter")
				feedHost(m, "gpu1", rankLines(700)) // 6 300 lines through a 5 000-line ring
				if !fold {
					press(m, "z")
				}
				switch where {
				case "middle":
					r := m.ring("gpu1")
					m.host.log.follow, m.host.log.top = false, r.first()+r.n/2
				case "wrap":
					press(m, "w")
				}
				b.ResetTimer()
				for b.Loop() {
					_ = m.View()
				}
			})
		}
	}
	lines := rankLines(700)
	for _, fold := range []bool{false, true} {
		name := "arrive/unfolded"
		if fold {
			name = "arrive/folded"
		}
		b.Run(name, func(b *testing.B) {
			r := newRing(defaultRing)
			var f *foldIndex
			if fold {
				f = newFoldIndex(r)
			}
			i := 0
			for b.Loop() {
				r.push(logLine{Text: lines[i%len(lines)]})
				if f != nil {
					f.sync(r)
				}
				i++
			}
		})
	}
}
