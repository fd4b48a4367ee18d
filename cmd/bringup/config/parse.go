package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/deployment"
	"github.com/bringup-dev/bringup/remote/startup"
	"github.com/bringup-dev/bringup/remote/unitname"
	"github.com/bringup-dev/bringup/ui/notify"
)

// Error is one problem in a config file, at File:Line:Column, in Field
// (a path like hosts[2].probe.port; "" for the document itself).
type Error struct {
	File         string
	Line, Column int
	Field        string
	Msg          string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in a file, in file order: one run of
// bringup shows them all rather than one per attempt.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap gives errors.As access to each *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// maxNodes bounds the nodes visited, aliases counted each time they are
// followed, so that a small file of nested aliases cannot explode.
const maxNodes = 1 << 20

// Parse reads a config from data; path names the file in errors and is
// the base of relative paths in it.
func Parse(path string, data []byte) (*Config, error) {
	d := &decoder{file: path}
	c := &Config{Path: path, Groups: map[string][]string{}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		applyBuiltins(&c.Defaults)
		return c, nil
	case err != nil:
		return nil, Errors{syntaxError(d.file, data, err)}
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, Errors{syntaxError(d.file, data, err)}
	default:
		d.errorf(&extra, "", "a second YAML document; the config is one document")
	}
	if len(doc.Content) > 0 {
		d.config(doc.Content[0], c)
	} else {
		applyBuiltins(&c.Defaults)
	}
	if len(d.errs) > 0 {
		slices.SortStableFunc(d.errs, func(a, b *Error) int {
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			return a.Column - b.Column
		})
		return nil, d.errs
	}
	return c, nil
}

// decoder walks the YAML tree and collects errors.
type decoder struct {
	file  string
	errs  Errors
	nodes int
}

func (d *decoder) errorf(n *yaml.Node, field, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.file, Line: n.Line, Column: n.Column, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// resolve follows aliases and counts the visit; nil once the budget is
// spent (reported once).
func (d *decoder) resolve(n *yaml.Node) *yaml.Node {
	for hops := 0; n != nil && n.Kind == yaml.AliasNode; hops++ {
		if hops > 16 {
			return nil
		}
		n = n.Alias
	}
	d.nodes++
	if d.nodes == maxNodes {
		d.errorf(n, "", "too many nodes (aliases expand too far)")
	}
	if d.nodes >= maxNodes {
		return nil
	}
	return n
}

// isNull reports an empty value ("key:" or "key: null").
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names what n is, for "want X, got Y".
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "nothing"
		case "!!str":
			return strconv.Quote(n.Value)
		}
		return fmt.Sprintf("%s %s", strings.TrimPrefix(n.ShortTag(), "!!"), n.Value)
	case yaml.DocumentNode, yaml.AliasNode: // resolved before a value is described
	}
	return "something else"
}

// join appends key to a field path.
func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

// index appends [i] to a field path.
func index(field string, i int) string { return fmt.Sprintf("%s[%d]", field, i) }

// mapping calls fn for each key of the mapping n in order, reporting
// keys not in allowed (with a suggestion) and keys given twice. A null n
// is an empty mapping.
func (d *decoder) mapping(n *yaml.Node, field string, allowed []string, fn func(key string, k, v *yaml.Node)) {
	if n = d.resolve(n); n == nil || isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(n, field, "want a mapping, got %s", describe(n))
		return
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := d.resolve(n.Content[i])
		if k == nil {
			return
		}
		if k.Kind != yaml.ScalarNode {
			d.errorf(k, field, "want a field name, got %s", describe(k))
			continue
		}
		key := k.Value
		if prev, ok := seen[key]; ok {
			d.errorf(k, field, "field %q given twice (first at %d:%d)", key, prev.Line, prev.Column)
			continue
		}
		seen[key] = k
		if !slices.Contains(allowed, key) {
			d.errorf(k, field, "unknown field %q%s", key, suggest(key, allowed))
			continue
		}
		fn(key, k, n.Content[i+1])
	}
}

