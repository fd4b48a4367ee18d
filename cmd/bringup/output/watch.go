// Package output is what bringup prints: the text lines people read and
// the JSON lines scripts parse (the v1 schema of jsonv1.go; status, rollout
// and bench still print their older shapes), each format defined once.
package output

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
)

// TimeLayout is RFC 3339 with microseconds, always printed, so lines line
// up and sort as text.
const TimeLayout = "2006-01-02T15:04:05.000000Z07:00"

// Timeout is the text line that ends a watch when its --timeout d
// passed, stamped at (no earlier than the lines it follows); under
// --json the summary line says it (WatchSummary).
func Timeout(w io.Writer, d time.Duration, at time.Time) {
	fmt.Fprintf(w, "%s timeout after %s\n", at.Format(TimeLayout), d)
}

// Ended is the text line that ends a watch of a recording that ended
// before every host settled (why); under --json the summary line says it.
func Ended(w io.Writer, why string, asJSON bool) {
	if !asJSON {
		fmt.Fprintf(w, "%s %s\n", time.Now().Format(TimeLayout), why)
	}
}

// WatchSummary is the last line of `bringup watch --json` and `status
// --json` (command): the outcome (serving, failed, timeout, interrupted,
// ended, error), the exit code, each host's last phase and each
// multi-node deployment's verdict.
func WatchSummary(w io.Writer, command string, hosts []remote.HostState, deps Deployments, outcome string, exit int, err string) {
	var hs []HostOutcome
	for _, h := range hosts {
		o := HostOutcome{Host: h.Name, Outcome: "unsettled", Phase: string(h.Startup.Phase), Engine: h.Startup.Engine, EngineVersion: h.Startup.EngineVersion}
		if h.Conn.State != event.ConnUp {
			o.ConnErr = h.Conn.Err // a host not reached at the end says why, not only "unknown"
		}
		if settled, ok := map[startup.Phase]string{startup.Failed: "failed", startup.Serving: "serving"}[h.Startup.Phase]; ok {
			o.Outcome = settled
		}
		hs = append(hs, o)
	}
	emit(w, Line{Kind: "summary", Command: command, Outcome: outcome, Exit: &exit, Hosts: hs, Err: err, Deployments: deps.Outcomes(hosts)})
}

// Notice prints the notices among a host's events that a watch must not
// keep quiet (a host key learned on first contact, event.GapHostKey) as a
// text line or a JSON line of kind "host-key"; other events print nothing.
func Notice(w io.Writer, ev event.Event, asJSON bool) {
	if ev.Kind != event.KindGap || ev.Gap == nil || ev.Gap.Reason != event.GapHostKey {
		return
	}
	if asJSON {
		emit(w, Line{Time: JSONTime(ev.Time), Kind: event.GapHostKey, Host: ev.Host, Summary: ev.Gap.Message, Latency: latency(ev.Time, ev.Seen)})
		return
	}
	fmt.Fprintf(w, "%s %-8s %s\n", ev.Time.Format(TimeLayout), ev.Host, ev.Gap.Message)
}

// Change prints one startup change of a host (started: when its startup
// began, for the elapsed time) as a text line or a v1 JSON line.
func Change(w io.Writer, c remote.HostChange, started time.Time, asJSON bool) {
	NodeChange(w, c, started, "", asJSON)
}

// NodeChange is Change of a host that is a node of deployment dep (""
// for none), which its JSON line names.
func NodeChange(w io.Writer, c remote.HostChange, started time.Time, dep string, asJSON bool) {
	if asJSON {
		l := changeLine(c, started)
		l.Deployment = dep
		emit(w, l)
		return
	}
	var elapsed, progress, fix string
	if c.Progress.Known() {
		progress = fmt.Sprintf("%d/%d", c.Progress.Done, c.Progress.Total)
		if c.Progress.Label != "" {
			progress += " " + c.Progress.Label
		}
	}
	if !started.IsZero() && !c.Time.Before(started) {
		elapsed = c.Time.Sub(started).Round(time.Second).String()
	}
	var failedIn string
	if d := c.Diag; d != nil {
		failedIn = string(d.Phase)
		if d.Fix != nil {
			fix = d.Fix.Command(c.Host)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %-8s ", c.Time.Format(TimeLayout), c.Host)
	switch c.Kind {
	case startup.ChangeUnit:
		fmt.Fprintf(&b, "unit %s", c.Unit)
	case startup.ChangeStats:
		if c.Stats != nil {
			b.WriteString(SampleText(*c.Stats))
		}
	case startup.ChangeFail:
		fmt.Fprintf(&b, "FAILED in %s", failedIn)
		if c.Run > 1 {
			fmt.Fprintf(&b, " (run %d)", c.Run) // systemd started the unit again
		}
		if elapsed != "" {
			fmt.Fprintf(&b, " at +%s", elapsed)
		}
		if d := c.Diag; d != nil {
			fmt.Fprintf(&b, ": %s [%s]\n%*s hint: %s", d.Summary, d.Cause, len(TimeLayout)+9, "", d.Hint)
			if len(d.Evidence) > 0 {
				fmt.Fprintf(&b, "\n%*s evidence: %s", len(TimeLayout)+9, "", d.Evidence[0])
			}
			if fix != "" {
				fmt.Fprintf(&b, "\n%*s fix: %s", len(TimeLayout)+9, "", fix)
			}
		}
	default:
		fmt.Fprintf(&b, "%s", c.Phase)
		if c.ConnErr != "" {
			fmt.Fprintf(&b, " (%s)", c.ConnErr)
		}
		if elapsed != "" {
			fmt.Fprintf(&b, " at +%s", elapsed)
		}
		if progress != "" {
			fmt.Fprintf(&b, " (%s)", progress)
		}
	}
	fmt.Fprintln(w, b.String())
}
