package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"bringup/kernels"
	"bringup/remote"
	"bringup/remote/sim"
	"bringup/ui"
)

// simFlags are the flags every command that can run over the simulated
// fleet shares.
type simFlags struct {
	speed    float64
	scenario string
}

func (s *simFlags) register(fs *flag.FlagSet) {
	fs.Float64Var(&s.speed, "speed", sim.DefaultSpeed, "simulated seconds per real second")
	fs.StringVar(&s.scenario, "scenario", sim.DefaultScenario, "simulated scenario: "+strings.Join(sim.Scenarios(), ", "))
}

// simFleet builds a fleet over the simulated hosts and returns it with the
// simulation's clock (host time).
func (s simFlags) simFleet(readOnly bool) (*remote.Fleet, sim.Clock, error) {
	if s.speed <= 0 {
		return nil, nil, fmt.Errorf("--speed %v: must be greater than 0", s.speed)
	}
	cat := kernels.DefaultCatalog()
	drivers, clock, err := sim.NewFleet(s.scenario, sim.Options{Speed: s.speed, Kernels: cat})
	if err != nil {
		return nil, nil, fmt.Errorf("--scenario: %w", err)
	}
	specs := make([]remote.HostSpec, len(drivers))
	for i, d := range drivers {
		specs[i] = remote.HostSpec{Driver: d, Unit: "sglang.service", Engine: "sglang"}
	}
	f, err := remote.NewFleet(specs, remote.Options{Kernels: cat, ReadOnly: readOnly, Clock: clock})
	if err != nil {
		return nil, nil, err
	}
	return f, clock, nil
}

func runDemo(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "demo", "bringup demo [--speed N] [--scenario seed] [--read-only]")
	var s simFlags
	s.register(fs)
	readOnly := fs.Bool("read-only", false, "refuse every action that would change a host")
	if code, stop := parse(fs, args); stop {
		return code
	}
	fleet, clock, err := s.simFleet(*readOnly)
	if err != nil {
		fmt.Fprintf(e.stderr, "bringup demo: %v\n", err)
		return exitUsage
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- fleet.Run(ctx) }()

	title := fmt.Sprintf("bringup demo · %s ×%g", s.scenario, s.speed)
	if *readOnly {
		title += " · read-only"
	}
	m := ui.New(fleet, ui.Options{
		Title:   title,
		Kernels: kernels.DefaultCatalog(),
		Now:     clock.Now,
		NoColor: e.getenv("NO_COLOR") != "",
	})
	p := tea.NewProgram(m, tea.WithContext(ctx))
	_, runErr := p.Run()
	cancel()
	<-done
	if runErr != nil && ctx.Err() == nil {
		fmt.Fprintf(e.stderr, "bringup demo: %v\n", runErr)
		return 1
	}
	return 0
}

func runWatchCmd(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "watch", "bringup watch --demo [--json] [--timeout D] [--speed N] [--scenario S]")
	var s simFlags
	s.register(fs)
	demo := fs.Bool("demo", false, "watch the simulated fleet (no hosts needed)")
	asJSON := fs.Bool("json", false, "print one JSON object per line")
	timeout := fs.Duration("timeout", 0, "give up after this long (exit 2); 0 waits for ever")
	if code, stop := parse(fs, args); stop {
		return code
	}
	if !*demo {
		fmt.Fprintln(e.stderr, "bringup watch: no hosts configured yet; use --demo for the simulated fleet")
		return exitUsage
	}
	fleet, _, err := s.simFleet(true)
	if err != nil {
		fmt.Fprintf(e.stderr, "bringup watch: %v\n", err)
		return exitUsage
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- fleet.Run(ctx) }()
	code := runWatch(ctx, fleet, e.stdout, watchOptions{JSON: *asJSON, Timeout: *timeout})
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		fmt.Fprintln(e.stderr, "bringup watch: hosts did not stop within 5 s")
	}
	return code
}
