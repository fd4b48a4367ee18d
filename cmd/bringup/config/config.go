// Package config reads bringup's configuration: the hosts to watch (ssh_config
// aliases or user@host:port), groups of them, the unit, engine and readiness
// probe of each (with defaults), and the kernel catalog. Every mistake is
// reported at its place in the file (file:line:column and the field), so a
// typo in a fleet of forty hosts is found at once. The package does no IO
// besides reading the one file in Load.
package config

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/deployment"
	"github.com/bringup-dev/bringup/remote/startup"
	"github.com/bringup-dev/bringup/ui/notify"
)

// The engines a host can run.
const (
	EngineSGLang = "sglang"
	EngineVLLM   = "vllm"
	EngineAuto   = "auto" // decided from the unit's logs
)

// Defaults used where neither the host nor the defaults section says.
const (
	DefaultUnit       = "sglang.service"
	DefaultVLLMUnit   = "vllm.service"
	DefaultEngine     = EngineAuto
	DefaultSGLangPort = 30000 // SGLang's --port default
	DefaultVLLMPort   = 8000  // vLLM's --port default
	DefaultProbePath  = "/health"
)

// maxFile caps the config file: it is a list of hosts, not a data set.
const maxFile = 4 << 20

// Probe is how a host's service is probed for readiness, from the host's
// point of view.
type Probe struct {
	Port       int
	Path       string
	Completion bool // also ask for a one-token completion
}

// Addr is the address the probe dials on the host.
func (p Probe) Addr() string { return "127.0.0.1:" + strconv.Itoa(p.Port) }

// HostDefaults apply to every host that does not say otherwise. Zero
// fields fall back to the package defaults.
type HostDefaults struct {
	Unit   string
	Engine string
	User   string // "" = as ssh_config says
	Probe  Probe
}

// Host is one host to watch, with every default applied.
type Host struct {
	// Host is the host's identity (name, unit, engine, labels), the shape
	// every layer after the config passes on.
	remote.Host
	// SSH is what to connect to: an ssh_config alias, or [user@]host[:port].
	SSH string
	// User, Address and Port override what SSH and ssh_config give (like
	// ssh -l, HostName and -p); empty or 0 = no override.
	User    string
	Address string
	Port    int
	Probe   Probe
}

// Target is where to connect for a host.
type Target struct {
	// Host is the ssh_config alias or host name to resolve, as in `ssh HOST`.
	Host string
	// HostName, User and Port override the resolved configuration when set.
	HostName string
	User     string
	Port     int
}

// Target splits h.SSH and applies h's overrides.
func (h Host) Target() Target {
	t, _ := ParseTarget(h.SSH) // validated when the host was read
	out := Target{Host: t.Host, User: t.User, Port: t.Port, HostName: h.Address}
	if h.User != "" {
		out.User = h.User
	}
	if h.Port != 0 {
		out.Port = h.Port
	}
	return out
}

// Config is the whole configuration.
type Config struct {
	// Path is the file it was read from; "" for one built from flags.
	Path     string
	Defaults HostDefaults
	Hosts    []Host
	// Groups maps a group name to host names, in the order written.
	Groups map[string][]string
	// Deployments are the deployments: section, in the order written:
	// hosts that serve one model together, node rank 0 first. What the
	// units' command lines say is inferred beside them
	// (deployment.Merge); these win.
	Deployments []deployment.Declared
	Kernels     kernels.Catalog
	// Rules are the user rule packs of the rules: files, to run with the
	// built-in packs (startup.WithBuiltins).
	Rules    []startup.RulePack
	ReadOnly bool
	// SSHConfig is the ssh_config file to use (like ssh -F); "" = ssh's
	// default. A relative path is relative to the config file; a leading
	// ~ is expanded by Load (Parse leaves it: see ExpandHome).
	SSHConfig string
	// Notify are the console's signals for a person not looking (the
	// notify: section; notify.Defaults without one).
	Notify notify.Settings
	// ThroughputDrop is the drop in decode rate against the kernel modes a
	// host ran before that flags its modes as slower (throughput_drop:
	// 0.2 for 20 %); 0: the default.
	ThroughputDrop float64
	// Source is where the journals and unit states come from (the
	// source: section, --source); the zero value is SSH to every host.
	Source Source
}

