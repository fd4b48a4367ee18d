package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/console"
	"github.com/bringup-dev/bringup/cmd/bringup/drive"
	"github.com/bringup-dev/bringup/cmd/bringup/livefleet"
	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/sim"
	"github.com/bringup-dev/bringup/ui"
	"github.com/bringup-dev/bringup/ui/notify"
)

// simFlags are the flags every command that can run over the simulated
// fleet shares.
type simFlags struct {
	speed    float64
	scenario string
}

func (s *simFlags) register(fs *cli.Flags) {
	fs.SpeedVar(&s.speed, "speed", sim.DefaultSpeed, "`N` simulated seconds per real second")
	fs.StringVar(&s.scenario, "scenario", sim.DefaultScenario, "the simulated `SCENARIO`: "+strings.Join(sim.Scenarios(), ", "))
}

// simFleet builds the fleet over the simulated hosts and returns it with
// the simulation's clock (host time); rec, if not nil, records it.
func (s simFlags) simFleet(readOnly bool, rec *recordFlag) (*fleet.Fleet, sim.Clock, error) {
	f, clock, err := sim.DemoFleet(s.scenario, s.speed, readOnly, func(specs []fleet.HostSpec, opts fleet.Options) error {
		return rec.start(specs, opts, s.speed, "demo "+s.scenario)
	})
	if err != nil {
		rec.abort()
	}
	return f, clock, err
}

// openFleet is the simulated fleet with demo, else ff's (the func releases its keys).
func (s simFlags) openFleet(ctx context.Context, e env, ff *fleetFlags, demo bool, names []string) (*fleet.Fleet, func(), error) {
	if demo {
		f, _, err := s.simFleet(true, nil)
		return f, func() {}, err
	}
	return openLiveFleet(ctx, e, ff, names, nil)
}

func runDemo(ctx context.Context, e env, args []string) int {
	fs := cli.NewFlags(e.stdout, e.stderr, "demo", "bringup demo [--speed N] [--scenario seed|mixed|all-ok|crashloop|multinode] [--read-only] [--record FILE] [--quiet]")
	var s simFlags
	s.register(fs)
	var rec recordFlag
	rec.register(fs)
	readOnly := fs.Bool("read-only", false, "refuse every action that would change a host")
	quiet := quietFlag(fs)
	if code, stop := cli.Parse(fs, args); stop {
		return code
	}
	simulated, clock, err := s.simFleet(*readOnly, &rec)
	if err != nil {
		return e.fail("demo", "%v", err)
	}
	return runTUI(ctx, e, "demo", simulated, &rec, ui.Options{Title: fmt.Sprintf("bringup demo · %s ×%g", s.scenario, s.speed),
		Kernels: kernels.DefaultCatalog(), Now: clock.Now, Groups: sim.Groups(s.scenario), Signals: console.Signals(notify.Defaults(), *quiet)})
}

func runWatchCmd(ctx context.Context, e env, args []string) int {
	fs := cli.NewFlags(e.stdout, e.stderr, "watch", "bringup watch [--json] [--timeout D] [--allow-restarts N] [--record FILE] [-H hosts | --config F] [HOST|GROUP...]\n       bringup watch --demo [--json] [--speed N] [--scenario S] [--record FILE]\n       bringup watch --replay FILE [--json] [--speed N]")
	var s simFlags
	s.register(fs)
	var ff fleetFlags
	ff.register(fs)
	var rec recordFlag
	rec.register(fs)
	demo := fs.Bool("demo", false, "watch the simulated fleet (no hosts needed)")
	replay := fs.String("replay", "", "watch the recording `FILE` made with --record (at the speed it was recorded, or --speed)")
	asJSON := fs.Bool("json", false, "print one JSON object per line")
	timeout := fs.Duration("timeout", 0, "give up after `D` (exit 2), e.g. 20m; 0 waits for ever")
	allowRestarts := fs.Int("allow-restarts", 0, "let systemd restart a host's failed unit `N` times before the host counts failed (0: its first failed run fails it)")
	if code, stop := cli.ParseArgs(fs, args); stop {
		return code
	}
	if *allowRestarts < 0 {
		return e.fail("watch", "--allow-restarts %d: must be 0 or more", *allowRestarts)
	}
	var watched *fleet.Fleet
	switch {
	case *demo && *replay != "":
		return e.fail("watch", "--demo or --replay, not both")
	case (*demo || *replay != "") && fs.NArg() > 0:
		return e.fail("watch", "--demo and --replay take no host names (got %q)", fs.Arg(0))
	case *replay != "":
		speed := 0.0 // as recorded
		if fs.Changed("speed") {
			if s.speed <= 0 {
				return e.fail("watch", "--speed %v: must be greater than 0", s.speed)
			}
			speed = s.speed
		}
		f, _, clock, err := loadReplay(e, "watch", *replay, speed)
		if err != nil {
			return e.fail("watch", "%v", err)
		}
		watched = f
		var endOfRecording context.CancelFunc // the watch ends where the recording does
		ctx, endOfRecording = clock.EndContext(ctx)
		defer endOfRecording()
	case *demo:
		f, _, err := s.simFleet(true, &rec)
		if err != nil {
			return e.fail("watch", "%v", err)
		}
		watched = f
	default:
		ff.ReadOnly = true // watching never changes a host
		f, closeKeys, err := openLiveFleet(ctx, e, &ff, fs.Args(), &rec)
		if err != nil {
			return e.interruptedOr(ctx, "watch", "%v", err)
		}
		defer closeKeys()
		watched = f
	}
	fl, stop := drive.Follow(ctx, e.stderr, "watch", watched)
	code := drive.Watch(ctx, fl, e.stdout, drive.WatchOptions{JSON: *asJSON, Timeout: *timeout, AllowRestarts: *allowRestarts, Deployments: ff.cfg.DeclaredDeployments()})
	stop()
	rec.finish(e) // what a host still sends after this is not recorded
	return code
}

