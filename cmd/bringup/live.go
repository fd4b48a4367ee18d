package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"

	"golang.org/x/term"

	"bringup/cmd/bringup/config"
	"bringup/kernels"
	"bringup/kernels/deploy"
	"bringup/remote"
	"bringup/remote/history"
	"bringup/remote/live"
	"bringup/remote/probe"
	"bringup/remote/startup"
)

// fleetFlags are the flags of every command that talks to real hosts.
type fleetFlags struct {
	configPath string
	hosts      string // -H gpu1,gpu2
	unit       string // -u sglang.service
	readOnly   bool
	sshConfig  string // -F, like ssh
	history    string // --history FILE, or "off"

	// groups is what load found: the config's groups, each cut down to the
	// hosts selected (the console's palette resolves group names with it).
	groups map[string][]string
}

func (f *fleetFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.configPath, "config", "", "config file (default $XDG_CONFIG_HOME/bringup/config.yaml)")
	fs.StringVar(&f.hosts, "H", "", "hosts, comma-separated: ssh_config aliases or [user@]host[:port] (instead of a config file)")
	fs.StringVar(&f.unit, "u", "", "the unit to watch with -H (default sglang.service)")
	fs.BoolVar(&f.readOnly, "read-only", false, "refuse every action that would change a host")
	fs.StringVar(&f.sshConfig, "F", "", "ssh_config file (like ssh -F); default the config's ssh_config, else ~/.ssh/config")
	fs.StringVar(&f.history, "history", "", `startup history for ETAs (default $XDG_STATE_HOME/bringup/history.jsonl; "off" = none)`)
}

// openHistory opens the startup history the flags name; a history that
// cannot be opened is a warning, not a reason to refuse to watch.
func (f *fleetFlags) openHistory(e env) remote.HistorySink {
	if f.history == "off" {
		return nil
	}
	path := f.history
	if path == "" {
		p, err := history.DefaultPath(e.getenv)
		if err != nil {
			fmt.Fprintf(e.stderr, "bringup: no startup history (ETAs off): %v\n", err)
			return nil
		}
		path = p
	}
	store, err := history.Open(path)
	if err != nil {
		fmt.Fprintf(e.stderr, "bringup: no startup history (ETAs off): %v\n", err)
		return nil
	}
	if n := store.Skipped(); n > 0 {
		fmt.Fprintf(e.stderr, "bringup: %d unreadable lines in %s skipped (first: %v)\n", n, path, store.Problems()[0])
	}
	return history.NewSink(store)
}

// load reads the configuration the flags name and selects the hosts
// named in args (host or group names; none = all).
func (f *fleetFlags) load(e env, args []string) (*config.Config, []config.Host, error) {
	var cfg *config.Config
	var err error
	switch {
	case f.hosts != "":
		cfg, err = config.FromFlags(f.hosts, f.unit)
	case f.configPath != "":
		cfg, err = config.Load(f.configPath)
	default:
		path := config.DefaultPath(e.getenv)
		if path == "" {
			return nil, nil, errors.New("no config: set HOME or XDG_CONFIG_HOME, or pass --config FILE or -H HOSTS")
		}
		if _, statErr := os.Stat(path); errors.Is(statErr, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("no config at %s: write one (see README) or pass -H HOSTS; `bringup demo` needs none", path)
		}
		cfg, err = config.Load(path)
	}
	if err != nil {
		return nil, nil, err
	}
	if f.readOnly {
		cfg.ReadOnly = true
	}
	if f.sshConfig != "" {
		cfg.SSHConfig = f.sshConfig // as given: relative to the working directory, like ssh -F
	}
	cfg.ExpandHome(e.getenv("HOME")) // Load made the config's own paths relative to its file
	if len(cfg.Kernels.Kernels) == 0 {
		cfg.Kernels = kernels.DefaultCatalog()
	}
	hosts, err := cfg.Select(args)
	if err != nil {
		return nil, nil, err
	}
	f.groups = cfg.GroupsOf(hosts)
	return cfg, hosts, nil
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
	return live.Resolve(ctx, targets, cfg.SSHConfig, passphrasePrompt(e))
}

// passphrasePrompt asks on the terminal once per identity file.
func passphrasePrompt(e env) func(file string) ([]byte, error) {
	var mu sync.Mutex
	cache := map[string][]byte{}
	return func(file string) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		if p, ok := cache[file]; ok {
			return p, nil
		}
		fd := int(os.Stdin.Fd())
		if !term.IsTerminal(fd) {
			return nil, fmt.Errorf("%s is encrypted and there is no terminal to ask for its passphrase (load it into ssh-agent)", file)
		}
		fmt.Fprintf(e.stderr, "Passphrase for %s: ", file)
		p, err := term.ReadPassword(fd)
		fmt.Fprintln(e.stderr)
		if err != nil {
			return nil, fmt.Errorf("read passphrase for %s: %w", file, err)
		}
		cache[file] = p
		return p, nil
	}
}

// liveFleet builds the fleet over real hosts.
func liveFleet(cfg *config.Config, hosts []live.Options, hist remote.HistorySink, rec *recordFlag) (*remote.Fleet, error) {
	opts := remote.Options{Kernels: cfg.Kernels, ReadOnly: cfg.ReadOnly, History: hist,
		LocalHashes: localHashes(cfg.Kernels)}
	if len(cfg.Rules) > 0 {
		packs, err := startup.CompilePacks(startup.WithBuiltins(cfg.Rules))
		if err != nil { // ParsePacks compiled each one already
			return nil, fmt.Errorf("rule packs: %w", err)
		}
		opts.Packs = packs
	}
	specs := live.Specs(hosts, opts)
	if err := rec.start(specs, opts, 1, "live"); err != nil {
		return nil, err
	}
	f, err := remote.NewFleet(specs, opts)
	if err != nil {
		rec.abort()
		return nil, err
	}
	return f, nil
}

// localHashes hashes each kernel's local build that exists, for the drift
// badge. A kernel without a readable build has no entry (no badge).
func localHashes(cat kernels.Catalog) map[string]string {
	out := map[string]string{}
	for _, k := range cat.Kernels {
		if k.LocalDir == "" {
			continue
		}
		if h, err := deploy.DirHash(k.LocalDir); err == nil {
			out[k.Name] = h
		}
	}
	return out
}
