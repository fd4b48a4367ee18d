package startup

import (
	mbits "math/bits"
	"slices"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/event"
)

// Options configures a Tracker.
type Options struct {
	// Engine is "sglang", "vllm", or "auto"/"" to detect it from the logs.
	// While it is unknown every pack applies.
	Engine string
	// Kernels says which kernel modes are capture-safe; the modes in force
	// are read from the unit's Environment.
	Kernels kernels.Catalog
	// Packs are the rule packs; nil means the built-in ones. Packs that do
	// not compile are left out: check them with RulePack.Compile when the
	// config is loaded, where the error can be shown.
	Packs []RulePack
	// Compiled, when set, is used instead of Packs, so that a fleet compiles
	// its packs once and shares them between hosts.
	Compiled []*CompiledPack
	// RequireProbe makes serving wait for a successful probe. When false, a
	// probe is required only once the host has produced a probe event:
	// hosts that are probed wait for one OK, hosts that are not (a plain
	// demo) serve on "unit active + ready line".
	RequireProbe bool
	// StuckAfter overrides, per phase, how long a phase may go without a
	// progressing line before the startup counts as stuck; zero or negative
	// disables the check for that phase. Phases not listed use
	// DefaultStuckAfter.
	StuckAfter map[Phase]time.Duration
}

// DefaultStuckAfter is how long each phase may go without progress before
// it counts as stuck. Weight loading prints a line per shard, so a few
// minutes of silence is already odd; the rest print little.
func DefaultStuckAfter() map[Phase]time.Duration {
	return map[Phase]time.Duration{
		Init:         5 * time.Minute,
		Weights:      3 * time.Minute,
		KVCache:      5 * time.Minute,
		GraphCapture: 5 * time.Minute,
		HTTP:         5 * time.Minute,
		Warmup:       5 * time.Minute,
	}
}

// Bounds on what a tracker keeps per invocation (STYLE: every buffer is
// bounded). Failure candidates beyond maxCands are dropped, but the root
// cause is the earliest, so it is among those kept.
const (
	maxCands    = 16
	maxExits    = 4
	maxEvidence = 6
	maxRetired  = 8
)

// Tracker folds one host's events into its Startup. It is not safe for
// concurrent use; hand State() copies to other goroutines.
type Tracker struct {
	opts   Options
	auto   bool // the engine is told from the logs
	set    *ruleSet
	active []bool // per pack: applies to the current engine
	hit    []uint64

	// st is the startup but for what path holds: phase, trail, progress.
	st   Startup
	path phasePath
	// ledger is the invocation's failure: its candidate lines, systemd's
	// record of its end, and what was last reported of it.
	ledger failureLedger

	envModes []kernels.ActiveMode // from the latest Environment seen
	modes    []kernels.ActiveMode // in force for this invocation

	unitSeen  bool
	unitState string
	lastN     int
	credited  bool // a restart was counted from NRestarts before its new invocation showed
	probeSeen bool
	retired   []string

	// execStart is when the current invocation's main process started (from
	// the unit), firstLine the host time of its first journal line seen.
	// When the journal backlog starts well after execStart, bringup joined
	// a run whose startup lines it never saw.
	execStart time.Time
	firstLine time.Time

	// lines is the context of the line at hand: the traceback around it,
	// the multi-line message it may go on with, and its number.
	lines lineContext
	// stopping is set once a stop was asked for: errors printed while the
	// processes are torn down are no failure of the startup.
	stopping bool
	// trailClosed is set once the log itself ended the run (a line the
	// engine prints only when it gives up, the main process's exit): a
	// line after it, however late it arrives, is not how far it got.
	trailClosed bool
	// exitedAt is when systemd said the main process exited with a
	// failure: lines of the run journald reads within exitDrain of it
	// were printed before it (see applyPhase).
	exitedAt time.Time
	// statsSaid is the host time of the last ChangeStats.
	statsSaid time.Time
	// dp are the data-parallel ranks' latest stats samples, by DP rank
	// (applyDP); nil for an engine that prints one stats line a step.
	dp []dpGroup

	// runs are the runs before the current one, oldest first (at most
	// MaxRuns-1); runN is how many runs ended before the current one.
	runs []Run
	runN int
	// served is set once the current run served; runPID is the main PID
	// its lines carry in pasted text (0 when they name none), pastPIDs
	// those of the runs before, lineAt the host time of its last line.
	served   bool
	runPID   int
	pastPIDs []int
	lineAt   time.Time
	// loop is the crash loop the ended runs make (Runs 0: none);
	// startLimit says systemd gave up starting the unit.
	loop       CrashLoop
	loopEnd    time.Time // when the loop's latest failed run failed
	startLimit bool
	// versionSaid: a line of the current run stated the engine's release.
	versionSaid bool
}

// lateJoin is how far after the main process's start the first journal
// line seen may be before the startup counts as unseen.
const lateJoin = 30 * time.Second

// joinedLate reports whether the current invocation's startup lines were
// not in the journal backlog: a run that began long before bringup looked
// (or further back than the journal follow reaches).
func (t *Tracker) joinedLate() bool {
	if t.execStart.IsZero() {
		return false
	}
	// Until a line of the run has arrived the backlog is still on its way:
	// no inference from the probe alone.
	return !t.firstLine.IsZero() && t.firstLine.Sub(t.execStart) > lateJoin
}

