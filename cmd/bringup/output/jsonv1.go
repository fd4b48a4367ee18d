package output

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/doctor"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/startup"
)

// The v1 JSON schema: one object a line, the same shape for the --json of
// watch, explain, status, bench, init, doctor, rollout, mode, redeploy,
// restart, stop and reset-failed. Every line has
// "v" (the schema's version), "time" and "kind"; the last line is a
// summary with the exit code. Durations are seconds (numbers), progress
// is numbers, times are RFC 3339 in UTC to the second ("…T10:41:03Z"),
// which jq's fromdateiso8601 reads. Schema lists each kind's fields; a
// test holds every line the commands print, and the README, to it.

// SchemaVersion is the "v" of every v1 line.
const SchemaVersion = 1

// JSONTimeLayout is the v1 schema's time: UTC, whole seconds.
const JSONTimeLayout = "2006-01-02T15:04:05Z"

// Line is one line of the v1 schema. Which fields a kind has is Schema's.
type Line struct {
	V    int    `json:"v"`
	Time string `json:"time,omitempty"` // absent only where untimed says
	// untimed leaves the time out: a startup's change in a log with no
	// times (explain), where any time would be invented.
	untimed bool
	Kind    string `json:"kind"`
	Host    string `json:"host,omitempty"`
	// Deployment names the deployment a host line's host is a node of
	// (watch's and status's lines): the config's name, or its rendezvous.
	Deployment string `json:"deployment,omitempty"`

	// check (doctor)
	Target string `json:"target,omitempty"`
	Check  string `json:"check,omitempty"`
	Status string `json:"status,omitempty"`
	Detail string `json:"detail,omitempty"`
	Fix    string `json:"fix,omitempty"`

	// plan, refused, action
	Effects []string `json:"effects,omitempty"`
	Action  string   `json:"action,omitempty"`
	Stage   string   `json:"stage,omitempty"`
	Percent *int     `json:"percent,omitempty"`
	Err     string   `json:"err,omitempty"`

	// phase, failed, unit, ended: a startup followed after a restart
	Phase    string    `json:"phase,omitempty"`
	From     string    `json:"from,omitempty"`
	Unit     string    `json:"unit,omitempty"`
	Progress *Progress `json:"progress,omitempty"`
	Elapsed  *float64  `json:"elapsed,omitempty"` // seconds since the startup began
	// Latency is seconds from the host's time of the line to when this
	// machine received it (watch's former "seen"): a number, because the
	// schema's times are whole seconds and the gap is mostly less; negative
	// when the host's clock runs ahead of ours.
	Latency    *float64 `json:"latency,omitempty"`
	Cause      string   `json:"cause,omitempty"`
	Summary    string   `json:"summary,omitempty"`
	Hint       string   `json:"hint,omitempty"`
	Evidence   []string `json:"evidence,omitempty"`
	KernelMode string   `json:"kernel_mode,omitempty"`
	FailedIn   string   `json:"failed_in,omitempty"`
	Invocation string   `json:"invocation,omitempty"`
	// Run is the number of the unit's run a line is of, 1 for the first
	// seen: systemd restarting the unit begins the next.
	Run int `json:"run,omitempty"`
	// Runs are explain's runs of the unit, when the log holds more than one.
	Runs []RunOut `json:"runs,omitempty"`
	// stats: the engine's latest stats line, while serving
	Stats *Stats `json:"stats,omitempty"`

	// status: one host's state as status reads it
	Conn         string            `json:"conn,omitempty"`
	ConnErr      string            `json:"conn_error,omitempty"`
	State        string            `json:"state,omitempty"` // ActiveState/SubState, or "not-found" (event.Unit.State)
	Since        string            `json:"since,omitempty"` // host time the phase began
	Modes        map[string]string `json:"modes,omitempty"`
	Probe        *Probe            `json:"probe,omitempty"`
	Restarts     *int              `json:"restarts,omitempty"`
	StatePath    string            `json:"state_path,omitempty"` // how unit state was read
	KernelHashes map[string]string `json:"kernel_hashes,omitempty"`
	// Throughput is the decode rate of the current kernel modes against
	// the modes the host ran before (history), once known.
	Throughput *history.ModeAB `json:"throughput,omitempty"`

	// bench: what a smoke load measured on a host (refused: err says why)
	Bench *BenchResult `json:"bench,omitempty"`

	// rollout: its steps (outcome, id), a halt without a diagnosis
	// (timed_out), the rollback (to: the mode put back), a host's decode
	// rate after against before
	ID       *int     `json:"id,omitempty"`
	TimedOut bool     `json:"timed_out,omitempty"`
	To       string   `json:"to,omitempty"`
	Before   *Rate    `json:"before,omitempty"`
	After    *Rate    `json:"after,omitempty"`
	Ratio    *float64 `json:"ratio,omitempty"`
	Slower   bool     `json:"slower,omitempty"`

	// found (init): the inference unit found on a host (with unit,
	// engine, state; conn_error when the host was not reached)
	Port *int     `json:"port,omitempty"`
	Also []string `json:"also,omitempty"`

	// summary
	Command string        `json:"command,omitempty"`
	Exit    *int          `json:"exit,omitempty"`
	Outcome string        `json:"outcome,omitempty"`
	Hosts   []HostOutcome `json:"hosts,omitempty"`
	// watch's and status's: one entry per multi-node deployment
	Deployments []DeploymentOutcome `json:"deployments,omitempty"`
	// explain's summary: what log was read and the startup it told
	Format string `json:"format,omitempty"`
	Timed  *bool  `json:"timed,omitempty"` // the log carried times: durations mean something
	Lines  *int   `json:"lines,omitempty"`
	Engine string `json:"engine,omitempty"`
	// the release the log says the engine is, when a line says
	EngineVersion string `json:"engine_version,omitempty"`
	Trail         []Span `json:"trail,omitempty"`
	// init's summary: the config file written
	Config string `json:"config,omitempty"`
	// rollout's summary: what it did
	Plan string `json:"plan,omitempty"`
}

