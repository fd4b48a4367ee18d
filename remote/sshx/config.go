// Package sshx is bringup's SSH transport: it resolves a host the way ssh(1)
// does, dials it with strict known_hosts checking under a deadline, and keeps
// one multiplexed connection per host alive with keepalives and jittered
// exponential backoff.
package sshx

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Sources of a resolved Config.
const (
	SourceSSHG   = "ssh -G"
	SourceParser = "parser"
)

// Config is the fully resolved connection configuration of one host alias.
type Config struct {
	Alias                 string        // the name the user gave
	HostName              string        // the real host name or address to dial
	User                  string        // remote user
	Port                  int           // remote port
	IdentityFiles         []string      // private key files, ~ and %-tokens expanded
	IdentitiesOnly        bool          // offer only IdentityFiles, even from the agent
	ProxyJump             []string      // jump hops in order ("user@host:port" or alias); empty = none
	ProxyCommand          string        // command whose stdin/stdout is the transport; "" = none
	UserKnownHostsFiles   []string      // known_hosts files that accept-new and Trust append to (first one)
	GlobalKnownHostsFiles []string      // system known_hosts files, read only
	StrictHostKeyChecking string        // "yes", "no", "accept-new" or "ask"
	ServerAliveInterval   time.Duration // 0 = keepalives off in ssh; bringup uses DefaultAliveInterval then
	ServerAliveCountMax   int           // missed keepalives before the connection is declared dead
	ConnectTimeout        time.Duration // 0 = not set (bringup uses DefaultConnectTimeout)
	HostKeyAlias          string        // name used for known_hosts lookups instead of HostName
	HashKnownHosts        bool          // hash the host names of entries accept-new and Trust append
	Source                string        // SourceSSHG or SourceParser
}

// Addr is the host:port to dial.
func (c Config) Addr() string {
	return joinHostPort(c.HostName, c.Port)
}

// ResolveOptions says where Resolve looks for configuration.
type ResolveOptions struct {
	ConfigFile string // like ssh -F; "" = ~/.ssh/config then /etc/ssh/ssh_config
	SSHPath    string // ssh binary for `ssh -G`; "" = look up "ssh" on PATH; "-" = never run ssh -G
	Home       string // home directory for ~ and %d; "" = the current user's
	User       string // local user name (default remote user, %u); "" = the current user
}