// sequence calls fn for each item of the list n. A null n is empty.
func (d *decoder) sequence(n *yaml.Node, field string, fn func(i int, item *yaml.Node)) {
	if n = d.resolve(n); n == nil || isNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, field, "want a list, got %s", describe(n))
		return
	}
	for i, item := range n.Content {
		fn(i, item)
	}
}

// str reads a string; ok is false for null (not given) and for errors.
// Other scalars are refused so that `name: true` or `user: 0755` do not
// silently become strings of another spelling.
func (d *decoder) str(n *yaml.Node, field string) (string, bool) {
	if n = d.resolve(n); n == nil || isNull(n) {
		return "", false
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		if n.Kind == yaml.ScalarNode {
			d.errorf(n, field, "want a string, got %s (quote it if it is meant as a string)", describe(n))
		} else {
			d.errorf(n, field, "want a string, got %s", describe(n))
		}
		return "", false
	}
	return n.Value, true
}

// boolean reads true or false; YAML 1.1's yes/no/on/off are strings in
// YAML 1.2 and refused here rather than guessed.
func (d *decoder) boolean(n *yaml.Node, field string) (bool, bool) {
	if n = d.resolve(n); n == nil || isNull(n) {
		return false, false
	}
	var b bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
		d.errorf(n, field, "want true or false, got %s", describe(n))
		return false, false
	}
	return b, true
}

// port reads a TCP port.
func (d *decoder) port(n *yaml.Node, field string) (int, bool) {
	if n = d.resolve(n); n == nil || isNull(n) {
		return 0, false
	}
	var p int
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&p) != nil {
		d.errorf(n, field, "want a port number, got %s", describe(n))
		return 0, false
	}
	if p < 1 || p > 65535 {
		d.errorf(n, field, "port %d is out of range (1-65535)", p)
		return 0, false
	}
	return p, true
}

// check reads a string and validates it with f, which may rewrite it.
func (d *decoder) check(n *yaml.Node, field string, f func(string) (string, error)) (string, bool) {
	s, ok := d.str(n, field)
	if !ok {
		return "", false
	}
	s, err := f(s)
	if err != nil {
		d.errorf(d.resolve(n), field, "%v", err)
		return "", false
	}
	return s, true
}

// The fields of each mapping, as functions so no table can be changed.
func topFields() []string {
	return []string{"defaults", "hosts", "groups", "deployments", "kernels", "read_only", "ssh_config", "rules", "notify", "throughput_drop", "source"}
}
func notifyFields() []string { return []string{"bell", "title", "progress", "desktop"} }
func sourceFields() []string { return []string{"kind", "url", "via"} }
func defFields() []string    { return []string{"unit", "engine", "probe", "user"} }
func hostFields() []string {
	return []string{"name", "ssh", "user", "address", "port", "unit", "engine", "probe", "labels"}
}
func probeFields() []string { return []string{"port", "path", "completion"} }
func kernelFields() []string {
	return []string{"name", "env_var", "modes", "pythonpath", "local_dir", "remote_dir", "check"}
}
func modeFields() []string { return []string{"name", "capture_safe", "description"} }

// config reads the top-level mapping. Sections are read in dependency
// order (defaults before hosts before groups), whatever order the file
// has them in.
func (d *decoder) config(n *yaml.Node, c *Config) {
	if r := d.resolve(n); r != nil && !isNull(r) && r.Kind != yaml.MappingNode {
		d.errorf(r, "", "want a mapping of defaults, hosts, groups, kernels, …, got %s", describe(r))
		return
	}
	sections := map[string]*yaml.Node{}
	d.mapping(n, "", topFields(), func(key string, _, v *yaml.Node) { sections[key] = v })
	if v := sections["defaults"]; v != nil {
		d.defaults(v, &c.Defaults)
	}
	applyBuiltins(&c.Defaults)
	if v := sections["hosts"]; v != nil {
		c.Hosts = d.hosts(v, c.Defaults)
	}
	if v := sections["groups"]; v != nil {
		c.Groups = d.groups(v, c.Hosts)
	}
	if v := sections["deployments"]; v != nil {
		c.Deployments = d.deployments(v, c.Hosts)
	}
	if v := sections["kernels"]; v != nil {
		c.Kernels = d.kernels(v, filepath.Dir(d.file))
	}
	if v := sections["rules"]; v != nil {
		c.Rules = d.rules(v, filepath.Dir(d.file))
	}
	if v := sections["read_only"]; v != nil {
		c.ReadOnly, _ = d.boolean(v, "read_only")
	}
	if v := sections["ssh_config"]; v != nil {
		if s, ok := d.str(v, "ssh_config"); ok {
			c.SSHConfig = relTo(filepath.Dir(d.file), s)
		}
	}
	c.Notify = notify.Defaults()
	if v := sections["notify"]; v != nil {
		d.notify(v, &c.Notify)
	}
	if v := sections["throughput_drop"]; v != nil {
		c.ThroughputDrop, _ = d.fraction(v, "throughput_drop")
	}
	if v := sections["source"]; v != nil {
		d.source(v, &c.Source)
	}
}

