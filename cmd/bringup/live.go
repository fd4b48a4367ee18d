package main

import (
	"context"
	"fmt"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/config"
	"github.com/bringup-dev/bringup/cmd/bringup/livefleet"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/history/store"
	"github.com/bringup-dev/bringup/remote/live"
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
		t, release, err := livefleet.ResolveVia(ctx, e.stderr, cfg)
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
func (f *fleetFlags) openHistory(e env) fleet.HistoryStore {
	sink, warning, err := store.OpenSink(f.history, e.getenv)
	if warning != "" {
		fmt.Fprintf(e.stderr, "bringup: %s\n", warning)
	}
	if err != nil || sink == nil { // a nil *Sink is not a nil HistoryStore
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
		// A config that is a FIFO or on a hung mount must not hold the
		// command past ctrl-c.
		cfg, err := cli.Until(ctx, func() (*config.Config, error) {
			cfg, _, err := f.Open(e.getenv, nil)
			return cfg, err
		})
		if err != nil {
			return nil, nil, err
		}
		if len(cfg.Hosts) == 0 && cfg.Source.Spec().HostsFromIt {
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

// discover adds to cfg the hosts the log store has entries of the unit
// from (livefleet.Discover).
func (f *fleetFlags) discover(ctx context.Context, e env, cfg *config.Config) error {
	via, err := f.tunnel(ctx, e, cfg)
	if err != nil {
		return err
	}
	return livefleet.Discover(ctx, e.stderr, cfg, via)
}