// ConfigError is a problem in an ssh_config file, located at File:Line.
type ConfigError struct {
	File string
	Line int
	Msg  string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// Resolve evaluates the configuration of alias. It prefers `ssh -G` (which
// evaluates Match, Include and tokens exactly as ssh would) and falls back to
// bringup's own parser when no ssh binary is available or opts.SSHPath is "-".
func Resolve(ctx context.Context, alias string, opts ResolveOptions) (Config, error) {
	if err := checkAlias(alias); err != nil {
		return Config{}, err
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return Config{}, err
	}
	sshPath := opts.SSHPath
	if sshPath == "" {
		if p, err := exec.LookPath("ssh"); err == nil {
			sshPath = p
		} else {
			sshPath = "-"
		}
	}
	if sshPath != "-" {
		return resolveSSHG(ctx, sshPath, alias, opts)
	}
	return resolveParser(alias, opts)
}

// Resolver resolves many names against one reading of the ssh_config
// files: its own parser evaluates each name in memory, and only a name it
// cannot evaluate as ssh would (Match exec or canonical, a directive or
// token it does not know, a config ssh would refuse) runs `ssh -G`. One
// `ssh -G` per host cost a 256-host console 0.7-2.1 s before it started.
// A Resolver is safe for concurrent use.
type Resolver struct {
	opts    ResolveOptions
	sshPath string // "-" = no ssh binary: parser errors are the answer
	tree    *configTree
	treeErr error
}

// NewResolver reads the configuration opts names once.
func NewResolver(opts ResolveOptions) (*Resolver, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &Resolver{opts: opts, sshPath: opts.SSHPath}
	if r.sshPath == "" {
		r.sshPath = "-"
		if p, err := exec.LookPath("ssh"); err == nil {
			r.sshPath = p
		}
	}
	r.tree, r.treeErr = readTree(opts)
	return r, nil
}

// Resolve is alias's configuration: the parser's where it is exact, else
// `ssh -G`'s (or, with no ssh binary, the parser's error).
func (r *Resolver) Resolve(ctx context.Context, alias string) (Config, error) {
	if err := checkAlias(alias); err != nil {
		return Config{}, err
	}
	var cfg Config
	err := r.treeErr
	if err == nil {
		cfg, err = r.tree.resolve(alias)
	} else {
		err = fmt.Errorf("resolve %s: %w", alias, err)
	}
	if err == nil || r.sshPath == "-" {
		return cfg, err
	}
	return resolveSSHG(ctx, r.sshPath, alias, r.opts)
}

// Options are the options the Resolver was made with, defaults filled in.
func (r *Resolver) Options() ResolveOptions { return r.opts }

func checkAlias(alias string) error {
	if alias == "" {
		return errors.New("resolve: empty host name")
	}
	if strings.HasPrefix(alias, "-") {
		return fmt.Errorf("resolve %q: host name must not start with '-'", alias)
	}
	return nil
}

func (o ResolveOptions) withDefaults() (ResolveOptions, error) {
	if o.Home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return o, fmt.Errorf("resolve: home directory: %w", err)
		}
		o.Home = h
	}
	if o.User == "" {
		u, err := user.Current()
		if err != nil {
			return o, fmt.Errorf("resolve: local user: %w", err)
		}
		o.User = u.Username
	}
	return o, nil
}

// resolveSSHG runs `ssh -G` and parses its `key value` lines.
func resolveSSHG(ctx context.Context, sshPath, alias string, opts ResolveOptions) (Config, error) {
	args := []string{"-G"}
	if opts.ConfigFile != "" {
		args = append(args, "-F", opts.ConfigFile)
	}
	args = append(args, "--", alias)
	cmd := exec.CommandContext(ctx, sshPath, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	cmd.Stdin = nil
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 500 {
			msg = msg[:500]
		}
		return Config{}, fmt.Errorf("resolve %s: %s -G: %w: %s", alias, sshPath, err, msg)
	}
	cfg, err := parseSSHG(stdout.Bytes(), alias, opts)
	if err != nil {
		return Config{}, fmt.Errorf("resolve %s: %s -G: %w", alias, sshPath, err)
	}
	return cfg, nil
}