// Span is one phase of a startup's trail in the v1 schema: its start and
// end as schema times, its length in seconds (absent while open or when
// Inferred: the log never showed its begin).
type Span struct {
	Phase    string   `json:"phase"`
	Start    string   `json:"start,omitempty"`
	End      string   `json:"end,omitempty"`
	Seconds  *float64 `json:"seconds,omitempty"`
	Inferred bool     `json:"inferred,omitempty"`
}

// RunOut is one run of the unit in the v1 schema: its number, start
// and end, how far it got, how it ended and, failed, why.
type RunOut struct {
	Run     int      `json:"run"`
	Start   string   `json:"start,omitempty"`
	End     string   `json:"end,omitempty"`
	Seconds *float64 `json:"seconds,omitempty"`
	Reached string   `json:"reached,omitempty"`
	Outcome string   `json:"outcome"`
	Cause   string   `json:"cause,omitempty"`
	Trail   []Span   `json:"trail,omitempty"`
}

// RunOf is r in the v1 schema.
func RunOf(r startup.Run) RunOut {
	out := RunOut{Run: r.N, Start: JSONTime(r.Start), End: JSONTime(r.End), Reached: string(r.Reached), Outcome: string(r.Outcome), Cause: r.Cause()}
	if !r.Start.IsZero() && !r.End.IsZero() {
		s := r.End.Sub(r.Start).Round(time.Second).Seconds()
		out.Seconds = &s
	}
	for _, sp := range r.Spans {
		out.Trail = append(out.Trail, SpanOf(sp))
	}
	return out
}

// SpanOf is sp in the v1 schema.
func SpanOf(sp startup.Span) Span {
	out := Span{Phase: string(sp.Phase), Start: JSONTime(sp.Start), End: JSONTime(sp.End), Inferred: sp.Inferred}
	if !sp.Inferred && !sp.Start.IsZero() && !sp.End.IsZero() {
		s := sp.End.Sub(sp.Start).Round(time.Second).Seconds()
		out.Seconds = &s
	}
	return out
}

