package live

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/probe"
	"github.com/bringup-dev/bringup/remote/sshx"
)

// Target is one configured host before it is resolved: the ssh_config
// name (or address) to dial, what the config overrides, and what to follow.
type Target struct {
	remote.Host
	// SSH is where to connect.
	SSH SSHTarget
	// Probe says what readiness probe to run.
	Probe probe.Options
}

// SSHTarget is where to connect for a host: Host is the ssh_config Host
// to look up; HostName, User and Port, when set, override what ssh_config
// says. It has the config's Target's fields, so one converts to the other.
type SSHTarget struct {
	Host     string
	HostName string
	User     string
	Port     int
}

// Resolve turns each target into the Options of a host ready to dial:
// ssh_config applied (from sshConfig, "" for ~/.ssh/config) and its
// identity files read now, asking for passphrases through ask, before any
// TUI takes the screen (agent keys are asked for at each dial). The hosts
// share one limit of dials through each jump host (sshx.DefaultJumpDials)
// and one reading of known_hosts (sshx.KnownHostsCache).
// The returned func releases what Resolve holds (nothing now; kept for
// callers that defer it).
func Resolve(ctx context.Context, targets []Target, sshConfig string, ask func(file string) ([]byte, error)) ([]Options, func(), error) {
	configs, resolver, err := resolveAll(ctx, targets, sshConfig)
	if err != nil {
		return nil, nil, err
	}
	jumps := sshx.NewJumpLimit(sshx.DefaultJumpDials)
	known := sshx.NewKnownHostsCache()
	out := make([]Options, 0, len(targets))
	for i, t := range targets {
		// One at a time, in the order given: a passphrase prompt names
		// its file on the terminal.
		dial := sshx.DialOptions{Resolve: sshx.ResolveOptions{ConfigFile: sshConfig}, Resolver: resolver, Passphrase: ask, JumpLimit: jumps, KnownHosts: known}
		if dial.Identities, err = sshx.LoadIdentities(configs[i], dial); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", t.Name, err)
		}
		out = append(out, Options{Host: t.Host, SSH: configs[i], Dial: dial, Probe: t.Probe,
			Tail: 2000, FromStart: 2 * time.Hour})
	}
	return out, func() {}, nil
}

// resolveAll is every target's connection configuration, in the
// targets' order, from one reading of ssh_config (sshx.Resolver: its parser
// answers in memory; only a host it cannot evaluate as ssh would runs
// `ssh -G`, resolveWorkers of those at once). The first error in the
// targets' order is returned.
func resolveAll(ctx context.Context, targets []Target, sshConfig string) ([]sshx.Config, *sshx.Resolver, error) {
	r, err := sshx.NewResolver(sshx.ResolveOptions{ConfigFile: sshConfig})
	if err != nil {
		return nil, nil, err
	}
	configs := make([]sshx.Config, len(targets))
	errs := make([]error, len(targets))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(resolveWorkers, len(targets)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				configs[i], errs[i] = resolveTarget(ctx, r, targets[i])
			}
		}()
	}
	for i := range targets {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	return configs, r, nil
}

// resolveWorkers is how many hosts resolve at once: the parser's answers
// take microseconds, but a host it leaves to `ssh -G` is a process start
// (one after another, 256 of them took 1.3-2.1 s).
const resolveWorkers = 8

// ResolveSSH is t's connection configuration: ssh_config's answer for
// t.SSH.Host with the target's own overrides applied.
func ResolveSSH(ctx context.Context, t Target, sshConfig string) (sshx.Config, error) {
	r, err := sshx.NewResolver(sshx.ResolveOptions{ConfigFile: sshConfig})
	if err != nil {
		return sshx.Config{}, fmt.Errorf("%s: %w", t.Name, err)
	}
	return resolveTarget(ctx, r, t)
}

// resolveTarget is ResolveSSH through a Resolver the caller shares.
func resolveTarget(ctx context.Context, r *sshx.Resolver, t Target) (sshx.Config, error) {
	sc, err := r.Resolve(ctx, t.SSH.Host)
	if err != nil {
		return sshx.Config{}, fmt.Errorf("%s: %w", t.Name, err)
	}
	if t.SSH.HostName != "" {
		sc.HostName = t.SSH.HostName
	}
	if t.SSH.User != "" {
		sc.User = t.SSH.User
	}
	if t.SSH.Port != 0 {
		sc.Port = t.SSH.Port
	}
	return sc, nil
}

// Specs are the fleet's host specs over hosts, each with the fleet's
// kernel catalog, all sharing one TableFirst.
func Specs(hosts []Options, opts fleet.Options) []fleet.HostSpec {
	specs := make([]fleet.HostSpec, len(hosts))
	first := NewTableFirst(len(hosts))
	for i, o := range hosts {
		o.Kernels = opts.Kernels
		o.TableFirst = first
		specs[i] = fleet.HostSpec{Driver: New(o), Unit: o.Unit, Engine: o.Engine}
	}
	return specs
}
