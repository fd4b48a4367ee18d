package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
)

// The exit codes of every bringup command: one table, which the code
// returns, `bringup --help` prints and the README shows (a test holds the
// README to it).
const (
	ExitOK          = 0   // done: every host serving, the check passed
	ExitFailed      = 1   // a host failed, a check failed, a rollout halted
	ExitTimeout     = 2   // --timeout passed first, or a log ends undecided
	ExitUsage       = 3   // bad flags, config or hosts, or refused: nothing was done
	ExitAborted     = 4   // a rollout stopped part way (ctrl-c, the fleet went away)
	ExitInterrupted = 130 // ctrl-c (SIGINT) or SIGTERM in any other command
)

// ExitCode is one row of the table.
type ExitCode struct {
	Code    int
	Meaning string
}

// ExitCodes is the table, in order.
func ExitCodes() []ExitCode {
	return []ExitCode{
		{ExitOK, "ok: every host serving, every check passed"},
		{ExitFailed, "failed: a host failed, a check failed, a rollout halted"},
		{ExitTimeout, "timeout: --timeout passed first (explain: the log ends undecided)"},
		{ExitUsage, "usage or refused: bad flags, config or hosts, no terminal, not confirmed; nothing was done"},
		{ExitAborted, "aborted: a rollout stopped part way (ctrl-c)"},
		{ExitInterrupted, "interrupted: ctrl-c or SIGTERM"},
	}
}

// PrintExitCodes writes the table for --help.
func PrintExitCodes(w io.Writer) {
	fmt.Fprintln(w, "Exit codes:")
	for _, c := range ExitCodes() {
		fmt.Fprintf(w, "  %3d  %s\n", c.Code, c.Meaning)
	}
}

// Interrupted is the cause of the commands' context when a signal stopped
// them (see NotifyContext).
type Interrupted struct{ Signal os.Signal }

func (i Interrupted) Error() string { return "interrupted by " + i.Signal.String() }

// NotifyContext is signal.NotifyContext with the signal as the context's
// cause, so that a command can tell ctrl-c from its own timeout.
func NotifyContext(parent context.Context, sigs ...os.Signal) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	done := make(chan struct{})
	go func() { // owned by the returned func, which ends it
		select {
		case s := <-ch:
			cancel(Interrupted{Signal: s})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(context.Canceled)
	}
}

// WasInterrupted reports whether ctx ended on a signal.
func WasInterrupted(ctx context.Context) bool {
	var i Interrupted
	return errors.As(context.Cause(ctx), &i)
}