// openLiveFleet loads the configuration, resolves the hosts and loads
// their keys, and builds the fleet. The returned func releases the keys.
func openLiveFleet(ctx context.Context, e env, ff *fleetFlags, names []string, rec *recordFlag) (*fleet.Fleet, func(), error) {
	cfg, hosts, err := ff.load(ctx, e, names)
	if err != nil {
		return nil, nil, err
	}
	rs, closeKeys, err := livefleet.Resolve(ctx, e.stderr, cfg, hosts)
	if err != nil {
		return nil, nil, err
	}
	via, err := ff.tunnel(ctx, e, cfg)
	if err != nil {
		closeKeys()
		return nil, nil, err
	}
	release := func() { ff.releaseTunnel(); closeKeys() }
	f, err := livefleet.New(cfg, rs, via, ff.openHistory(e), func(specs []fleet.HostSpec, opts fleet.Options) error {
		return rec.start(specs, opts, 1, "live")
	})
	if err != nil {
		rec.abort()
		release()
		return nil, nil, err
	}
	return f, release, nil
}

// runConsole is `bringup [flags] [HOST|GROUP...]`: the console over real hosts.
func runConsole(ctx context.Context, e env, args []string) int {
	fs := cli.NewFlags(e.stdout, e.stderr, "bringup", "bringup [-H hosts | --config F] [--read-only] [--record FILE] [--quiet] [HOST|GROUP...]")
	var ff fleetFlags
	ff.register(fs)
	var rec recordFlag
	rec.register(fs)
	quiet := quietFlag(fs)
	if code, stop := cli.ParseArgs(fs, args); stop {
		return code
	}
	if err := console.NeedTerminal(e.stdin, e.stdout, ""); err != nil { // before any passphrase is asked
		fmt.Fprintf(e.stderr, "%v\n", err)
		return exitUsage
	}
	theFleet, closeKeys, err := openLiveFleet(ctx, e, &ff, fs.Args(), &rec)
	if err != nil {
		fmt.Fprintf(e.stderr, "bringup: %v\n", err)
		return exitUsage
	}
	defer closeKeys()
	title := "bringup · " + strings.Join(theFleet.Hosts(), ",")
	if t := ff.cfg.Source.Spec().Title; t != "" {
		// The header says where the journals and unit states come from.
		title += " · " + t
	}
	return runTUI(ctx, e, "", theFleet, &rec, ui.Options{Title: title, Groups: ff.groups, Labels: ff.labels, Deployments: ff.cfg.Deployments,
		Signals: console.Signals(ff.cfg.Notify, *quiet)})
}

// runTUI runs the console over a fleet until the user quits, then closes
// its recording (rec, if any). The title says read-only and recording.
// name is the command, for the message when there is no terminal.
func runTUI(ctx context.Context, e env, name string, theFleet *fleet.Fleet, rec *recordFlag, opts ui.Options) int {
	if err := console.NeedTerminal(e.stdin, e.stdout, name); err != nil {
		rec.abort() // nothing was watched: no recording to keep
		fmt.Fprintf(e.stderr, "%v\n", err)
		return exitUsage
	}
	defer rec.finish(e)
	if theFleet.ReadOnly() && opts.Replay == nil {
		opts.Title += " · read-only"
	}
	opts.Title += rec.titleNote()
	opts.NoColor = e.getenv("NO_COLOR") != ""
	opts.Tmux = e.getenv("TMUX") != "" // tmux sets it in every pane
	return console.Run(ctx, e.stdout, e.stderr, name, theFleet, opts)
}

// quietFlag registers --quiet on a console command.
func quietFlag(fs *cli.Flags) *bool {
	return fs.BoolP("quiet", "q", false, "no bell, no counts in the window title, no progress bar, no desktop notification (see notify: in the config)")
}