// NewTracker returns a tracker in phase Stopped.
func NewTracker(opts Options) *Tracker {
	stuck := DefaultStuckAfter()
	for p, d := range opts.StuckAfter {
		stuck[p] = d
	}
	t := &Tracker{opts: opts, path: newPhasePath(stuck)}
	switch {
	case opts.Compiled != nil:
		t.set = newRuleSet(opts.Compiled)
	case opts.Packs != nil:
		var packs []*CompiledPack
		for _, p := range opts.Packs {
			if c, err := p.Compile(); err == nil {
				packs = append(packs, c)
			}
		}
		t.set = newRuleSet(packs)
	default:
		t.set = builtinSet()
	}
	t.hit = make([]uint64, t.set.words())
	t.lines = newLineContext(t.set.frames)
	t.active = make([]bool, len(t.set.packs))
	t.st = Startup{}
	if opts.Engine != "auto" {
		t.st.Engine = opts.Engine
	}
	t.auto = opts.Engine == "" || opts.Engine == "auto"
	t.selectPacks()
	return t
}

// selectPacks marks the packs of the known engine (and generic ones)
// active, or all of them while the engine is unknown.
func (t *Tracker) selectPacks() {
	for i, c := range t.set.packs {
		// Under auto every pack stays on: the engine named from the logs
		// is for display and hints, and logs mix formats (SGLang's
		// diffusion runtime prints vLLM-style lines; Ray and Dynamo wrap
		// them).
		t.active[i] = t.auto || t.st.Engine == "" || c.Engine == "" || c.Engine == t.st.Engine
	}
}

// Apply folds ev and reports what changed.
func (t *Tracker) Apply(ev event.Event) []Change {
	var out []Change
	switch ev.Kind {
	case event.KindUnit:
		if ev.Unit != nil {
			t.applyUnit(ev.Unit, ev.Time, &out)
		}
	case event.KindJournal:
		if ev.Journal != nil {
			t.applyJournal(ev.Journal, ev.Time, &out)
		}
	case event.KindProbe:
		if ev.Probe != nil {
			// A stopped prober is as none: the next run serves on its
			// unit and ready line, as before any probe was seen.
			t.probeSeen = !ev.Probe.Stopped
			t.st.ProbeOK = ev.Probe.OK && !ev.Probe.Stopped
		}
	case event.KindConn:
		if ev.Conn != nil {
			t.path.conn(ev.Conn.State, ev.Time, &out)
		}
	case event.KindGPU, event.KindAction, event.KindGap, event.KindCommand, event.KindClock: // no evidence of a phase
	}
	t.checkServing(ev.Time, &out)
	t.stampRun(out)
	return out
}

// stampRun numbers the changes not yet numbered with the current run.
func (t *Tracker) stampRun(out []Change) {
	for i := range out {
		if out[i].Run == 0 {
			out[i].Run = t.runN + 1
		}
	}
}

// Tick re-evaluates time-based state at host time now: a phase that has
// gone without a progressing line for longer than its threshold becomes
// stuck. A later progressing line moves it on.
func (t *Tracker) Tick(now time.Time) []Change {
	var out []Change
	t.path.tick(now, &out)
	t.stampRun(out)
	return out
}

// State returns a deep copy of the current startup, safe to hand to
// another goroutine.
func (t *Tracker) State() Startup {
	s := t.st
	t.path.fill(&s)
	s.Diag = t.st.Diag.clone()
	s.Modes = slices.Clone(t.modes)
	s.Stats = t.st.Stats.clone()
	if t.begun() {
		s.Run = t.runN + 1
		s.Runs = make([]Run, 0, len(t.runs)+1)
		for _, r := range t.runs {
			r.Spans = slices.Clone(r.Spans)
			r.Diag = r.Diag.clone()
			s.Runs = append(s.Runs, r)
		}
		cur := t.currentRun()
		s.Runs = append(s.Runs, cur)
		s.Loop = t.crashLoop(cur)
	}
	return s
}

// extendLoop is loop with run r, ended, added: a failed run that started
// within LoopGap of the loop's latest failure continues it, another
// failed run begins one, and a run that did not fail ends it.
func extendLoop(loop CrashLoop, loopEnd time.Time, r Run) (CrashLoop, time.Time) {
	if !r.Failed() {
		return CrashLoop{}, time.Time{}
	}
	cause, summary, hint := CauseUnitFailed, "", ""
	if r.Diag != nil {
		cause, summary, hint = r.Diag.Cause, r.Diag.Summary, r.Diag.Hint
	}
	if loop.Runs == 0 || r.Start.Sub(loopEnd) > LoopGap {
		return CrashLoop{Runs: 1, Cause: cause, Summary: summary, Hint: hint}, r.End
	}
	loop.Runs++
	if loop.Cause != cause {
		loop.Cause = CausesVary
	}
	loop.Summary, loop.Hint = summary, hint
	return loop, r.End
}

