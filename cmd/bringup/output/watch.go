// Package output is what bringup prints: the text lines people read and
// the JSON lines scripts parse (watch, status, rollout, the changing
// commands, explain, doctor), each format defined once.
package output

import (
	"encoding/json"
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

// WatchLine is one line of `bringup watch --json`.
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

// Timeout is the line that ends a watch when its --timeout d passed: JSON
// too under --json, where every line is JSON.
func Timeout(w io.Writer, d time.Duration, asJSON bool) {
	if asJSON {
		fmt.Fprintf(w, "{\"time\":%q,\"kind\":\"timeout\",\"detail\":\"timeout after %s\"}\n", time.Now().Format(TimeLayout), d)
		return
	}
	fmt.Fprintf(w, "%s timeout after %s\n", time.Now().Format(TimeLayout), d)
}

// Notice prints the notices among a host's events that a watch must not
// keep quiet (a host key learned on first contact, event.GapHostKey) as a
// text line or a JSON line of kind "host-key"; other events print nothing.
func Notice(w io.Writer, ev event.Event, asJSON bool) {
	if ev.Kind != event.KindGap || ev.Gap == nil || ev.Gap.Reason != event.GapHostKey {
		return
	}
	if asJSON {
		b, err := json.Marshal(WatchLine{Time: ev.Time.Format(TimeLayout), Seen: ev.Seen.Format(TimeLayout), Host: ev.Host,
			Kind: event.GapHostKey, Summary: ev.Gap.Message})
		if err != nil { // cannot happen for this struct; say so rather than drop the line
			fmt.Fprintf(w, "{\"host\":%q,\"kind\":\"error\",\"err\":%q}\n", ev.Host, err.Error())
			return
		}
		fmt.Fprintf(w, "%s\n", b)
		return
	}
	fmt.Fprintf(w, "%s %-8s %s\n", ev.Time.Format(TimeLayout), ev.Host, ev.Gap.Message)
}

// Change prints one startup change of a host (started: when its startup
// began, for the elapsed time) as a text line or a JSON line (WatchLine).
func Change(w io.Writer, c remote.HostChange, started time.Time, asJSON bool) {
	l := WatchLine{
		Time:  c.Time.Format(TimeLayout),
		Seen:  c.Seen.Format(TimeLayout),
		Host:  c.Host,
		Kind:  string(c.Kind),
		Phase: string(c.Phase),
		From:  string(c.From),
		Unit:  c.Unit,
		Stats: c.Stats,
	}
	if c.Progress.Known() {
		l.Progress = fmt.Sprintf("%d/%d", c.Progress.Done, c.Progress.Total)
		if c.Progress.Label != "" {
			l.Progress += " " + c.Progress.Label
		}
	}
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
	if asJSON {
		b, err := json.Marshal(l)
		if err != nil { // cannot happen for this struct; say so rather than drop the line
			fmt.Fprintf(w, "{\"host\":%q,\"kind\":\"error\",\"err\":%q}\n", c.Host, err.Error())
			return
		}
		fmt.Fprintf(w, "%s\n", b)
		return
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
		fmt.Fprintf(&b, "FAILED in %s", l.FailedIn)
		if l.Elapsed != "" {
			fmt.Fprintf(&b, " at +%s", l.Elapsed)
		}
		if d := c.Diag; d != nil {
			fmt.Fprintf(&b, ": %s [%s]\n%*s hint: %s", d.Summary, d.Cause, len(TimeLayout)+9, "", d.Hint)
			if len(d.Evidence) > 0 {
				fmt.Fprintf(&b, "\n%*s evidence: %s", len(TimeLayout)+9, "", d.Evidence[0])
			}
			if l.Fix != "" {
				fmt.Fprintf(&b, "\n%*s fix: %s", len(TimeLayout)+9, "", l.Fix)
			}
		}
	default:
		fmt.Fprintf(&b, "%s", c.Phase)
		if l.Elapsed != "" {
			fmt.Fprintf(&b, " at +%s", l.Elapsed)
		}
		if l.Progress != "" {
			fmt.Fprintf(&b, " (%s)", l.Progress)
		}
	}
	fmt.Fprintln(w, b.String())
}
