package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/deployment"
	"github.com/bringup-dev/bringup/ui/notify"
)

// full is the example of the design, every section used.
const full = `defaults:            # applies to every host unless overridden
  unit: sglang.service
  engine: sglang     # sglang | vllm | auto
  probe: {port: 30000, path: /health, completion: false}
  user: root
hosts:
  - gpu1
  - name: gpu2
    ssh: deploy@10.0.0.2:2222
    unit: sglang-b.service
    engine: vllm
    probe: {port: 8000}
groups:
  rack-a: [gpu1, gpu2]
kernels:
  - name: kdtree-verify
    env_var: KDTREE_MODE
    modes:
      - {name: off, capture_safe: true}
      - {name: validate, capture_safe: false}
      - {name: on, capture_safe: true}
    pythonpath: /opt/kdtree/site
    local_dir: ./kernels/kdtree
    remote_dir: /opt/kdtree/site
    check: python3 -m kdtree_ext.capture_check --mode {mode}
read_only: false
ssh_config: ~/.ssh/config
notify: {progress: false, desktop: osc777}   # bell and title keep their default (on)
`

func TestParseFull(t *testing.T) {
	c, err := Parse("/etc/bringup/config.yaml", []byte(full))
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Path:     "/etc/bringup/config.yaml",
		Defaults: HostDefaults{Unit: "sglang.service", Engine: "sglang", User: "root", Probe: Probe{Port: 30000, Path: "/health"}},
		Hosts: []Host{
			{Host: remote.Host{Name: "gpu1", Unit: "sglang.service", Engine: "sglang"}, SSH: "gpu1", User: "root", Probe: Probe{Port: 30000, Path: "/health"}},
			{Host: remote.Host{Name: "gpu2", Unit: "sglang-b.service", Engine: "vllm"}, SSH: "deploy@10.0.0.2:2222", User: "root", Probe: Probe{Port: 8000, Path: "/health"}},
		},
		Groups: map[string][]string{"rack-a": {"gpu1", "gpu2"}},
		Kernels: kernels.Catalog{Kernels: []kernels.Kernel{{
			Name: "kdtree-verify", EnvVar: "KDTREE_MODE",
			Modes:      []kernels.Mode{{Name: "off", CaptureSafe: true}, {Name: "validate"}, {Name: "on", CaptureSafe: true}},
			PythonPath: "/opt/kdtree/site", LocalDir: "/etc/bringup/kernels/kdtree", RemoteDir: "/opt/kdtree/site",
			Check: "python3 -m kdtree_ext.capture_check --mode {mode}",
		}}},
		SSHConfig: "~/.ssh/config",
		Notify:    notify.Settings{Bell: true, Title: true, Desktop: notify.DesktopOSC777},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got  %+v\nwant %+v", c, want)
	}
	// gpu2's defaults user is overridden by the user in its ssh target.
	if tg := c.Hosts[1].Target(); tg != (Target{Host: "10.0.0.2", User: "root", Port: 2222}) {
		t.Errorf("gpu2 target %+v: an explicit user: (here from defaults) wins over the ssh target's", tg)
	}
}

// TestYAML12Words checks the YAML 1.1 trap: off, on, yes, no are mode
// names (strings) in YAML 1.2, which yaml.v3 follows, while a boolean
// field refuses them.
func TestYAML12Words(t *testing.T) {
	const doc = `kernels:
  - name: k
    env_var: K
    modes:
      - {name: off, capture_safe: true}
      - {name: on, capture_safe: true}
      - {name: yes, capture_safe: true}
      - {name: no, capture_safe: true}
      - {name: y, capture_safe: true}
      - {name: Off, capture_safe: true}
`
	c, err := Parse("c.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Kernels.Kernels[0].ModeNames(); !reflect.DeepEqual(got, []string{"off", "on", "yes", "no", "y", "Off"}) {
		t.Errorf("mode names %q, want the words as written", got)
	}
	_, err = Parse("c.yaml", []byte("read_only: yes\n"))
	if err == nil || err.Error() != `c.yaml:1:12: read_only: want true or false, got "yes"` {
		t.Errorf("read_only: yes gave %v", err)
	}
}