// The kinds of Source.
const (
	SourceSSH          = "ssh"          // one SSH connection per host (the default)
	SourceVictoriaLogs = "victorialogs" // one live tail from a VictoriaLogs the hosts upload to
)

// Source says where the fleet's journals come from. With
// SourceVictoriaLogs the hosts' own systemd-journal-upload feeds the store
// at URL, and bringup reads every host from it; actions still go over SSH.
type Source struct {
	Kind string // SourceSSH ("" too) or SourceVictoriaLogs
	URL  string // the store's base URL, http://HOST:PORT (victorialogs)
	// Via is the SSH host (an ssh_config name or [user@]host[:port])
	// through which the store is reached, when only it can: every
	// request to URL goes through one SSH connection to it, and URL is
	// as that host sees it. "" reaches URL directly.
	Via string
}

// SourceKind is what the config, the commands and the console ask of a
// kind of source. The IO of each kind (how its fleet is built, what
// doctor checks of it) is livefleet's table, keyed by Name; a new log
// source is a row here and a row there.
type SourceKind struct {
	Name string
	// HostsFromIt: with no hosts configured, the hosts are the ones the
	// source names (the caller discovers them).
	HostsFromIt bool
	// NeedsURL: it is read at source.url, which it needs; a kind without
	// it takes no url.
	NeedsURL bool
	// TakesVia: it may be reached through an SSH host (source.via).
	TakesVia bool
	// Title is what the console's header adds to say where the journals
	// and unit states come from; "" for nothing.
	Title string
}

// sourceKinds is every kind of source, the default first.
var sourceKinds = []SourceKind{
	{Name: SourceSSH},
	{Name: SourceVictoriaLogs, HostsFromIt: true, NeedsURL: true, TakesVia: true,
		Title: "state from journal via victorialogs"},
}

// SourceKinds is every kind of source, the default (ssh) first.
func SourceKinds() []SourceKind { return slices.Clone(sourceKinds) }

// Spec is the kind of s ("" is the default, SSH); a kind the table lacks
// (which the config's checks refuse) has only its name.
func (s Source) Spec() SourceKind {
	if s.Kind == "" {
		return sourceKinds[0]
	}
	for _, k := range sourceKinds {
		if k.Name == s.Kind {
			return k
		}
	}
	return SourceKind{Name: s.Kind}
}

// checkSourceKind accepts the kinds of Source.
func checkSourceKind(s string) (string, error) {
	names := make([]string, len(sourceKinds))
	for i, k := range sourceKinds {
		names[i] = k.Name
	}
	if slices.Contains(names, s) {
		return s, nil
	}
	want := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	return "", fmt.Errorf("unknown source %q: want %s%s", s, want, suggest(s, names))
}

// checkStoreURL accepts http(s)://HOST[:PORT][/PATH] without query or
// credentials: the address of the store's HTTP API.
func checkStoreURL(s string) (string, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "", fmt.Errorf("not a URL: %w", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("%q: want http://HOST:PORT (VictoriaLogs listens on :9428)", s)
	case u.Host == "":
		return "", fmt.Errorf("%q: no host", s)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("%q: want only scheme, host, port and path", s)
	}
	return strings.TrimRight(s, "/"), nil
}

// DefaultPath is $XDG_CONFIG_HOME/bringup/config.yaml, else
// ~/.config/bringup/config.yaml; "" when neither variable is set. A
// relative XDG_CONFIG_HOME is ignored, as the XDG spec says.
func DefaultPath(getenv func(string) string) string {
	if x := getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "bringup", "config.yaml")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "bringup", "config.yaml")
	}
	return ""
}

// Load reads and checks the config file at path.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if len(data) > maxFile {
		return nil, fmt.Errorf("config %s: larger than %d MiB", path, maxFile>>20)
	}
	c, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	if home, err := os.UserHomeDir(); err == nil {
		c.ExpandHome(home)
	}
	return c, nil
}

