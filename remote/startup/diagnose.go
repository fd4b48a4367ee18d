package startup

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// hintUnrecognised is the hint when no rule knows the error.
const hintUnrecognised = "no known failure matched: read the traceback around the quoted line (journalctl -u <unit> -n 200), and add a rule for it to a rules: pack"

// tier ranks what a failure line says of the cause: a GPU hardware fault
// (-1) over a line a specific rule knows (0) over an error no rule knows (1)
// over a wrapper that only points further up (2) over a line that only
// relays that a process failed (3). A wrapper loses even to an
// unrecognised error, since the error's own text says more than "the
// scheduler hit an exception".
func (r *compiledFailure) tier() int {
	switch {
	case r.Hardware:
		return -1
	case r.Cause == CauseUnrecognised:
		return 1
	case r.Relay:
		return 3
	case r.Wrapper:
		return 2
	}
	return 0
}

// decoyMarks are the stack's own words for a line that reports a problem
// it survives: Python's warning classes, loggers' WARNING level, and
// libraries that say they skip or ignore what failed ("Skipping import of
// cpp extensions: … undefined symbol" is torchao carrying on without its
// kernels).
var decoyMarks = []string{"WARNING", "Warning:", "UserWarning", "FutureWarning", "DeprecationWarning", "RuntimeWarning", "Skipping ", "skipping ", "Ignore ", "Ignoring ", "ignoring ", " ignored", "deprecated", "Deprecated"}

// isDecoy reports whether line reports a problem the process survives.
// Exception lines never are: "ValueError: … is deprecated" is raised.
func isDecoy(line string) bool {
	if _, body := splitLine(line); isExceptionLine(strings.TrimSpace(body)) {
		return false
	}
	for _, m := range decoyMarks {
		if strings.Contains(line, m) {
			return true
		}
	}
	return false
}

// phaseOf is the phase the failure of c happened in: the rule's own phase
// (a KV budget error belongs to kv-cache whenever it is printed), else what
// the traceback's frames say, else the traceback that ended next, else how
// far the trail had got.
func (t *Tracker) phaseOf(c cand) Phase {
	switch {
	case c.rule.Phase != "":
		return c.rule.Phase
	case c.framePhase != "":
		return c.framePhase
	}
	if p := t.linePhase(c.line); p != "" {
		return p
	}
	for _, e := range t.lines.tbEnds {
		if e.seq >= c.seq {
			return e.phase
		}
	}
	if p := t.lines.tb.openPhase(); p != "" {
		// An excerpt that ends inside the traceback.
		return p
	}
	if c.phase.Rank() <= Starting.Rank() {
		// The error came before any phase line: in an excerpt that starts
		// with it, the first phase the log shows next is where the
		// process was (stderr and stdout interleave by a line or two).
		for _, sp := range t.path.spans {
			if sp.Phase.Rank() > Starting.Rank() && !sp.Inferred {
				return sp.Phase
			}
		}
		if c.rule.Usual != "" {
			return c.rule.Usual
		}
	}
	return c.phase
}

// reclassify gives the root line the rule it would have had had its phase
// been known when it arrived: an out-of-memory error whose frames say
// graph capture is a capture OOM, though the trail had not reached capture.
func (t *Tracker) reclassify(c cand, phase Phase) *compiledFailure {
	if phase == c.phase || c.rule == &unrecognisedRule || c.rule == &hostOOMRule {
		return c.rule
	}
	for p, pack := range t.set.packs {
		if !t.active[p] {
			continue
		}
		for i := range pack.failures {
			r := &pack.failures[i]
			if r == c.rule && inPhases(r.InPhases, phase) {
				// The rule it had is the first that still holds: a rule
				// after it (the line's own rule was judged by the frame
				// that raised it) does not take its place.
				return r
			}
			// A rule that needs the raising frame cannot be judged on
			// the line alone.
			if r.tier() > c.rule.tier() || !inPhases(r.InPhases, phase) || !r.raisedBy("") || !hasKeyword(c.line, r.Keywords) || !r.match(c.line) {
				continue
			}
			return r
		}
	}
	return c.rule
}

// linePhase is the phase another rule that matches line puts its failure
// in: "Capture cuda graph failed: Ninja build failed." is a JIT build
// failure, and the capture wrapper around it says when.
func (t *Tracker) linePhase(line string) Phase {
	for p, pack := range t.set.packs {
		if !t.active[p] {
			continue
		}
		for i := range pack.failures {
			r := &pack.failures[i]
			if r.Wrapper && r.Phase != "" && len(r.InPhases) == 0 && hasKeyword(line, r.Keywords) && r.match(line) {
				return r.Phase
			}
		}
	}
	return ""
}