// crashLoop is the crash loop the runs make with cur, the current run, or
// nil: LoopRuns failed runs in a row while cur failed too or is still on
// its way (a served or stopped run ends the loop), or systemd gave up.
func (t *Tracker) crashLoop(cur Run) *CrashLoop {
	loop, loopEnd := t.loop, t.loopEnd
	switch {
	case cur.Failed():
		loop, _ = extendLoop(loop, loopEnd, cur)
	case t.served || t.path.under == Stopped && !t.startLimit:
		return nil
	case loop.Runs > 0 && cur.Start.Sub(loopEnd) > LoopGap:
		return nil
	}
	loop.StartLimit = t.startLimit
	if loop.Runs < LoopRuns && !loop.StartLimit {
		return nil
	}
	return &loop
}

// begun reports whether a run of the unit has begun: a start, an
// invocation id, a phase or a failure seen.
func (t *Tracker) begun() bool {
	return !t.st.StartedAt.IsZero() || t.st.InvocationID != "" || t.path.hasTrail() || t.ledger.failed
}

// currentRun is the current run as it stands, its slices its own.
func (t *Tracker) currentRun() Run {
	r := Run{N: t.runN + 1, InvocationID: t.st.InvocationID, Start: t.st.StartedAt, Reached: t.path.lastPath, Outcome: t.path.under, Spans: slices.Clone(t.path.spans)}
	if len(r.Spans) > 0 && (r.Start.IsZero() || r.Spans[0].Start.Before(r.Start)) {
		r.Start = r.Spans[0].Start
	}
	switch {
	case t.ledger.failed:
		r.Outcome, r.End, r.Diag = Failed, t.ledger.failAt, t.st.Diag.clone()
	case t.served:
		r.Outcome = Serving
		if t.path.under == Stopped {
			r.End = t.path.underSince
		}
	case t.path.under == Stopped || t.path.under == Restarting:
		r.Outcome, r.End = Stopped, t.path.underSince
	}
	return r
}

// retireRun keeps the current run among the earlier ones as it ended.
func (t *Tracker) retireRun() {
	if !t.begun() {
		return
	}
	r := t.currentRun()
	t.loop, t.loopEnd = extendLoop(t.loop, t.loopEnd, r)
	t.runs = append(t.runs, r)
	if len(t.runs) > MaxRuns-1 {
		t.runs = slices.Delete(t.runs, 0, len(t.runs)-(MaxRuns-1))
	}
	t.runN++
}

func (d *Diagnosis) clone() *Diagnosis {
	if d == nil {
		return nil
	}
	c := *d
	c.Evidence = slices.Clone(d.Evidence)
	if d.Fix != nil {
		f := *d.Fix
		c.Fix = &f
	}
	return &c
}

// newInvocation starts a fresh run of the unit: what was learnt about the
// previous one is dropped, except the engine and the restart count.
func (t *Tracker) newInvocation(id string, at time.Time, out *[]Change) {
	t.stampRun(*out) // what was said so far is of the run that ends
	t.retireRun()
	t.served, t.runPID, t.startLimit = false, 0, false
	t.versionSaid = false
	if !t.st.StartedAt.IsZero() || t.st.InvocationID != "" {
		if t.st.InvocationID != "" {
			t.retired = append(t.retired, t.st.InvocationID)
			if len(t.retired) > maxRetired {
				t.retired = t.retired[1:]
			}
		}
		if !t.credited {
			t.st.Restarts++
		}
	}
	t.credited = false
	t.st.InvocationID, t.st.StartedAt = id, at
	t.st.Diag, t.st.Stats = nil, nil
	t.st.ReadySeen, t.st.ProbeOK, t.st.LogEnded = false, false, false
	t.ledger = failureLedger{}
	t.execStart, t.firstLine = time.Time{}, time.Time{}
	t.lines.reset()
	t.stopping, t.trailClosed, t.exitedAt = false, false, time.Time{}
	t.statsSaid = time.Time{}
	t.dp = t.dp[:0]
	t.modes = t.envModes
	// The new run passes through starting whatever it was before.
	t.path.restart(at, out)
}

// switchInvocation handles an invocation id on an event: a new one starts
// a run; one of an earlier run marks the event stale (false).
func (t *Tracker) switchInvocation(id string, at time.Time, out *[]Change) bool {
	switch {
	case id == "" || id == t.st.InvocationID:
		return true
	case slices.Contains(t.retired, id):
		return false
	case !t.st.StartedAt.IsZero() && at.Before(t.st.StartedAt):
		// From before the current run began: an earlier run's, met in
		// the journal backlog after the unit state named the current one.
		return false
	case t.st.InvocationID == "" && t.st.StartedAt.IsZero() || t.st.InvocationID == "" && !t.ledger.failed && t.path.under != Stopped:
		// The first id seen names the run already under way.
		t.st.InvocationID = id
		if t.st.StartedAt.IsZero() {
			t.st.StartedAt = at
		}
		return true
	}
	t.newInvocation(id, at, out)
	return true
}

// restartOver tells whether the phase shows the previous run has ended,
// so that a start signal without an invocation id begins a new run.
func (t *Tracker) restartOver() bool {
	return t.begun() && (t.ledger.failed || t.path.under == Restarting || t.path.under == Stopped)
}

