package main

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/record"
	"github.com/bringup-dev/bringup/remote/startup"
)

// Exit codes, for scripts: the one table in package cli.
const (
	exitServing     = cli.ExitOK          // every watched host is serving
	exitFailed      = cli.ExitFailed      // at least one host failed
	exitTimeout     = cli.ExitTimeout     // --timeout passed first
	exitUsage       = cli.ExitUsage       // bad flags, config or hosts: nothing was watched
	exitAborted     = cli.ExitAborted     // a rollout stopped part way
	exitInterrupted = cli.ExitInterrupted // ctrl-c or SIGTERM
)

// watchOptions configures runWatch.
type watchOptions struct {
	JSON    bool
	Timeout time.Duration // 0 = none
}

// errTimedOut is the cause of a watch's context when --timeout passed.
var errTimedOut = errors.New("timeout")

// runWatch prints one line per phase change, failure, unit-state change and
// host key learned until every host has settled (remote.HostState.Settled),
// the timeout passes, or ctx ends, and returns the exit code.
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
		for _, ev := range b.Events {
			output.Notice(w, ev, opts.JSON)
		}
		// The batch that settles the last host may carry stats lines
		// from after that moment: where the watch ends is the outcome,
		// and a line past it would depend on where the batch was cut.
		final := remote.AllSettled(b.Hosts)
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
			output.Change(w, c, started[c.Host], opts.JSON)
		}
	})
	code, word, msg := outcome(hosts), "serving", ""
	switch {
	case errors.Is(context.Cause(ctx), errTimedOut):
		code, word, msg = exitTimeout, "timeout", "timeout after "+opts.Timeout.String()
		if !opts.JSON {
			output.Timeout(w, opts.Timeout)
		}
	case cli.WasInterrupted(ctx):
		code, word, msg = exitInterrupted, "interrupted", "interrupted"
	case err != nil && errors.Is(context.Cause(ctx), record.ErrEnded):
		code, word, msg = exitTimeout, "ended", record.ErrEnded.Error()
		output.Ended(w, msg, opts.JSON)
	case err != nil:
		code, word, msg = exitTimeout, "error", err.Error()
	case code == exitFailed:
		word = "failed"
	}
	if opts.JSON {
		output.WatchSummary(w, "watch", hosts, word, code, msg)
	}
	return code
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