// Stats is the engine's latest stats sample in the v1 schema: rates in
// tokens a second, KV use as a fraction.
type Stats struct {
	GenTPS    float64 `json:"gen_tps"`
	PromptTPS float64 `json:"prompt_tps"`
	Running   int     `json:"running"`
	Queued    int     `json:"queued"`
	KVUsage   float64 `json:"kv_usage"`
	Graph     string  `json:"cuda_graph,omitempty"` // on, off; absent when no line said
}

// Probe is the health probe's last answer in the v1 schema: its latency in
// seconds.
type Probe struct {
	Path    string  `json:"path"`
	Status  int     `json:"status"` // HTTP status; 0 when no answer
	OK      bool    `json:"ok"`
	Latency float64 `json:"latency"`
	Err     string  `json:"err,omitempty"`
}

// BenchResult is a smoke load's result in the v1 schema: durations in
// seconds (remote/bench.Result has them in nanoseconds).
type BenchResult struct {
	Model        string  `json:"model"`
	Requests     int     `json:"requests"`
	OK           int     `json:"ok"`
	Errors       int     `json:"errors"`
	Concurrency  int     `json:"concurrency"`
	Interrupted  bool    `json:"interrupted,omitempty"`
	Seconds      float64 `json:"seconds"`
	ReqPerSec    float64 `json:"req_per_s"`
	OutputTokens int     `json:"output_tokens"`
	OutputTPS    float64 `json:"output_tok_per_s"`
	TTFTP50      float64 `json:"ttft_p50"`
	TTFTP99      float64 `json:"ttft_p99"`
	LatencyP50   float64 `json:"latency_p50"`
	LatencyP99   float64 `json:"latency_p99"`
	FirstError   string  `json:"first_error,omitempty"`
}

// Progress is a count in the v1 schema.
type Progress struct {
	Done  int    `json:"done"`
	Total int    `json:"total"`
	Label string `json:"label,omitempty"`
}

// HostOutcome is one host in a summary.
type HostOutcome struct {
	Host    string   `json:"host"`
	Outcome string   `json:"outcome"`              // doctor: ok, failed; actions: done, failed, timeout; watch: serving, failed, unsettled
	Failed  []string `json:"failed,omitempty"`     // doctor: the checks that failed
	Phase   string   `json:"phase,omitempty"`      // actions, watch, rollout: the followed startup's last phase
	ConnErr string   `json:"conn_error,omitempty"` // watch, status: why the host is not reached at the end
	// watch, status: the engine and the release its log states, when known
	Engine        string `json:"engine,omitempty"`
	EngineVersion string `json:"engine_version,omitempty"`
	// rollout: the host's stage is its outcome; the mode a rollback puts
	// back, why it failed, and its decode rate after against before
	PrevMode string   `json:"prev_mode,omitempty"`
	Cause    string   `json:"cause,omitempty"`
	Err      string   `json:"err,omitempty"`
	Before   *Rate    `json:"before,omitempty"`
	After    *Rate    `json:"after,omitempty"`
	Ratio    *float64 `json:"ratio,omitempty"`
	Slower   bool     `json:"slower,omitempty"`
}

// DeploymentOutcome is one multi-node deployment in a summary: its
// verdict, its nodes in rank order and, failed, the node that failed
// first (by journal times corrected for each host's clock offset) and
// its cause; the other nodes only lost their peer.
type DeploymentOutcome struct {
	Deployment string   `json:"deployment"`
	Outcome    string   `json:"outcome"` // serving, starting, failed, stopped, unknown
	Phase      string   `json:"phase,omitempty"`
	Nodes      []string `json:"nodes"`
	Blamed     string   `json:"blamed,omitempty"`
	BlamedRank *int     `json:"blamed_rank,omitempty"`
	Cause      string   `json:"cause,omitempty"`
	Summary    string   `json:"summary,omitempty"`
	Problems   []string `json:"problems,omitempty"`
}

// Kind is one kind of line: its fields beyond v, time and kind.
type Kind struct {
	Name     string
	About    string
	Required []string
	Optional []string
}