// countRestarts follows the unit's restart counter. The first reading is
// the baseline; an increase counts a restart before its new invocation
// arrives, which then does not count again.
func (t *Tracker) countRestarts(n int) {
	if n < 0 {
		return
	}
	if !t.unitSeen {
		t.st.Restarts = max(t.st.Restarts, n)
	} else if n > t.lastN {
		t.st.Restarts += n - t.lastN
		t.credited = true
	}
	t.lastN, t.unitSeen = n, true
}

func (t *Tracker) applyUnit(u *event.Unit, at time.Time, out *[]Change) {
	if u.Environment != nil {
		t.envModes = t.opts.Kernels.ModesIn(u.Environment)
		if t.modes == nil {
			t.modes = t.envModes
		}
	}
	t.countRestarts(u.NRestarts)
	if !t.switchInvocation(u.InvocationID, at, out) {
		return
	}
	if s := u.State(); s != t.unitState {
		t.unitState = s
		*out = append(*out, Change{Kind: ChangeUnit, Time: at, Phase: t.path.display(), Unit: s, Progress: t.path.progress})
	}
	t.st.UnitActive = u.ActiveState == "active"
	if !u.ExecMainStart.IsZero() {
		t.execStart = u.ExecMainStart
	}
	if u.Result != "" {
		t.ledger.result = u.Result
	}
	switch {
	case u.Result == "start-limit-hit":
		t.startLimit = true
	case u.ActiveState == "inactive" && u.Result == "success":
		// reset-failed: systemd forgot the failures and its start limit.
		t.startLimit = false
	}
	failing := u.Result != "" && u.Result != "success"
	switch u.SubState {
	case "stop", "stop-sigterm", "stop-sigkill", "stop-watchdog":
		t.stopping = true
	}
	switch {
	case u.SubState == "auto-restart":
		if failing {
			t.fail(at, out)
		}
		t.path.enter(Restarting, at, out)
	case u.ActiveState == "failed" && u.Result == "success":
		// Starting a failed unit: systemd has reset the result and given
		// the new run its invocation id, and reports both before
		// ActiveState leaves failed. A unit only fails with a failing
		// result, so this is the new run starting, not failing.
	case u.ActiveState == "failed":
		t.fail(at, out)
		if t.path.under == Restarting {
			// The restart systemd scheduled did not come (the start
			// limit refused it; systemd 252 keeps the last run's
			// result): the unit is failed for good.
			t.path.enter(Failed, at, out)
		}
	case u.ActiveState == "activating" || u.ActiveState == "active":
		if u.InvocationID == "" && t.restartOver() {
			t.newInvocation("", at, out)
		} else if t.path.under == Stopped || t.path.under == Restarting {
			t.path.enter(Starting, at, out)
		}
	case u.ActiveState == "inactive":
		if (failing || t.pendingFailure()) && t.path.onPath() {
			t.fail(at, out)
		} else if !t.ledger.failed {
			t.path.enter(Stopped, at, out)
		}
	}
}

// canServe reports whether the unit and the probe already agree, so that
// the engine's ready line is the last piece of evidence.
func (t *Tracker) canServe() bool {
	return t.path.onPath() && t.st.UnitActive && !((t.opts.RequireProbe || t.probeSeen) && !t.st.ProbeOK)
}

// checkServing enters serving once the evidence is complete: the unit is
// active, the engine said it is ready, and a probe answered where probes
// are expected.
func (t *Tracker) checkServing(at time.Time, out *[]Change) {
	if !t.path.onPath() || t.path.under == Serving || t.ledger.failed {
		return
	}
	if !t.st.UnitActive {
		return
	}
	if !t.st.ReadySeen {
		// A run that started long before bringup looked: its ready line
		// is not in the backlog, so the probe alone is the evidence.
		if !(t.joinedLate() && t.st.ProbeOK) {
			return
		}
	}
	if (t.opts.RequireProbe || t.probeSeen) && !t.st.ProbeOK {
		return
	}
	t.served = true
	t.path.enter(Serving, at, out)
}