// ExpandHome replaces a leading ~ in the local paths (ssh_config, kernel
// local_dir) with home: neither ssh -F nor the SFTP sync expands it.
func (c *Config) ExpandHome(home string) {
	c.SSHConfig = expandHome(c.SSHConfig, home)
	for i := range c.Kernels.Kernels {
		c.Kernels.Kernels[i].LocalDir = expandHome(c.Kernels.Kernels[i].LocalDir, home)
	}
}

func expandHome(p, home string) string {
	switch {
	case home == "":
		return p
	case p == "~":
		return home
	case strings.HasPrefix(p, "~/"):
		return filepath.Join(home, p[2:])
	}
	return p
}

// FromFlags builds a config for `bringup -H gpu1,gpu2,deploy@h:22 -u unit`
// with no config file: hosts is a comma-separated list of ssh_config
// aliases or [user@]host[:port], unit the unit of all of them ("" = the
// default).
func FromFlags(hosts, unit string) (*Config, error) {
	c := &Config{Groups: map[string][]string{}, Notify: notify.Defaults()}
	applyBuiltins(&c.Defaults)
	if err := c.useHosts(hosts); err != nil {
		return nil, err
	}
	if unit != "" {
		if err := c.setUnit(unit); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// DeclaredDeployments are the deployments: section's; none without a
// config (a demo, a replay).
func (c *Config) DeclaredDeployments() []deployment.Declared {
	if c == nil {
		return nil
	}
	return c.Deployments
}

// GroupsOf keeps, of each group, the members among hosts, and drops the
// groups left empty.
func (c *Config) GroupsOf(hosts []Host) map[string][]string {
	in := map[string]bool{}
	for _, h := range hosts {
		in[h.Name] = true
	}
	out := map[string][]string{}
	for g, members := range c.Groups {
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

// AddHosts adds hosts found elsewhere (a log store's discovery, when the
// config lists none), each with the defaults and its name as its SSH
// destination.
func (c *Config) AddHosts(names []string) error {
	for _, n := range names {
		if _, err := ParseTarget(n); err != nil {
			return fmt.Errorf("discovered host: %w", err)
		}
		if slices.ContainsFunc(c.Hosts, func(h Host) bool { return h.Name == n }) {
			continue
		}
		c.Hosts = append(c.Hosts, hostWithDefaults(rawHost{name: n, ssh: n}, c.Defaults))
	}
	return nil
}

// LabelsOf is each of hosts' labels, by host name; nil when none has any.
func LabelsOf(hosts []Host) map[string]map[string]string {
	var out map[string]map[string]string
	for _, h := range hosts {
		if len(h.Labels) > 0 {
			if out == nil {
				out = map[string]map[string]string{}
			}
			out[h.Name] = h.Labels
		}
	}
	return out
}

// Select returns the hosts that names (host or group names) pick, each
// once, in the order named; no names picks every host.
func (c *Config) Select(names []string) ([]Host, error) {
	if len(c.Hosts) == 0 {
		return nil, errors.New("no hosts configured")
	}
	if len(names) == 0 {
		return slices.Clone(c.Hosts), nil
	}
	byName := map[string]Host{}
	for _, h := range c.Hosts {
		byName[h.Name] = h
	}
	var out []Host
	seen := map[string]bool{}
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			out = append(out, byName[n])
		}
	}
	for _, n := range names {
		if _, ok := byName[n]; ok {
			add(n)
			continue
		}
		members, ok := c.Groups[n]
		if !ok {
			return nil, fmt.Errorf("unknown host or group %q (%s)", n, c.known())
		}
		for _, m := range members {
			add(m)
		}
	}
	return out, nil
}

// known lists the host and group names for an error message.
func (c *Config) known() string {
	hosts := make([]string, len(c.Hosts))
	for i, h := range c.Hosts {
		hosts[i] = h.Name
	}
	s := "hosts: " + strings.Join(hosts, ", ")
	if len(c.Groups) > 0 {
		groups := make([]string, 0, len(c.Groups))
		for g := range c.Groups {
			groups = append(groups, g)
		}
		slices.Sort(groups)
		s += "; groups: " + strings.Join(groups, ", ")
	}
	return s
}

// applyBuiltins fills what the defaults section left empty. The unit and
// the probe port follow the engine: vLLM's are not SGLang's.
func applyBuiltins(d *HostDefaults) {
	if d.Engine == "" {
		d.Engine = DefaultEngine
	}
	if d.Probe.Path == "" {
		d.Probe.Path = DefaultProbePath
	}
}

// engineDefaults are the unit and probe port for engine.
func engineDefaults(engine string) (unit string, port int) {
	if engine == EngineVLLM {
		return DefaultVLLMUnit, DefaultVLLMPort
	}
	return DefaultUnit, DefaultSGLangPort
}

// rawHost is a host as written, before defaults.
type rawHost struct {
	name, ssh, user, address, unit, engine, path string
	port, probePort                              int
	completion                                   *bool
	labels                                       map[string]string
}

// hostWithDefaults applies d (and the engine's defaults) to r.
func hostWithDefaults(r rawHost, d HostDefaults) Host {
	h := Host{Host: remote.Host{Name: r.name, Unit: r.unit, Engine: r.engine, Labels: r.labels},
		SSH: r.ssh, User: r.user, Address: r.address, Port: r.port, Probe: Probe{Port: r.probePort, Path: r.path}}
	if h.SSH == "" {
		h.SSH = h.Name
	}
	if h.User == "" {
		h.User = d.User
	}
	if h.Engine == "" {
		h.Engine = d.Engine
	}
	unit, port := engineDefaults(h.Engine)
	if h.Unit == "" {
		h.Unit = cmp(d.Unit, unit)
	}
	if h.Probe.Port == 0 {
		h.Probe.Port = cmp(d.Probe.Port, port)
	}
	if h.Probe.Path == "" {
		h.Probe.Path = d.Probe.Path
	}
	h.Probe.Completion = d.Probe.Completion
	if r.completion != nil {
		h.Probe.Completion = *r.completion
	}
	return h
}

// cmp returns the first of a, b that is not zero.
func cmp[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}

// ParseTarget splits [user@]host[:port] (host may be [v6addr]). host is an
// ssh_config alias, a host name or an address; it must not start with '-',
// which ssh would read as an option.
func ParseTarget(s string) (Target, error) {
	var t Target
	rest := s
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		t.User, rest = rest[:i], rest[i+1:]
		if t.User == "" {
			return t, fmt.Errorf("%q: empty user before @", s)
		}
	}
	host, port := rest, ""
	if strings.HasPrefix(rest, "[") {
		end := strings.Index(rest, "]")
		if end < 0 {
			return t, fmt.Errorf("%q: missing ]", s)
		}
		host, port = rest[1:end], rest[end+1:]
		if port != "" && !strings.HasPrefix(port, ":") {
			return t, fmt.Errorf("%q: text after ]", s)
		}
		port = strings.TrimPrefix(port, ":")
	} else if i := strings.LastIndex(rest, ":"); i >= 0 {
		if strings.Count(rest, ":") > 1 {
			return t, fmt.Errorf("%q: write an IPv6 address as [addr] or [addr]:port", s)
		}
		host, port = rest[:i], rest[i+1:]
	}
	switch {
	case host == "":
		return t, fmt.Errorf("%q: empty host", s)
	case strings.HasPrefix(host, "-") || strings.HasPrefix(t.User, "-"):
		return t, fmt.Errorf("%q: must not start with '-'", s)
	case strings.ContainsFunc(s, badTargetRune):
		return t, fmt.Errorf("%q: spaces, quotes and control characters are not allowed", s)
	}
	t.Host = host
	if port != "" {
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 {
			return t, fmt.Errorf("%q: port %q is not a number from 1 to 65535", s, port)
		}
		t.Port = p
	}
	return t, nil
}

// badTargetRune is a rune that has no place in a host, user or alias and
// could change a shell or ssh command line.
func badTargetRune(r rune) bool {
	return r <= ' ' || r == 0x7f || strings.ContainsRune("'\"`\\,;|&$<>(){}*?!#", r)
}