// parseSSHG turns the output of `ssh -G` into a Config. ssh -G prints keys in
// lower case; IdentityFile repeats; ProxyJump is a comma list; the known_hosts
// options are space lists. Older ssh versions print IdentityFile and
// ProxyCommand before token expansion, so tokens and ~ are expanded here.
func parseSSHG(out []byte, alias string, opts ResolveOptions) (Config, error) {
	cfg := Config{Alias: alias, Port: 22, ServerAliveCountMax: 3, StrictHostKeyChecking: "ask", Source: SourceSSHG}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	var idFiles []string
	for sc.Scan() {
		key, val, _ := strings.Cut(sc.Text(), " ")
		val = strings.TrimSpace(val)
		switch key {
		case "hostname":
			cfg.HostName = val
		case "user":
			cfg.User = val
		case "port":
			p, err := strconv.Atoi(val)
			if err != nil || p <= 0 || p > 65535 {
				return cfg, fmt.Errorf("bad port %q", val)
			}
			cfg.Port = p
		case "identityfile":
			idFiles = append(idFiles, val)
		case "identitiesonly":
			cfg.IdentitiesOnly = val == "yes" || val == "true"
		case "proxyjump":
			cfg.ProxyJump = splitJump(val)
		case "proxycommand":
			if val != "none" {
				cfg.ProxyCommand = val
			}
		case "userknownhostsfile":
			cfg.UserKnownHostsFiles = strings.Fields(val)
		case "globalknownhostsfile":
			cfg.GlobalKnownHostsFiles = strings.Fields(val)
		case "stricthostkeychecking":
			cfg.StrictHostKeyChecking = normStrict(val)
		case "serveraliveinterval":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return cfg, fmt.Errorf("bad serveraliveinterval %q", val)
			}
			cfg.ServerAliveInterval = time.Duration(n) * time.Second
		case "serveralivecountmax":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return cfg, fmt.Errorf("bad serveralivecountmax %q", val)
			}
			cfg.ServerAliveCountMax = n
		case "connecttimeout":
			if val != "none" {
				n, err := strconv.Atoi(val)
				if err != nil || n < 0 {
					return cfg, fmt.Errorf("bad connecttimeout %q", val)
				}
				cfg.ConnectTimeout = time.Duration(n) * time.Second
			}
		case "hostkeyalias":
			if val != "none" {
				cfg.HostKeyAlias = val
			}
		case "hashknownhosts":
			cfg.HashKnownHosts = val == "yes" || val == "true"
		}
	}
	if err := sc.Err(); err != nil {
		return cfg, err
	}
	if cfg.HostName == "" {
		return cfg, errors.New("no hostname in output")
	}
	if cfg.User == "" {
		cfg.User = opts.User
	}
	tk := cfg.tokens(opts)
	for _, f := range idFiles {
		if f == "none" {
			continue
		}
		x, err := expandPath(f, tk, opts.Home)
		if err != nil {
			return cfg, fmt.Errorf("identityfile %q: %w", f, err)
		}
		cfg.IdentityFiles = append(cfg.IdentityFiles, x)
	}
	for i, f := range cfg.UserKnownHostsFiles {
		x, err := expandPath(f, tk, opts.Home)
		if err != nil {
			return cfg, fmt.Errorf("userknownhostsfile %q: %w", f, err)
		}
		cfg.UserKnownHostsFiles[i] = x
	}
	for i, f := range cfg.GlobalKnownHostsFiles {
		cfg.GlobalKnownHostsFiles[i] = expandTilde(f, opts.Home)
	}
	if cfg.ProxyCommand != "" {
		x, err := expandTokens(cfg.ProxyCommand, tk)
		if err != nil {
			return cfg, fmt.Errorf("proxycommand: %w", err)
		}
		cfg.ProxyCommand = x
	}
	return cfg, nil
}

// normStrict maps the spellings ssh accepts to yes, no, accept-new or ask.
func normStrict(v string) string {
	switch strings.ToLower(v) {
	case "yes", "true":
		return "yes"
	case "no", "false", "off":
		return "no"
	case "accept-new":
		return "accept-new"
	default:
		return "ask"
	}
}

// splitJump splits a ProxyJump value; "none" means no jump.
func splitJump(v string) []string {
	if v == "" || strings.EqualFold(v, "none") {
		return nil
	}
	var hops []string
	for _, h := range strings.Split(v, ",") {
		// ssh prints ssh://user@host:port hops as user@host:port.
		if h = strings.TrimPrefix(strings.TrimSpace(h), "ssh://"); h != "" {
			hops = append(hops, h)
		}
	}
	return hops
}

// Hop is one parsed ProxyJump element.
type Hop struct {
	User string // "" = from the hop's own configuration
	Host string
	Port int // 0 = from the hop's own configuration
}

// ParseHop parses a ProxyJump element: [user@]host[:port] or
// ssh://[user@]host[:port].
func ParseHop(s string) (Hop, error) {
	var h Hop
	rest := strings.TrimPrefix(s, "ssh://")
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		h.User, rest = rest[:i], rest[i+1:]
	}
	host, port := rest, ""
	if strings.HasPrefix(rest, "[") {
		end := strings.Index(rest, "]")
		if end < 0 {
			return h, fmt.Errorf("proxyjump hop %q: missing ']'", s)
		}
		host = rest[1:end]
		port = strings.TrimPrefix(rest[end+1:], ":")
	} else if i := strings.LastIndex(rest, ":"); i >= 0 && strings.Count(rest, ":") == 1 {
		host, port = rest[:i], rest[i+1:]
	}
	if host == "" {
		return h, fmt.Errorf("proxyjump hop %q: empty host", s)
	}
	h.Host = host
	if port != "" {
		p, err := strconv.Atoi(port)
		if err != nil || p <= 0 || p > 65535 {
			return h, fmt.Errorf("proxyjump hop %q: bad port", s)
		}
		h.Port = p
	}
	return h, nil
}