func TestParseGood(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		path string
		want func(c *Config) any
		is   any
	}{
		{"empty file", "", "c.yaml", func(c *Config) any { return len(c.Hosts) }, 0},
		{"comment only", "# nothing yet\n", "c.yaml", func(c *Config) any { return c.Defaults }, HostDefaults{Engine: "auto", Probe: Probe{Path: "/health"}}},
		{"builtin defaults", "hosts: [gpu1]\n", "c.yaml", func(c *Config) any { return c.Hosts[0] },
			Host{Host: remote.Host{Name: "gpu1", Unit: "sglang.service", Engine: "auto"}, SSH: "gpu1", Probe: Probe{Port: 30000, Path: "/health"}}},
		{"vllm defaults follow the engine", "hosts: [{name: v1, engine: vllm}]\n", "c.yaml", func(c *Config) any { return c.Hosts[0] },
			Host{Host: remote.Host{Name: "v1", Unit: "vllm.service", Engine: "vllm"}, SSH: "v1", Probe: Probe{Port: 8000, Path: "/health"}}},
		{"unit gets .service", "defaults: {unit: sglang}\nhosts: [gpu1]\n", "c.yaml", func(c *Config) any { return c.Hosts[0].Unit }, "sglang.service"},
		{"per-host completion overrides", "defaults: {probe: {completion: true}}\nhosts: [a, {name: b, probe: {completion: false}}]\n", "c.yaml",
			func(c *Config) any { return [2]bool{c.Hosts[0].Probe.Completion, c.Hosts[1].Probe.Completion} }, [2]bool{true, false}},
		{"testbed style host", "hosts:\n  - {name: gpu1, ssh: gpu1, address: 10.1.0.2, user: root, port: 22, unit: sglang.service}\n", "c.yaml",
			func(c *Config) any { return c.Hosts[0].Target() }, Target{Host: "gpu1", HostName: "10.1.0.2", User: "root", Port: 22}},
		{"user@host:port as a plain entry", "hosts: ['deploy@[fe80::1]:2222']\n", "c.yaml",
			func(c *Config) any { return c.Hosts[0].Target() }, Target{Host: "fe80::1", User: "deploy", Port: 2222}},
		{"anchors", "defaults: &d {unit: a.service}\nhosts: [{name: x, unit: b}]\ngroups: {all: &all [x], also: *all}\n", "c.yaml",
			func(c *Config) any { return c.Groups["also"] }, []string{"x"}},
		{"relative paths from the file's directory", "ssh_config: ssh/config\n", "/srv/fleet/c.yaml", func(c *Config) any { return c.SSHConfig }, "/srv/fleet/ssh/config"},
		{"relative path beside a relative file", "ssh_config: ssh/config\n", "c.yaml", func(c *Config) any { return c.SSHConfig }, "ssh/config"},
		{"null sections", "defaults:\nhosts:\ngroups:\nkernels:\n", "c.yaml", func(c *Config) any { return len(c.Hosts) + len(c.Groups) + len(c.Kernels.Kernels) }, 0},
		{"probe addr", "hosts: [{name: a, probe: {port: 8080}}]\n", "c.yaml", func(c *Config) any { return c.Hosts[0].Probe.Addr() }, "127.0.0.1:8080"},
		{"labels", "hosts:\n  - {name: a, labels: {rack: r12, zone: eu-1}}\n  - {name: b, labels: {rack: 7}}\n  - c\n", "c.yaml",
			func(c *Config) any { return LabelsOf(c.Hosts) }, map[string]map[string]string{"a": {"rack": "r12", "zone": "eu-1"}, "b": {"rack": "7"}}},
		{"no labels", "hosts: [a, {name: b, labels: }]\n", "c.yaml", func(c *Config) any { return LabelsOf(c.Hosts) == nil }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(tt.path, []byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.want(c); !reflect.DeepEqual(got, tt.is) {
				t.Errorf("got %#v, want %#v", got, tt.is)
			}
		})
	}
}

