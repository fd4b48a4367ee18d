// Package complete is bringup's shell completion, without a framework:
// `bringup completion SHELL` prints a short script that asks `bringup
// __complete WORD...` for the candidates, so commands, flags, and host and
// group names come from the binary and the config in force, never from a
// list that can go stale. The binary hands in what it knows (its
// commands, each command's --help); this package works out the
// candidates.
package complete

import (
	"regexp"
	"slices"
	"strings"

	"github.com/bringup-dev/bringup/cmd/bringup/config"
)

// Scripts are the completion scripts, by shell.
func Scripts() map[string]string {
	return map[string]string{
		"bash": `# bash completion for bringup: source <(bringup completion bash)
_bringup() {
	local IFS=$'\n'
	COMPREPLY=($(bringup __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -o nospace -F _bringup bringup
`,
		"zsh": `#compdef bringup
# zsh completion for bringup: source <(bringup completion zsh)
_bringup() {
	local -a c
	c=("${(@f)$(bringup __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
	c=(${c:#})
	if (( ${#c} )); then compadd -S '' -- $c; else _files; fi
}
compdef _bringup bringup
`,
		"fish": `# fish completion for bringup: bringup completion fish | source
complete -c bringup -e
complete -c bringup -a '(bringup __complete (commandline -opc)[2..-1] (commandline -ct) 2>/dev/null)'
`,
	}
}

// Binary is what the binary tells completion about itself.
type Binary struct {
	// Commands are the subcommands' names, in the order help lists them.
	Commands []string
	// Help is command name's --help text ("" for the console).
	Help func(name string) string
	// Hosts are the host and group names of the config the words name.
	Hosts func(words []string) []string
}

// Words is the candidates for the last of words (the command line after
// "bringup", up to the cursor); none where the shell's default (file
// names) is the right answer.
func Words(b Binary, words []string) []string {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, before := words[len(words)-1], words[:len(words)-1]
	var name string // the subcommand, "" for the console
	if len(before) > 0 && slices.Contains(b.Commands, before[0]) {
		name = before[0]
	}
	flags, valued := Flags(b.Help(name))
	if len(before) > 0 && valued[before[len(before)-1]] {
		return nil // a flag's value: a file, a duration… the shell's default
	}
	var out []string
	switch {
	case strings.HasPrefix(cur, "-"):
		out = flags
	case len(before) == 0:
		out = append(slices.Clone(b.Commands), "help")
		out = append(out, b.Hosts(before)...)
	case before[0] == "help":
		out = b.Commands
	default:
		out = b.Hosts(before)
	}
	var keep []string
	for _, c := range out {
		if strings.HasPrefix(c, cur) && !slices.Contains(keep, c) {
			keep = append(keep, c)
		}
	}
	return keep
}

// Flags reads a command's flags from its --help text, so the completion
// is never out of step with them: their spellings, and which take a
// value.
func Flags(help string) (flags []string, valued map[string]bool) {
	valued = map[string]bool{}
	// One flag of the usage: "  -c, --config FILE   …" or "      --json   …".
	flagUsage := regexp.MustCompile(`(?m)^\s+(?:-(\S), )?--([a-z][a-z-]*)( \S+)?\s{2,}`)
	for _, m := range flagUsage.FindAllStringSubmatch(help, -1) {
		flags = append(flags, "--"+m[2])
		if m[1] != "" {
			flags = append(flags, "-"+m[1])
		}
		if m[3] != "" {
			valued["--"+m[2]] = true
			if m[1] != "" {
				valued["-"+m[1]] = true
			}
		}
	}
	return flags, valued
}

// HostNames are the host and group names of the config the words name
// (--config/-c, else the environment's or the default one); none when it
// cannot be read.
func HostNames(getenv func(string) string, words []string) []string {
	var f config.Flags
	for i, w := range words {
		switch {
		case (w == "--config" || w == "-c") && i+1 < len(words):
			f.Path = words[i+1]
		case strings.HasPrefix(w, "--config="):
			f.Path = strings.TrimPrefix(w, "--config=")
		}
	}
	cfg, hosts, err := f.Open(getenv, nil)
	if err != nil {
		return nil
	}
	var out []string
	for _, h := range hosts {
		out = append(out, h.Name)
	}
	groups := make([]string, 0, len(cfg.Groups))
	for g := range cfg.Groups {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	return append(out, groups...)
}