// Schema is the v1 schema's kinds, in the order a command prints them.
func Schema() []Kind {
	return []Kind{
		{"check", "doctor: one check of one host", []string{"host", "target", "check", "status", "detail"}, []string{"fix"}},
		{"plan", "what will change on a host", []string{"host", "effects"}, nil},
		{"refused", "the fleet's door refused an action", []string{"host", "action", "err"}, nil},
		{"action", "an action's outcome: stage started, progress, done or failed", []string{"host", "action", "stage"}, []string{"percent", "detail", "err"}},
		{"host-key", "watch: a host key learned on first contact", []string{"host", "summary"}, []string{"latency"}},
		{"phase", "a followed startup entered a phase (unknown: the host is not reached, conn_error says why)", []string{"host", "phase"}, []string{"from", "progress", "elapsed", "latency", "conn_error", "run", "deployment"}},
		{"unit", "the unit's state changed", []string{"host", "unit"}, []string{"phase", "elapsed", "latency", "run", "deployment"}},
		{"failed", "the followed startup failed, with its diagnosis", []string{"host", "phase"}, []string{"from", "elapsed", "latency", "cause", "summary", "hint", "evidence", "kernel_mode", "failed_in", "fix", "run", "deployment"}},
		{"stats", "a serving host's engine stats line (at most one per 10 s of host time)", []string{"host", "phase", "stats"}, []string{"elapsed", "latency", "run", "deployment"}},
		{"ended", "the restart's new invocation serves or failed", []string{"host", "phase"}, []string{"invocation", "cause", "summary"}},
		{"timeout", "the command's --timeout passed with the host under way", []string{"host", "phase", "err"}, nil},
		{"status", "status: one host's state", []string{"host", "restarts"},
			[]string{"conn", "conn_error", "phase", "unit", "state", "since", "progress", "modes", "probe", "state_path", "kernel_hashes", "stats", "throughput",
				"cause", "summary", "hint", "evidence", "kernel_mode", "failed_in", "fix", "engine", "engine_version", "run", "runs", "deployment"}},
		{"bench", "bench: a host's smoke-load result (seconds), or err: why it got none", []string{"host"}, []string{"bench", "err"}},
		{"step", "rollout: an action it issued (outcome issued or refused) and its end (done or failed)", []string{"host", "action", "outcome"}, []string{"id", "latency", "err"}},
		{"stage", "rollout: a host's lane changed stage (outcome: the stage, once final)", []string{"host", "stage"}, []string{"phase", "action", "elapsed", "outcome", "err", "conn_error"}},
		{"halted", "rollout: it halted on a host without a diagnosis (an action failed, a timeout)", []string{"host", "err"}, []string{"timed_out"}},
		{"rollback", "rollout: what became of the rollback offered for the halted host", []string{"host", "outcome", "to"}, []string{"err"}},
		{"throughput", "rollout: a host's new run decodes steadily: its rate after against its previous run's before", []string{"host", "after"}, []string{"before", "ratio", "slower"}},
		{"found", "init: the inference unit found on a host, or conn_error: why the host was not reached", []string{"host"}, []string{"unit", "engine", "port", "state", "also", "conn_error"}},
		{"summary", "the last line: the outcome and exit code (explain: the log's startup and diagnosis too; over several logs, each log's outcome in hosts and each deployment's verdict in deployments)", []string{"command", "outcome", "exit"},
			[]string{"hosts", "deployments", "err", "config", "plan", "host", "timed_out", "format", "timed", "lines", "engine", "engine_version", "phase", "trail", "cause", "summary", "hint", "evidence", "kernel_mode", "failed_in", "fix", "run", "runs"}},
	}
}

// FieldType is the JSON type of each field of the schema.
func FieldType() map[string]string {
	return map[string]string{
		"v": "number", "time": "time", "kind": "string", "host": "string",
		"target": "string", "check": "string", "status": "string", "detail": "string", "fix": "string",
		"effects": "[string]", "action": "string", "stage": "string", "percent": "number", "err": "string",
		"phase": "string", "from": "string", "unit": "string", "progress": "progress", "elapsed": "number",
		"cause": "string", "summary": "string", "hint": "string", "evidence": "[string]", "kernel_mode": "string",
		"failed_in": "string", "invocation": "string", "stats": "stats",
		"command": "string", "exit": "number", "outcome": "string", "hosts": "[host]", "latency": "number",
		"format": "string", "timed": "bool",
		"conn": "string", "conn_error": "string", "state": "string", "since": "time", "modes": "{string}", "probe": "probe",
		"restarts": "number", "state_path": "string", "kernel_hashes": "{string}", "throughput": "throughput", "bench": "bench", "lines": "number", "engine": "string", "engine_version": "string", "trail": "[span]", "run": "number", "runs": "[run]",
		"deployment": "string", "deployments": "[deployment]",
		"port": "number", "also": "[string]", "config": "string",
		"id": "number", "timed_out": "bool", "to": "string", "plan": "string", "before": "rate", "after": "rate", "ratio": "number", "slower": "bool",
	}
}