// source reads the source: section: {kind: victorialogs, url: …, via:
// …}; a store needs its URL.
func (d *decoder) source(n *yaml.Node, src *Source) {
	var seen, urlSeen *yaml.Node
	d.mapping(n, "source", sourceFields(), func(key string, _, v *yaml.Node) {
		switch key {
		case "kind":
			seen = v
			if s, ok := d.check(v, "source.kind", checkSourceKind); ok {
				src.Kind = s
			}
		case "via":
			if s, ok := d.check(v, "source.via", checkVia); ok {
				src.Via = s
			}
		default: // url
			urlSeen = v
			if s, ok := d.check(v, "source.url", checkStoreURL); ok {
				src.URL = s
			}
		}
	})
	switch {
	case seen == nil && src.URL != "":
		d.errorf(n, "source", "url without kind: add kind: %s", SourceVictoriaLogs)
	case src.Spec().NeedsURL && urlSeen == nil:
		d.errorf(n, "source", "kind %s needs url: (the store's http://HOST:PORT)", src.Kind)
	case src.Kind != "" && !src.Spec().NeedsURL && src.URL != "":
		d.errorf(n, "source.url", "kind %s takes no url", src.Kind)
	case !src.Spec().TakesVia && src.Via != "":
		d.errorf(n, "source.via", "via is the way to a log store: it needs kind: %s", SourceVictoriaLogs)
	}
}

// checkVia accepts an SSH host as the fleet's hosts are written:
// an ssh_config name or [user@]host[:port].
func checkVia(s string) (string, error) {
	if _, err := ParseTarget(s); err != nil {
		return "", fmt.Errorf("want an SSH host (ssh_config name or [user@]host[:port]): %w", err)
	}
	return s, nil
}

// notify reads the notify: section; a field not given keeps its default.
func (d *decoder) notify(n *yaml.Node, set *notify.Settings) {
	d.mapping(n, "notify", notifyFields(), func(key string, _, v *yaml.Node) {
		f := join("notify", key)
		flag := map[string]*bool{"bell": &set.Bell, "title": &set.Title, "progress": &set.Progress}[key]
		if flag != nil {
			if b, ok := d.boolean(v, f); ok {
				*flag = b
			}
			return
		}
		if s, ok := d.check(v, f, notify.CheckDesktop); ok { // key is desktop
			set.Desktop = s
		}
	})
}

// fraction reads a number between 0 and 1, both excluded (0.2 is 20 %).
func (d *decoder) fraction(n *yaml.Node, field string) (float64, bool) {
	if n = d.resolve(n); n == nil || isNull(n) {
		return 0, false
	}
	var f float64
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!float" && n.ShortTag() != "!!int") || n.Decode(&f) != nil || f <= 0 || f >= 1 {
		d.errorf(n, field, "want a fraction between 0 and 1 (0.2 for 20 %%), got %s", describe(n))
		return 0, false
	}
	return f, true
}

// rules reads the rule pack files the config lists (paths relative to the
// config file). A file that cannot be read is an error at its line in the
// config; an error inside it names the rule file and its own line.
func (d *decoder) rules(n *yaml.Node, dir string) []startup.RulePack {
	var out []startup.RulePack
	d.sequence(n, "rules", func(i int, item *yaml.Node) {
		field := index("rules", i)
		p, ok := d.str(item, field)
		if !ok {
			return
		}
		packs, err := ReadRules(relTo(dir, p))
		if err != nil {
			d.errorf(item, field, "%v", err)
			return
		}
		out = append(out, packs...)
	})
	return out
}

