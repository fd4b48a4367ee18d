package drive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/deployment"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/record"
	"github.com/bringup-dev/bringup/remote/startup"
)

// WatchOptions configures Watch.
type WatchOptions struct {
	JSON    bool
	Timeout time.Duration // 0 = none
	// AllowRestarts is how many failed runs of a host's unit systemd may
	// restart before the watch counts the host failed; 0: the first.
	AllowRestarts int
	// Deployments are the config's; the units' command lines add theirs.
	// A node's lines name its deployment; the summary judges each.
	Deployments []deployment.Declared
}

// errTimedOut is the cause of a watch's context when --timeout passed.
var errTimedOut = errors.New("timeout")

// Watch prints one line per phase change, failure, unit-state change and
// host key learned until every host has settled (it serves, or a run of
// it failed with a settled cause: runVerdicts), the timeout passes, or
// ctx ends, and returns the exit code.
func Watch(ctx context.Context, fl *fleet.Follower, w io.Writer, opts WatchOptions) int {
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, opts.Timeout, errTimedOut)
		defer cancel()
	}
	started := map[string]time.Time{}
	engines := engineNotes{}
	runs := newRunVerdicts(opts.AllowRestarts, fl.Fleet().Now())
	var hosts []remote.HostState
	var deps output.Deployments
	// Text lines come out in host-time order, each held at most the
	// settle window (timeOrder); a tick lets them out while hosts are
	// quiet. JSON lines carry their times and latency, and go at once.
	order := &timeOrder{window: fleet.DefaultSettle}
	var tick time.Duration
	if !opts.JSON {
		tick = 250 * time.Millisecond
	}
	var line bytes.Buffer
	show := func(at, seen time.Time, put func(io.Writer)) {
		if opts.JSON {
			put(w)
			return
		}
		line.Reset()
		put(&line)
		if line.Len() > 0 {
			order.add(at, seen, line.String())
		}
	}
	err := fl.Until(ctx, tick, func(b remote.Batch) bool {
		defer order.release(w, time.Now())
		if len(b.Hosts) == 0 && len(b.Events) == 0 && len(b.Changes) == 0 {
			return false // a tick
		}
		if len(b.Hosts) > 0 {
			hosts = b.Hosts
			deps = output.FindDeployments(opts.Deployments, hosts)
		}
		runs.see(b.Hosts)
		for _, h := range b.Hosts {
			if !h.Startup.StartedAt.IsZero() {
				started[h.Name] = h.Startup.StartedAt
			}
		}
		for _, ev := range b.Events {
			show(ev.Time, time.Now(), func(w io.Writer) { output.Notice(w, ev, opts.JSON) })
		}
		if !opts.JSON {
			engines.say(b, func(at time.Time, text string) {
				show(at, time.Now(), func(w io.Writer) { fmt.Fprint(w, text) })
			})
		}
		// The batch that settles the last host may carry stats lines
		// from after that moment: where the watch ends is the outcome,
		// and a line past it would depend on where the batch was cut.
		final := runs.allDone(b.Hosts)
		var cut time.Time
		for _, c := range b.Changes {
			if c.Kind != startup.ChangeStats && c.Time.After(cut) {
				cut = c.Time
			}
		}
		for _, c := range b.Changes {
			if final && c.Kind == startup.ChangeStats && c.Time.After(cut) {
				continue
			}
			show(c.Time, time.Now(), func(w io.Writer) { output.NodeChange(w, c, started[c.Host], deps.Of(c.Host), opts.JSON) })
		}
		return final
	})
	order.flush(w)
	code, word, msg := runs.outcome(hosts), "serving", ""
	switch {
	case errors.Is(context.Cause(ctx), errTimedOut):
		code, word, msg = cli.ExitTimeout, "timeout", "timeout after "+opts.Timeout.String()
		if !opts.JSON {
			output.Timeout(w, opts.Timeout, order.after(time.Now()))
		}
	case cli.WasInterrupted(ctx):
		code, word, msg = cli.ExitInterrupted, "interrupted", "interrupted"
	case err != nil && errors.Is(context.Cause(ctx), record.ErrEnded):
		code, word, msg = cli.ExitTimeout, "ended", record.ErrEnded.Error()
		output.Ended(w, msg, opts.JSON)
	case err != nil:
		code, word, msg = cli.ExitTimeout, "error", err.Error()
	case code == cli.ExitFailed:
		word = "failed"
	}
	if opts.JSON {
		output.WatchSummary(w, "watch", runs.asSettled(hosts), deps, word, code, msg)
	}
	return code
}

// Outcome is the exit code for settled hosts: serving unless one failed.
func Outcome(hosts []remote.HostState) int {
	for _, h := range hosts {
		if h.Startup.Phase == startup.Failed {
			return cli.ExitFailed
		}
	}
	return cli.ExitOK
}

// StatusOutcome is status's exit code and word for one look at hosts:
// interrupted; failed where a host could not be reached (its connection
// failed for good, or its dial was refused: no wait mends that); a
// timeout where a host is still on its way; failed where one failed;
// else serving.
func StatusOutcome(hosts []remote.HostState, interrupted bool) (int, string) {
	code, word := Outcome(hosts), "serving"
	switch {
	case interrupted:
		code, word = cli.ExitInterrupted, "interrupted"
	case slices.ContainsFunc(hosts, unreachable):
		code, word = cli.ExitFailed, "failed"
	case !remote.AllSettled(hosts):
		code, word = cli.ExitTimeout, "timeout"
	case code == cli.ExitFailed:
		word = "failed"
	}
	return code, word
}

// unreachable says h's connection failed for good or its dial was refused.
func unreachable(h remote.HostState) bool {
	return h.Conn.State == event.ConnUnreachable || fleet.Refused(h.Conn)
}