// JSONHelp is the schema as the commands' --help prints it.
func JSONHelp() string {
	var b strings.Builder
	fmt.Fprintf(&b, "--json prints one JSON object a line (schema v%d): every line has \"v\", \"time\" (UTC,\nRFC 3339 to the second) and \"kind\"; durations are seconds, the last line a summary.\n", SchemaVersion)
	for _, k := range Schema() {
		fmt.Fprintf(&b, "  %-8s %s: %s", k.Name, k.About, strings.Join(k.Required, ", "))
		if len(k.Optional) > 0 {
			fmt.Fprintf(&b, " [%s]", strings.Join(k.Optional, ", "))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// JSONTime is t in the v1 schema ("" for the zero time).
func JSONTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(JSONTimeLayout)
}

// emit prints l as one line, with v and, if unset, the time now.
func emit(w io.Writer, l Line) {
	l.V = SchemaVersion
	if l.Time == "" && !l.untimed {
		l.Time = JSONTime(time.Now())
	}
	b, err := json.Marshal(l)
	if err != nil { // cannot happen for this struct; say so rather than drop the line
		fmt.Fprintf(w, "{\"v\":%d,\"time\":%q,\"kind\":\"summary\",\"command\":\"?\",\"outcome\":\"error\",\"exit\":1,\"err\":%q}\n",
			SchemaVersion, JSONTime(time.Now()), err.Error())
		return
	}
	fmt.Fprintf(w, "%s\n", b)
}

// statusWord is a doctor status in the schema.
func statusWord(s doctor.Status) string {
	switch s {
	case doctor.OK:
		return "ok"
	case doctor.Warn:
		return "warn"
	case doctor.Fail:
		return "fail"
	case doctor.Skip:
		return "skip"
	}
	return "skip" // no other status exists
}

// DoctorJSON prints one host's checks as check lines and returns its
// outcome for the summary.
func DoctorJSON(w io.Writer, r *doctor.Report) HostOutcome {
	out := HostOutcome{Host: r.Host, Outcome: "ok"}
	for _, c := range r.Checks {
		emit(w, Line{Kind: "check", Host: r.Host, Target: r.Target, Check: c.Name, Status: statusWord(c.Status), Detail: c.Detail, Fix: c.Fix})
		if c.Status == doctor.Fail {
			out.Outcome = "failed"
			out.Failed = append(out.Failed, c.Name)
		}
	}
	return out
}

// Summary prints the last line of a command's --json.
func Summary(w io.Writer, command, outcome string, exit int, hosts []HostOutcome, err string) {
	emit(w, Line{Kind: "summary", Command: command, Outcome: outcome, Exit: &exit, Hosts: hosts, Err: err})
}

// PlanJSON is Plan as plan lines.
func PlanJSON(w io.Writer, hosts []string, states map[string]remote.HostState, actions []remote.Action) {
	for _, name := range hosts {
		emit(w, Line{Kind: "plan", Host: name, Effects: effects(states[name].Unit, actions)})
	}
}

// effects says what actions do to unit, in order.
func effects(unit string, actions []remote.Action) []string {
	out := make([]string, len(actions))
	for i, a := range actions {
		out[i] = a.Effect(unit)
		if a.Kind == remote.ActRestart && a.Force {
			out[i] += " AGAINST THE PREFLIGHT"
		}
	}
	return out
}

// ActionsJSON is Actions as v1 lines (fleet.ApplyReport).
type ActionsJSON struct{ W io.Writer }

// Refused prints a refusal at the door.
func (p ActionsJSON) Refused(host string, a remote.Action, err error) {
	emit(p.W, Line{Kind: "refused", Host: host, Action: a.String(), Err: err.Error()})
}

// Action prints an outcome of an action.
func (p ActionsJSON) Action(ev event.Event) {
	a := ev.Action
	l := Line{Time: JSONTime(ev.Time), Kind: "action", Host: ev.Host, Action: a.Name, Stage: string(a.Stage), Detail: a.Detail, Err: a.Err}
	if a.Stage == event.ActionProgress {
		pct := a.Percent
		l.Percent = &pct
	}
	emit(p.W, l)
}

// Change prints a startup change of a host being restarted.
func (p ActionsJSON) Change(c remote.HostChange, started time.Time) {
	emit(p.W, changeLine(c, started))
}

// changeLine is a startup change as a v1 line (started: when the startup
// began, for elapsed; c.Seen, when known, for latency): watch's and the
// changing commands' lines are one shape.
func changeLine(c remote.HostChange, started time.Time) Line {
	l := Line{Time: JSONTime(c.Time), Kind: string(c.Kind), Host: c.Host, Phase: string(c.Phase), From: string(c.From), Unit: c.Unit, Run: c.Run}
	if c.Progress.Known() {
		l.Progress = &Progress{Done: c.Progress.Done, Total: c.Progress.Total, Label: c.Progress.Label}
	}
	if !started.IsZero() && !c.Time.Before(started) {
		s := c.Time.Sub(started).Round(time.Second).Seconds()
		l.Elapsed = &s
	}
	l.Latency = latency(c.Time, c.Seen)
	l.ConnErr = c.ConnErr
	if d := c.Diag; d != nil {
		l.Cause, l.Summary, l.Hint, l.Evidence, l.KernelMode, l.FailedIn = d.Cause, d.Summary, d.Hint, d.Evidence, d.KernelMode, string(d.Phase)
		if d.Fix != nil {
			l.Fix = d.Fix.Command(c.Host)
		}
	}
	if l.Kind == string(startup.ChangeUnit) {
		l.Progress = nil // a unit line has no count
	}
	if c.Kind == startup.ChangeStats && c.Stats != nil {
		l.Progress = nil
		l.Stats = &Stats{GenTPS: c.Stats.GenTPS, PromptTPS: c.Stats.PromptTPS, Running: c.Stats.Running,
			Queued: c.Stats.Queued, KVUsage: c.Stats.KVUsage, Graph: c.Stats.Graph}
	}
	return l
}

// latency is seen-at in seconds to the millisecond, nil unless both are known.
func latency(at, seen time.Time) *float64 {
	if at.IsZero() || seen.IsZero() {
		return nil
	}
	s := seen.Sub(at).Round(time.Millisecond).Seconds()
	return &s
}

// Ended prints how the restart's new invocation ended.
func (p ActionsJSON) Ended(h remote.HostState) {
	st := h.Startup
	l := Line{Time: JSONTime(st.PhaseSince), Kind: "ended", Host: h.Name, Phase: string(st.Phase), Invocation: st.InvocationID}
	if d := st.Diag; d != nil && st.Phase != startup.Serving {
		l.Cause, l.Summary = d.Cause, d.Summary
	}
	emit(p.W, l)
}

// AppliedJSON prints a timeout line for each host still under way when
// ctx ended (ctxErr) and returns the hosts' outcomes for the summary.
func AppliedJSON(w io.Writer, done []fleet.Applied, ctxErr error) []HostOutcome {
	hosts := make([]HostOutcome, 0, len(done))
	for _, a := range done {
		o := HostOutcome{Host: a.Host, Outcome: "done", Phase: string(a.Phase)}
		switch {
		case !a.Finished:
			o.Outcome = "timeout"
			emit(w, Line{Kind: "timeout", Host: a.Host, Phase: string(a.Phase), Err: fmt.Sprint(ctxErr)})
		case a.Failed:
			o.Outcome = "failed"
		}
		hosts = append(hosts, o)
	}
	return hosts
}

// untimedKinds are the kinds of a startup's changes: explain of a log
// with no times prints them without one rather than invent it.
var untimedKinds = map[string]bool{"phase": true, "unit": true, "failed": true, "stats": true}

// ValidateLine checks one line against the v1 schema: a JSON object with
// "v" 1, a "time" in JSONTimeLayout (a startup's change in an untimed
// log has none), a known "kind", that kind's required
// fields, no field it does not have, and every field of its type.
func ValidateLine(line []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	var v int
	if err := json.Unmarshal(m["v"], &v); err != nil || v != SchemaVersion {
		return fmt.Errorf("\"v\" is %s, want %d", m["v"], SchemaVersion)
	}
	var kind string
	if err := json.Unmarshal(m["kind"], &kind); err != nil {
		return fmt.Errorf("\"kind\" is %s, want a string", m["kind"])
	}
	var k *Kind
	for _, s := range Schema() {
		if s.Name == kind {
			k = &s
			break
		}
	}
	if k == nil {
		return fmt.Errorf("unknown kind %q", kind)
	}
	allowed := map[string]bool{"v": true, "time": true, "kind": true}
	for _, f := range append(k.Required, k.Optional...) {
		allowed[f] = true
	}
	required := k.Required
	if !untimedKinds[kind] {
		required = append([]string{"time"}, required...)
	}
	for _, f := range required {
		if _, ok := m[f]; !ok {
			return fmt.Errorf("kind %s: no %q", kind, f)
		}
	}
	types := FieldType()
	for f, raw := range m {
		if !allowed[f] {
			return fmt.Errorf("kind %s: field %q is not in the schema", kind, f)
		}
		if err := checkType(types[f], raw); err != nil {
			return fmt.Errorf("kind %s: %q: %w", kind, f, err)
		}
	}
	return nil
}

// checkType checks raw against a FieldType type.
func checkType(typ string, raw json.RawMessage) error {
	var err error
	switch typ {
	case "string":
		var s string
		err = json.Unmarshal(raw, &s)
	case "number":
		var n float64
		err = json.Unmarshal(raw, &n)
	case "time":
		var s string
		if err = json.Unmarshal(raw, &s); err == nil {
			var t time.Time
			if t, err = time.Parse(JSONTimeLayout, s); err == nil && t.Format(JSONTimeLayout) != s {
				err = fmt.Errorf("%q is not in the form %s", s, JSONTimeLayout)
			}
		}
	case "bool":
		var b bool
		err = json.Unmarshal(raw, &b)
	case "[string]":
		var ss []string
		err = json.Unmarshal(raw, &ss)
	case "{string}":
		var m map[string]string
		err = json.Unmarshal(raw, &m)
	case "probe":
		var all map[string]json.RawMessage
		if err = json.Unmarshal(raw, &all); err == nil {
			for f, typ := range map[string]string{"path": "string", "status": "number", "ok": "bool", "latency": "number"} {
				if checkType(typ, all[f]) != nil {
					return fmt.Errorf("%s: want %s, a %s", raw, f, typ)
				}
			}
		}
	case "bench":
		var all map[string]json.RawMessage
		if err = json.Unmarshal(raw, &all); err == nil {
			for _, f := range []string{"requests", "ok", "errors", "concurrency", "seconds", "req_per_s", "output_tokens", "output_tok_per_s",
				"ttft_p50", "ttft_p99", "latency_p50", "latency_p99"} {
				if checkType("number", all[f]) != nil {
					return fmt.Errorf("%s: want %s, a number", raw, f)
				}
			}
		}
	case "throughput":
		var all map[string]json.RawMessage
		if err = json.Unmarshal(raw, &all); err == nil {
			if checkType("string", all["modes"]) != nil || checkType("number", all["decode_tps"]) != nil {
				return fmt.Errorf("%s: want modes, a string, and decode_tps, a number", raw)
			}
		}
	case "[span]":
		var spans []map[string]json.RawMessage
		if err = json.Unmarshal(raw, &spans); err == nil {
			for _, sp := range spans {
				if checkType("string", sp["phase"]) != nil {
					return fmt.Errorf("%s: every span wants a phase", raw)
				}
				for f, typ := range map[string]string{"start": "time", "end": "time", "seconds": "number", "inferred": "bool"} {
					if v, ok := sp[f]; ok && checkType(typ, v) != nil {
						return fmt.Errorf("%s: a span's %s wants a %s", raw, f, typ)
					}
				}
				for f := range sp {
					if f != "phase" && f != "start" && f != "end" && f != "seconds" && f != "inferred" {
						return fmt.Errorf("%s: a span has no field %q", raw, f)
					}
				}
			}
		}
	case "[run]":
		var runs []map[string]json.RawMessage
		if err = json.Unmarshal(raw, &runs); err == nil {
			for _, r := range runs {
				if checkType("number", r["run"]) != nil || checkType("string", r["outcome"]) != nil {
					return fmt.Errorf("%s: every run wants its run number and outcome", raw)
				}
				for f, v := range r {
					typ, ok := map[string]string{"run": "number", "start": "time", "end": "time", "seconds": "number", "reached": "string", "outcome": "string", "cause": "string", "trail": "[span]"}[f]
					if !ok {
						return fmt.Errorf("%s: a run has no field %q", raw, f)
					}
					if checkType(typ, v) != nil {
						return fmt.Errorf("%s: a run's %s wants a %s", raw, f, typ)
					}
				}
			}
		}
	case "progress":
		var p struct {
			Done, Total *int
			Label       string
		}
		if err = json.Unmarshal(raw, &p); err == nil && (p.Done == nil || p.Total == nil) {
			err = fmt.Errorf("%s: want done and total", raw)
		}
	case "stats":
		var all map[string]json.RawMessage
		if err = json.Unmarshal(raw, &all); err == nil {
			for _, f := range []string{"gen_tps", "prompt_tps", "running", "queued", "kv_usage"} {
				if checkType("number", all[f]) != nil {
					return fmt.Errorf("%s: want %s, a number", raw, f)
				}
			}
		}
	case "rate":
		var all map[string]json.RawMessage
		if err = json.Unmarshal(raw, &all); err == nil && (checkType("string", all["modes"]) != nil || checkType("number", all["decode_tps"]) != nil) {
			return fmt.Errorf("%s: want modes, a string, and decode_tps, a number", raw)
		}
	case "[deployment]":
		var ds []struct {
			Deployment *string  `json:"deployment"`
			Outcome    *string  `json:"outcome"`
			Nodes      []string `json:"nodes"`
			Blamed     string   `json:"blamed"`
			BlamedRank *int     `json:"blamed_rank"`
			Cause      string   `json:"cause"`
		}
		if err = json.Unmarshal(raw, &ds); err == nil {
			for _, d := range ds {
				if d.Deployment == nil || d.Outcome == nil || len(d.Nodes) == 0 {
					return fmt.Errorf("%s: every deployment wants deployment, outcome and nodes", raw)
				}
				if (d.Blamed == "") != (d.BlamedRank == nil) {
					return fmt.Errorf("%s: blamed and blamed_rank come together", raw)
				}
			}
		}
	case "[host]":
		var hs []struct {
			Host     *string         `json:"host"`
			Outcome  *string         `json:"outcome"`
			Failed   []string        `json:"failed"`
			Phase    string          `json:"phase"`
			ConnErr  string          `json:"conn_error"`
			PrevMode string          `json:"prev_mode"`
			Cause    string          `json:"cause"`
			Err      string          `json:"err"`
			Before   json.RawMessage `json:"before"`
			After    json.RawMessage `json:"after"`
			Ratio    *float64        `json:"ratio"`
			Slower   bool            `json:"slower"`
		}
		if err = json.Unmarshal(raw, &hs); err == nil {
			for _, h := range hs {
				if h.Host == nil || h.Outcome == nil {
					return fmt.Errorf("%s: every host wants host and outcome", raw)
				}
				for _, r := range []json.RawMessage{h.Before, h.After} {
					if r != nil && checkType("rate", r) != nil {
						return fmt.Errorf("%s: a host's before and after want modes and decode_tps", raw)
					}
				}
			}
		}
	default:
		return fmt.Errorf("no type in the schema")
	}
	if err != nil {
		return fmt.Errorf("want a %s: %w", typ, err)
	}
	return nil
}