// ReadRules reads the rule packs of a YAML rule file; an error names the
// file and its line. A file past maxFile is refused: a rule file is a few
// KiB, and `--rules /dev/zero` must be an error, not an exhausted memory.
func ReadRules(path string) ([]startup.RulePack, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > maxFile {
		return nil, fmt.Errorf("%s: larger than %d MiB: not a rule file", path, maxFile>>20)
	}
	return startup.ParsePacks(path, b)
}

// relTo makes a relative path relative to dir; ~ paths and absolute ones
// are kept.
func relTo(dir, p string) string {
	if p == "" || filepath.IsAbs(p) || p == "~" || strings.HasPrefix(p, "~/") || dir == "" || dir == "." {
		return p
	}
	return filepath.Join(dir, p)
}

func (d *decoder) defaults(n *yaml.Node, def *HostDefaults) {
	d.mapping(n, "defaults", defFields(), func(key string, _, v *yaml.Node) {
		f := join("defaults", key)
		switch key {
		case "unit":
			def.Unit, _ = d.check(v, f, unitname.Normalize)
		case "engine":
			def.Engine, _ = d.check(v, f, checkEngine)
		case "user":
			def.User, _ = d.check(v, f, checkUser)
		case "probe":
			var r rawHost
			d.probe(v, f, &r)
			def.Probe = Probe{Port: r.probePort, Path: r.path}
			if r.completion != nil {
				def.Probe.Completion = *r.completion
			}
		}
	})
}

func (d *decoder) probe(n *yaml.Node, field string, r *rawHost) {
	d.mapping(n, field, probeFields(), func(key string, _, v *yaml.Node) {
		f := join(field, key)
		switch key {
		case "port":
			r.probePort, _ = d.port(v, f)
		case "path":
			r.path, _ = d.check(v, f, checkPath)
		case "completion":
			if b, ok := d.boolean(v, f); ok {
				r.completion = &b
			}
		}
	})
}

func (d *decoder) hosts(n *yaml.Node, def HostDefaults) []Host {
	var out []Host
	first := map[string]*yaml.Node{}
	d.sequence(n, "hosts", func(i int, item *yaml.Node) {
		field := index("hosts", i)
		item = d.resolve(item)
		if item == nil {
			return
		}
		var r rawHost
		nameNode := item
		switch item.Kind {
		case yaml.ScalarNode:
			s, ok := d.check(item, field, checkTarget)
			if !ok {
				return
			}
			r.name, r.ssh = s, s
		case yaml.MappingNode:
			nameNode = nil
			ok := true
			d.mapping(item, field, hostFields(), func(key string, _, v *yaml.Node) {
				f := join(field, key)
				var good bool
				switch key {
				case "name":
					r.name, good = d.check(v, f, checkName)
					nameNode = d.resolve(v)
				case "ssh":
					r.ssh, good = d.check(v, f, checkTarget)
				case "user":
					r.user, good = d.check(v, f, checkUser)
				case "address":
					r.address, good = d.check(v, f, checkAddress)
				case "port":
					r.port, good = d.port(v, f)
				case "unit":
					r.unit, good = d.check(v, f, unitname.Normalize)
				case "engine":
					r.engine, good = d.check(v, f, checkEngine)
				case "probe":
					n := len(d.errs)
					d.probe(v, f, &r)
					good = len(d.errs) == n
				case "labels":
					n := len(d.errs)
					r.labels = d.labels(v, f)
					good = len(d.errs) == n
				}
				ok = ok && (good || isNull(v))
			})
			if nameNode == nil {
				d.errorf(item, field, "name is missing")
				return
			}
			if !ok || r.name == "" {
				return
			}
			if r.ssh == "" {
				if _, err := ParseTarget(r.name); err != nil {
					d.errorf(nameNode, join(field, "name"), "%v (or give ssh:)", err)
					return
				}
			}
		default:
			d.errorf(item, field, "want a host name or a mapping with name:, got %s", describe(item))
			return
		}
		if prev, dup := first[r.name]; dup {
			d.errorf(nameNode, field, "host %q listed twice (first at %d:%d)", r.name, prev.Line, prev.Column)
			return
		}
		first[r.name] = nameNode
		out = append(out, hostWithDefaults(r, def))
	})
	return out
}