// ruleFor is the first active rule with cause id.
func (t *Tracker) ruleFor(cause string) *compiledFailure {
	for p, pack := range t.set.packs {
		if !t.active[p] {
			continue
		}
		for i := range pack.failures {
			if pack.failures[i].Cause == cause {
				return &pack.failures[i]
			}
		}
	}
	return nil
}

func hasKeyword(s string, kws []string) bool {
	for _, k := range kws {
		if strings.Contains(s, k) {
			return true
		}
	}
	return false
}

// diagnose builds the diagnosis of the failed invocation and reports
// whether it rests on a log line (rather than on the unit's result alone).
// The earliest specific failure line is the root cause; wrappers are the
// cause only when nothing more specific was seen; the unit's own result
// comes last.
func (t *Tracker) diagnose() (*Diagnosis, bool) {
	ri := t.ledger.root()
	if ri < 0 && len(t.ledger.cands) > 0 {
		ri = 0
	}
	if ri < 0 {
		return t.unitDiagnosis(), false
	}
	c := t.ledger.cands[ri]
	phase := t.phaseOf(c)
	if c.rule.Latest != "" && phase.Rank() > c.rule.Latest.Rank() {
		phase = c.rule.Latest
	}
	rule := t.reclassify(c, phase)
	d := &Diagnosis{
		Cause:     rule.Cause,
		Summary:   rule.Summary,
		Hint:      rule.Hint,
		Phase:     phase,
		Time:      c.time,
		Secondary: rule.tier() > 0,
	}
	if rule.Relay {
		// A process died and the log (an excerpt cut short, a native
		// crash) holds no error text beyond the line that relays it: say
		// so, in the phase it struck; a capture failure is still one.
		quote := clip(strings.TrimSpace(bodyOf(c.line)), maxQuote)
		var warmup *compiledFailure
		if phase == Warmup {
			// A warmup that failed is the phase's class, whatever the
			// error (FORMAT.md).
			warmup = t.ruleFor("warmup-failed")
		}
		switch {
		case phase == GraphCapture:
			d.Cause = "graph-capture-failed"
			d.Summary = "graph capture failed; the log holds no error text beyond: " + quote
		case warmup != nil:
			d.Cause, d.Hint = warmup.Cause, warmup.Hint
			d.Summary = "the warmup request failed; the log holds no error text beyond: " + quote
		default:
			d.Cause = CauseUnrecognised
			d.Summary = phaseFailed(phase, "the log holds no error text beyond: "+quote)
			d.Hint = rule.Hint + "; " + phaseHint(phase)
		}
	}
	if rule.tier() == 1 {
		line := c.line
		if c.quote != "" {
			line = c.quote + " → " + strings.TrimSpace(bodyOf(c.line))
		}
		_, body := splitLine(line)
		body = clip(strings.TrimSpace(body), maxQuote)
		switch phase {
		case GraphCapture:
			d.Cause = "graph-capture-failed"
			d.Summary = "graph capture failed (unrecognised error): " + body
		case Warmup:
			// The server's own warmup request failed: that is the class,
			// whatever the error.
			if r := t.ruleFor("warmup-failed"); r != nil {
				d.Cause, d.Hint = r.Cause, r.Hint
			}
			d.Summary = "the warmup request failed: " + body
		default:
			d.Summary = phaseFailed(phase, body)
			d.Hint = phaseHint(phase)
		}
	}
	d.Evidence = t.ledger.evidence(ri)
	if rule.Native {
		// A crash dump's innermost frame can say whose crash it was.
		if inner := t.lines.tb.innermost(); inner != "" {
			if cause := t.set.frames.crashCause(inner); cause != "" {
				if r := t.ruleFor(cause); r != nil {
					d.Cause, d.Summary, d.Hint = r.Cause, r.Summary+" (a native crash in "+frameFunc(strings.TrimSpace(bodyOf(inner)))+")", r.Hint
					d.Evidence = append([]string{inner}, d.Evidence...)
				}
			}
		}
	}
	t.blameKernel(d)
	return d, true
}

// phaseFailed is the summary of an error no rule knows: "<phase> failed"
// where the phase is known, quoting the error; "unrecognised error" only
// where it is not.
func phaseFailed(phase Phase, quote string) string {
	if phase.Rank() <= Starting.Rank() {
		return "unrecognised error: " + quote
	}
	return fmt.Sprintf("%s failed (no rule knows this error): %s", phase, quote)
}

