// Package complete is bringup's shell completion, without a framework:
// `bringup completion SHELL` prints a short script that asks `bringup
// __complete WORD...` for the candidates, so commands, flags, and host and
// group names come from the binary and the config in force, never from a
// list that can go stale. The binary hands in what it knows (its
// commands, each command's --help); this package works out the
// candidates.
package complete

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/bringup-dev/bringup/cmd/bringup/config"
)

// Scripts are the completion scripts, by shell. `bringup __complete`
// prints a candidate a line, its description after a tab: fish reads
// that as is; zsh lists the descriptions with _describe; bash, which has
// no place for them, shows them only while listing several candidates
// (one inserted alone is the word alone). Each shell adds the space after
// a word it completes whole (bash and zsh once did not: "nospace", for a
// case no candidate has).
func Scripts() map[string]string {
	return map[string]string{
		"bash": `# bash completion for bringup: source <(bringup completion bash)
_bringup() {
	local IFS=$'\n' c w
	local -a words descs
	for c in $(bringup __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null); do
		words+=("${c%%$'\t'*}")
		[[ $c == *$'\t'* ]] && descs+=("${c#*$'\t'}") || descs+=("")
	done
	COMPREPLY=("${words[@]}")
	# Several to list (a second TAB, or ? in the menu): each with its
	# description, padded so that the list lines up; the common prefix,
	# which is all bash inserts then, is the words' own.
	if (( ${#words[@]} > 1 )) && [[ ${COMP_TYPE:-9} != 9 ]]; then
		local max=0 i
		for w in "${words[@]}"; do (( ${#w} > max )) && max=${#w}; done
		for i in "${!words[@]}"; do
			[[ -n ${descs[i]} ]] && COMPREPLY[i]=$(printf '%-*s  (%s)' "$max" "${words[i]}" "${descs[i]}")
		done
	fi
}
complete -o default -F _bringup bringup
`,
		"zsh": `#compdef bringup
# zsh completion for bringup: source <(bringup completion zsh)
_bringup() {
	local -a c d
	local l
	c=("${(@f)$(bringup __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
	c=(${c:#})
	if (( ! ${#c} )); then _files; return; fi
	for l in $c; do
		if [[ $l == *$'\t'* ]]; then d+=("${${l%%$'\t'*}//:/\\:}:${l#*$'\t'}"); else d+=("${l//:/\\:}"); fi
	done
	_describe -t bringup bringup d
}
compdef _bringup bringup
`,
		"fish": `# fish completion for bringup: bringup completion fish | source
complete -c bringup -e
complete -c bringup -a '(bringup __complete (commandline -opc)[2..-1] (commandline -ct) 2>/dev/null)'
`,
	}
}

// Candidate is one completion: the word, and what it is.
type Candidate struct {
	Word, Desc string
}

// String is the candidate as `bringup __complete` prints it: the word,
// then a tab and the description when there is one.
func (c Candidate) String() string {
	if c.Desc == "" {
		return c.Word
	}
	return c.Word + "\t" + c.Desc
}

// Command is a subcommand as completion shows it.
type Command struct {
	Name, Summary string
}

// Binary is what the binary tells completion about itself.
type Binary struct {
	// Commands are the subcommands, in the order help lists them.
	Commands []Command
	// Help is command name's --help text ("" for the console).
	Help func(name string) string
	// Hosts are the host and group names of the config the words name.
	Hosts func(words []string) []Candidate
}

// maxDesc bounds a description: a line of a menu, not the help.
const maxDesc = 60

// brief is s cut to its first clause, at most maxDesc runes.
func brief(s string) string {
	if i := strings.IndexAny(s, ";("); i > 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > maxDesc {
		s = strings.TrimSpace(string(r[:maxDesc-1])) + "…"
	}
	return s
}

// Words is the candidates for the last of words (the command line after
// "bringup", up to the cursor); none where the shell's default (file
// names) is the right answer.
func Words(b Binary, words []string) []Candidate {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, before := words[len(words)-1], words[:len(words)-1]
	var name string // the subcommand, "" for the console
	var commands []Candidate
	for _, c := range b.Commands {
		commands = append(commands, Candidate{c.Name, brief(c.Summary)})
		if len(before) > 0 && before[0] == c.Name {
			name = c.Name
		}
	}
	flags, valued := FlagCandidates(b.Help(name))
	if len(before) > 0 && valued[before[len(before)-1]] {
		return nil // a flag's value: a file, a duration… the shell's default
	}
	var out []Candidate
	switch {
	case strings.HasPrefix(cur, "-"):
		out = flags
	case len(before) == 0:
		out = append(commands, Candidate{"help", "a command's flags"})
		out = append(out, b.Hosts(before)...)
	case before[0] == "help":
		out = commands
	default:
		out = b.Hosts(before)
	}
	var keep []Candidate
	for _, c := range out {
		if strings.HasPrefix(c.Word, cur) && !slices.ContainsFunc(keep, func(k Candidate) bool { return k.Word == c.Word }) {
			keep = append(keep, c)
		}
	}
	return keep
}

// Flags is FlagCandidates' words alone.
func Flags(help string) (flags []string, valued map[string]bool) {
	cs, valued := FlagCandidates(help)
	for _, c := range cs {
		flags = append(flags, c.Word)
	}
	return flags, valued
}

// FlagCandidates reads a command's flags from its --help text, so the
// completion is never out of step with them: their spellings, what each
// does, and which take a value.
func FlagCandidates(help string) (flags []Candidate, valued map[string]bool) {
	valued = map[string]bool{}
	// One flag of the usage: "  -c, --config FILE   …" or "      --json   …".
	flagUsage := regexp.MustCompile(`(?m)^\s+(?:-(\S), )?--([a-z][a-z-]*)( \S+)?\s{2,}(.*)$`)
	for _, m := range flagUsage.FindAllStringSubmatch(help, -1) {
		desc := brief(m[4])
		flags = append(flags, Candidate{"--" + m[2], desc})
		if m[1] != "" {
			flags = append(flags, Candidate{"-" + m[1], desc})
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
func HostNames(getenv func(string) string, words []string) []Candidate {
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
	var out []Candidate
	for _, h := range hosts {
		out = append(out, Candidate{h.Name, "host"})
	}
	groups := make([]string, 0, len(cfg.Groups))
	for g := range cfg.Groups {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	for _, g := range groups {
		out = append(out, Candidate{g, fmt.Sprintf("group of %d hosts", len(cfg.Groups[g]))})
	}
	return out
}