func (t *Tracker) applyJournal(j *event.Journal, at time.Time, out *[]Change) {
	if !t.switchInvocation(j.InvocationID, at, out) {
		return // a late line of an earlier run
	}
	if t.firstLine.IsZero() && j.MessageID == "" {
		t.firstLine = at
	}
	msg := j.Message
	hit := t.hit
	clear(hit)
	t.set.idx.scan(msg, hit)
	if k := classifySys(j.MessageID, msg, j.PID, hit, t.set.refs); k != sysNone {
		t.applySys(k, j, at, out)
		return
	}
	t.followPID(j, at, out)
	t.lines.seq++
	if t.st.Engine == "" {
		t.detect(msg, hit)
	}
	if !t.versionSaid {
		if v := EngineVersion(msg); v != "" {
			t.st.EngineVersion, t.versionSaid = v, true
		}
	}
	kind, framePhase, _ := t.lines.tb.feed(msg, hasHit(hit, t.set.tbID) || hasHit(hit, t.set.faultID), hasHit(hit, t.set.frameID))
	switch kind {
	case tbFrame, tbCode:
		// Source lines and frames quote code, not messages: a rule must
		// not take `raise Exception("Capture cuda graph failed…")` for the
		// failure itself. A frame can still say where a failure already
		// reported struck (the engine's "failed to start" comes first,
		// its traceback after).
		if t.ledger.failed {
			t.updateDiag(at, out)
		}
		return
	case tbStart:
		// A traceback being printed is error output, whatever it ends
		// in (an excerpt may cut it before its exception line).
		t.lines.lastCandSeq = t.lines.seq
	case tbException:
		if framePhase != "" && len(t.lines.tbEnds) < maxCands {
			t.lines.tbEnds = append(t.lines.tbEnds, tbEnd{t.lines.seq, framePhase})
		}
	case tbNone: // not part of a traceback
	}
	if kind == tbNone && t.applyMetric(msg, at, hit, out) {
		// A stats line: no phase, no progress, no error.
		t.lines.cont.stop()
		return
	}
	// A line inside an open traceback that is neither frame, source nor
	// exception (a frame cut at the excerpt's edge, a rank's chatter) is
	// no error of its own, whatever level it was logged at.
	t.lines.inTB = kind == tbNone && t.lines.tb.nOpen > 0
	n := len(t.ledger.cands)
	following := kind == tbNone && t.lines.cont.continues(msg, len(t.ledger.cands))
	matched := t.applyRules(msg, at, hit, framePhase, out)
	switch {
	case !matched && kind == tbNone:
		t.continueMessage(msg, at, out)
	case matched && following && len(t.ledger.cands) > n:
		// A line of the message followed that a rule knows on its own
		// ("current process has finished its bootstrapping phase."): it
		// names the cause of the whole message, whose first line stays
		// the one quoted.
		if c, f := t.ledger.cands[len(t.ledger.cands)-1], &t.ledger.cands[t.lines.cont.cand]; c.rule.tier() <= 0 && f.rule.tier() > 0 {
			f.rule = c.rule
			if t.lines.cont.colon && f.quote == "" {
				// "RuntimeError:" and the message on the lines after it:
				// this line is the one to quote, as continueMessage has it.
				f.quote = msg
			}
			t.updateDiag(at, out)
		}
		t.lines.cont.stop()
	default:
		t.lines.cont.stop()
	}
	if len(t.ledger.cands) > n {
		if c := t.ledger.cands[len(t.ledger.cands)-1]; (c.rule.tier() == 1 || c.rule.tier() == 2) && !strings.Contains(msg, tbHeader) {
			t.lines.cont.start(len(t.ledger.cands)-1, msg)
		}
	}
	if !matched && kind == tbException {
		t.addCand(&unrecognisedRule, msg, at, framePhase, out)
		if _, body := splitLine(msg); !strings.Contains(body, ": ") {
			// A bare "AssertionError": the line a person quotes is the
			// `assert …` above it.
			if code := t.lines.tb.lastCode(); code != "" && len(t.ledger.cands) > 0 && t.ledger.cands[len(t.ledger.cands)-1].line == msg {
				t.ledger.cands[len(t.ledger.cands)-1].quote = code
				t.updateDiag(at, out)
			}
		}
	}
}

// followPID follows the main PID of pasted text (journalctl's
// `ident[PID]:`, where no invocation id says which run a line is of): a
// PID not seen before, after a run that ended or whose last word was an
// error, is systemd's next run of the unit, the old process gone with the
// line before.
func (t *Tracker) followPID(j *event.Journal, at time.Time, out *[]Change) {
	defer func() { t.lineAt = at }()
	if j.InvocationID != "" || j.PID <= 1 {
		return
	}
	switch {
	case t.runPID == 0:
		t.runPID = j.PID
	case j.PID == t.runPID || slices.Contains(t.pastPIDs, j.PID):
	case t.restartOver() || t.pendingFailure():
		prev := t.runPID
		*out = append(*out, t.End(t.lineAt)...)
		t.newInvocation("", at, out)
		t.pastPIDs = append(t.pastPIDs, prev)
		if len(t.pastPIDs) > MaxRuns {
			t.pastPIDs = t.pastPIDs[1:]
		}
		t.runPID = j.PID
		t.st.UnitActive = true
	}
}

func hasHit(hit []uint64, id int) bool { return hit[id>>6]&(1<<(id&63)) != 0 }

// continueMessage reads msg as a continuation of the message followed
// (continuation.next): the line after one ending in ":" is its real error,
// and becomes the line quoted first; the joined text may name the cause
// of a message whose first line only wraps it.
func (t *Tracker) continueMessage(msg string, at time.Time, out *[]Change) {
	i := t.lines.cont.cand
	if !t.lines.cont.on(len(t.ledger.cands)) {
		return
	}
	quote, grew, ok := t.lines.cont.next(msg)
	if !ok {
		return
	}
	if quote {
		t.ledger.cands[i].quote = msg
		t.updateDiag(at, out)
	}
	if c := &t.ledger.cands[i]; grew && c.rule.tier() > 0 {
		if r := t.specificRule(t.lines.cont.text); r != nil {
			c.rule = r
			t.updateDiag(at, out)
		}
	}
}