// phaseHints say what usually breaks in each phase, for an error no rule
// knows: where to look first.
var phaseHints = map[Phase]string{
	Init:         "start-up failed before the model: check the distributed setup (--tp/--pp against the GPUs, --dist-init-addr / MASTER_ADDR reachable, NCCL/gloo interfaces) and the engine's arguments",
	Weights:      "loading the weights failed: usually a checkpoint that does not match the model or quantization the engine expects (a missing or renamed tensor, a KeyError on a weight name), missing or corrupt files, or a dtype the checkpoint or GPU lacks",
	KVCache:      "sizing the KV cache failed: usually memory sizing (--mem-fraction-static / gpu_memory_utilization, max context length) or an attention backend that does not fit the model",
	GraphCapture: "CUDA graph capture failed: usually an op that cannot be captured (a host sync, a custom op) or memory: " + hintGraphOff,
	HTTP:         "the server failed while binding or starting its HTTP front end: check the host/port and the API server's traceback",
	Warmup:       "the first request failed: usually a kernel or memory error at the first real batch",
	Serving:      "the engine failed under load: read the traceback of the rank that raised first",
}

// phaseHint is the hint for an error no rule knows, in phase.
func phaseHint(phase Phase) string {
	if h, ok := phaseHints[phase]; ok {
		return h + "; " + hintUnrecognised
	}
	return hintUnrecognised
}

func bodyOf(line string) string {
	_, b := splitLine(line)
	return b
}

// maxQuote is how much of an error line a summary quotes.
const maxQuote = 160

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Settled reports whether a later journal line can no longer change the
// cause: it rests on a line a specific rule knows, not on the unit's state
// alone or on a wrapper (the journal can trail systemd's signal, and an
// engine's "failed to start" comes before the traceback that explains it).
func (d *Diagnosis) Settled() bool {
	return d != nil && d.Cause != CauseUnitFailed && !d.Secondary
}

// CauseUnitFailed is the cause of a failure the logs (so far) do not
// explain: only systemd's record of the unit says it failed.
const CauseUnitFailed = "unit-failed"

// unitDiagnosis is the diagnosis when the logs said nothing: from what
// systemd reported about the unit.
func (t *Tracker) unitDiagnosis() *Diagnosis {
	d := &Diagnosis{Phase: t.path.furthest(), Time: t.ledger.failAt, Evidence: append([]string(nil), t.ledger.exits...)}
	switch t.ledger.unitCause {
	case "start-limit-hit":
		d.Cause = "start-limit-hit"
		d.Summary = "systemd gave up: the unit failed too often in a row (start-limit-hit)"
		d.Hint = "fix the failure of the earlier runs, then systemctl reset-failed and start again"
	case "host-oom-kill":
		d.Cause = "host-oom-kill"
		d.Summary = hostOOMRule.Summary
		d.Hint = hostOOMRule.Hint
	default:
		d.Cause = CauseUnitFailed
		d.Summary = "the service failed without a recognised error in its log"
		if t.ledger.result != "" {
			d.Summary += fmt.Sprintf(" (result %s)", t.ledger.result)
		}
		d.Hint = "read the last lines of the journal (journalctl -u <unit> -n 200); a native crash leaves no traceback (coredumpctl)"
	}
	return d
}

// blameKernel names the kernel mode when a graph-capture failure happened
// with a mode in force that is not capture-safe: that mode is the likely
// cause, and switching it is the fix.
func (t *Tracker) blameKernel(d *Diagnosis) {
	if !strings.HasPrefix(d.Cause, "graph-capture") && d.Phase != GraphCapture {
		return
	}
	var bad, fixes []string
	for _, m := range t.modes {
		if !m.Known || m.CaptureSafe {
			continue
		}
		k, _ := t.opts.Kernels.Kernel(m.Kernel)
		bad = append(bad, m.Kernel+"="+m.Mode)
		if safe := k.SafeModes(); d.Fix == nil && len(safe) > 0 {
			d.Fix = &Fix{Kernel: m.Kernel, Mode: safe[0]}
		}
		fixes = append(fixes, fmt.Sprintf("switch %s to a capture-safe mode (%s)", m.Kernel, strings.Join(k.SafeModes(), ", ")))
	}
	if len(bad) == 0 {
		return
	}
	d.KernelMode = strings.Join(bad, ", ")
	if d.Cause == "graph-capture-host-sync" || d.Cause == "graph-capture-failed" {
		d.Summary = fmt.Sprintf("graph capture failed: %s does host syncs (.item(), .cpu()) during CUDA graph capture", d.KernelMode)
	} else {
		d.Summary = fmt.Sprintf("graph capture failed (%s) with %s in force, which is not capture-safe", d.Cause, d.KernelMode)
	}
	d.Hint = fmt.Sprintf("%s, or start with %s", strings.Join(fixes, "; "), t.noGraphFlag())
}

// noGraphFlag is the engine's switch that turns CUDA graphs off.
func (t *Tracker) noGraphFlag() string {
	switch t.st.Engine {
	case "sglang":
		return "--disable-cuda-graph"
	case "vllm":
		return "--enforce-eager"
	}
	return "--disable-cuda-graph (SGLang) / --enforce-eager (vLLM)"
}
