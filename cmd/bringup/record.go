package main

import (
	"context"
	"fmt"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/console"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/record"
	"github.com/bringup-dev/bringup/ui"
	"github.com/bringup-dev/bringup/ui/notify"
)

// recordFlag is --record FILE: every event the fleet receives goes to a
// recording that `bringup replay` plays back; --record-env keeps secrets.
type recordFlag struct {
	path    string
	keepEnv bool
	rec     *record.Recorder
}

func (r *recordFlag) register(fs *cli.Flags) {
	fs.StringVar(&r.path, "record", "", "record every event to `FILE` (JSON lines), to play back with bringup replay FILE")
	fs.BoolVar(&r.keepEnv, "record-env", false, "with --record: keep the units' Environment values (secrets); default: only the kernels' and PYTHONPATH")
}

// start wraps the drivers in specs so that their events are recorded. It
// does nothing on a nil recordFlag or without --record.
func (r *recordFlag) start(specs []fleet.HostSpec, opts fleet.Options, speed float64, source string) error {
	if r == nil || r.path == "" {
		return nil
	}
	rec, err := record.Start(r.path, specs, opts, speed, source, r.keepEnv)
	if err != nil {
		return fmt.Errorf("--record: %w", err)
	}
	r.rec = rec
	return nil
}

// finish closes the recording, once the fleet has stopped, and says where it went.
func (r *recordFlag) finish(e env) {
	if r == nil || r.rec == nil {
		return
	}
	if err := r.rec.Close(); err != nil {
		fmt.Fprintf(e.stderr, "bringup: recording incomplete: %v\n", err)
		return
	}
	fmt.Fprintf(e.stderr, "bringup: recorded %d events to %s (bringup replay %s)\n", r.rec.Count(), r.path, r.path)
	r.rec = nil
}

// abort closes a recording whose fleet never started.
func (r *recordFlag) abort() {
	if r == nil || r.rec == nil {
		return
	}
	_ = r.rec.Close() // the fleet's error is the one to report
	r.rec = nil
}

// titleNote is what the console's title says about the recording.
func (r *recordFlag) titleNote() string {
	if r == nil || r.path == "" {
		return ""
	}
	return " · ● rec"
}

// loadReplay loads a recording and builds a read-only fleet that plays it
// at speed (0: as recorded); a cut last line is left out, with a warning.
func loadReplay(e env, name, path string, speed float64) (*fleet.Fleet, *record.Recording, *record.Clock, error) {
	if speed < 0 {
		return nil, nil, nil, fmt.Errorf("--speed %v: must be greater than 0", speed)
	}
	rec, err := record.Load(path)
	if err != nil {
		return nil, nil, nil, err
	}
	if rec.Truncated {
		fmt.Fprintf(e.stderr, "bringup %s: %s: the last line was cut short (recording killed while writing); it is left out\n", name, rec.Path)
	}
	specs, clock := rec.Play(speed, nil)
	f, err := fleet.New(specs, fleet.Options{Kernels: rec.Kernels, ReadOnly: true, Clock: clock,
		Observers: []fleet.Observer{fleet.KernelCheck()}})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, rec, clock, nil
}

// runReplay is `bringup replay FILE`: the console over a recording.
func runReplay(ctx context.Context, e env, args []string) int {
	fs := cli.NewFlags(e.stdout, e.stderr, "replay", "bringup replay [--speed N] FILE")
	quiet := quietFlag(fs)
	speed := fs.Speed("speed", 0, "host seconds per real second (`N`) (default: the speed it was recorded at)")
	if code, stop := cli.ParseArgs(fs, args); stop {
		return code
	}
	if fs.NArg() != 1 {
		return fs.Usagef("want one recording file (made with --record FILE)")
	}
	replayed, rec, clock, err := loadReplay(e, "replay", fs.Arg(0), *speed)
	if err != nil {
		return e.fail("replay", "%v", err)
	}
	title := fmt.Sprintf("bringup replay · %s", rec.Path)
	if rec.Source != "" {
		title += " · " + rec.Source
	}
	// The speed is in the position: p, > and < change it as it plays.
	return runTUI(ctx, e, "replay", replayed, nil, ui.Options{Title: title, Kernels: rec.Kernels, Now: clock.Now,
		Position: clock.Position, Replay: clock, Signals: console.Signals(notify.Defaults(), *quiet)})
}

var _ ui.Replay = (*record.Clock)(nil)
