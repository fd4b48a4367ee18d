package output

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/rollout"
	"github.com/bringup-dev/bringup/remote/startup"
)

// Rollout prints the rollout's progress: lines of text, or with
// --json one JSON object a line (see rolloutUsage), its failure in watch's
// format.
type Rollout struct {
	w    io.Writer
	json bool
	now  func() time.Time // host time
	// printed is, per host, the lane as last printed: a lane is printed
	// again only when its stage, phase, action or error changed.
	printed map[string]string
	// issued are the step lines of the steps just issued, printed after
	// the lanes whose change made the rollout issue them.
	issued []RolloutLine
}

// WatchLine is the pre-v1 line of watch that `bringup rollout --json`
// still builds on, until rollout moves to the v1 schema.
type WatchLine struct {
	Time     string   `json:"time"` // host time
	Seen     string   `json:"seen"` // local receipt time
	Host     string   `json:"host"`
	Kind     string   `json:"kind"` // phase, failed, unit, stats, done, host-key
	Phase    string   `json:"phase"`
	From     string   `json:"from,omitempty"`
	Unit     string   `json:"unit,omitempty"`
	Progress string   `json:"progress,omitempty"`
	Cause    string   `json:"cause,omitempty"`
	Summary  string   `json:"summary,omitempty"`
	Hint     string   `json:"hint,omitempty"`
	Evidence []string `json:"evidence,omitempty"`
	Kernel   string   `json:"kernel_mode,omitempty"`
	FailedIn string   `json:"failed_in,omitempty"` // the phase a failure happened in
	// Fix is the command that applies the diagnosis's fix, when it has one.
	Fix string `json:"fix,omitempty"`
	// Elapsed is the time from the invocation's start to this change.
	Elapsed string `json:"elapsed,omitempty"`
	// Stats is the engine's latest stats sample, on a line of kind
	// "stats" (throughput, requests, KV use).
	Stats *startup.Sample `json:"stats,omitempty"`
}

