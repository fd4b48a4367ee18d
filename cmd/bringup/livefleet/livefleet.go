// Package livefleet builds the fleet over real hosts from the config:
// each host's SSH target resolved and its keys loaded, the log store
// reached (through its tunnel, source.via, when it has one), the hosts
// the store names when the config lists none. Passphrases are asked on
// the writer handed in, before any console takes the screen.
package livefleet

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/config"
	"github.com/bringup-dev/bringup/kernels/bundle"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/doctor"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/live"
	"github.com/bringup-dev/bringup/remote/probe"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/startup"
	"github.com/bringup-dev/bringup/remote/vlogs"
)

// Target is the config's host h as the live package takes it: its
// identity as it is, with its SSH target and probe.
func Target(h config.Host) live.Target {
	return live.Target{Host: h.Host, SSH: live.SSHTarget(h.Target()),
		Probe: probe.Options{Addr: h.Probe.Addr(), Path: h.Probe.Path, Completion: h.Probe.Completion}}
}

// Resolve resolves the hosts and loads their keys, asking for passphrases
// on prompt now. The returned func releases the keys.
func Resolve(ctx context.Context, prompt io.Writer, cfg *config.Config, hosts []config.Host) ([]live.Options, func(), error) {
	targets := make([]live.Target, len(hosts))
	for i, h := range hosts {
		targets[i] = Target(h)
	}
	return live.Resolve(ctx, targets, cfg.SSHConfig, sshx.TerminalPassphrase(prompt))
}

// ResolveVia resolves the config's source.via, the SSH host the store is
// reached through, as the fleet's hosts are resolved (ssh_config, keys,
// passphrases asked now), and returns its tunnel; nil without via. The
// returned func releases its keys.
func ResolveVia(ctx context.Context, prompt io.Writer, cfg *config.Config) (*live.Tunnel, func(), error) {
	if !cfg.Source.Spec().TakesVia || cfg.Source.Via == "" {
		return nil, func() {}, nil
	}
	t := config.Host{Host: remote.Host{Name: cfg.Source.Via}, SSH: cfg.Source.Via}
	rs, release, err := live.Resolve(ctx, []live.Target{{Host: t.Host, SSH: live.SSHTarget(t.Target())}},
		cfg.SSHConfig, sshx.TerminalPassphrase(prompt))
	if err != nil {
		return nil, nil, fmt.Errorf("source.via: %w", err)
	}
	return live.NewTunnel(rs[0]), release, nil
}

// StoreOptions are the source's options for the config's store: its URL
// and the tunnel to it, if any.
func StoreOptions(cfg *config.Config, via *live.Tunnel, unit string) vlogs.Options {
	o := vlogs.Options{URL: cfg.Source.URL, Unit: unit}
	if via != nil {
		o.Via = via
	}
	return o
}

// storeSpecs are the fleet's hosts read from a VictoriaLogs store (so):
// one tail stream for them all (they must share one unit), each host's
// actions, open view (probe, GPU samples) and unit properties over SSH,
// opened for them and closed when idle (live.OnDemand).
func storeSpecs(so vlogs.Options, hosts []live.Options, opts fleet.Options) ([]fleet.HostSpec, error) {
	if len(hosts) == 0 {
		return nil, nil
	}
	unit := hosts[0].Unit
	for _, h := range hosts {
		if h.Unit != unit {
			return nil, fmt.Errorf("source victorialogs: every host must run one unit (%s runs %s, %s runs %s); use -u or --source ssh", hosts[0].Name, unit, h.Name, h.Unit)
		}
	}
	so.Unit = unit
	src, err := vlogs.New(so)
	if err != nil {
		return nil, fmt.Errorf("source victorialogs: %w", err)
	}
	specs := make([]fleet.HostSpec, len(hosts))
	for i, o := range hosts {
		o.Kernels = opts.Kernels
		specs[i] = fleet.HostSpec{Driver: src.Host(o.Name, live.NewOnDemand(o, 0)), Unit: o.Unit, Engine: o.Engine}
	}
	return specs, nil
}

// sourceIO is the IO of one kind of source (config.SourceKind says the
// rest): how the fleet's hosts are built over it, and what doctor checks
// of it.
type sourceIO struct {
	// specs are the fleet's host specs over the resolved hosts; via is
	// the tunnel to the source, nil for none.
	specs func(cfg *config.Config, hosts []live.Options, via *live.Tunnel, opts fleet.Options) ([]fleet.HostSpec, error)
	// discover adds to cfg the hosts the source names, for a kind whose
	// hosts come from it (config.SourceKind.HostsFromIt); nil otherwise.
	discover func(ctx context.Context, notes io.Writer, cfg *config.Config, via *live.Tunnel) error
	// survey is doctor's one look at the source for every host; nil:
	// doctor checks each host alone.
	survey func(ctx context.Context, cfg *config.Config, hosts []config.Host, timeout time.Duration, tunnel func() (*live.Tunnel, error)) *doctor.StoreSurvey
}

// sourceIOs is the IO of each kind of config.SourceKinds, by name.
var sourceIOs = map[string]sourceIO{
	// One SSH connection per host carries its journal, unit state,
	// samples and actions.
	config.SourceSSH: {
		specs: func(_ *config.Config, hosts []live.Options, _ *live.Tunnel, opts fleet.Options) ([]fleet.HostSpec, error) {
			return live.Specs(hosts, opts), nil
		},
	},
	// One tail of the store for every host; each host's SSH opens on
	// demand (actions, the open view) and closes when idle.
	config.SourceVictoriaLogs: {
		specs: func(cfg *config.Config, hosts []live.Options, via *live.Tunnel, opts fleet.Options) ([]fleet.HostSpec, error) {
			return storeSpecs(StoreOptions(cfg, via, ""), hosts, opts)
		},
		discover: storeDiscover,
		survey:   StoreSurvey,
	},
}