// labels reads a host's labels: a mapping of label names to values
// (labels: {rack: r12}), both plain tokens, as the console shows them in
// its group rows.
func (d *decoder) labels(n *yaml.Node, field string) map[string]string {
	if n = d.resolve(n); n == nil || isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(n, field, "want a mapping of label names to values (labels: {rack: r12}), got %s", describe(n))
		return nil
	}
	out := map[string]string{}
	first := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := d.resolve(n.Content[i])
		if k == nil {
			return out
		}
		name, ok := d.check(k, field, checkToken)
		if !ok {
			continue
		}
		if prev, dup := first[name]; dup {
			d.errorf(k, field, "label %q given twice (first at %d:%d)", name, prev.Line, prev.Column)
			continue
		}
		first[name] = k
		f := join(field, name)
		v := d.resolve(n.Content[i+1])
		if v != nil && v.Kind == yaml.ScalarNode && (v.ShortTag() == "!!int" || v.ShortTag() == "!!float") {
			// rack: 12 means the rack named 12, not a number to reformat.
			if _, err := checkToken(v.Value); err == nil {
				out[name] = v.Value
				continue
			}
		}
		if value, ok := d.check(n.Content[i+1], f, checkToken); ok {
			out[name] = value
		} else if v != nil && isNull(v) {
			d.errorf(v, f, "empty label value")
		}
	}
	return out
}

func (d *decoder) groups(n *yaml.Node, hosts []Host) map[string][]string {
	out := map[string][]string{}
	for _, l := range d.hostLists(n, "groups", "group", hosts) {
		out[l.name] = l.hosts
	}
	return out
}

// deployments reads the deployments: section, a mapping of names to the
// hosts that serve one model together, node rank 0 first. A host serves
// in one deployment at most.
func (d *decoder) deployments(n *yaml.Node, hosts []Host) []deployment.Declared {
	var out []deployment.Declared
	in := map[string]string{}
	for _, l := range d.hostLists(n, "deployments", "deployment", hosts) {
		for i, h := range l.hosts {
			if other, dup := in[h]; dup {
				d.errorf(l.items[i], index(join("deployments", l.name), i), "host %q is in deployment %q already", h, other)
				continue
			}
			in[h] = l.name
		}
		out = append(out, deployment.Declared{Name: l.name, Hosts: l.hosts})
	}
	return out
}

// hostList is one named list of hosts of a section (a group, a
// deployment), with the node of each host for errors.
type hostList struct {
	name  string
	hosts []string
	items []*yaml.Node
}

// hostLists reads a section that maps names to lists of known hosts, in
// the order written; what is the word its errors use for one entry.
func (d *decoder) hostLists(n *yaml.Node, section, what string, hosts []Host) []hostList {
	var out []hostList
	seen := map[string]bool{}
	known := map[string]bool{}
	names := make([]string, len(hosts))
	for i, h := range hosts {
		known[h.Name] = true
		names[i] = h.Name
	}
	if n = d.resolve(n); n == nil {
		return out
	}
	if n.Kind != yaml.MappingNode && !isNull(n) {
		d.errorf(n, section, "want a mapping of %s names to lists of hosts, got %s", what, describe(n))
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := d.resolve(n.Content[i])
		if k == nil {
			return out
		}
		name, ok := d.check(k, section, checkName)
		if !ok {
			continue
		}
		field := join(section, name)
		if seen[name] {
			d.errorf(k, section, "%s %q given twice", what, name)
			continue
		}
		if known[name] {
			d.errorf(k, field, "a %s may not have the name of a host", what)
			continue
		}
		seen[name] = true
		l := hostList{name: name, hosts: []string{}}
		in := map[string]bool{}
		d.sequence(n.Content[i+1], field, func(j int, item *yaml.Node) {
			f := index(field, j)
			h, ok := d.str(item, f)
			switch {
			case !ok:
				if isNull(item) {
					d.errorf(item, f, "empty host name")
				}
			case !known[h]:
				d.errorf(d.resolve(item), f, "unknown host %q%s (hosts: %s)", h, suggest(h, names), strings.Join(names, ", "))
			case in[h]:
				d.errorf(d.resolve(item), f, "host %q listed twice", h)
			default:
				in[h] = true
				l.hosts = append(l.hosts, h)
				l.items = append(l.items, d.resolve(item))
			}
		})
		if v := d.resolve(n.Content[i+1]); v != nil && (isNull(v) || v.Kind == yaml.SequenceNode && len(v.Content) == 0) {
			d.errorf(v, field, "no hosts")
		}
		out = append(out, l)
	}
	return out
}