// TestDeployments: the deployments: section keeps the config's order
// of deployments and of nodes (rank 0 first).
func TestDeployments(t *testing.T) {
	c, err := Parse("c.yaml", []byte("hosts: [a, b, c, d]\ndeployments:\n  r1: [d, c]\n  kimi: [a, b]\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []deployment.Declared{{Name: "r1", Hosts: []string{"d", "c"}}, {Name: "kimi", Hosts: []string{"a", "b"}}}
	if !reflect.DeepEqual(c.Deployments, want) {
		t.Errorf("Deployments = %+v, want %+v", c.Deployments, want)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"unknown top field", "hsots: [a]\n", `c.yaml:1:1: unknown field "hsots" (did you mean "hosts"?)`},
		{"notify field", "hosts: [a]\nnotify: {bel: false}\n", `c.yaml:2:10: notify: unknown field "bel" (did you mean "bell"?)`},
		{"notify bool", "hosts: [a]\nnotify: {bell: off}\n", `c.yaml:2:16: notify.bell: want true or false, got "off"`},
		{"source kind", "hosts: [a]\nsource: {kind: victorialog, url: http://s:9428}\n", `c.yaml:2:16: source.kind: unknown source "victorialog": want ssh or victorialogs (did you mean "victorialogs"?)`},
		{"source url", "hosts: [a]\nsource:\n  kind: victorialogs\n  url: s:9428\n", `c.yaml:4:8: source.url: "s:9428": want http://HOST:PORT (VictoriaLogs listens on :9428)`},
		{"source without url", "hosts: [a]\nsource: {kind: victorialogs}\n", `c.yaml:2:9: source: kind victorialogs needs url: (the store's http://HOST:PORT)`},
		{"source field", "hosts: [a]\nsource: {kind: victorialogs, url: http://s:9428, through: bastion}\n", `c.yaml:2:50: source: unknown field "through"`},
		{"source via ssh", "hosts: [a]\nsource: {kind: ssh, via: bastion}\n", `c.yaml:2:9: source.via: via is the way to a log store: it needs kind: victorialogs`},
		{"source via", "hosts: [a]\nsource: {kind: victorialogs, url: http://s:9428, via: \"-oProxyCommand=x\"}\n", `c.yaml:2:55: source.via: want an SSH host (ssh_config name or [user@]host[:port]): "-oProxyCommand=x": must not start with '-'`},
		{"notify desktop", "hosts: [a]\nnotify:\n  desktop: growl\n", `c.yaml:3:12: notify.desktop: unknown desktop notification "growl" (want off, osc9 or osc777)`},
		{"throughput drop in percent", "throughput_drop: 20\n", `c.yaml:1:18: throughput_drop: want a fraction between 0 and 1 (0.2 for 20 %), got int 20`},
		{"unknown host field", "hosts:\n  - gpu1\n  - name: gpu2\n    engin: vllm\n", `c.yaml:4:5: hosts[1]: unknown field "engin" (did you mean "engine"?)`},
		{"unknown field, no suggestion", "defaults: {colour: red}\n", `c.yaml:1:12: defaults: unknown field "colour"`},
		{"case suggestion", "defaults: {Unit: x}\n", `c.yaml:1:12: defaults: unknown field "Unit" (did you mean "unit"?)`},
		{"field twice", "defaults:\n  unit: a\n  unit: b\n", `c.yaml:3:3: defaults: field "unit" given twice (first at 2:3)`},
		{"duplicate host", "hosts:\n  - gpu1\n  - {name: gpu1, unit: x}\n", `c.yaml:3:12: hosts[1]: host "gpu1" listed twice (first at 2:5)`},
		{"unknown engine", "hosts:\n  - {name: a, engine: sglng}\n", `c.yaml:2:23: hosts[0].engine: unknown engine "sglng" (want sglang, vllm or auto)`},
		{"defaults engine", "defaults:\n  engine: tgi\n", `c.yaml:2:11: defaults.engine: unknown engine "tgi" (want sglang, vllm or auto)`},
		{"port out of range", "defaults:\n  probe: {port: 70000}\n", `c.yaml:2:17: defaults.probe.port: port 70000 is out of range (1-65535)`},
		{"port zero", "hosts: [{name: a, probe: {port: 0}}]\n", `c.yaml:1:33: hosts[0].probe.port: port 0 is out of range (1-65535)`},
		{"port a string", "hosts: [{name: a, port: '22'}]\n", `c.yaml:1:25: hosts[0].port: want a port number, got "22"`},
		{"probe path", "defaults: {probe: {path: health}}\n", `c.yaml:1:26: defaults.probe.path: "health": want an HTTP path starting with /`},
		{"completion yes", "defaults: {probe: {completion: yes}}\n", `c.yaml:1:32: defaults.probe.completion: want true or false, got "yes"`},
		{"group names unknown host", "hosts: [gpu1, gpu2]\ngroups:\n  rack-a: [gpu1, gpu3]\n", `c.yaml:3:18: groups.rack-a[1]: unknown host "gpu3" (did you mean "gpu1"?) (hosts: gpu1, gpu2)`},
		{"group with a host's name", "hosts: [gpu1]\ngroups: {gpu1: [gpu1]}\n", `c.yaml:2:10: groups.gpu1: a group may not have the name of a host`},
		{"empty group", "hosts: [gpu1]\ngroups:\n  g: []\n", `c.yaml:3:6: groups.g: no hosts`},
		{"group not a list", "hosts: [gpu1]\ngroups: {g: gpu1}\n", `c.yaml:2:13: groups.g: want a list, got "gpu1"`},
		{"deployment host twice", "hosts: [a, b, c]\ndeployments:\n  kimi: [a, b]\n  r1: [c, b]\n", `c.yaml:4:11: deployments.r1[1]: host "b" is in deployment "kimi" already`},
		{"deployment unknown host", "hosts: [gpu1, gpu2]\ndeployments: {kimi: [gpu1, gpu3]}\n", `c.yaml:2:28: deployments.kimi[1]: unknown host "gpu3" (did you mean "gpu1"?) (hosts: gpu1, gpu2)`},
		{"deployment with a host's name", "hosts: [gpu1]\ndeployments: {gpu1: [gpu1]}\n", `c.yaml:2:15: deployments.gpu1: a deployment may not have the name of a host`},
		{"deployments a list", "hosts: [gpu1]\ndeployments: [gpu1]\n", `c.yaml:2:14: deployments: want a mapping of deployment names to lists of hosts, got a list`},
		{"labels a list", "hosts:\n  - {name: a, labels: [r12]}\n", `c.yaml:2:23: hosts[0].labels: want a mapping of label names to values (labels: {rack: r12}), got a list`},
		{"label value with a space", "hosts:\n  - name: a\n    labels:\n      rack: 'r 12'\n", `c.yaml:4:13: hosts[0].labels.rack: "r 12": want letters, digits, '.', '_' or '-'`},
		{"label value with an escape", "hosts:\n  - name: a\n    labels: {rack: \"r\\e[31m\"}\n", `c.yaml:3:20: hosts[0].labels.rack: "r\x1b[31m": want letters, digits, '.', '_' or '-'`},
		{"label name", "hosts: [{name: a, labels: {'my rack': r1}}]\n", `c.yaml:1:28: hosts[0].labels: "my rack": want letters, digits, '.', '_' or '-'`},
		{"label twice", "hosts:\n  - name: a\n    labels:\n      rack: r1\n      rack: r2\n", `c.yaml:5:7: hosts[0].labels: label "rack" given twice (first at 4:7)`},
		{"label empty", "hosts:\n  - name: a\n    labels:\n      rack:\n", `c.yaml:4:12: hosts[0].labels.rack: empty label value`},
		{"host missing name", "hosts:\n  - ssh: a@b\n", `c.yaml:2:5: hosts[0]: name is missing`},
		{"host bad target", "hosts: ['-oProxyCommand=x']\n", `c.yaml:1:9: hosts[0]: "-oProxyCommand=x": must not start with '-'`},
		{"host bad port", "hosts: ['a@b:99999']\n", `c.yaml:1:9: hosts[0]: "a@b:99999": port "99999" is not a number from 1 to 65535`},
		{"host name with a space", "hosts: [{name: 'gpu 1', ssh: gpu1}]\n", `c.yaml:1:16: hosts[0].name: "gpu 1": spaces, commas, quotes and control characters are not allowed`},
		{"host as a number", "hosts: [1234]\n", `c.yaml:1:9: hosts[0]: want a string, got int 1234 (quote it if it is meant as a string)`},
		{"host as a list", "hosts: [[a]]\n", `c.yaml:1:9: hosts[0]: want a host name or a mapping with name:, got a list`},
		{"hosts not a list", "hosts: gpu1\n", `c.yaml:1:8: hosts: want a list, got "gpu1"`},
		{"unit with a space", "defaults: {unit: 'a b'}\n", `c.yaml:1:18: defaults.unit: invalid unit name "a b": character ' ' is not allowed (systemd allows ASCII letters, digits and ":-_.\@")`},
		{"unit glob", "hosts:\n  - gpu1\n  - gpu2\n  - {name: gpu3, unit: 'sglang*'}\n",
			`c.yaml:4:24: hosts[2].unit: invalid unit name "sglang*": '*' is a glob character; name one unit exactly (a pattern would mix other units' logs and states in)`},
		{"unit type typo", "defaults: {unit: sglang.servce}\n", `c.yaml:1:18: defaults.unit: invalid unit name "sglang.servce": "servce" is not a unit type (want one of service, socket, target, device, mount, automount, swap, timer, path, slice, scope)`},
		{"user with @", "defaults: {user: a@b}\n", `c.yaml:1:18: defaults.user: "a@b": a user name has no @ or :`},
		{"mode list without a capture-safe mode", "kernels:\n  - name: k\n    env_var: K\n    modes:\n      - {name: validate, capture_safe: false}\n",
			`c.yaml:5:7: kernels[0].modes: no capture-safe mode: a restart could never pass CUDA graph capture`},
		{"capture_safe missing", "kernels:\n  - name: k\n    env_var: K\n    modes:\n      - {name: off}\n",
			`c.yaml:5:9: kernels[0].modes[0]: capture_safe is missing (true if the mode does no host syncs, so CUDA graph capture works)`},
		{"capture_safe yes", "kernels:\n  - name: k\n    env_var: K\n    modes:\n      - {name: off, capture_safe: yes}\n",
			`c.yaml:5:35: kernels[0].modes[0].capture_safe: want true or false, got "yes"`},
		{"mode twice", "kernels:\n  - name: k\n    env_var: K\n    modes:\n      - {name: off, capture_safe: true}\n      - {name: off, capture_safe: true}\n",
			`c.yaml:6:16: kernels[0].modes[1].name: mode "off" listed twice (first at 5:16)`},
		{"mode name with =", "kernels:\n  - name: k\n    env_var: K\n    modes: [{name: 'a=b', capture_safe: true}]\n",
			`c.yaml:4:20: kernels[0].modes[0].name: "a=b": want letters, digits, '.', '_' or '-'`},
		{"kernel without env_var", "kernels:\n  - name: k\n    modes: [{name: off, capture_safe: true}]\n",
			`c.yaml:2:5: kernels[0]: env_var is missing (the unit variable that selects the mode)`},
		{"kernel without modes", "kernels:\n  - name: k\n    env_var: K\n", `c.yaml:2:5: kernels[0]: no modes`},
		{"kernel bad env_var", "kernels:\n  - {name: k, env_var: 1, modes: [{name: off, capture_safe: true}]}\n",
			`c.yaml:2:24: kernels[0].env_var: want a string, got int 1 (quote it if it is meant as a string)`},
		{"kernel env_var with a dash", "kernels:\n  - {name: k, env_var: K-MODE, modes: [{name: off, capture_safe: true}]}\n",
			`c.yaml:2:24: kernels[0].env_var: "K-MODE" is not an environment variable name`},
		{"kernel twice", "kernels:\n  - {name: k, env_var: A, modes: [{name: off, capture_safe: true}]}\n  - {name: k, env_var: B, modes: [{name: off, capture_safe: true}]}\n",
			`c.yaml:3:12: kernels[1].name: kernel "k" listed twice (first at 2:12)`},
		{"two kernels one variable", "kernels:\n  - {name: a, env_var: K, modes: [{name: off, capture_safe: true}]}\n  - {name: b, env_var: K, modes: [{name: off, capture_safe: true}]}\n",
			`c.yaml:3:24: kernels[1].env_var: K already selects another kernel's mode (at 2:24)`},
		{"relative remote dir", "kernels:\n  - {name: k, env_var: K, remote_dir: opt/k, modes: [{name: off, capture_safe: true}]}\n",
			`c.yaml:2:39: kernels[0].remote_dir: "opt/k": want an absolute path on the host`},
		{"pythonpath with a colon", "kernels:\n  - {name: k, env_var: K, pythonpath: '/a:/b', modes: [{name: off, capture_safe: true}]}\n",
			`c.yaml:2:39: kernels[0].pythonpath: "/a:/b": spaces, quotes, '$', '%', ';' and ':' are not allowed`},
		{"top level a list", "- gpu1\n", `c.yaml:1:1: want a mapping of defaults, hosts, groups, kernels, …, got a list`},
		{"two documents", "hosts: [a]\n---\nhosts: [b]\n", `c.yaml:2:1: a second YAML document; the config is one document`},
		// Syntax errors at the problem's line and column, in plain words
		// (the parser put some at the line its construct began).
		{"syntax error", "hosts: [a\nread_only: true\n", `c.yaml:1:8: a [ list is not closed: a ',' or ']' is missing`},
		{"tab indentation", "hosts:\n\t- a\n", `c.yaml:2:1: a tab character; YAML indents with spaces`},
		{"tab under a mapping", "hosts:\n  - gpu1\n  - gpu2\ndefaults:\n  unit: sglang.service\n\tengine: vllm\n", `c.yaml:6:1: a tab character; YAML indents with spaces`},
		{"bad indent at line 6", "hosts:\n  - gpu1\n  - gpu2\ndefaults:\n  unit: sglang.service\n engine: vllm\n",
			`c.yaml:6:2: this line's indent matches no key above it (indent it as its siblings, with spaces)`},
		{"open quote", "hosts: [a]\ndefaults:\n  unit: \"sglang.service\n  engine: vllm\n", `c.yaml:3:9: the file ends inside a quoted string or an unclosed [ or {`},
		{"item among items", "hosts:\n  - gpu1\n  gpu2: x\n", `c.yaml:3:3: a line among a list's items is not an item: start it with '- ' or indent it under one`},
		{"second colon", "hosts: [gpu1]\ndefaults:\n  unit: a: b\n", `c.yaml:3:10: a second ': ' on one line; quote a value that holds ': '`},
		{"a valid flow list before the error", "hosts: [gpu1,\n  gpu2]\ndefaults:\n  unit: x\n engine: vllm\n",
			`c.yaml:5:2: this line's indent matches no key above it (indent it as its siblings, with spaces)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("c.yaml", []byte(tt.doc))
			if err == nil {
				t.Fatalf("no error; got %+v", c)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got %s\nwant %s", err, tt.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.File != "c.yaml" || e.Line == 0 {
				t.Errorf("error %v is not an *Error with a place", err)
			}
		})
	}
}

func TestParseAllErrors(t *testing.T) {
	doc := "hosts:\n  - {name: a, engine: x}\n  - {name: b, probe: {port: 0}}\ndefaults: {unit: 'a b'}\n"
	_, err := Parse("c.yaml", []byte(doc))
	var es Errors
	if !errors.As(err, &es) || len(es) != 3 {
		t.Fatalf("error %v, want the three problems", err)
	}
	for i := 1; i < len(es); i++ {
		if es[i].Line < es[i-1].Line {
			t.Errorf("errors out of file order:\n%v", err)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(p, []byte(full), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.Path != p || c.Kernels.Kernels[0].LocalDir != filepath.Join(dir, "kernels/kdtree") {
		t.Errorf("path %q, local dir %q", c.Path, c.Kernels.Kernels[0].LocalDir)
	}
	if home, err := os.UserHomeDir(); err == nil && c.SSHConfig != filepath.Join(home, ".ssh/config") {
		t.Errorf("ssh_config %q, want ~ expanded to %s", c.SSHConfig, home)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want ErrNotExist", err)
	}
	if err := os.WriteFile(p, []byte("hosts: [a, a]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil || !strings.HasPrefix(err.Error(), p+":1:12: ") {
		t.Errorf("error %v, want it placed in %s", err, p)
	}
}

func TestExpandHome(t *testing.T) {
	c := &Config{SSHConfig: "~/.ssh/fleet", Kernels: kernels.Catalog{Kernels: []kernels.Kernel{{LocalDir: "~"}, {LocalDir: "~user/k"}, {LocalDir: "/abs"}}}}
	c.ExpandHome("/home/u")
	got := []string{c.SSHConfig, c.Kernels.Kernels[0].LocalDir, c.Kernels.Kernels[1].LocalDir, c.Kernels.Kernels[2].LocalDir}
	want := []string{"/home/u/.ssh/fleet", "/home/u", "~user/k", "/abs"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("expanded %q, want %q", got, want)
	}
}

func TestDefaultPath(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/home/u"}, "/x/bringup/config.yaml"},
		{map[string]string{"XDG_CONFIG_HOME": "rel", "HOME": "/home/u"}, "/home/u/.config/bringup/config.yaml"},
		{map[string]string{"HOME": "/home/u"}, "/home/u/.config/bringup/config.yaml"},
		{map[string]string{}, ""},
	}
	for _, tt := range tests {
		if got := DefaultPath(env(tt.env)); got != tt.want {
			t.Errorf("DefaultPath(%v) = %q, want %q", tt.env, got, tt.want)
		}
	}
}

func TestFromFlags(t *testing.T) {
	c, err := FromFlags("gpu1, gpu2,deploy@h:22,", "sglang")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range c.Hosts {
		names = append(names, h.Name)
		if h.Unit != "sglang.service" || h.Probe.Port != 30000 || h.Engine != "auto" {
			t.Errorf("host %+v: want the defaults with unit sglang.service", h)
		}
	}
	if !reflect.DeepEqual(names, []string{"gpu1", "gpu2", "deploy@h:22"}) {
		t.Errorf("hosts %q", names)
	}
	if tg := c.Hosts[2].Target(); tg != (Target{Host: "h", User: "deploy", Port: 22}) {
		t.Errorf("target %+v", tg)
	}
	for _, bad := range []struct{ hosts, unit, want string }{
		{"", "", "-H: no hosts given"},
		{"a,a", "", `-H: host "a" listed twice`},
		{"-oFoo", "", `-H: "-oFoo": must not start with '-'`},
		{"a", "x y", `-u: invalid unit name "x y": character ' ' is not allowed (systemd allows ASCII letters, digits and ":-_.\@")`},
		{"a", "sglang?", `-u: invalid unit name "sglang?": '?' is a glob character; name one unit exactly (a pattern would mix other units' logs and states in)`},
	} {
		if _, err := FromFlags(bad.hosts, bad.unit); err == nil || err.Error() != bad.want {
			t.Errorf("FromFlags(%q, %q) = %v, want %s", bad.hosts, bad.unit, err, bad.want)
		}
	}
}

func TestSelect(t *testing.T) {
	c, err := Parse("c.yaml", []byte("hosts: [a, b, c]\ngroups: {g: [c, a], h: [b]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	names := func(hs []Host) []string {
		var out []string
		for _, h := range hs {
			out = append(out, h.Name)
		}
		return out
	}
	tests := []struct {
		sel  []string
		want []string
	}{
		{nil, []string{"a", "b", "c"}},
		{[]string{"g"}, []string{"c", "a"}},
		{[]string{"b", "g", "a"}, []string{"b", "c", "a"}},
		{[]string{"h", "h"}, []string{"b"}},
	}
	for _, tt := range tests {
		hs, err := c.Select(tt.sel)
		if err != nil || !reflect.DeepEqual(names(hs), tt.want) {
			t.Errorf("Select(%q) = %q, %v; want %q", tt.sel, names(hs), err, tt.want)
		}
	}
	_, err = c.Select([]string{"a", "zz"})
	if err == nil || err.Error() != `unknown host or group "zz" (hosts: a, b, c; groups: g, h)` {
		t.Errorf("unknown name: %v", err)
	}
	empty, _ := Parse("c.yaml", nil)
	if _, err := empty.Select(nil); err == nil || err.Error() != "no hosts configured" {
		t.Errorf("no hosts: %v", err)
	}
}

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in      string
		want    Target
		wantErr string
	}{
		{"gpu1", Target{Host: "gpu1"}, ""},
		{"root@10.0.0.1", Target{Host: "10.0.0.1", User: "root"}, ""},
		{"h:2222", Target{Host: "h", Port: 2222}, ""},
		{"[::1]:22", Target{Host: "::1", Port: 22}, ""},
		{"[::1]", Target{Host: "::1"}, ""},
		{"::1", Target{}, "write an IPv6 address as [addr]"},
		{"@h", Target{}, "empty user"},
		{"u@", Target{}, "empty host"},
		{"h:x", Target{}, "is not a number"},
		{"[::1", Target{}, "missing ]"},
		{"[::1]x", Target{}, "text after ]"},
		{"-u@h", Target{}, "must not start with '-'"},
		{"h;rm", Target{}, "not allowed"},
	}
	for _, tt := range tests {
		got, err := ParseTarget(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseTarget(%q) error %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseTarget(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func FuzzLoad(f *testing.F) {
	f.Add(full)
	f.Add("hosts: [a, {name: b, probe: {port: 1}}]\ngroups: {g: [a]}\n")
	f.Add("a: &a [*a]\n")
	f.Add("hosts: &h [x]\ngroups: {g: *h}\nkernels: [{name: k, env_var: K, modes: [{name: off, capture_safe: true}]}]\n")
	f.Fuzz(func(t *testing.T, doc string) {
		c, err := Parse("c.yaml", []byte(doc))
		if err != nil {
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error %v is not Errors", err)
			}
			for _, e := range es {
				if !strings.HasPrefix(e.Error(), "c.yaml") {
					t.Fatalf("error without its file: %v", e)
				}
			}
			return
		}
		seen := map[string]bool{}
		for _, h := range c.Hosts {
			if h.Name == "" || seen[h.Name] || h.Unit == "" || h.Probe.Port < 1 || h.Probe.Port > 65535 || !strings.HasPrefix(h.Probe.Path, "/") {
				t.Fatalf("accepted a bad host %+v", h)
			}
			if _, err := ParseTarget(h.SSH); err != nil {
				t.Fatalf("accepted host %q with a bad target: %v", h.Name, err)
			}
			seen[h.Name] = true
		}
		for g, ms := range c.Groups {
			for _, m := range ms {
				if !seen[m] {
					t.Fatalf("group %s names unknown host %q", g, m)
				}
			}
		}
		if err := c.Kernels.Validate(); err != nil {
			t.Fatalf("accepted a bad catalog: %v", err)
		}
	})
}

// BenchmarkParseLarge parses a fleet of 2000 hosts with groups.
func BenchmarkParseLarge(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("defaults: {unit: sglang.service, engine: sglang}\nhosts:\n")
	for i := range 2000 {
		fmt.Fprintf(&sb, "  - {name: gpu%d, ssh: 'deploy@10.0.%d.%d:22', probe: {port: 30000}}\n", i, i/256, i%256)
	}
	sb.WriteString("groups:\n  all: [")
	for i := range 2000 {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "gpu%d", i)
	}
	sb.WriteString("]\n")
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse("c.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRulesFiles checks the rules: section: packs load relative to the
// config file; a missing file is an error at its line in the config, and
// an error inside a pack names the pack file and its line.
func TestRulesFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("kernel.yaml", "engine: sglang\nfailures:\n  - keywords: [\"kdtree-verify: mismatch\"]\n    cause: kdtree-validation\n    summary: s\n    hint: h\n")
	write("bad.yaml", "engine: sglang\nfailures:\n  - keywords: [\"kdtree\"]\n    pattern: \"(\"\n    cause: x\n")
	p := write("config.yaml", "hosts: [gpu1]\nrules:\n  - kernel.yaml\n")
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rules) != 1 || c.Rules[0].Failures[0].Cause != "kdtree-validation" {
		t.Fatalf("rules %+v", c.Rules)
	}
	for _, tt := range []struct{ config, want string }{
		{"hosts: [gpu1]\nrules:\n  - missing.yaml\n", p + ":3:5: rules[0]: open " + filepath.Join(dir, "missing.yaml")},
		{"hosts: [gpu1]\nrules:\n  - bad.yaml\n", filepath.Join(dir, "bad.yaml") + ":3: pack sglang: failures[0].pattern"},
		{"hosts: [gpu1]\nrules: kernel.yaml\n", "rules: want a list"},
	} {
		write("config.yaml", tt.config)
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want one holding %q", tt.config, err, tt.want)
		}
	}
}

func TestThroughputDrop(t *testing.T) {
	c, err := Parse("c.yaml", []byte("hosts: [gpu1]\nthroughput_drop: 0.35\n"))
	if err != nil || c.ThroughputDrop != 0.35 {
		t.Fatalf("throughput_drop: %v, %v", c, err)
	}
}

// TestSourceSpec pins the facts of each kind of source and the default.
func TestSourceSpec(t *testing.T) {
	tests := []struct {
		kind string
		want SourceKind
	}{
		{"", SourceKind{Name: SourceSSH}},
		{SourceSSH, SourceKind{Name: SourceSSH}},
		{SourceVictoriaLogs, SourceKind{Name: SourceVictoriaLogs, HostsFromIt: true, NeedsURL: true, TakesVia: true,
			Title: "state from journal via victorialogs"}},
		{"carrier-pigeon", SourceKind{Name: "carrier-pigeon"}},
	}
	for _, tt := range tests {
		if got := (Source{Kind: tt.kind}).Spec(); got != tt.want {
			t.Errorf("Source{Kind: %q}.Spec() = %+v, want %+v", tt.kind, got, tt.want)
		}
	}
	if _, err := checkSourceKind("victorialog"); err == nil || !strings.Contains(err.Error(), "want ssh or victorialogs") {
		t.Errorf("checkSourceKind(victorialog) = %v, want the kinds named", err)
	}
}
