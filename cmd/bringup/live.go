package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/config"
	"github.com/bringup-dev/bringup/kernels/bundle"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/history/store"
	"github.com/bringup-dev/bringup/remote/live"
	"github.com/bringup-dev/bringup/remote/probe"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/startup"
	"github.com/bringup-dev/bringup/remote/vlogs"
)

// fleetFlags are the flags of every command that talks to real hosts.
type fleetFlags struct {
	config.Flags
	history string // --history FILE, or "off"

	// cfg is the config load read, once per command; groups are its
	// groups cut down to the hosts selected (the console's palette
	// resolves group names with them, and the table groups by them);
	// labels are the selected hosts' labels, by host.
	cfg    *config.Config
	groups map[string][]string
	labels map[string]map[string]string
	// via is the tunnel to the log store (source.via), resolved once per
	// command (tunnel); viaSet says it was; viaClose releases its keys.
	via      *live.Tunnel
	viaSet   bool
	viaClose func()
}

// tunnel resolves source.via once per command: nil without one.
func (f *fleetFlags) tunnel(ctx context.Context, e env, cfg *config.Config) (*live.Tunnel, error) {
	if !f.viaSet {
		t, release, err := resolveVia(ctx, e, cfg)
		if err != nil {
			return nil, err
		}
		f.via, f.viaClose, f.viaSet = t, release, true
	}
	return f.via, nil
}

// releaseTunnel releases the tunnel's keys, if any were loaded.
func (f *fleetFlags) releaseTunnel() {
	if f.viaClose != nil {
		f.viaClose()
		f.viaClose = nil
	}
}

func (f *fleetFlags) register(fs *cli.Flags) {
	f.Register(fs.FlagSet)
	fs.StringVar(&f.history, "history", "", "the startup history `FILE` for ETAs (default $XDG_STATE_HOME/bringup/history.jsonl; \"off\" = none)")
}

// openHistory opens the startup history the flags name; a history that
// cannot be opened is a warning, not a reason to refuse to watch.
func (f *fleetFlags) openHistory(e env) fleet.HistorySink {
	sink, warning, err := store.OpenSink(f.history, e.getenv)
	if warning != "" {
		fmt.Fprintf(e.stderr, "bringup: %s\n", warning)
	}
	if err != nil || sink == nil { // a nil *Sink is not a nil HistorySink
		if err != nil {
			fmt.Fprintf(e.stderr, "bringup: no startup history (ETAs off): %v\n", err)
		}
		return nil
	}
	return sink
}

// load reads the configuration the flags name (the file once per command)
// and selects the hosts named in args (host or group names; none = all).
// A config read from a log store that lists no hosts gets the store's
// (discover).
func (f *fleetFlags) load(ctx context.Context, e env, args []string) (*config.Config, []config.Host, error) {
	if f.cfg == nil {
		cfg, _, err := f.Open(e.getenv, nil)
		if err != nil {
			return nil, nil, err
		}
		if len(cfg.Hosts) == 0 && cfg.Source.Store() {
			if err := f.discover(ctx, e, cfg); err != nil {
				return nil, nil, err
			}
		}
		f.cfg = cfg
	}
	hosts, err := f.cfg.Select(args)
	if err == nil {
		f.groups = f.cfg.GroupsOf(hosts)
		f.labels = config.LabelsOf(hosts)
	}
	return f.cfg, hosts, err
}

// discoverTimeout bounds the store's answer to discover.
const discoverTimeout = 30 * time.Second

