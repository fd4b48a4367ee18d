package sshx

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// maxIncludeDepth is OpenSSH's READCONF_MAX_DEPTH.
const maxIncludeDepth = 16

// ignoredDirectives are ssh_config keywords that do not change how bringup
// connects or authenticates, so the fallback parser accepts and skips them.
// Everything not here and not handled is an error naming file:line.
var ignoredDirectives = map[string]bool{
	"addkeystoagent": true, "addressfamily": true, "batchmode": true,
	"challengeresponseauthentication": true, "checkhostip": true,
	"clearallforwardings": true, "compression": true, "connectionattempts": true,
	"controlmaster": true, "controlpath": true, "controlpersist": true,
	"dynamicforward": true, "enableescapecommandline": true, "escapechar": true,
	"exitonforwardfailure": true, "fingerprinthash": true, "forkafterauthentication": true,
	"forwardagent": true, "forwardx11": true, "forwardx11timeout": true,
	"forwardx11trusted": true, "gatewayports": true, "gssapiauthentication": true,
	"gssapidelegatecredentials": true, "ipqos": true,
	"kbdinteractiveauthentication": true, "kbdinteractivedevices": true,
	"localcommand": true, "localforward": true, "loglevel": true, "logverbose": true,
	"nohostauthenticationforlocalhost": true, "numberofpasswordprompts": true,
	"passwordauthentication": true, "permitlocalcommand": true, "permitremoteopen": true,
	"preferredauthentications": true, "protocol": true, "pubkeyauthentication": true,
	"rekeylimit": true, "remotecommand": true, "remoteforward": true, "requesttty": true,
	"sendenv": true, "sessiontype": true, "setenv": true, "stdinnull": true,
	"streamlocalbindmask": true, "streamlocalbindunlink": true, "tcpkeepalive": true,
	"tunnel": true, "tunneldevice": true, "updatehostkeys": true, "usekeychain": true,
	"verifyhostkeydns": true, "visualhostkey": true, "xauthlocation": true,
}

// defaultIdentityFiles are the keys ssh tries when no IdentityFile is set
// (OpenSSH 9.x without the deprecated DSA and XMSS ones).
var defaultIdentityFiles = []string{
	"~/.ssh/id_rsa", "~/.ssh/id_ecdsa", "~/.ssh/id_ecdsa_sk",
	"~/.ssh/id_ed25519", "~/.ssh/id_ed25519_sk",
}

// rawValue is a directive value kept for expansion after all files are read.
type rawValue struct {
	val  string
	file string
	line int
}

// cfgLine is one non-blank line of an ssh_config file as read: its keyword
// and arguments, or the syntax error it holds (raised when the line is
// evaluated, as the per-host parser raised it when reading).
type cfgLine struct {
	key, rest string
	args      []string
	file      string
	line      int
	err       error
	includes  []*cfgFile // Include: the files its globs named, read once
}

// cfgFile is one ssh_config file as read; base is the directory its
// relative Include paths are taken from.
type cfgFile struct {
	path  string
	lines []cfgLine
}

// configTree is the ssh_config files of one ResolveOptions read once, with
// their Includes: evaluating it for a host does no IO.
type configTree struct {
	opts  ResolveOptions
	files []*cfgFile
	// inexact says why no host can be evaluated here as ssh would (a
	// user config ssh refuses for its permissions, -F none): every host
	// is then an error, which a Resolver hands to `ssh -G`.
	inexact string
}

// parser evaluates a configTree for one host with ssh's rules: the first
// obtained value of a keyword wins (IdentityFile accumulates), Host
// patterns match the name given on the command line.
type parser struct {
	opts    ResolveOptions
	host    string // the alias as given: Host patterns match it case-sensitively, as in ssh
	seen    map[string]bool
	values  map[string]rawValue
	ids     []rawValue
	ignored []string // IgnoreUnknown patterns
}

// resolveParser evaluates the configuration with bringup's own parser.
func resolveParser(alias string, opts ResolveOptions) (Config, error) {
	t, err := readTree(opts)
	if err != nil {
		return Config{}, fmt.Errorf("resolve %s: %w", alias, err)
	}
	return t.resolve(alias)
}