// RolloutLine is one line of `bringup rollout --json`: watch's line
// (time, seen, host, kind, phase, elapsed) with the rollout's step, stage
// or rollback.
type RolloutLine struct {
	WatchLine
	Stage    string `json:"stage,omitempty"`
	Action   string `json:"action,omitempty"`
	ID       int    `json:"id,omitempty"`
	Outcome  string `json:"outcome,omitempty"`
	Err      string `json:"err,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
	To       string `json:"to,omitempty"` // the mode a rollback puts back
}

// RolloutSummary is the last line of `bringup rollout --json`.
type RolloutSummary struct {
	Time     string        `json:"time"`
	Seen     string        `json:"seen"`
	Kind     string        `json:"kind"`   // summary
	Status   string        `json:"status"` // done, halted, aborted, refused, not-started
	Exit     int           `json:"exit"`
	Plan     string        `json:"plan"`
	Host     string        `json:"host,omitempty"`  // the host it halted on
	Cause    string        `json:"cause,omitempty"` // the halt's diagnosis
	Err      string        `json:"err,omitempty"`
	TimedOut bool          `json:"timed_out,omitempty"`
	Hosts    []RolloutHost `json:"hosts"`
}

// RolloutHost is one host in the summary.
type RolloutHost struct {
	Host     string `json:"host"`
	Stage    string `json:"stage"`
	Phase    string `json:"phase,omitempty"`
	PrevMode string `json:"prev_mode,omitempty"`
	Cause    string `json:"cause,omitempty"`
	Err      string `json:"err,omitempty"`
}

// line starts a JSON line about host at host time t.
func (p *Rollout) line(t time.Time, host, kind string, phase startup.Phase) RolloutLine {
	return RolloutLine{WatchLine: WatchLine{Time: t.Format(TimeLayout), Seen: time.Now().Format(TimeLayout),
		Host: host, Kind: kind, Phase: string(phase)}}
}

// emit prints v as one JSON line.
func (p *Rollout) emit(v any) {
	b, err := json.Marshal(v)
	if err != nil { // cannot happen for these types; say so rather than drop the line
		b, _ = json.Marshal(map[string]string{"kind": "error", "err": err.Error()})
	}
	fmt.Fprintf(p.w, "%s\n", b)
}

// step reports an action the rollout issued, with the next lanes (JSON
// only: the lane's line says it in text).
func (p *Rollout) Step(s rollout.Step, id int, err error) {
	if !p.json {
		return
	}
	l := p.line(p.now(), s.Host, "step", "")
	l.Action, l.ID, l.Outcome = s.Action.String(), id, "issued"
	if err != nil {
		l.Outcome, l.Err = "refused", err.Error()
	}
	p.issued = append(p.issued, l)
}

// actions reports how the rollout's actions among evs ended (JSON only).
func (p *Rollout) Actions(evs []event.Event, ours func(id int) bool) {
	if !p.json {
		return
	}
	for _, ev := range evs {
		a := ev.Action
		if ev.Kind != event.KindAction || a == nil || !ours(a.ID) || (a.Stage != event.ActionDone && a.Stage != event.ActionFailed) {
			continue
		}
		l := p.line(ev.Time, ev.Host, "step", "")
		l.Seen = ev.Seen.Format(TimeLayout)
		l.Action, l.ID, l.Outcome, l.Err = a.Name, a.ID, string(a.Stage), a.Err
		p.emit(l)
	}
}

// lanes prints each lane whose stage, phase, action or error changed
// since the last call, then the steps issued since.
func (p *Rollout) Lanes(lanes []rollout.Lane) {
	defer func() {
		for _, l := range p.issued {
			p.emit(l)
		}
		p.issued = nil
	}()
	now := p.now()
	for _, l := range lanes {
		var b strings.Builder
		fmt.Fprintf(&b, "%s", l.Stage)
		if l.Phase != "" && string(l.Phase) != string(l.Stage) {
			fmt.Fprintf(&b, " · %s", l.Phase)
		}
		if l.Action != "" {
			fmt.Fprintf(&b, " (%s)", l.Action)
		}
		if l.Err != "" {
			fmt.Fprintf(&b, ": %s", l.Err)
		}
		text := b.String()
		if p.printed[l.Host] == text {
			continue
		}
		p.printed[l.Host] = text
		var elapsed time.Duration
		if !l.Since.IsZero() {
			end := l.Until
			if end.IsZero() {
				end = now
			}
			elapsed = end.Sub(l.Since).Round(time.Second)
			text += fmt.Sprintf(" at +%s", elapsed)
		}
		if !p.json {
			fmt.Fprintf(p.w, "%s %-8s %s\n", now.Format(TimeLayout), l.Host, text)
			continue
		}
		j := p.line(now, l.Host, "stage", l.Phase)
		j.Stage, j.Action, j.Err = string(l.Stage), l.Action, l.Err
		if !l.Since.IsZero() {
			j.Elapsed = elapsed.String()
		}
		if l.Stage.Final() {
			j.Outcome = string(l.Stage)
		}
		p.emit(j)
	}
}

// halt prints why the rollout halted, in watch's failure format.
func (p *Rollout) Halt(st rollout.State, lanes []rollout.Lane) {
	now := p.now()
	if st.Diag == nil {
		if p.json {
			l := p.line(now, st.Host, "halted", startup.Failed)
			l.Err, l.TimedOut = st.Err, st.TimedOut
			p.emit(l)
			return
		}
		fmt.Fprintf(p.w, "%s %-8s HALTED: %s\n", now.Format(TimeLayout), st.Host, st.Err)
		return
	}
	var started time.Time
	for _, l := range lanes {
		if l.Host == st.Host && len(l.Phases) > 0 {
			started = l.Phases[0].Start
		}
	}
	c := remote.HostChange{Host: st.Host, Seen: time.Now(),
		Change: startup.Change{Kind: startup.ChangeFail, Time: st.Diag.Time, Phase: startup.Failed, Diag: st.Diag}}
	if c.Time.IsZero() {
		c.Time = now
	}
	if !p.json {
		Change(p.w, c, started, false)
		return
	}
	p.emit(legacyFailure(c, started))
}

// legacyFailure is a failure as rollout's pre-v1 line (watch's shape
// before the v1 schema), kept so rollout's output moves in one piece.
func legacyFailure(c remote.HostChange, started time.Time) RolloutLine {
	l := WatchLine{Time: c.Time.Format(TimeLayout), Seen: c.Seen.Format(TimeLayout), Host: c.Host,
		Kind: string(c.Kind), Phase: string(c.Phase)}
	if !started.IsZero() && !c.Time.Before(started) {
		l.Elapsed = c.Time.Sub(started).Round(time.Second).String()
	}
	if d := c.Diag; d != nil {
		l.Cause, l.Summary, l.Hint, l.Evidence, l.Kernel = d.Cause, d.Summary, d.Hint, d.Evidence, d.KernelMode
		l.FailedIn = string(d.Phase)
		if d.Fix != nil {
			l.Fix = fmt.Sprintf("bringup mode %s %s=%s --restart", c.Host, d.Fix.Kernel, d.Fix.Mode)
		}
	}
	return RolloutLine{WatchLine: l}
}

// rollback reports what became of the rollback offered for host (JSON
// only: the text is printed where it is decided).
func (p *Rollout) Rollback(host, to, outcome string, err error) {
	if !p.json {
		return
	}
	l := p.line(p.now(), host, "rollback", "")
	l.To, l.Outcome = to, outcome
	if err != nil {
		l.Err = err.Error()
	}
	p.emit(l)
}

// summary prints the summary line (JSON only) and returns code. lanes is
// nil when the rollout did not start: every host is untouched.
func (p *Rollout) Summary(plan rollout.Plan, lanes []rollout.Lane, st rollout.State, status string, code int) int {
	if !p.json {
		return code
	}
	s := RolloutSummary{Time: p.now().Format(TimeLayout), Seen: time.Now().Format(TimeLayout), Kind: "summary",
		Status: status, Exit: code, Plan: plan.String(), Host: st.Host, Err: st.Err, TimedOut: st.TimedOut,
		Hosts: []RolloutHost{}}
	if lanes == nil {
		for _, h := range plan.Hosts {
			s.Hosts = append(s.Hosts, RolloutHost{Host: h, Stage: string(rollout.StageUntouched)})
		}
	}
	for _, l := range lanes {
		h := RolloutHost{Host: l.Host, Stage: string(l.Stage), Phase: string(l.Phase), PrevMode: l.PrevMode, Err: l.Err}
		if l.Diag != nil {
			h.Cause = l.Diag.Cause
		}
		s.Hosts = append(s.Hosts, h)
	}
	if st.Diag != nil {
		s.Cause = st.Diag.Cause
		if s.Err == "" {
			s.Err = st.Diag.Summary
		}
	}
	p.emit(s)
	return code
}

// NewRollout prints a rollout's progress to w, as JSON lines when asJSON;
// now is the hosts' clock.
func NewRollout(w io.Writer, asJSON bool, now func() time.Time) *Rollout {
	return &Rollout{w: w, json: asJSON, now: now, printed: map[string]string{}}
}

// RolloutJSONHelp documents the JSON lines of `bringup rollout --json`
// (Rollout, RolloutLine, RolloutSummary), for its usage text.
const RolloutJSONHelp = `--json prints one JSON object a line on stdout, with "time" (host time),
"seen" (local time), "host", "kind" and "phase" as in bringup watch --json:
  kind "step"     an action of the rollout: "action", "id", "outcome"
                  issued, refused, done or failed (with "err")
  kind "stage"    a host's lane changed: "stage" (pending, applying,
                  restarting, starting, serving, failed, untouched, halted,
                  rolling-back, rolled-back, rollback-failed), "action",
                  "elapsed" since the rollout reached the host, "outcome"
                  once the stage is final, "err"
  kind "failed"   the failure the rollout halted on, in watch's format:
                  "cause", "summary", "hint", "evidence", "failed_in", "fix"
  kind "halted"   a halt without a diagnosis: "err", "timed_out"
  kind "rollback" "outcome" started, declined, not-asked or failed, "to"
                  the mode it puts back
  kind "summary"  the last line: "status" (done, halted, aborted, refused,
                  not-started), "exit", "plan", "host", "cause" and "err" of
                  a halt, and "hosts" with each host's "stage"`

// RolloutOutcome prints how a rollout that stopped ended: done, or where
// it halted and which hosts it left untouched (an abort was said already).
func RolloutOutcome(w io.Writer, st rollout.State, lanes []rollout.Lane) {
	switch st.Status {
	case rollout.Done:
		fmt.Fprintf(w, "done: %d host(s) serving\n", len(lanes))
		return
	case rollout.Aborted:
		return
	case rollout.Running, rollout.Halted: // the lanes below say where it stands
	}
	var untouched []string
	for _, l := range lanes {
		if l.Stage == rollout.StageUntouched {
			untouched = append(untouched, l.Host)
		}
	}
	if len(untouched) > 0 {
		fmt.Fprintf(w, "halted on %s; untouched: %s\n", st.Host, strings.Join(untouched, ", "))
	} else {
		fmt.Fprintf(w, "halted on %s\n", st.Host)
	}
}
