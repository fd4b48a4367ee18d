package startup

import (
	"fmt"
	"strings"
)

// root is the index of the root-cause candidate: the earliest line that is
// not a wrapper, or -1.
func (t *Tracker) root() int {
	for i, c := range t.cands {
		if !c.rule.Wrapper {
			return i
		}
	}
	return -1
}

// diagnose builds the diagnosis of the failed invocation and reports
// whether it rests on a log line (rather than on the unit's result alone).
// The earliest specific failure line is the root cause; wrappers are the
// cause only when nothing more specific was seen; the unit's own result
// comes last.
func (t *Tracker) diagnose() (*Diagnosis, bool) {
	ri := t.root()
	if ri < 0 && len(t.cands) > 0 {
		ri = 0
	}
	if ri < 0 {
		return t.unitDiagnosis(), false
	}
	c := t.cands[ri]
	d := &Diagnosis{
		Cause:   c.rule.Cause,
		Summary: c.rule.Summary,
		Hint:    c.rule.Hint,
		Phase:   c.phase,
		Time:    c.time,
	}
	d.Evidence = t.evidence(ri)
	t.blameKernel(d)
	return d, true
}

// evidence is the root line, then supporting lines in log order: one per
// other cause first (they tell the story: wrapper, crash, exit), then more
// wrappers, then the rest; and the first exit line of the unit at the end.
func (t *Tracker) evidence(ri int) []string {
	room := maxEvidence - 1
	if len(t.exits) > 0 {
		room--
	}
	seen := map[string]bool{t.cands[ri].rule.Cause: true}
	used := make([]bool, len(t.cands))
	used[ri] = true
	for pass := 0; pass < 3; pass++ {
		for i, c := range t.cands {
			if used[i] || room == 0 || pass == 0 && seen[c.rule.Cause] || pass == 1 && !c.rule.Wrapper {
				continue
			}
			seen[c.rule.Cause], used[i] = true, true
			room--
		}
	}
	ev := []string{t.cands[ri].line}
	for i, c := range t.cands {
		if used[i] && i != ri {
			ev = append(ev, c.line)
		}
	}
	if len(t.exits) > 0 {
		ev = append(ev, t.exits[0])
	}
	return ev
}

// CauseUnitFailed is the cause of a failure the logs (so far) do not
// explain: only systemd's record of the unit says it failed.
const CauseUnitFailed = "unit-failed"

// unitDiagnosis is the diagnosis when the logs said nothing: from what
// systemd reported about the unit.
func (t *Tracker) unitDiagnosis() *Diagnosis {
	d := &Diagnosis{Phase: t.pathPhase(), Time: t.failAt, Evidence: append([]string(nil), t.exits...)}
	switch t.unitCause {
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
		if t.result != "" {
			d.Summary += fmt.Sprintf(" (result %s)", t.result)
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