// specificRule is the first active rule that knows a cause (tier 0 or
// hardware) and matches s, the joined lines of one message; nil if none.
// It runs only on the continuation lines of an error's message.
func (t *Tracker) specificRule(s string) *compiledFailure {
	for p, pack := range t.set.packs {
		if !t.active[p] {
			continue
		}
		for i := range pack.failures {
			r := &pack.failures[i]
			if r.tier() <= 0 && inPhases(r.InPhases, t.path.furthest()) && r.raisedBy("") && hasKeyword(s, r.Keywords) && r.match(s) {
				return r
			}
		}
	}
	return nil
}

// CauseUnrecognised is the cause of a failure whose error no rule knows:
// the diagnosis then quotes the first error line instead of guessing.
const CauseUnrecognised = "unrecognised"

// unrecognisedRule classifies the exception line of a traceback that no
// rule matched.
var unrecognisedRule = compiledFailure{FailureRule: FailureRule{
	Cause:   CauseUnrecognised,
	Summary: "the service raised an error no rule recognises",
	Hint:    hintUnrecognised,
}}

// pendingFailure reports whether the log's last word is an error: a
// failure line came after the last line that moved the startup on, and no
// stop was asked for. A process that then ends, whatever its exit status,
// failed.
func (t *Tracker) pendingFailure() bool {
	return len(t.ledger.cands) > 0 && t.lines.endsInError() && !t.stopping && t.path.under != Serving
}

// End reports that the log has ended at host time at with the process gone
// (a saved log read to its end): a startup whose last word was an error
// failed; one that did not stays where it was.
func (t *Tracker) End(at time.Time) []Change {
	var out []Change
	if !t.ledger.failed {
		t.cutTraceback(at, &out)
	}
	if !t.ledger.failed && t.path.onPath() && t.pendingFailure() {
		t.fail(at, &out)
	}
	t.stampRun(out)
	return out
}

// cutTraceback is the end of a run's log inside a traceback that nothing
// else names an error for: its exception line is cut off. It says so,
// quoting the traceback's first line where the log has it, else its
// deepest source line. A saved log's end (End) and the journal's record
// of the process's failed end (PID 1's "Main process exited" or "Failed
// with result") both end the log, so a live run and its saved log get the
// same verdict; before either, the exception line may still come. The run
// may have failed already: systemd's D-Bus signal beats the journal.
func (t *Tracker) cutTraceback(at time.Time, out *[]Change) {
	if !(t.path.onPath() || t.ledger.failed) || t.lines.tb.nOpen == 0 || len(t.ledger.cands) > 0 || !t.lines.endsInError() {
		return
	}
	quote := t.lines.tb.head()
	if quote == "" {
		quote = t.lines.tb.lastCode()
	}
	if quote != "" {
		t.addCand(&unrecognisedRule, quote, at, t.lines.tb.openPhase(), out)
	}
}

// detect names the engine from a line, by keyword or by line prefix.
func (t *Tracker) detect(msg string, hit []uint64) {
	for id, r := range t.set.refs {
		if r.kind == refDetect && hit[id>>6]&(1<<(id&63)) != 0 {
			t.st.Engine = t.set.packs[r.pack].Engine
			t.selectPacks()
			return
		}
	}
	for _, c := range t.set.packs {
		if c.detectRe != nil && c.Engine != "" && c.detectRe.MatchString(msg) {
			t.st.Engine = c.Engine
			t.selectPacks()
			return
		}
	}
}

// applyRules runs the phase and failure rules whose keywords occur in msg,
// in pack order; the first phase rule and the first failure rule that
// match decide.
func (t *Tracker) applyRules(msg string, at time.Time, hit []uint64, framePhase Phase, out *[]Change) bool {
	// Phase rules first, so that a failure glued to a progress line (a
	// tqdm bar without its newline) is put in the phase that line opens.
	// Under auto, the packs of the engine the logs named go first: both
	// engines print uvicorn's lines, which mean different things.
	for _, kind := range [2]ruleKind{refPhase, refFail} {
		for _, own := range [2]bool{true, false} {
			if !own && !t.auto {
				break
			}
			done, matched := t.applyKind(kind, own, msg, at, hit, framePhase, out)
			if kind == refFail && matched {
				return true
			}
			if done {
				break
			}
		}
	}
	return false
}

// applyKind runs the rules of one kind whose keywords hit, from the packs
// of the engine the logs named (own) or from the others; the first that
// matches decides. done reports that no further pass should run.
func (t *Tracker) applyKind(kind ruleKind, own bool, msg string, at time.Time, hit []uint64, framePhase Phase, out *[]Change) (done, matched bool) {
	for w, bits := range hit {
		for bits != 0 {
			b := mbits.TrailingZeros64(bits)
			bits &^= 1 << b
			r := t.set.refs[w<<6|b]
			if r.kind != kind || !t.active[r.pack] {
				continue
			}
			if t.auto {
				e := t.set.packs[r.pack].Engine
				mine := t.st.Engine == "" || e == "" || e == t.st.Engine
				if mine != own {
					continue
				}
			}
			if kind == refPhase && t.applyPhase(&t.set.packs[r.pack].phases[r.idx], msg, at, out) {
				return true, true
			}
			if kind == refFail && t.applyFailure(&t.set.packs[r.pack].failures[r.idx], msg, at, framePhase, out) {
				return true, true
			}
		}
	}
	return !t.auto || t.st.Engine == "", false
}