// tokens returns the %-token values of cfg for IdentityFile, ProxyCommand and
// UserKnownHostsFile.
func (c Config) tokens(opts ResolveOptions) map[byte]string {
	k := c.HostKeyAlias
	if k == "" {
		k = c.HostName
	}
	local, _ := os.Hostname()
	short, _, _ := strings.Cut(local, ".")
	return map[byte]string{
		'%': "%",
		'h': c.HostName,
		'p': strconv.Itoa(c.Port),
		'r': c.User,
		'u': opts.User,
		'd': opts.Home,
		'n': c.Alias,
		'k': k,
		'L': short,
		'l': local,
		'i': strconv.Itoa(os.Getuid()),
	}
}

// expandTokens replaces %x tokens from tk; an unknown token is an error.
func expandTokens(s string, tk map[byte]string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) {
			return "", errors.New("trailing '%'")
		}
		i++
		v, ok := tk[s[i]]
		if !ok {
			return "", fmt.Errorf("unsupported token %%%c", s[i])
		}
		b.WriteString(v)
	}
	return b.String(), nil
}

// expandTilde replaces a leading "~/" (or a lone "~") with home.
func expandTilde(p, home string) string {
	if p == "~" {
		return home
	}
	if strings.HasPrefix(p, "~/") {
		return filepath.Join(home, p[2:])
	}
	return p
}

// expandPath expands ~ and then %-tokens in a file name.
func expandPath(p string, tk map[byte]string, home string) (string, error) {
	if strings.HasPrefix(p, "~") && p != "~" && !strings.HasPrefix(p, "~/") {
		return "", errors.New("~user paths are not supported")
	}
	x, err := expandTokens(expandTilde(p, home), tk)
	if err != nil {
		return "", err
	}
	return x, nil
}

func joinHostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// The ssh_config settings HostKeyRisks flags, as ssh_config spells them.
const (
	SettingStrictNo       = "StrictHostKeyChecking no"
	SettingKnownHostsNull = "UserKnownHostsFile /dev/null"
)

// HostKeyRisk is a setting of a resolved configuration that lets host keys
// in without the check known_hosts exists for.
type HostKeyRisk struct {
	Setting string // SettingStrictNo or SettingKnownHostsNull
	Why     string
}

// HostKeyRisks lists the settings of c that weaken host key checking:
// StrictHostKeyChecking no (bringup then trusts an unknown key as
// accept-new does, announcing it, where ssh would ask) and a
// UserKnownHostsFile of /dev/null (nothing is remembered: every connection
// is a first contact, so any key is taken under accept-new, or none is
// known under yes).
func (c Config) HostKeyRisks() []HostKeyRisk {
	var out []HostKeyRisk
	if c.StrictHostKeyChecking == "no" {
		out = append(out, HostKeyRisk{SettingStrictNo, "an unknown host's key is trusted on first contact without asking"})
	}
	for _, f := range c.UserKnownHostsFiles {
		if f == os.DevNull {
			why := "no host key is remembered: every host is unknown unless a GlobalKnownHostsFile holds it"
			if c.StrictHostKeyChecking == "accept-new" || c.StrictHostKeyChecking == "no" {
				why = "no host key is remembered, so every connection is a first contact and trusts whatever key it is shown"
			}
			out = append(out, HostKeyRisk{SettingKnownHostsNull, why})
			break
		}
	}
	return out
}