// readTree reads the files ssh would read for opts (the -F file, or the
// user's then the system's), Includes resolved.
func readTree(opts ResolveOptions) (*configTree, error) {
	t := &configTree{opts: opts}
	if opts.ConfigFile == "none" {
		t.inexact = "-F none"
		return t, nil
	}
	type src struct {
		path, base           string
		mustExist, checkPerm bool
	}
	var srcs []src
	if opts.ConfigFile != "" {
		srcs = []src{{opts.ConfigFile, filepath.Join(opts.Home, ".ssh"), true, false}}
	} else {
		srcs = []src{
			{filepath.Join(opts.Home, ".ssh", "config"), filepath.Join(opts.Home, ".ssh"), false, true},
			{"/etc/ssh/ssh_config", "/etc/ssh", false, false},
		}
	}
	for _, s := range srcs {
		f, err := t.readFile(s.path, s.base, 0, s.mustExist, s.checkPerm)
		if err != nil {
			return nil, err
		}
		if f != nil {
			t.files = append(t.files, f)
		}
	}
	return t, nil
}

// readFile reads one config file and, recursively, what its Includes name.
// A missing file is nil unless mustExist (the file named with -F).
// checkPerm marks the user's own config, which ssh refuses when another
// user may write it.
func (t *configTree) readFile(path, base string, depth int, mustExist, checkPerm bool) (*cfgFile, error) {
	if depth > maxIncludeDepth {
		return nil, fmt.Errorf("%s: include nested too deeply", path)
	}
	fh, err := os.Open(path)
	if err != nil {
		if !mustExist && errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("read ssh config: %w", err)
	}
	defer fh.Close()
	if checkPerm && t.inexact == "" {
		if st, err := fh.Stat(); err == nil && badOwnerOrPerms(st) {
			t.inexact = path + ": bad owner or permissions"
		}
	}
	f := &cfgFile{path: path}
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 0, 4096), 1024*1024)
	n := 0
	for sc.Scan() {
		n++
		key, rest, args, err := splitLine(sc.Text())
		if err != nil {
			f.lines = append(f.lines, cfgLine{file: path, line: n, err: err})
			continue
		}
		if key == "" {
			continue
		}
		l := cfgLine{key: key, rest: rest, args: args, file: path, line: n}
		if key == "include" {
			if len(args) == 0 {
				l.err = errors.New("Include without a file")
			}
			for _, a := range args {
				if strings.ContainsAny(a, "%$") {
					l.err = fmt.Errorf("Include %q: tokens and environment variables are not supported by bringup's own ssh_config parser; install the OpenSSH client so bringup can use `ssh -G`", a)
					break
				}
				pat := expandTilde(a, t.opts.Home)
				if !filepath.IsAbs(pat) {
					pat = filepath.Join(base, pat)
				}
				matches, err := filepath.Glob(pat)
				if err != nil {
					l.err = fmt.Errorf("Include %q: %v", a, err)
					break
				}
				for _, m := range matches { // Glob sorts: lexical order, as ssh
					inc, err := t.readFile(m, base, depth+1, false, checkPerm)
					if err != nil {
						return nil, err
					}
					if inc != nil {
						l.includes = append(l.includes, inc)
					}
				}
			}
		}
		f.lines = append(f.lines, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return f, nil
}

// resolve evaluates the tree for alias.
func (t *configTree) resolve(alias string) (Config, error) {
	if t.inexact != "" {
		return Config{}, fmt.Errorf("resolve %s: %s, left to ssh -G", alias, t.inexact)
	}
	p := &parser{
		opts:   t.opts,
		host:   alias,
		seen:   map[string]bool{},
		values: map[string]rawValue{},
	}
	for _, f := range t.files {
		if err := p.evalFile(f, false); err != nil {
			return Config{}, fmt.Errorf("resolve %s: %w", alias, err)
		}
	}
	cfg, err := p.config(alias)
	if err != nil {
		return Config{}, fmt.Errorf("resolve %s: %w", alias, err)
	}
	return cfg, nil
}

// evalFile evaluates one file's lines; neverMatch is set for files
// included from an inactive block. An included file starts active, and the
// includer's state is restored after it, as in ssh.
func (p *parser) evalFile(f *cfgFile, neverMatch bool) error {
	active := !neverMatch
	for _, l := range f.lines {
		if l.err != nil {
			return &ConfigError{File: l.file, Line: l.line, Msg: l.err.Error()}
		}
		switch l.key {
		case "host":
			active = !neverMatch && matchHost(p.host, l.args)
			continue
		case "match":
			m, err := p.match(l.args)
			if err != nil {
				return &ConfigError{File: l.file, Line: l.line, Msg: err.Error()}
			}
			active = !neverMatch && m
			continue
		case "include":
			for _, inc := range l.includes {
				if err := p.evalFile(inc, !active); err != nil {
					return err
				}
			}
			continue
		}
		if err := p.directive(l.key, l.rest, l.args, l.file, l.line, active); err != nil {
			return err
		}
	}
	return nil
}

// match evaluates a Match line's criteria as ssh's match_cfg_line does for
// the ones that need nothing but the configuration so far: all, host,
// originalhost, user and localuser, each possibly negated with '!', all of
// them required. Any other is an error (ssh -G evaluates it): canonical and
// final always (they make ssh read the files again), the rest (exec,
// localnetwork, tagged…) only where the line's other criteria do not
// already make it false.
func (p *parser) match(args []string) (bool, error) {
	if len(args) == 0 {
		return false, errors.New("Match without criteria")
	}
	result := true
	var unsupported string
	for i := 0; i < len(args); i++ {
		attr := strings.ToLower(args[i])
		negate := strings.HasPrefix(attr, "!")
		attr = strings.TrimPrefix(attr, "!")
		switch attr {
		case "all":
			if i > 0 || len(args) > 1 {
				return false, errors.New("Match all cannot be combined with other criteria")
			}
			return !negate, nil
		case "canonical", "final":
			return false, fmt.Errorf("Match %s is not supported by bringup's own ssh_config parser; install the OpenSSH client so bringup can use `ssh -G`", attr)
		}
		if i+1 >= len(args) {
			return false, fmt.Errorf("Match %s without a pattern", attr)
		}
		i++
		arg := args[i]
		var r bool
		switch attr {
		case "host":
			r = matchPatternList(strings.ToLower(p.currentHost()), arg, true) == 1
		case "originalhost":
			r = matchPatternList(strings.ToLower(p.host), arg, true) == 1
		case "user":
			u := p.opts.User
			if v, ok := p.values["user"]; ok {
				u = v.val
			}
			r = matchPatternList(u, arg, false) == 1
		case "localuser":
			r = matchPatternList(p.opts.User, arg, false) == 1
		default:
			if unsupported == "" {
				unsupported = attr
			}
			continue
		}
		if r == negate {
			result = false
		}
	}
	if result && unsupported != "" {
		return false, fmt.Errorf("Match %s is not supported by bringup's own ssh_config parser; install the OpenSSH client so bringup can use `ssh -G`", unsupported)
	}
	return result, nil
}

// currentHost is what ssh's Match host compares: the HostName obtained so
// far with %h expanded, or the name given.
func (p *parser) currentHost() string {
	v, ok := p.values["hostname"]
	if !ok {
		return p.host
	}
	h, err := expandTokens(v.val, map[byte]string{'%': "%", 'h': p.host})
	if err != nil {
		return v.val
	}
	return h
}

// matchPatternList is ssh's match_pattern_list: a comma-separated list of
// patterns, each possibly negated; 1 if a positive one matched and no
// negated one did, -1 if a negated one matched, 0 otherwise. lower folds
// the patterns to lower case (the name is folded by the caller).
func matchPatternList(s, list string, lower bool) int {
	got := 0
	for _, pat := range strings.Split(list, ",") {
		neg := strings.HasPrefix(pat, "!")
		if neg {
			pat = pat[1:]
		}
		if lower {
			pat = strings.ToLower(pat)
		}
		if matchPattern(pat, s) {
			if neg {
				return -1
			}
			got = 1
		}
	}
	return got
}

// directive records one keyword of an active block.
func (p *parser) directive(key, rest string, args []string, file string, line int, active bool) error {
	cerr := func(format string, a ...any) error {
		return &ConfigError{File: file, Line: line, Msg: fmt.Sprintf(format, a...)}
	}
	switch key {
	case "hostname", "user", "port", "identitiesonly", "proxyjump", "proxycommand",
		"userknownhostsfile", "globalknownhostsfile", "stricthostkeychecking",
		"serveraliveinterval", "serveralivecountmax", "connecttimeout", "hostkeyalias", "hashknownhosts":
		if len(args) == 0 {
			return cerr("%s without a value", key)
		}
		val := args[0]
		switch key {
		case "proxycommand":
			val = rest
		case "userknownhostsfile", "globalknownhostsfile":
			val = strings.Join(args, " ")
		case "port":
			if n, err := strconv.Atoi(val); err != nil || n <= 0 || n > 65535 {
				return cerr("bad Port %q", val)
			}
		case "serveraliveinterval", "serveralivecountmax", "connecttimeout":
			if n, err := strconv.Atoi(val); (err != nil || n < 0) && !(key == "connecttimeout" && val == "none") {
				return cerr("bad %s %q", key, val)
			}
		case "hashknownhosts":
			switch strings.ToLower(val) {
			case "yes", "true", "no", "false":
			default:
				return cerr("bad HashKnownHosts %q (want yes or no)", val)
			}
		}
		if !active {
			return nil
		}
		// ProxyJump and ProxyCommand compete: the first one set wins.
		if key == "proxyjump" || key == "proxycommand" {
			if p.seen["proxyjump"] || p.seen["proxycommand"] {
				return nil
			}
		}
		if !p.seen[key] {
			p.seen[key] = true
			p.values[key] = rawValue{val: val, file: file, line: line}
		}
		return nil
	case "identityfile":
		if len(args) == 0 {
			return cerr("IdentityFile without a value")
		}
		if active {
			p.ids = append(p.ids, rawValue{val: args[0], file: file, line: line})
		}
		return nil
	case "ignoreunknown":
		if active && p.ignored == nil {
			p.ignored = args
		}
		return nil
	}
	if ignoredDirectives[key] || !active {
		// An inactive block's unknown directive cannot change this host's
		// answer (its value goes unchecked, where ssh checks it): were it
		// an error, one Ciphers line under one Host would send every
		// other host to ssh -G.
		return nil
	}
	for _, pat := range p.ignored {
		if matchPattern(strings.ToLower(pat), key) {
			return nil
		}
	}
	return cerr("unsupported directive %q (bringup's parser does not handle it; install the OpenSSH client so bringup can use `ssh -G`, or remove it)", key)
}

// config builds the Config from the recorded values.
func (p *parser) config(alias string) (Config, error) {
	cfg := Config{
		Alias:                 alias,
		HostName:              alias,
		User:                  p.opts.User,
		Port:                  22,
		StrictHostKeyChecking: "ask",
		ServerAliveCountMax:   3,
		Source:                SourceParser,
	}
	v := func(k string) (rawValue, bool) { r, ok := p.values[k]; return r, ok }
	loc := func(r rawValue, err error) error {
		return &ConfigError{File: r.file, Line: r.line, Msg: err.Error()}
	}
	if r, ok := v("hostname"); ok {
		h, err := expandTokens(r.val, map[byte]string{'%': "%", 'h': alias})
		if err != nil {
			return cfg, loc(r, err)
		}
		cfg.HostName = strings.ToLower(h)
	} else {
		cfg.HostName = strings.ToLower(alias)
	}
	if r, ok := v("user"); ok {
		cfg.User = r.val
	}
	if r, ok := v("port"); ok {
		cfg.Port, _ = strconv.Atoi(r.val)
	}
	if r, ok := v("identitiesonly"); ok {
		cfg.IdentitiesOnly = strings.EqualFold(r.val, "yes") || strings.EqualFold(r.val, "true")
	}
	if r, ok := v("stricthostkeychecking"); ok {
		cfg.StrictHostKeyChecking = normStrict(r.val)
	}
	if r, ok := v("serveraliveinterval"); ok {
		n, _ := strconv.Atoi(r.val)
		cfg.ServerAliveInterval = time.Duration(n) * time.Second
	}
	if r, ok := v("serveralivecountmax"); ok {
		cfg.ServerAliveCountMax, _ = strconv.Atoi(r.val)
	}
	if r, ok := v("connecttimeout"); ok && r.val != "none" {
		n, _ := strconv.Atoi(r.val)
		cfg.ConnectTimeout = time.Duration(n) * time.Second
	}
	if r, ok := v("hostkeyalias"); ok && !strings.EqualFold(r.val, "none") {
		cfg.HostKeyAlias = r.val
	}
	if r, ok := v("hashknownhosts"); ok {
		cfg.HashKnownHosts = strings.EqualFold(r.val, "yes") || strings.EqualFold(r.val, "true")
	}
	if r, ok := v("proxyjump"); ok {
		cfg.ProxyJump = splitJump(r.val)
		for _, h := range cfg.ProxyJump {
			if _, err := ParseHop(h); err != nil {
				return cfg, loc(r, err)
			}
		}
	}
	tk := cfg.tokens(p.opts)
	if r, ok := v("proxycommand"); ok && !strings.EqualFold(r.val, "none") {
		c, err := expandTokens(r.val, tk)
		if err != nil {
			return cfg, loc(r, err)
		}
		cfg.ProxyCommand = c
	}
	ids := p.ids
	if len(ids) == 0 {
		for _, d := range defaultIdentityFiles {
			ids = append(ids, rawValue{val: d})
		}
	}
	for _, r := range ids {
		if strings.EqualFold(r.val, "none") {
			continue
		}
		f, err := expandPath(r.val, tk, p.opts.Home)
		if err != nil {
			return cfg, loc(r, err)
		}
		cfg.IdentityFiles = append(cfg.IdentityFiles, f)
	}
	cfg.UserKnownHostsFiles = []string{"~/.ssh/known_hosts", "~/.ssh/known_hosts2"}
	if r, ok := v("userknownhostsfile"); ok {
		cfg.UserKnownHostsFiles = strings.Fields(r.val)
	}
	for i, f := range cfg.UserKnownHostsFiles {
		x, err := expandPath(f, tk, p.opts.Home)
		if err != nil {
			r, _ := v("userknownhostsfile")
			return cfg, loc(r, err)
		}
		cfg.UserKnownHostsFiles[i] = x
	}
	cfg.GlobalKnownHostsFiles = []string{"/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"}
	if r, ok := v("globalknownhostsfile"); ok {
		cfg.GlobalKnownHostsFiles = strings.Fields(r.val)
	}
	for i, f := range cfg.GlobalKnownHostsFiles {
		cfg.GlobalKnownHostsFiles[i] = expandTilde(f, p.opts.Home)
	}
	return cfg, nil
}

// splitLine splits an ssh_config line into its lower-cased keyword, the raw
// rest of the line (for ProxyCommand) and the rest as arguments, following
// ssh's rules: "Key value" or "Key=value", double or single quotes, and a
// '#' at the start of an argument ends the line.
func splitLine(line string) (key, rest string, args []string, err error) {
	s := strings.TrimLeft(line, " \t\r")
	s = strings.TrimRight(s, " \t\r")
	if s == "" || s[0] == '#' {
		return "", "", nil, nil
	}
	i := strings.IndexAny(s, " \t=")
	if i < 0 {
		return strings.ToLower(s), "", nil, nil
	}
	key = strings.ToLower(s[:i])
	s = strings.TrimLeft(s[i:], " \t")
	if strings.HasPrefix(s, "=") {
		s = strings.TrimLeft(s[1:], " \t")
	}
	rest = s
	args, err = splitArgs(s)
	return key, rest, args, err
}

// splitArgs splits whitespace-separated arguments with quotes and backslash
// escapes, stopping at an argument that starts with '#'.
func splitArgs(s string) ([]string, error) {
	var args []string
	i := 0
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) || s[i] == '#' {
			return args, nil
		}
		var b strings.Builder
		var quote byte
		for ; i < len(s); i++ {
			c := s[i]
			if quote != 0 {
				if c == quote {
					quote = 0
				} else if c == '\\' && i+1 < len(s) && (s[i+1] == quote || s[i+1] == '\\') {
					i++
					b.WriteByte(s[i])
				} else {
					b.WriteByte(c)
				}
				continue
			}
			if c == ' ' || c == '\t' {
				break
			}
			if c == '"' || c == '\'' {
				quote = c
				continue
			}
			if c == '\\' && i+1 < len(s) {
				i++
				b.WriteByte(s[i])
				continue
			}
			b.WriteByte(c)
		}
		if quote != 0 {
			return nil, errors.New("unterminated quote")
		}
		args = append(args, b.String())
	}
}

// matchHost reports whether host matches a Host line: at least one positive
// pattern matches and no negated one does.
func matchHost(host string, patterns []string) bool {
	matched := false
	for _, pat := range patterns {
		neg := strings.HasPrefix(pat, "!")
		if neg {
			pat = pat[1:]
		}
		if matchPattern(pat, host) {
			if neg {
				return false
			}
			matched = true
		}
	}
	return matched
}

// matchPattern is ssh's match_pattern: '*' matches any run of characters and
// '?' any one character.
func matchPattern(pat, s string) bool {
	// Iterative glob with backtracking over the last '*'.
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(pat) && (pat[pi] == '?' || pat[pi] == s[si]):
			pi++
			si++
		case pi < len(pat) && pat[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(pat) && pat[pi] == '*' {
		pi++
	}
	return pi == len(pat)
}
