package output

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/rollout"
	"github.com/bringup-dev/bringup/remote/startup"
)

// Rollout prints the rollout's progress: lines of text, or with --json
// lines of the v1 schema (kinds step, stage, failed, halted, rollback,
// throughput, then the summary; see Schema).
type Rollout struct {
	w    io.Writer
	json bool
	now  func() time.Time // host time
	// printed is, per host, the lane as last printed: a lane is printed
	// again only when its stage, phase, action or error changed.
	printed map[string]string
	// issued are the step lines of the steps just issued, printed after
	// the lanes whose change made the rollout issue them.
	issued []Line
	// rated is, per host, the after rate last printed (a throughput
	// line goes out when a host's new run first has a steady rate).
	rated map[string]float64
}

// NewRollout prints a rollout's progress to w, as JSON lines when asJSON;
// now is the hosts' clock.
func NewRollout(w io.Writer, asJSON bool, now func() time.Time) *Rollout {
	return &Rollout{w: w, json: asJSON, now: now, printed: map[string]string{}, rated: map[string]float64{}}
}

// Rate is a decode rate in the v1 schema: the kernel modes of the run
// ("kdtree-verify=on") and its steady decode rate in tokens/s.
type Rate struct {
	Modes     string  `json:"modes"`
	DecodeTPS float64 `json:"decode_tps"`
}

// rateOf is r in the schema; nil when r holds no rate.
func rateOf(r rollout.Rate) *Rate {
	if !r.Known() {
		return nil
	}
	return &Rate{Modes: history.ModesKey(r.Modes), DecodeTPS: math.Round(r.TPS*100) / 100}
}

// ratioOf is the lane's after/before, to two places; nil until both are known.
func ratioOf(l rollout.Lane) *float64 {
	r, ok := l.Ratio()
	if !ok {
		return nil
	}
	r = math.Round(r*100) / 100
	return &r
}

// Step reports an action the rollout issued, printed with the next lanes
// (JSON only: the lane's line says it in text).
func (p *Rollout) Step(s rollout.Step, id int, err error) {
	if !p.json {
		return
	}
	l := Line{Time: JSONTime(p.now()), Kind: "step", Host: s.Host, Action: s.Action.String(), ID: &id, Outcome: "issued"}
	if err != nil {
		l.ID, l.Outcome, l.Err = nil, "refused", err.Error()
	}
	p.issued = append(p.issued, l)
}

// Actions reports how the rollout's actions among evs ended (JSON only).
func (p *Rollout) Actions(evs []event.Event, ours func(id int) bool) {
	if !p.json {
		return
	}
	for _, ev := range evs {
		a := ev.Action
		if ev.Kind != event.KindAction || a == nil || !ours(a.ID) || (a.Stage != event.ActionDone && a.Stage != event.ActionFailed) {
			continue
		}
		id := a.ID
		emit(p.w, Line{Time: JSONTime(ev.Time), Kind: "step", Host: ev.Host, Action: a.Name, ID: &id, Outcome: string(a.Stage), Err: a.Err,
			Latency: latency(ev.Time, ev.Seen)})
	}
}

// Lanes prints each lane whose stage, phase, action or error changed
// since the last call, then the steps issued since, then the hosts whose
// new run's decode rate just became steady.
func (p *Rollout) Lanes(lanes []rollout.Lane) {
	defer func() {
		for _, l := range p.issued {
			emit(p.w, l)
		}
		p.issued = nil
		p.rates(lanes)
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
		} else if l.ConnErr != "" {
			fmt.Fprintf(&b, ": not reached: %s", l.ConnErr)
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
		j := Line{Time: JSONTime(now), Kind: "stage", Host: l.Host, Stage: string(l.Stage), Phase: string(l.Phase), Action: l.Action, Err: l.Err,
			ConnErr: l.ConnErr}
		if !l.Since.IsZero() {
			s := elapsed.Seconds()
			j.Elapsed = &s
		}
		if l.Stage.Final() {
			j.Outcome = string(l.Stage)
		}
		emit(p.w, j)
	}
}

// rates prints a throughput line (text: the comparison) for each lane
// whose after rate is new since the last call.
func (p *Rollout) rates(lanes []rollout.Lane) {
	for _, l := range lanes {
		if !l.After.Known() || p.rated[l.Host] == l.After.TPS {
			continue
		}
		first := p.rated[l.Host] == 0
		p.rated[l.Host] = l.After.TPS
		if !first {
			continue // a steady rate moves a little as lines come in: said once is enough
		}
		if !p.json {
			fmt.Fprintf(p.w, "%s %-8s %s\n", p.now().Format(TimeLayout), l.Host, RatePhrase(l))
			continue
		}
		emit(p.w, Line{Time: JSONTime(p.now()), Kind: "throughput", Host: l.Host, Before: rateOf(l.Before), After: rateOf(l.After),
			Ratio: ratioOf(l), Slower: l.Slower})
	}
}