func (d *decoder) kernels(n *yaml.Node, dir string) kernels.Catalog {
	var cat kernels.Catalog
	firstName := map[string]*yaml.Node{}
	firstVar := map[string]*yaml.Node{}
	d.sequence(n, "kernels", func(i int, item *yaml.Node) {
		field := index("kernels", i)
		var k kernels.Kernel
		var nameNode, varNode, modesNode *yaml.Node
		errs := len(d.errs)
		d.mapping(item, field, kernelFields(), func(key string, _, v *yaml.Node) {
			f := join(field, key)
			switch key {
			case "name":
				k.Name, _ = d.check(v, f, checkToken)
				nameNode = d.resolve(v)
			case "env_var":
				k.EnvVar, _ = d.check(v, f, checkEnvVar)
				varNode = d.resolve(v)
			case "modes":
				k.Modes = d.modes(v, f)
				modesNode = d.resolve(v)
			case "pythonpath":
				k.PythonPath, _ = d.check(v, f, checkRemotePath)
			case "remote_dir":
				k.RemoteDir, _ = d.check(v, f, checkRemotePath)
			case "local_dir":
				if s, ok := d.str(v, f); ok {
					k.LocalDir = relTo(dir, s)
				}
			case "check":
				k.Check, _ = d.str(v, f)
			}
		})
		item = d.resolve(item)
		if item == nil || item.Kind != yaml.MappingNode {
			return
		}
		switch {
		case nameNode == nil:
			d.errorf(item, field, "name is missing")
		case varNode == nil:
			d.errorf(item, field, "env_var is missing (the unit variable that selects the mode)")
		case modesNode == nil || isNull(modesNode) || modesNode.Kind == yaml.SequenceNode && len(modesNode.Content) == 0:
			at := item
			if modesNode != nil {
				at = modesNode
			}
			d.errorf(at, field, "no modes")
		}
		if len(d.errs) > errs {
			return
		}
		if !slices.ContainsFunc(k.Modes, func(m kernels.Mode) bool { return m.CaptureSafe }) {
			d.errorf(modesNode, join(field, "modes"), "no capture-safe mode: a restart could never pass CUDA graph capture")
			return
		}
		if prev, dup := firstName[k.Name]; dup {
			d.errorf(nameNode, join(field, "name"), "kernel %q listed twice (first at %d:%d)", k.Name, prev.Line, prev.Column)
			return
		}
		if prev, dup := firstVar[k.EnvVar]; dup {
			d.errorf(varNode, join(field, "env_var"), "%s already selects another kernel's mode (at %d:%d)", k.EnvVar, prev.Line, prev.Column)
			return
		}
		if err := k.Validate(); err != nil {
			d.errorf(item, field, "%v", err)
			return
		}
		firstName[k.Name], firstVar[k.EnvVar] = nameNode, varNode
		cat.Kernels = append(cat.Kernels, k)
	})
	return cat
}