// sourceOf is the IO of cfg's kind of source.
func sourceOf(cfg *config.Config) (sourceIO, error) {
	k := cfg.Source.Spec()
	src, ok := sourceIOs[k.Name]
	if !ok {
		return sourceIO{}, fmt.Errorf("source %s: no way to read it", k.Name)
	}
	return src, nil
}

// Survey is doctor's one look at cfg's source for every host (a log
// store's arrivals), or nil when the kind has none. tunnel is the way to
// the source (nil for none), resolved only when it is looked at.
func Survey(ctx context.Context, cfg *config.Config, hosts []config.Host, timeout time.Duration, tunnel func() (*live.Tunnel, error)) (*doctor.StoreSurvey, error) {
	src, err := sourceOf(cfg)
	if err != nil || src.survey == nil {
		return nil, err
	}
	return src.survey(ctx, cfg, hosts, timeout, tunnel), nil
}

// New builds the fleet over real hosts (resolved by Resolve); via is the
// tunnel to the log store (ResolveVia), nil for none; hist is the startup
// history, nil for none. record, if not nil, is handed the hosts' drivers
// before the fleet is made, to wrap them.
func New(cfg *config.Config, hosts []live.Options, via *live.Tunnel, hist fleet.HistoryStore, record func([]fleet.HostSpec, fleet.Options) error) (*fleet.Fleet, error) {
	opts := fleet.Options{Kernels: cfg.Kernels, ReadOnly: cfg.ReadOnly,
		LocalHashes: bundle.LocalHashes(cfg.Kernels), SlowerBy: cfg.ThroughputDrop,
		Observers: []fleet.Observer{fleet.KernelCheck()}}
	if hist != nil {
		opts = opts.WithHistory(hist)
	}
	if len(cfg.Rules) > 0 {
		packs, err := startup.CompilePacks(startup.WithBuiltins(cfg.Rules))
		if err != nil { // ParsePacks compiled each one already
			return nil, fmt.Errorf("rule packs: %w", err)
		}
		opts.Packs = packs
	}
	src, err := sourceOf(cfg)
	if err != nil {
		return nil, err
	}
	specs, err := src.specs(cfg, hosts, via, opts)
	if err != nil {
		return nil, err
	}
	if record != nil {
		if err := record(specs, opts); err != nil {
			return nil, err
		}
	}
	return fleet.New(specs, opts)
}

// discoverTimeout bounds the store's answer to Discover.
const discoverTimeout = 30 * time.Second

// Discover adds to cfg the hosts its source names (via is the tunnel to
// it, nil for none), each with the config's defaults, and says which on
// notes; an error for a kind whose hosts do not come from it.
func Discover(ctx context.Context, notes io.Writer, cfg *config.Config, via *live.Tunnel) error {
	src, err := sourceOf(cfg)
	if err != nil {
		return err
	}
	if src.discover == nil {
		return fmt.Errorf("source %s names no hosts: list hosts: in the config", cfg.Source.Spec().Name)
	}
	return src.discover(ctx, notes, cfg, via)
}

// storeDiscover adds to cfg the hosts the store (reached through via, nil
// for none) has entries of the unit from (vlogs.DefaultDiscoverWindow),
// each with the config's defaults, and says which on notes.
func storeDiscover(ctx context.Context, notes io.Writer, cfg *config.Config, via *live.Tunnel) error {
	src, err := vlogs.New(StoreOptions(cfg, via, cfg.Defaults.Unit))
	if err != nil {
		return fmt.Errorf("source victorialogs: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, discoverTimeout)
	defer cancel()
	d, err := src.Discover(ctx, 0)
	if err != nil {
		return fmt.Errorf("no hosts configured: %w", err)
	}
	if len(d.Refused) > 0 {
		fmt.Fprintf(notes, "bringup: the log store names hosts that are not host names, left out: %s\n", strings.Join(d.Refused, ", "))
	}
	if len(d.Hosts) == 0 {
		return fmt.Errorf("no hosts configured, and the log store at %s has no entry of %s from the last %s: list hosts: in the config, or check the uploads (bringup doctor -H HOST)",
			cfg.Source.URL, cfg.Defaults.Unit, vlogs.DefaultDiscoverWindow)
	}
	fmt.Fprintf(notes, "bringup: %d hosts from the log store (%s in the last %s): %s\n", len(d.Hosts), cfg.Defaults.Unit, vlogs.DefaultDiscoverWindow, strings.Join(d.Hosts, ", "))
	return cfg.AddHosts(d.Hosts)
}

// StoreSurvey looks once at the log store for every host: the store's
// checks on each host's doctor report come from it. tunnel is the way to
// the store (nil for none), resolved only now.
func StoreSurvey(ctx context.Context, cfg *config.Config, hosts []config.Host, timeout time.Duration, tunnel func() (*live.Tunnel, error)) *doctor.StoreSurvey {
	s := &doctor.StoreSurvey{URL: cfg.Source.URL, LookBack: 24 * time.Hour, At: time.Now()}
	unit := config.DefaultUnit
	names := make([]string, len(hosts))
	for i, h := range hosts {
		names[i], unit = h.Name, h.Unit
	}
	via, err := tunnel()
	if err != nil {
		s.Err = err
		return s
	}
	src, err := vlogs.New(StoreOptions(cfg, via, unit))
	if err != nil {
		s.Err = err
		return s
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s.Arrivals, s.Err = src.Survey(ctx, names, s.LookBack)
	return s
}
