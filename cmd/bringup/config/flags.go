package config

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/unitname"
	"github.com/bringup-dev/bringup/ui/notify"
)

// Flags are how a command names its hosts and config: --config, -H, -u,
// -F and --read-only, the same on every command that talks to hosts.
type Flags struct {
	Path      string // --config
	Hosts     string // -H gpu1,gpu2
	Unit      string // -u sglang.service
	SSHConfig string // -F, like ssh
	ReadOnly  bool
	Source    string // --source ssh | victorialogs | victorialogs=URL
}

// Register adds the flags to fs.
func (f *Flags) Register(fs *pflag.FlagSet) {
	fs.StringVarP(&f.Path, "config", "c", "", "the config `FILE` (default $BRINGUP_CONFIG, else $XDG_CONFIG_HOME/bringup/config.yaml)")
	fs.StringVarP(&f.Hosts, "hosts", "H", "", "`HOSTS`, comma-separated: ssh_config aliases or [user@]host[:port]")
	fs.StringVarP(&f.Unit, "unit", "u", "", "the `UNIT` to watch on every host (default the config's, else sglang.service)")
	fs.BoolVar(&f.ReadOnly, "read-only", false, "refuse every action that would change a host")
	fs.StringVarP(&f.SSHConfig, "ssh-config", "F", "", "the ssh_config `FILE` (like ssh -F); default the config's ssh_config, else ~/.ssh/config")
	fs.StringVar(&f.Source, "source", "", "where journals come from: `ssh`, victorialogs (the config's source.url) or victorialogs=URL (default the config's source:, else ssh)")
}

// EnvConfig is the environment variable naming the config file when
// --config does not.
const EnvConfig = "BRINGUP_CONFIG"

// Open reads the configuration and applies the flags to it, with one
// precedence: flags, then the environment, then the config file.
//
//   - The file is --config, else $BRINGUP_CONFIG, else the default path
//     (see DefaultPath) if a file is there.
//   - -H names the hosts: a name the file lists keeps its entry there,
//     any other gets the file's defaults; everything else (kernels, rules,
//     probe, ssh_config, groups cut down to those hosts) stays the file's.
//     Without a file, -H alone is the whole config.
//   - -u sets the unit of every host, over the file's.
//   - -F and --read-only override the file's ssh_config and read_only.
//   - --source overrides the file's source: (victorialogs without =URL
//     keeps the file's url).
//
// It then selects the hosts named in args (host or group names; none =
// all), unless the config lists none and reads a log store: then there
// are no hosts yet, and the caller finds them in the store.
func (f Flags) Open(getenv func(string) string, args []string) (*Config, []Host, error) {
	cfg, err := f.base(getenv)
	if err != nil {
		return nil, nil, err
	}
	if f.Hosts != "" {
		if err := cfg.useHosts(f.Hosts); err != nil {
			return nil, nil, err
		}
	}
	if f.Unit != "" {
		if err := cfg.setUnit(f.Unit); err != nil {
			return nil, nil, err
		}
	}
	cfg.ReadOnly = cfg.ReadOnly || f.ReadOnly
	if f.Source != "" {
		if err := cfg.setSource(f.Source); err != nil {
			return nil, nil, err
		}
	}
	if f.SSHConfig != "" {
		cfg.SSHConfig = f.SSHConfig // as given: relative to the working directory, like ssh -F
	}
	cfg.ExpandHome(getenv("HOME")) // Load made the config's own paths relative to its file
	if len(cfg.Kernels.Kernels) == 0 {
		cfg.Kernels = kernels.DefaultCatalog()
	}
	if len(cfg.Hosts) == 0 && cfg.Source.Spec().HostsFromIt {
		// The hosts are the store's: the caller discovers them
		// (AddHosts) and selects among them then.
		return cfg, nil, nil
	}
	hosts, err := cfg.Select(args)
	if err != nil {
		return nil, nil, err
	}
	return cfg, hosts, nil
}