func (d *decoder) modes(n *yaml.Node, field string) []kernels.Mode {
	var out []kernels.Mode
	first := map[string]*yaml.Node{}
	d.sequence(n, field, func(i int, item *yaml.Node) {
		f := index(field, i)
		var m kernels.Mode
		var nameNode *yaml.Node
		safeGiven := false
		errs := len(d.errs)
		d.mapping(item, f, modeFields(), func(key string, _, v *yaml.Node) {
			switch key {
			case "name":
				m.Name, _ = d.check(v, join(f, key), checkToken)
				nameNode = d.resolve(v)
			case "capture_safe":
				m.CaptureSafe, safeGiven = d.boolean(v, join(f, key))
				safeGiven = safeGiven || len(d.errs) > errs
			case "description":
				m.Description, _ = d.str(v, join(f, key))
			}
		})
		item = d.resolve(item)
		if item == nil || item.Kind != yaml.MappingNode {
			return
		}
		switch {
		case nameNode == nil:
			d.errorf(item, f, "name is missing")
		case !safeGiven:
			d.errorf(item, f, "capture_safe is missing (true if the mode does no host syncs, so CUDA graph capture works)")
		}
		if len(d.errs) > errs {
			return
		}
		if prev, dup := first[m.Name]; dup {
			d.errorf(nameNode, join(f, "name"), "mode %q listed twice (first at %d:%d)", m.Name, prev.Line, prev.Column)
			return
		}
		first[m.Name] = nameNode
		out = append(out, m)
	})
	return out
}

// Value checks. Each returns the value to keep (possibly normalised).

func checkEngine(s string) (string, error) {
	switch s {
	case EngineSGLang, EngineVLLM, EngineAuto:
		return s, nil
	}
	return "", fmt.Errorf("unknown engine %q (want sglang, vllm or auto)", s)
}

func checkTarget(s string) (string, error) {
	_, err := ParseTarget(s)
	return s, err
}

func checkName(s string) (string, error) {
	switch {
	case s == "":
		return "", errors.New("empty name")
	case strings.HasPrefix(s, "-"):
		return "", fmt.Errorf("%q: must not start with '-'", s)
	case strings.ContainsFunc(s, badTargetRune):
		return "", fmt.Errorf("%q: spaces, commas, quotes and control characters are not allowed", s)
	}
	return s, nil
}

func checkUser(s string) (string, error) {
	return nameWithout(s, "@:", "a user name has no @ or :")
}

func checkAddress(s string) (string, error) {
	return nameWithout(s, "@", "an address has no @ (use user:)")
}

// nameWithout checks s as a name that also has none of chars.
func nameWithout(s, chars, why string) (string, error) {
	if _, err := checkName(s); err != nil {
		return "", err
	}
	if strings.ContainsAny(s, chars) {
		return "", fmt.Errorf("%q: %s", s, why)
	}
	return s, nil
}

func checkPath(s string) (string, error) {
	if !strings.HasPrefix(s, "/") || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return "", fmt.Errorf("%q: want an HTTP path starting with /", s)
	}
	return s, nil
}

// tokenRe is a kernel or mode name: it goes into KERNEL=MODE arguments and
// unit Environment= lines.
var tokenRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func checkToken(s string) (string, error) {
	if !tokenRe.MatchString(s) {
		return "", fmt.Errorf("%q: want letters, digits, '.', '_' or '-'", s)
	}
	return s, nil
}

var envVarRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func checkEnvVar(s string) (string, error) {
	if !envVarRe.MatchString(s) {
		return "", fmt.Errorf("%q is not an environment variable name", s)
	}
	return s, nil
}

// checkRemotePath wants an absolute path on the host, free of characters
// that would need quoting in a unit file or a shell.
func checkRemotePath(s string) (string, error) {
	if !strings.HasPrefix(s, "/") {
		return "", fmt.Errorf("%q: want an absolute path on the host", s)
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f || strings.ContainsRune("'\"`\\$%;:", r) }) {
		return "", fmt.Errorf("%q: spaces, quotes, '$', '%%', ';' and ':' are not allowed", s)
	}
	return filepath.Clean(s), nil
}

// suggest returns ` (did you mean "x"?)` for the closest of options
// within two edits (or differing only in case), else "".
func suggest(s string, options []string) string {
	best, bestD := "", 3
	for _, o := range options {
		if strings.EqualFold(s, o) {
			return fmt.Sprintf(" (did you mean %q?)", o)
		}
		if d := editDistance(s, o); d < bestD {
			best, bestD = o, d
		}
	}
	if best == "" || len(s) < 3 {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance, with early exit for long
// strings (they are never close).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