// applyPhase applies a phase rule to msg and reports whether it matched.
// Phases only move forward within an invocation: a late line of an earlier
// phase (another rank, a second draft model) counts for nothing.
func (t *Tracker) applyPhase(r *compiledPhase, msg string, at time.Time, out *[]Change) bool {
	cur := t.path.under
	if t.ledger.failed && r.Phase != "" && (!at.After(t.ledger.failAt) || !t.st.LogEnded || t.draining(at)) && !t.trailClosed {
		// A line of the run printed before it failed and delivered after
		// systemd said so (the journal can trail D-Bus): it still tells
		// how far the startup got. Until the journal has shown the run's
		// end, its stamp may be later than the failure's: journald stamps
		// a line when it reads it, and a process that printed its last
		// lines and died at once is seen dead by systemd first.
		if _, ok := r.match(msg); ok {
			if at.After(t.ledger.failAt) {
				at = t.ledger.failAt
			}
			t.lateSpan(r, at, out)
			return true
		}
		return false
	}
	if t.ledger.failed || cur == Restarting || !inPhases(r.InPhases, cur) {
		return false
	}
	if r.Phase != "" && r.Phase.Rank() < cur.Rank() && !r.groups && !r.Ready && r.Ends == "" {
		// A line of a phase already passed moves nothing: no need to run
		// its pattern (a served host's every access line would).
		return false
	}
	loc, ok := r.match(msg)
	if !ok {
		return false // a keyword without the pattern: let later rules try
	}
	if r.Ready {
		t.st.ReadySeen = true
		t.lines.lastProgSeq = t.lines.seq
		if t.canServe() {
			// Serving at once (checkServing, after this event): no
			// warmup span of no length in the trail.
			return true
		}
	}
	switch {
	case r.Phase != "" && r.Phase.Rank() > cur.Rank():
		t.lines.lastProgSeq = t.lines.seq
		if r.Ends != "" && r.Ends.Rank() > cur.Rank() && r.Ends.Rank() < r.Phase.Rank() {
			t.path.enter(r.Ends, at, out)
			t.path.spans[len(t.path.spans)-1].Inferred = true
		}
		t.path.enter(r.Phase, at, out)
	case r.Phase == "" || r.Phase == cur:
		if t.path.isStuck {
			t.path.enter(cur, at, out)
		}
		t.path.lastProgress = at
	default:
		return true
	}
	if r.re != nil && r.groups {
		p := r.progress(msg, loc)
		if p.Done > t.path.progress.Done || p.Label != t.path.progress.Label {
			// A count that moved is progress; a line that only tells
			// about the phase ("Maximum concurrency …: 0.00x") is not.
			t.lines.lastProgSeq = t.lines.seq
		}
		t.path.progress = p
	}
	return true
}

// exitDrain is how long after systemd's word that the main process
// exited a line of the run may still be one it printed before: journald
// reads a unit's stdout stream apart from PID 1's messages, and a process
// that printed its whole log and exited at once had its exit logged
// first (seen on test hosts: a 40-line log's init line read after the
// "Main process exited" line, within milliseconds).
const exitDrain = time.Second

// draining reports whether a line stamped at arrived while journald may
// still have been reading what the exited main process printed.
func (t *Tracker) draining(at time.Time) bool {
	return !t.exitedAt.IsZero() && !at.After(t.exitedAt.Add(exitDrain))
}

// lateSpan adds the phase of a line that arrived after the failure to the
// trail, where the run had reached it before it failed.
func (t *Tracker) lateSpan(r *compiledPhase, at time.Time, out *[]Change) {
	if r.Ends != "" && r.Ends.Rank() > t.path.lastPath.Rank() && r.Ends.Rank() < r.Phase.Rank() {
		t.path.extendTrail(r.Ends, at, t.ledger.failAt)
		t.path.spans[len(t.path.spans)-1].Inferred = true
	}
	if r.Phase.Rank() > t.path.lastPath.Rank() {
		t.path.extendTrail(r.Phase, at, t.ledger.failAt)
		t.updateDiag(at, out)
	}
}

// applyFailure records msg as a failure candidate if the rule matches.
func (t *Tracker) applyFailure(r *compiledFailure, msg string, at time.Time, framePhase Phase, out *[]Change) bool {
	if !inPhases(r.InPhases, t.path.furthest()) || !r.raisedBy(t.lines.tb.raisedIn()) || !r.match(msg) {
		return false
	}
	if r.Cause == CauseUnrecognised && (t.lines.inTB || strings.Contains(msg, tbHeader)) {
		// vLLM logs each traceback line at ERROR: the header is not the
		// error.
		return false
	}
	t.addCand(r, msg, at, framePhase, out)
	return true
}