// discover adds to cfg the hosts the store has entries of the unit from
// (vlogs.DefaultDiscoverWindow), each with the config's defaults.
func (f *fleetFlags) discover(ctx context.Context, e env, cfg *config.Config) error {
	via, err := f.tunnel(ctx, e, cfg)
	if err != nil {
		return err
	}
	src, err := vlogs.New(storeOptions(cfg, via, cfg.Defaults.Unit))
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
		fmt.Fprintf(e.stderr, "bringup: the log store names hosts that are not host names, left out: %s\n", strings.Join(d.Refused, ", "))
	}
	if len(d.Hosts) == 0 {
		return fmt.Errorf("no hosts configured, and the log store at %s has no entry of %s from the last %s: list hosts: in the config, or check the uploads (bringup doctor -H HOST)",
			cfg.Source.URL, cfg.Defaults.Unit, vlogs.DefaultDiscoverWindow)
	}
	fmt.Fprintf(e.stderr, "bringup: %d hosts from the log store (%s in the last %s): %s\n", len(d.Hosts), cfg.Defaults.Unit, vlogs.DefaultDiscoverWindow, strings.Join(d.Hosts, ", "))
	return cfg.AddHosts(d.Hosts)
}

// target is the config's host h as the live package takes it.
func target(h config.Host) live.Target {
	t := h.Target()
	return live.Target{Name: h.Name, Host: t.Host, HostName: t.HostName, User: t.User, Port: t.Port, Unit: h.Unit, Engine: h.Engine,
		Probe: probe.Options{Addr: h.Probe.Addr(), Path: h.Probe.Path, Completion: h.Probe.Completion}}
}

// resolve resolves the hosts and loads their keys, asking for passphrases
// on the terminal now, before any TUI takes the screen.
func resolve(ctx context.Context, e env, cfg *config.Config, hosts []config.Host) ([]live.Options, func(), error) {
	targets := make([]live.Target, len(hosts))
	for i, h := range hosts {
		targets[i] = target(h)
	}
	return live.Resolve(ctx, targets, cfg.SSHConfig, sshx.TerminalPassphrase(e.stderr))
}

// resolveVia resolves the config's source.via, the SSH host the store is
// reached through, as the fleet's hosts are resolved (ssh_config, keys,
// passphrases asked now), and returns its tunnel; nil without via. The
// returned func releases its keys.
func resolveVia(ctx context.Context, e env, cfg *config.Config) (*live.Tunnel, func(), error) {
	if !cfg.Source.Store() || cfg.Source.Via == "" {
		return nil, func() {}, nil
	}
	t := config.Host{Name: cfg.Source.Via, SSH: cfg.Source.Via}.Target()
	rs, release, err := live.Resolve(ctx, []live.Target{{Name: cfg.Source.Via, Host: t.Host, HostName: t.HostName, User: t.User, Port: t.Port}},
		cfg.SSHConfig, sshx.TerminalPassphrase(e.stderr))
	if err != nil {
		return nil, nil, fmt.Errorf("source.via: %w", err)
	}
	return live.NewTunnel(rs[0]), release, nil
}

// storeOptions are the source's options for the config's store: its URL
// and the tunnel to it, if any.
func storeOptions(cfg *config.Config, via *live.Tunnel, unit string) vlogs.Options {
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

// liveFleet builds the fleet over real hosts; via is the tunnel to the
// log store (resolveVia), nil for none.
func liveFleet(cfg *config.Config, hosts []live.Options, via *live.Tunnel, hist fleet.HistorySink, rec *recordFlag) (*fleet.Fleet, error) {
	opts := fleet.Options{Kernels: cfg.Kernels, ReadOnly: cfg.ReadOnly, History: hist,
		LocalHashes: bundle.LocalHashes(cfg.Kernels), SlowerBy: cfg.ThroughputDrop}
	if len(cfg.Rules) > 0 {
		packs, err := startup.CompilePacks(startup.WithBuiltins(cfg.Rules))
		if err != nil { // ParsePacks compiled each one already
			return nil, fmt.Errorf("rule packs: %w", err)
		}
		opts.Packs = packs
	}
	specs := live.Specs(hosts, opts)
	if cfg.Source.Store() {
		var err error
		if specs, err = storeSpecs(storeOptions(cfg, via, ""), hosts, opts); err != nil {
			return nil, err
		}
	}
	if err := rec.start(specs, opts, 1, "live"); err != nil {
		return nil, err
	}
	f, err := fleet.New(specs, opts)
	if err != nil {
		rec.abort()
		return nil, err
	}
	return f, nil
}
