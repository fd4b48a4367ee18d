// Package startup folds a host's signals (unit-state changes, journal
// entries, probe results) into its startup: the phase it is in, when each
// phase began and ended, progress where the logs give it, and on failure a
// diagnosis with a stable cause, the evidence lines and a one-line hint.
//
// It is pure: no IO, and no clock but the timestamps on the events and the
// "now" handed to Tick. Rules that recognise log lines are data (RulePack),
// with built-in packs for SGLang and vLLM.
package startup

import (
	"time"

	"github.com/bringup-dev/bringup/kernels"
)

// Phase is where a host's service is in its startup.
type Phase string

// The phases, in startup order, then the ones off the path.
const (
	Stopped      Phase = "stopped"
	Starting     Phase = "starting"
	Init         Phase = "init"
	Weights      Phase = "weights"
	KVCache      Phase = "kv-cache"
	GraphCapture Phase = "graph-capture"
	HTTP         Phase = "http"
	Warmup       Phase = "warmup"
	Serving      Phase = "serving"

	Failed     Phase = "failed"     // the invocation ended in failure; see Diagnosis
	Restarting Phase = "restarting" // systemd scheduled an automatic restart
	Stuck      Phase = "stuck"      // no progress for longer than normal
	Unknown    Phase = "unknown"    // host unreachable; the last known state is kept
)

// Span is one phase of one invocation, with its host-side start and end.
// End is zero while the phase is current.
type Span struct {
	Phase Phase     `json:"phase"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end,omitzero"`
	// Inferred marks a phase whose begin the log never showed: its end
	// did ("Load weight end" in an excerpt that starts there), or a
	// traceback's frames did. Its length means nothing.
	Inferred bool `json:"inferred,omitempty"`
}

// Duration is the span's length, measured to now while it is open.
func (s Span) Duration(now time.Time) time.Duration {
	if s.End.IsZero() {
		return now.Sub(s.Start)
	}
	return s.End.Sub(s.Start)
}

// Progress is how far the current phase is, where the logs say.
type Progress struct {
	Done  int    `json:"done"`
	Total int    `json:"total"`
	Label string `json:"label,omitempty"` // e.g. "shards", "bs=64"
}

// Known reports whether p holds a count.
func (p Progress) Known() bool { return p.Total > 0 }

// Fraction is Done/Total in [0,1], or 0 when unknown.
func (p Progress) Fraction() float64 {
	if p.Total <= 0 {
		return 0
	}
	return min(1, float64(p.Done)/float64(p.Total))
}

// Diagnosis explains why an invocation failed.
type Diagnosis struct {
	// Cause is a stable id such as "graph-capture-host-sync" or "gpu-oom";
	// scripts match on it.
	Cause string `json:"cause"`
	// Summary is the one line a person reads first.
	Summary string `json:"summary"`
	// Hint names the fix.
	Hint string `json:"hint"`
	// Phase is the phase the failure happened in.
	Phase Phase `json:"phase"`
	// Time is the host time of the root-cause line.
	Time time.Time `json:"time"`
	// Evidence is the root-cause line first, then the lines that support it.
	Evidence []string `json:"evidence"`
	// KernelMode names the kernel mode in force when it is part of the
	// cause, e.g. "kdtree-verify=validate".
	KernelMode string `json:"kernel_mode,omitempty"`
	// Fix is the kernel mode change that fixes it, when there is one:
	// the console offers it as a key, the commands as a command line.
	Fix *Fix `json:"fix,omitempty"`
	// Secondary says the cause rests on a wrapper or an error no rule
	// knows: a line still to come may name the root cause.
	Secondary bool `json:"secondary,omitempty"`
}

// Fix is a kernel mode to switch to.
type Fix struct {
	Kernel string `json:"kernel"`
	Mode   string `json:"mode"`
}

// Command is the command line that applies the fix to host: the one
// `bringup watch` prints and the console copies (y).
func (f Fix) Command(host string) string {
	return "bringup mode " + host + " " + f.Kernel + "=" + f.Mode + " --restart"
}

