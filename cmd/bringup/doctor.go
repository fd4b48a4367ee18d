package main

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/config"
	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote/doctor"
	"github.com/bringup-dev/bringup/remote/live"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/vlogs"
)

func runDoctor(ctx context.Context, e env, args []string) int {
	fs := cli.NewFlags(e.stdout, e.stderr, "doctor", "bringup doctor [--json] [-H hosts | --config F] [--trust HOST [--fingerprint SHA256:…]] [HOST|GROUP...]\n\n"+strings.TrimSpace(output.JSONHelp()))
	var ff fleetFlags
	ff.register(fs)
	trust := fs.String("trust", "", "fetch `HOST`'s key, print its fingerprint and add exactly that key to known_hosts")
	pin := fs.String("fingerprint", "", "with --trust: add the key only if its fingerprint is this `SHA256:…` (ssh-keygen -lf on the host)")
	asJSON := fs.Bool("json", false, "print the checks as JSON lines, then a summary (schema below)")
	timeout := fs.Duration("timeout", 20*time.Second, "time (`D`) allowed for each host's checks")
	if code, stop := cli.ParseArgs(fs, args); stop {
		return code
	}
	names := fs.Args()
	if *trust != "" && *asJSON {
		return e.fail("doctor", "--trust prints a fingerprint for a person to compare: no --json")
	}
	if *trust != "" {
		names = []string{*trust}
	}
	cfg, hosts, err := ff.load(ctx, e, names)
	defer ff.releaseTunnel()
	if err != nil {
		return e.fail("doctor", "%v", err)
	}
	if *trust != "" {
		sc, err := live.ResolveSSH(ctx, target(hosts[0]), cfg.SSHConfig)
		if err == nil {
			err = doctor.Trust(ctx, e.stdout, sc, sshx.DialOptions{Resolve: sshx.ResolveOptions{ConfigFile: cfg.SSHConfig}}, *pin)
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "bringup doctor: trust %s: %v\n", hosts[0].Name, err)
			return 1
		}
		return 0
	}
	rs, closeKeys, err := resolve(ctx, e, cfg, hosts)
	if err != nil {
		return e.fail("doctor", "%v", err)
	}
	defer closeKeys()
	code, outcome := exitServing, "ok"
	var hostsOut []output.HostOutcome
	var survey *doctor.StoreSurvey
	if cfg.Source.Store() {
		survey = storeSurvey(ctx, e, &ff, cfg, hosts, *timeout)
	}
	for _, rep := range eachHost(ctx, rs, *timeout, doctor.Host) {
		if survey != nil {
			doctor.Store(rep, *survey)
		}
		if *asJSON {
			hostsOut = append(hostsOut, output.DoctorJSON(e.stdout, rep))
		} else {
			output.Doctor(e.stdout, rep)
		}
		if rep.Failed() {
			code, outcome = exitFailed, "failed"
		}
		if cli.WasInterrupted(ctx) {
			code, outcome = exitInterrupted, "interrupted"
			break
		}
	}
	if *asJSON {
		output.Summary(e.stdout, "doctor", outcome, code, hostsOut, "")
	}
	return code
}

// storeSurvey looks once at the log store for every host: the store's
// checks on each host's report come from it.
func storeSurvey(ctx context.Context, e env, ff *fleetFlags, cfg *config.Config, hosts []config.Host, timeout time.Duration) *doctor.StoreSurvey {
	s := &doctor.StoreSurvey{URL: cfg.Source.URL, LookBack: 24 * time.Hour, At: time.Now()}
	unit := config.DefaultUnit
	names := make([]string, len(hosts))
	for i, h := range hosts {
		names[i], unit = h.Name, h.Unit
	}
	via, err := ff.tunnel(ctx, e, cfg)
	if err != nil {
		s.Err = err
		return s
	}
	src, err := vlogs.New(storeOptions(cfg, via, unit))
	if err != nil {
		s.Err = err
		return s
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s.Arrivals, s.Err = src.Survey(ctx, names, s.LookBack)
	return s
}

// hostParallel bounds how many hosts doctor and init look at at once.
const hostParallel = 16

// eachHost runs look on every host, up to hostParallel at a time, each
// under its own timeout, and yields the results in the order of rs, each
// as soon as it and those before it are done: a fleet takes the time of
// its slowest hosts, not the sum of them, and the output stays in the
// order given. Breaking out of the loop waits for the looks under way.
func eachHost[T any](ctx context.Context, rs []live.Options, timeout time.Duration, look func(context.Context, live.Options) T) iter.Seq2[live.Options, T] {
	return func(yield func(live.Options, T) bool) {
		out := make([]T, len(rs))
		done := make([]chan struct{}, len(rs))
		slots := make(chan struct{}, hostParallel)
		var wg sync.WaitGroup
		defer wg.Wait()
		for i, r := range rs {
			done[i] = make(chan struct{})
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer close(done[i])
				select {
				case slots <- struct{}{}:
					defer func() { <-slots }()
				case <-ctx.Done(): // still looked at: it says the interruption its own way
				}
				hctx, cancel := context.WithTimeout(ctx, timeout)
				defer cancel()
				out[i] = look(hctx, r)
			}()
		}
		for i, r := range rs {
			<-done[i]
			if !yield(r, out[i]) {
				return
			}
		}
	}
}
