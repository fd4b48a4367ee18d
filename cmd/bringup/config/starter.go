package config

import (
	"fmt"
	"strconv"
	"strings"
)

// StarterHost is one host `bringup init` found: the name to write, what
// to connect to when it differs, and the inference unit found on it.
type StarterHost struct {
	Name   string // as the user named it (an ssh_config alias or user@host:port)
	Unit   string
	Engine string // EngineSGLang or EngineVLLM
	Port   int    // the server's port, for the probe
	// Note is a comment written above the host: what init saw (other
	// candidate units, the unit's state), or why the host has no unit.
	Note string
}

// RenderStarter writes a starter config for hosts: the unit, engine and
// probe port most hosts share as the defaults, each host that differs
// with its own fields, sshConfig (when set) as ssh_config, and the kernel
// catalog left as a commented example. What it writes, Parse reads back
// to the same hosts (a test holds it to that).
func RenderStarter(hosts []StarterHost, sshConfig, header string) []byte {
	def := commonest(hosts)
	var b strings.Builder
	for line := range strings.SplitSeq(strings.TrimRight(header, "\n"), "\n") {
		b.WriteString("# " + line + "\n")
	}
	if sshConfig != "" {
		fmt.Fprintf(&b, "ssh_config: %s\n", yamlString(sshConfig))
	}
	b.WriteString("defaults:\n")
	fmt.Fprintf(&b, "  unit: %s\n", yamlString(def.Unit))
	fmt.Fprintf(&b, "  engine: %s\n", def.Engine)
	fmt.Fprintf(&b, "  probe: {port: %d, path: %s}\n", def.Port, DefaultProbePath)
	b.WriteString("hosts:\n")
	for _, h := range hosts {
		for line := range strings.SplitSeq(h.Note, "\n") {
			if line != "" {
				b.WriteString("  # " + line + "\n")
			}
		}
		var own []string
		if h.Unit != "" && h.Unit != def.Unit {
			own = append(own, "unit: "+yamlString(h.Unit))
		}
		if h.Engine != "" && h.Engine != def.Engine {
			own = append(own, "engine: "+h.Engine)
		}
		if h.Port != 0 && h.Port != def.Port {
			own = append(own, "probe: {port: "+strconv.Itoa(h.Port)+"}")
		}
		if len(own) == 0 {
			fmt.Fprintf(&b, "  - %s\n", yamlString(h.Name))
			continue
		}
		fmt.Fprintf(&b, "  - {name: %s, %s}\n", yamlString(h.Name), strings.Join(own, ", "))
	}
	b.WriteString(`# kernels:                 # the kernels whose modes bringup switches (m) and redeploys (d)
#   - name: kdtree-verify
#     env_var: KDTREE_MODE
#     pythonpath: /opt/kdtree/site
#     local_dir: ~/src/kdtree/site
#     remote_dir: /opt/kdtree/site
#     modes:
#       - {name: "off", capture_safe: true}
#       - {name: validate, capture_safe: false, description: host syncs (.item()); not during graph capture}
#       - {name: "on", capture_safe: true}
`)
	return []byte(b.String())
}

// commonest is the unit, engine and port most hosts that have a unit
// share (the first such host's on a tie); the package defaults when none
// has one.
func commonest(hosts []StarterHost) StarterHost {
	type key struct {
		unit, engine string
		port         int
	}
	count := map[key]int{}
	var best key
	for _, h := range hosts {
		if h.Unit == "" {
			continue
		}
		k := key{h.Unit, h.Engine, h.Port}
		count[k]++
		if count[k] > count[best] {
			best = k
		}
	}
	if count[best] == 0 {
		return StarterHost{Unit: DefaultUnit, Engine: EngineAuto, Port: DefaultSGLangPort}
	}
	return StarterHost{Unit: best.unit, Engine: best.engine, Port: best.port}
}

// yamlString is s as a YAML scalar: plain when YAML reads it back as the
// same string, else double-quoted.
func yamlString(s string) string {
	plain := s != "" && !strings.ContainsAny(s, ":#{}[],&*!|>'\"%@`\\ \t\n") &&
		!strings.ContainsAny(s[:1], "-?~") && !isYAMLWord(s)
	if plain {
		return s
	}
	return strconv.Quote(s)
}

// isYAMLWord reports whether s would be read as something other than a
// string (a bool, null or number).
func isYAMLWord(s string) bool {
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "null", "~", "y", "n":
		return true
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}