// base is the config file in force (see Open), or, with -H and no file,
// an empty config with the built-in defaults.
func (f Flags) base(getenv func(string) string) (*Config, error) {
	switch env := getenv(EnvConfig); {
	case f.Path != "":
		return Load(f.Path)
	case env != "":
		cfg, err := Load(env)
		if err != nil {
			return nil, fmt.Errorf("$%s: %w", EnvConfig, err)
		}
		return cfg, nil
	}
	path := DefaultPath(getenv)
	if path != "" {
		if _, err := os.Stat(path); err == nil || !errors.Is(err, os.ErrNotExist) {
			return Load(path)
		}
	}
	switch {
	case f.Hosts != "":
		c := &Config{Groups: map[string][]string{}, Notify: notify.Defaults()}
		applyBuiltins(&c.Defaults)
		return c, nil
	case path == "":
		return nil, errors.New("no config: set HOME or XDG_CONFIG_HOME, or pass --config FILE or -H HOSTS")
	}
	return nil, fmt.Errorf("no config at %s: write one with `bringup init HOST...`, set $%s or pass --config FILE or -H HOSTS; `bringup demo` needs none", path, EnvConfig)
}

// setSource applies --source: ssh, victorialogs (the file's url) or
// victorialogs=URL.
func (c *Config) setSource(v string) error {
	kind, u, withURL := strings.Cut(v, "=")
	kind, err := checkSourceKind(kind)
	if err != nil {
		return fmt.Errorf("--source: %w", err)
	}
	switch {
	case !(Source{Kind: kind}).Spec().NeedsURL && withURL:
		return fmt.Errorf("--source: %s takes no URL", kind)
	case !(Source{Kind: kind}).Spec().NeedsURL:
		c.Source = Source{Kind: kind}
	case withURL:
		if u, err = checkStoreURL(u); err != nil {
			return fmt.Errorf("--source: %w", err)
		}
		c.Source = Source{Kind: kind, URL: u}
	case c.Source.URL == "":
		return fmt.Errorf("--source %s: no url: pass --source %s=http://HOST:9428 or set source.url in the config", kind, kind)
	default:
		c.Source.Kind = kind
	}
	return nil
}

// useHosts makes -H's list (comma-separated ssh_config aliases or
// [user@]host[:port]) the hosts: one the config lists by that name keeps
// its entry, any other gets the config's defaults. Groups keep only the
// hosts left.
func (c *Config) useHosts(list string) error {
	byName := map[string]Host{}
	for _, h := range c.Hosts {
		byName[h.Name] = h
	}
	var hosts []Host
	seen := map[string]bool{}
	for s := range strings.SplitSeq(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if _, err := ParseTarget(s); err != nil {
			return fmt.Errorf("-H: %w", err)
		}
		if seen[s] {
			return fmt.Errorf("-H: host %q listed twice", s)
		}
		seen[s] = true
		h, ok := byName[s]
		if !ok {
			h = hostWithDefaults(rawHost{name: s, ssh: s}, c.Defaults)
		}
		hosts = append(hosts, h)
	}
	if len(hosts) == 0 {
		return errors.New("-H: no hosts given")
	}
	c.Hosts = hosts
	c.Groups = c.GroupsOf(hosts)
	return nil
}

// setUnit is -u: the unit of every host, whatever the config says.
func (c *Config) setUnit(unit string) error {
	u, err := unitname.Normalize(unit)
	if err != nil {
		return fmt.Errorf("-u: %w", err)
	}
	c.Defaults.Unit = u
	for i := range c.Hosts {
		c.Hosts[i].Unit = u
	}
	return nil
}

// Catalog is the kernel catalog in force for a command that needs no
// hosts (bringup lint): the config file at path, else $BRINGUP_CONFIG's,
// else the default file when it exists; the built-in catalog when none
// is found or the file names no kernels.
func Catalog(path string, getenv func(string) string) (kernels.Catalog, error) {
	if path == "" {
		path = getenv(EnvConfig)
	}
	if path == "" {
		if p := DefaultPath(getenv); p != "" {
			if _, err := os.Stat(p); err == nil {
				path = p
			}
		}
	}
	if path == "" {
		return kernels.DefaultCatalog(), nil
	}
	cfg, err := Load(path)
	if err != nil {
		return kernels.Catalog{}, err
	}
	if len(cfg.Kernels.Kernels) == 0 {
		return kernels.DefaultCatalog(), nil
	}
	return cfg.Kernels, nil
}
