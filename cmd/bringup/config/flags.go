package config

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"bringup/kernels"
)

// Flags are how a command names its hosts and config: --config, -H, -u,
// -F and --read-only, the same on every command that talks to hosts.
type Flags struct {
	Path      string // --config
	Hosts     string // -H gpu1,gpu2
	Unit      string // -u sglang.service
	SSHConfig string // -F, like ssh
	ReadOnly  bool
}

// Register adds the flags to fs.
func (f *Flags) Register(fs *pflag.FlagSet) {
	fs.StringVarP(&f.Path, "config", "c", "", "the config `FILE` (default $BRINGUP_CONFIG, else $XDG_CONFIG_HOME/bringup/config.yaml)")
	fs.StringVarP(&f.Hosts, "hosts", "H", "", "`HOSTS`, comma-separated: ssh_config aliases or [user@]host[:port]")
	fs.StringVarP(&f.Unit, "unit", "u", "", "the `UNIT` to watch on every host (default the config's, else sglang.service)")
	fs.BoolVar(&f.ReadOnly, "read-only", false, "refuse every action that would change a host")
	fs.StringVarP(&f.SSHConfig, "ssh-config", "F", "", "the ssh_config `FILE` (like ssh -F); default the config's ssh_config, else ~/.ssh/config")
}

// Open reads the configuration the flags name (-H, else --config, else
// the default path getenv points at), applies the flags to it, and
// selects the hosts named in args (host or group names; none = all).
func (f Flags) Open(getenv func(string) string, args []string) (*Config, []Host, error) {
	var cfg *Config
	var err error
	switch {
	case f.Hosts != "":
		cfg, err = FromFlags(f.Hosts, f.Unit)
	case f.Path != "":
		cfg, err = Load(f.Path)
	default:
		path := DefaultPath(getenv)
		if path == "" {
			return nil, nil, errors.New("no config: set HOME or XDG_CONFIG_HOME, or pass --config FILE or -H HOSTS")
		}
		if _, statErr := os.Stat(path); errors.Is(statErr, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("no config at %s: write one (see README) or pass -H HOSTS; `bringup demo` needs none", path)
		}
		cfg, err = Load(path)
	}
	if err != nil {
		return nil, nil, err
	}
	cfg.ReadOnly = cfg.ReadOnly || f.ReadOnly
	if f.SSHConfig != "" {
		cfg.SSHConfig = f.SSHConfig // as given: relative to the working directory, like ssh -F
	}
	cfg.ExpandHome(getenv("HOME")) // Load made the config's own paths relative to its file
	if len(cfg.Kernels.Kernels) == 0 {
		cfg.Kernels = kernels.DefaultCatalog()
	}
	hosts, err := cfg.Select(args)
	if err != nil {
		return nil, nil, err
	}
	return cfg, hosts, nil
}
