package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"bringup/cmd/bringup/config"
	"bringup/kernels"
	"bringup/kernels/deploy"
	"bringup/remote"
	"bringup/remote/history"
	"bringup/remote/live"
	"bringup/remote/probe"
	"bringup/remote/sshx"
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
		cfg.SSHConfig = f.sshConfig
	} else if cfg.SSHConfig != "" && cfg.Path != "" && !filepath.IsAbs(cfg.SSHConfig) && !strings.HasPrefix(cfg.SSHConfig, "~") {
		cfg.SSHConfig = filepath.Join(filepath.Dir(cfg.Path), cfg.SSHConfig)
	}
	if strings.HasPrefix(cfg.SSHConfig, "~/") {
		cfg.SSHConfig = filepath.Join(e.getenv("HOME"), cfg.SSHConfig[2:])
	}
	if len(cfg.Kernels.Kernels) == 0 {
		cfg.Kernels = kernels.DefaultCatalog()
	}
	// A kernel's local build is relative to the config file, as written.
	for i, k := range cfg.Kernels.Kernels {
		if k.LocalDir != "" && !filepath.IsAbs(k.LocalDir) && cfg.Path != "" {
			cfg.Kernels.Kernels[i].LocalDir = filepath.Join(filepath.Dir(cfg.Path), k.LocalDir)
		}
	}
	hosts, err := cfg.Select(args)
	if err != nil {
		return nil, nil, err
	}
	f.groups = selectedGroups(cfg.Groups, hosts)
	return cfg, hosts, nil
}

// selectedGroups keeps, of each group, the hosts that were selected, and
// drops the groups left empty.
func selectedGroups(groups map[string][]string, hosts []config.Host) map[string][]string {
	in := map[string]bool{}
	for _, h := range hosts {
		in[h.Name] = true
	}
	out := map[string][]string{}
	for g, members := range groups {
		var kept []string
		for _, m := range members {
			if in[m] {
				kept = append(kept, m)
			}
		}
		if len(kept) > 0 {
			out[g] = kept
		}
	}
	return out
}

// resolved is one host ready to dial.
type resolved struct {
	host config.Host
	ssh  sshx.Config
	dial sshx.DialOptions
}

// resolve turns each host into a dialable configuration and loads the keys
// it authenticates with, asking for passphrases on the terminal now,
// before any TUI takes the screen.
func resolve(ctx context.Context, e env, cfg *config.Config, hosts []config.Host) ([]resolved, func(), error) {
	ask := passphrasePrompt(e)
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	out := make([]resolved, 0, len(hosts))
	for _, h := range hosts {
		t := h.Target()
		sc, err := sshx.Resolve(ctx, t.Host, sshx.ResolveOptions{ConfigFile: cfg.SSHConfig})
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("%s: %w", h.Name, err)
		}
		if t.HostName != "" {
			sc.HostName = t.HostName
		}
		if t.User != "" {
			sc.User = t.User
		}
		if t.Port != 0 {
			sc.Port = t.Port
		}
		dial := sshx.DialOptions{Resolve: sshx.ResolveOptions{ConfigFile: cfg.SSHConfig}, Passphrase: ask}
		signers, closeSigners, err := sshx.LoadSigners(sc, dial)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("%s: %w", h.Name, err)
		}
		closers = append(closers, closeSigners)
		dial.Signers = signers
		out = append(out, resolved{host: h, ssh: sc, dial: dial})
	}
	return out, closeAll, nil
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
func liveFleet(cfg *config.Config, hosts []resolved, hist remote.HistorySink, rec *recordFlag) (*remote.Fleet, error) {
	specs := make([]remote.HostSpec, len(hosts))
	for i, r := range hosts {
		d := live.New(live.Options{
			Name: r.host.Name, SSH: r.ssh, Dial: r.dial, Unit: r.host.Unit,
			Probe: probe.Options{Addr: r.host.Probe.Addr(), Path: r.host.Probe.Path, Completion: r.host.Probe.Completion},
			Tail:  2000, FromStart: 2 * time.Hour, Kernels: cfg.Kernels, Engine: r.host.Engine,
		})
		specs[i] = remote.HostSpec{Driver: d, Unit: r.host.Unit, Engine: r.host.Engine}
	}
	opts := remote.Options{Kernels: cfg.Kernels, ReadOnly: cfg.ReadOnly, History: hist,
		LocalHashes: localHashes(cfg.Kernels)}
	if len(cfg.Rules) > 0 {
		packs, err := startup.CompilePacks(startup.WithBuiltins(cfg.Rules))
		if err != nil { // ParsePacks compiled each one already
			return nil, fmt.Errorf("rule packs: %w", err)
		}
		opts.Packs = packs
	}
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
