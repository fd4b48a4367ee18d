// Package console runs bringup's terminal console (package ui, under
// Bubble Tea) over a fleet until the person quits, and refuses to start
// it where there is no terminal to run it on.
package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/ui"
	"github.com/bringup-dev/bringup/ui/notify"
)

// Run runs the console over fleet until the person quits and returns the
// exit code. name is the command, for its messages on errOut; out is the
// terminal, where the progress bar is cleared at the end.
func Run(ctx context.Context, out, errOut io.Writer, name string, f *fleet.Fleet, opts ui.Options) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f.HandDeltas()             // the console keeps the snapshot: only what changed need come
	fl := fleet.Follow(ctx, f) // the console reads the fleet's updates itself
	if len(opts.Kernels.Kernels) == 0 {
		opts.Kernels = f.Kernels()
	}
	p := tea.NewProgram(ui.New(f, opts), tea.WithContext(ctx))
	_, runErr := p.Run()
	// The progress bar outlives the program unless cleared.
	fmt.Fprint(out, notify.Encoder{Settings: opts.Signals, Tmux: opts.Tmux}.ClearProgress())
	// Read why the program ended before cancel: after it, ctx.Err() is
	// always set and a real error would pass for a quit.
	interrupted := ctx.Err() != nil
	cancel()
	_ = fl.Stop(0) // the hosts' goroutines end with the program: wait for them
	switch {
	case interrupted:
		if cli.WasInterrupted(ctx) {
			return cli.ExitInterrupted
		}
	case runErr != nil && !errors.Is(runErr, tea.ErrProgramKilled):
		fmt.Fprintf(errOut, "bringup %s: %v\n", name, runErr)
		return cli.ExitFailed
	}
	return cli.ExitOK
}

// Signals are the console's signals: set, or none when quiet.
func Signals(set notify.Settings, quiet bool) notify.Settings {
	if quiet {
		return notify.Settings{}
	}
	return set
}

// NeedTerminal refuses to start the console of command name ("" for
// bringup itself) without a terminal on both standard input and output
// (ssh without -t, cron, CI, a pipe), saying what to run there instead;
// Bubble Tea would otherwise end at once.
func NeedTerminal(stdin io.Reader, stdout io.Writer, name string) error {
	var missing []string
	if !cli.IsTerminal(stdin) {
		missing = append(missing, "standard input")
	}
	if !cli.IsTerminal(stdout) {
		missing = append(missing, "standard output")
	}
	if len(missing) == 0 {
		return nil
	}
	instead := "`bringup watch` (lines until every host serves or one fails, --json for scripts) or `bringup status` (one look)"
	switch name {
	case "demo":
		instead = "`bringup watch --demo` (the same story as lines)"
	case "replay":
		instead = "`bringup watch --replay FILE` (the recording as lines)"
	}
	cmd := "bringup"
	if name != "" {
		cmd += " " + name
	}
	return fmt.Errorf("%s: no terminal (%s: not a terminal); the console needs one on standard input and output. Without a terminal use %s; over ssh, use ssh -t",
		cmd, strings.Join(missing, ", "), instead)
}