func (t *Tracker) addCand(r *compiledFailure, msg string, at time.Time, framePhase Phase, out *[]Change) {
	t.lines.lastCandSeq = t.lines.seq
	if t.ledger.has(msg) {
		return
	}
	c := cand{rule: r, line: msg, time: at, phase: t.path.furthest(), framePhase: framePhase, seq: t.lines.seq, decoy: isDecoy(msg)}
	if !t.ledger.add(c) {
		return
	}
	if r.Fatal {
		// Lines after the engine gave up are no part of the startup's
		// trail, whether they reach us before systemd's word or after.
		t.trailClosed = true
	}
	if r.Fatal && !t.ledger.failed && !t.stopping {
		t.fail(at, out)
		return
	}
	if t.ledger.failed {
		t.updateDiag(at, out)
	}
}

func (t *Tracker) applySys(k sysKind, j *event.Journal, at time.Time, out *[]Change) {
	msg := j.Message
	switch k {
	case sysStarting:
		if t.restartOver() {
			t.newInvocation(j.InvocationID, at, out)
		} else if !t.path.onPath() {
			t.path.enter(Starting, at, out)
		}
	case sysStarted:
		switch {
		case t.restartOver() && j.InvocationID == "":
			// Pasted text: systemd started the unit again after the
			// run ended (Type=simple prints no "Starting" first).
			t.newInvocation("", at, out)
		case t.restartOver() && t.path.under != Stopped:
			// The ended run's own "Started", replayed from the
			// journal's backlog after its end.
			return
		}
		t.st.UnitActive = true
		if !t.path.onPath() {
			t.path.enter(Starting, at, out)
		}
	case sysExited:
		t.st.LogEnded = true
		t.ledger.addExit(msg)
		t.st.UnitActive = false
		if !exitOK(msg, j.Fields) {
			t.exitedAt = at
			t.cutTraceback(at, out)
			t.fail(at, out)
		}
	case sysResult, sysFailedStart:
		t.st.LogEnded = true
		t.ledger.addExit(msg)
		t.st.UnitActive = false
		t.cutTraceback(at, out)
		switch r := unitResult(msg, j.Fields); r {
		case "oom-kill":
			t.ledger.unitCause = "host-oom-kill"
		case "start-limit-hit":
			t.ledger.unitCause = "start-limit-hit"
			t.startLimit = true
		case "":
		default:
			t.ledger.result = r
		}
		t.fail(at, out)
	case sysStartLimit:
		t.st.LogEnded = true
		t.ledger.addExit(msg)
		t.ledger.unitCause = "start-limit-hit"
		t.startLimit = true
		t.fail(at, out)
	case sysOOM:
		t.addCand(&hostOOMRule, msg, at, "", out)
		t.ledger.unitCause = "host-oom-kill"
	case sysRestart:
		t.countRestarts(restartCounter(msg, j.Fields))
		t.path.enter(Restarting, at, out)
	case sysStopping:
		t.st.UnitActive = false
		t.stopping = true
	case sysStopped, sysSuccess:
		t.st.UnitActive = false
		if !t.ledger.failed && t.path.onPath() && t.pendingFailure() {
			t.fail(at, out)
		} else if !t.ledger.failed && t.path.under != Restarting {
			t.path.enter(Stopped, at, out)
		}
	case sysNone: // not one of systemd's messages
	}
}

// hostOOMRule classifies systemd's "killed by the OOM killer" line: a root
// cause, found by the unit's own record rather than an engine pack.
var hostOOMRule = compiledFailure{FailureRule: FailureRule{
	Cause:   "host-oom-kill",
	Summary: "the kernel OOM killer killed the service (host RAM, not GPU memory)",
	Hint:    "host RAM too small for loading: add RAM or swap, or reduce loader threads; check dmesg -T | grep -i oom",
}}

// fail marks the invocation failed at host time at (the process is gone)
// and builds its diagnosis.
func (t *Tracker) fail(at time.Time, out *[]Change) {
	t.ledger.fail(at)
	// A run waiting for its restart stays restarting, unless systemd gave
	// up on the restart.
	if t.path.under != Failed && (t.path.under != Restarting || t.startLimit) {
		t.path.enter(Failed, at, out)
	}
	t.updateDiag(at, out)
}

// updateDiag rebuilds the diagnosis. A ChangeFail is reported when the
// invocation first fails, and again when a log line that arrives later
// replaces the cause (journal lines may trail the unit's signal).
func (t *Tracker) updateDiag(at time.Time, out *[]Change) {
	if !t.ledger.failed {
		return
	}
	d, fromLog := t.diagnose()
	if fromLog && t.path.hasTrail() {
		t.path.trimTrail(d.Phase, d.Time)
	}
	t.st.Diag = d
	root := ""
	if len(d.Evidence) > 0 {
		root = d.Evidence[0]
	}
	// The kernel mode counts too: a source that reads the unit's
	// Environment only once the run failed (the log store's) names it in
	// a second report.
	if !t.ledger.report(failReport{cause: d.Cause, phase: d.Phase, root: root, fromLog: fromLog, mode: d.KernelMode}) {
		return
	}
	*out = append(*out, Change{Kind: ChangeFail, Time: at, Phase: t.path.display(), Diag: d.clone(), Progress: t.path.progress})
}