// Startup is the fold of one host's signals.
type Startup struct {
	Phase        Phase     `json:"phase"`
	PhaseSince   time.Time `json:"phase_since"`
	InvocationID string    `json:"invocation_id,omitempty"`
	// StartedAt is when the current invocation began (its first signal).
	StartedAt time.Time `json:"started_at,omitzero"`
	// Spans are the phases of the current invocation in order.
	Spans    []Span     `json:"spans,omitempty"`
	Progress Progress   `json:"progress"`
	Diag     *Diagnosis `json:"diagnosis,omitempty"`
	Engine   string     `json:"engine,omitempty"` // "sglang", "vllm" or "" while unknown
	// EngineVersion is the release the log says the engine is: the first
	// line of the current run that states one, else the last earlier
	// run's (a restart after an upgrade states the new one); "" when no
	// line said.
	EngineVersion string `json:"engine_version,omitempty"`

	// LogEnded says the journal holds systemd's record of the run's end
	// (the main process exited, the unit's result): every line the
	// process wrote before it ended has been read, so a diagnosis made
	// now has seen the whole traceback.
	LogEnded bool `json:"log_ended,omitempty"`

	// Evidence for serving: all three must hold.
	UnitActive bool `json:"unit_active"`
	ReadySeen  bool `json:"ready_seen"`
	ProbeOK    bool `json:"probe_ok"`

	// LastProgress is the host time of the last line that moved the startup on.
	LastProgress time.Time `json:"last_progress,omitzero"`
	// StuckIn is the phase the startup is stuck in while Phase is Stuck.
	StuckIn Phase `json:"stuck_in,omitempty"`
	// LastKnown is the phase before the host became unreachable, while
	// Phase is Unknown, so the display can keep showing it (greyed).
	LastKnown Phase `json:"last_known,omitempty"`

	// Modes are the kernel modes the current invocation started with (the
	// unit's Environment when it began). When the unit's Environment says
	// otherwise now, a restart is pending.
	Modes []kernels.ActiveMode `json:"modes,omitempty"`
	// Restarts counts restarts of the unit (from NRestarts and new
	// invocation ids, never from signals alone).
	Restarts int `json:"restarts"`
	// Stats is what the engine's periodic stats lines said in this
	// invocation (throughput, requests, KV use); nil before the first.
	Stats *Stats `json:"stats,omitempty"`

	// Run is the number of the current run, 1 for the first seen; 0
	// before the unit has started.
	Run int `json:"run,omitempty"`
	// Runs are the latest runs, oldest first, the current one last (at
	// most MaxRuns: older ones are dropped, their numbers kept).
	Runs []Run `json:"runs,omitempty"`
	// Loop is set while the unit is in a crash loop: LoopRuns failed runs
	// in a row or more, the latest run failed or still starting, or
	// systemd gave up starting it (start-limit-hit).
	Loop *CrashLoop `json:"crash_loop,omitempty"`
}

// CrashLoop says the unit keeps failing: systemd (or someone) starts it
// again and it fails again.
type CrashLoop struct {
	// Runs counts the failed runs in a row, each started within LoopGap
	// of the failure before.
	Runs int `json:"runs"`
	// Cause is the runs' common cause, or CausesVary; Summary and Hint
	// are the latest failed run's.
	Cause   string `json:"cause"`
	Summary string `json:"summary,omitempty"`
	Hint    string `json:"hint,omitempty"`
	// StartLimit says systemd gave up starting the unit
	// (start-limit-hit, "Start request repeated too quickly"): it stays
	// failed until reset-failed.
	StartLimit bool `json:"start_limit_hit,omitempty"`
}

// CausesVary is a crash loop's cause when its runs failed for different
// causes.
const CausesVary = "causes vary"

// LoopRuns is how many failed runs in a row make a crash loop; LoopGap
// is how soon after a failure the next run must start to continue one
// (systemd's RestartSec, or a person's quick retry).
const (
	LoopRuns = 2
	LoopGap  = 10 * time.Minute
)

// MaxRuns is how many runs a Startup keeps.
const MaxRuns = 10

// Run is one start of the unit: it begins where systemd starts the unit
// (a new invocation id, its "Started" line after a run ended, a new main
// PID in pasted text) and ends where the process is gone.
type Run struct {
	// N is the run's number, 1 for the first seen.
	N            int       `json:"run"`
	InvocationID string    `json:"invocation_id,omitempty"`
	Start        time.Time `json:"start"`
	// End is when the run failed or stopped; zero while it runs.
	End time.Time `json:"end,omitzero"`
	// Reached is the furthest path phase the run got to.
	Reached Phase `json:"reached"`
	// Outcome is how the run ended: failed, serving (it served, whether
	// or not it was stopped since), stopped; while it runs, the phase it
	// is in.
	Outcome Phase `json:"outcome"`
	// Spans are the run's phases in order.
	Spans []Span `json:"spans,omitempty"`
	// Diag says why a failed run failed.
	Diag *Diagnosis `json:"diagnosis,omitempty"`
}

// Failed reports whether the run ended in failure.
func (r Run) Failed() bool { return r.Outcome == Failed }

// Cause is a failed run's cause, "" for any other.
func (r Run) Cause() string {
	if r.Outcome != Failed || r.Diag == nil {
		return ""
	}
	return r.Diag.Cause
}

// Duration is how long the run lasted, measured to now while it runs.
func (r Run) Duration(now time.Time) time.Duration {
	if r.End.IsZero() {
		return now.Sub(r.Start)
	}
	return r.End.Sub(r.Start)
}

// ChangeKind says what a Change reports.
type ChangeKind string

// Change kinds.
const (
	ChangePhase ChangeKind = "phase"  // entered a new phase
	ChangeFail  ChangeKind = "failed" // the invocation failed; Diag is set
	ChangeUnit  ChangeKind = "unit"   // the unit's ActiveState/SubState changed
	// ChangeStats reports the engine's latest stats sample (Stats), at
	// most one a StatsEvery of host time: a watch line, not the log.
	ChangeStats ChangeKind = "stats"
)

// Change is one thing worth a line in `bringup watch`.
type Change struct {
	Kind  ChangeKind `json:"kind"`
	Time  time.Time  `json:"time"` // host time
	Phase Phase      `json:"phase"`
	From  Phase      `json:"from,omitempty"`
	// Unit is "ActiveState/SubState" for ChangeUnit.
	Unit     string     `json:"unit,omitempty"`
	Diag     *Diagnosis `json:"diagnosis,omitempty"`
	Progress Progress   `json:"progress"`
	// Stats is the sample a ChangeStats reports.
	Stats *Sample `json:"stats,omitempty"`
	// Run is the number of the run the change is of (Startup.Run).
	Run int `json:"run,omitempty"`
}