// RatePhrase is a lane's decode rate after the rollout against before,
// for people: "decode 1920 tok/s with kdtree-verify=on vs 410 tok/s with
// off (4.68×)", "⚠ 30 % slower: …", or what is not known yet.
func RatePhrase(l rollout.Lane) string {
	tps := func(v float64) string { return fmt.Sprintf("%.0f tok/s", v) }
	switch {
	case !l.Before.Known() && !l.After.Known():
		return "decode: no rate before or after"
	case !l.After.Known():
		return fmt.Sprintf("decode %s before with %s; after: not steady yet", tps(l.Before.TPS), history.ModesKey(l.Before.Modes))
	case !l.Before.Known():
		return fmt.Sprintf("decode %s with %s (no earlier run to compare)", tps(l.After.TPS), history.ModesKey(l.After.Modes))
	}
	now, was := history.Differ(l.After.Modes, l.Before.Modes)
	r, _ := l.Ratio()
	s := fmt.Sprintf("decode %s with %s vs %s with %s (%.2f×)", tps(l.After.TPS), now, tps(l.Before.TPS), was, r)
	if l.Slower {
		s = fmt.Sprintf("⚠ %d %% slower: %s", int((1-r)*100+0.5), s)
	}
	return s
}

// Halt prints why the rollout halted, in watch's failure format.
func (p *Rollout) Halt(st rollout.State, lanes []rollout.Lane) {
	now := p.now()
	if st.Diag == nil {
		if p.json {
			emit(p.w, Line{Time: JSONTime(now), Kind: "halted", Host: st.Host, Err: st.Err, TimedOut: st.TimedOut})
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
	c := remote.HostChange{Host: st.Host, Change: startup.Change{Kind: startup.ChangeFail, Time: st.Diag.Time, Phase: startup.Failed, Diag: st.Diag}}
	if c.Time.IsZero() {
		c.Time = now
	}
	if !p.json {
		c.Seen = time.Now()
		Change(p.w, c, started, false)
		return
	}
	emit(p.w, changeLine(c, started)) // no Seen: the halt is not a line received live
}

// Rollback reports what became of the rollback offered for host (JSON
// only: the text is printed where it is decided).
func (p *Rollout) Rollback(host, to, outcome string, err error) {
	if !p.json {
		return
	}
	l := Line{Time: JSONTime(p.now()), Kind: "rollback", Host: host, To: to, Outcome: outcome}
	if err != nil {
		l.Err = err.Error()
	}
	emit(p.w, l)
}

// Summary prints the summary line (JSON; text: each host's decode rate
// after against before, when any is known) and returns code. lanes is nil
// when the rollout did not start: every host is untouched.
func (p *Rollout) Summary(plan rollout.Plan, lanes []rollout.Lane, st rollout.State, status string, code int) int {
	if !p.json {
		RolloutRates(p.w, lanes)
		return code
	}
	s := Line{Time: JSONTime(p.now()), Kind: "summary", Command: "rollout", Outcome: status, Exit: &code, Plan: plan.String(),
		Host: st.Host, Err: st.Err, TimedOut: st.TimedOut, Hosts: []HostOutcome{}}
	if lanes == nil {
		for _, h := range plan.Hosts {
			s.Hosts = append(s.Hosts, HostOutcome{Host: h, Outcome: string(rollout.StageUntouched)})
		}
	}
	for _, l := range lanes {
		h := HostOutcome{Host: l.Host, Outcome: string(l.Stage), Phase: string(l.Phase), PrevMode: l.PrevMode, Err: l.Err,
			Before: rateOf(l.Before), After: rateOf(l.After), Ratio: ratioOf(l), Slower: l.Slower}
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
	emit(p.w, s)
	return code
}

// RolloutRates prints each host's decode rate after the rollout against
// before, for the hosts the rollout brought to serving or knew a rate
// for; nothing when none is known.
func RolloutRates(w io.Writer, lanes []rollout.Lane) {
	var rows []string
	pending := false
	for _, l := range lanes {
		if !l.Before.Known() && !l.After.Known() || l.Stage != rollout.StageServing && !l.After.Known() {
			continue
		}
		pending = pending || !l.After.Known()
		rows = append(rows, fmt.Sprintf("  %-8s %s", l.Host, RatePhrase(l)))
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "throughput, after the rollout against each host's run before:")
	fmt.Fprintln(w, strings.Join(rows, "\n"))
	if pending {
		fmt.Fprintln(w, "  (a rate is steady after a few of the engine's decode lines: --throughput-wait D waits for them)")
	}
}

// RolloutJSONHelp documents the JSON lines of `bringup rollout --json`,
// for its usage text.
const RolloutJSONHelp = `--json prints the v1 schema (as bringup watch --json; every line "v", "time"
in UTC to the second, host time, and "kind"):
  kind "step"       an action of the rollout: "action", "id", "outcome" issued,
                    refused, done or failed (with "err")
  kind "stage"      a host's lane changed: "stage" (pending, applying,
                    restarting, starting, serving, failed, untouched, halted,
                    rolling-back, rolled-back, rollback-failed), "phase",
                    "action", "elapsed" seconds since the rollout reached the
                    host, "outcome" once the stage is final, "err",
                    "conn_error" while the host is not reached (why)
  kind "failed"     the failure the rollout halted on, as watch prints it
  kind "halted"     a halt without a diagnosis: "err", "timed_out"
  kind "rollback"   "outcome" started, declined, not-asked or failed, "to"
                    the mode it puts back
  kind "throughput" a host's new run decodes steadily: "after" and "before"
                    ({"modes", "decode_tps"}), "ratio" after/before, "slower"
  kind "summary"    the last line: "command" rollout, "outcome" (done, halted,
                    aborted, refused, not-started), "exit", "plan", "host",
                    "cause" and "err" of a halt, "timed_out", and "hosts":
                    each host's "outcome" (its stage), "phase", "prev_mode",
                    "before", "after", "ratio", "slower"`

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
