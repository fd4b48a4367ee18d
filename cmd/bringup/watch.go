package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"bringup/remote"
	"bringup/remote/startup"
)

// Exit codes of `bringup watch`, for scripts.
const (
	exitServing = 0 // every watched host is serving
	exitFailed  = 1 // at least one host failed
	exitTimeout = 2 // --timeout passed first
	exitUsage   = 3 // bad flags, config or hosts: nothing was watched
)

// timeLayout is RFC 3339 with microseconds, always printed, so lines line
// up and sort as text.
const timeLayout = "2006-01-02T15:04:05.000000Z07:00"

// watchLine is one line of `bringup watch --json`.
type watchLine struct {
	Time     string   `json:"time"` // host time
	Seen     string   `json:"seen"` // local receipt time
	Host     string   `json:"host"`
	Kind     string   `json:"kind"` // phase, failed, unit, done
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
}

// watchOptions configures runWatch.
type watchOptions struct {
	JSON    bool
	Timeout time.Duration // 0 = none
}

// errTimedOut is the cause of a watch's context when --timeout passed.
var errTimedOut = errors.New("timeout")

// runWatch prints one line per phase change, failure and unit-state change
// until every host has settled (remote.HostState.Settled), the timeout
// passes, or ctx ends, and returns the exit code.
func runWatch(ctx context.Context, fl *remote.Follower, w io.Writer, opts watchOptions) int {
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, opts.Timeout, errTimedOut)
		defer cancel()
	}
	started := map[string]time.Time{}
	hosts, err := fl.Watch(ctx, func(b remote.Batch) {
		for _, h := range b.Hosts {
			if !h.Startup.StartedAt.IsZero() {
				started[h.Name] = h.Startup.StartedAt
			}
		}
		for _, c := range b.Changes {
			printChange(w, c, started[c.Host], opts.JSON)
		}
	})
	switch {
	case errors.Is(context.Cause(ctx), errTimedOut):
		if opts.JSON {
			// Every line of --json output is JSON, the timeout too.
			fmt.Fprintf(w, "{\"time\":%q,\"kind\":\"timeout\",\"detail\":\"timeout after %s\"}\n", time.Now().Format(timeLayout), opts.Timeout)
		} else {
			fmt.Fprintf(w, "%s timeout after %s\n", time.Now().Format(timeLayout), opts.Timeout)
		}
		return exitTimeout
	case err != nil:
		return exitTimeout
	}
	return outcome(hosts)
}

// outcome is the exit code for settled hosts: serving unless one failed.
func outcome(hosts []remote.HostState) int {
	for _, h := range hosts {
		if h.Startup.Phase == startup.Failed {
			return exitFailed
		}
	}
	return exitServing
}

func printChange(w io.Writer, c remote.HostChange, started time.Time, asJSON bool) {
	l := watchLine{
		Time:  c.Time.Format(timeLayout),
		Seen:  c.Seen.Format(timeLayout),
		Host:  c.Host,
		Kind:  string(c.Kind),
		Phase: string(c.Phase),
		From:  string(c.From),
		Unit:  c.Unit,
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
	fmt.Fprintf(&b, "%s %-8s ", c.Time.Format(timeLayout), c.Host)
	switch c.Kind {
	case startup.ChangeUnit:
		fmt.Fprintf(&b, "unit %s", c.Unit)
	case startup.ChangeFail:
		fmt.Fprintf(&b, "FAILED in %s", l.FailedIn)
		if l.Elapsed != "" {
			fmt.Fprintf(&b, " at +%s", l.Elapsed)
		}
		if d := c.Diag; d != nil {
			fmt.Fprintf(&b, ": %s [%s]\n%*s hint: %s", d.Summary, d.Cause, len(timeLayout)+9, "", d.Hint)
			if len(d.Evidence) > 0 {
				fmt.Fprintf(&b, "\n%*s evidence: %s", len(timeLayout)+9, "", d.Evidence[0])
			}
			if l.Fix != "" {
				fmt.Fprintf(&b, "\n%*s fix: %s", len(timeLayout)+9, "", l.Fix)
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
