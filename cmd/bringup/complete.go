package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/config"
)

// Shell completion without a framework: `bringup completion SHELL` prints
// a short script that asks `bringup __complete WORD...` for the
// candidates, so commands, flags, and host and group names come from the
// binary and the config in force, never from a list that can go stale.

// completionScripts are the scripts, by shell.
func completionScripts() map[string]string {
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

// runCompletion is `bringup completion bash|zsh|fish`.
func runCompletion(_ context.Context, e env, args []string) int {
	fs := cli.NewFlags(e.stdout, e.stderr, "completion", "bringup completion bash|zsh|fish\n\n"+
		"bash: source <(bringup completion bash)   zsh: source <(bringup completion zsh)\nfish: bringup completion fish | source")
	if code, stop := cli.ParseArgs(fs, args); stop {
		return code
	}
	scripts := completionScripts()
	if fs.NArg() != 1 || scripts[fs.Arg(0)] == "" {
		return fs.Usagef("want one shell: bash, zsh or fish")
	}
	fmt.Fprint(e.stdout, scripts[fs.Arg(0)])
	return exitServing
}

// runComplete is `bringup __complete WORD...`: the candidates for the last
// word, one a line. It prints nothing it cannot work out (the shell then
// completes file names).
func runComplete(ctx context.Context, e env, args []string) int {
	for _, c := range completeWords(ctx, e, args) {
		fmt.Fprintln(e.stdout, c)
	}
	return exitServing
}

// completeWords is the candidates for the last of words (the command
// line after "bringup", up to the cursor).
func completeWords(ctx context.Context, e env, words []string) []string {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, before := words[len(words)-1], words[:len(words)-1]
	var name string // the subcommand, "" for the console
	if len(before) > 0 {
		if _, ok := lookupCommand(before[0]); ok {
			name = before[0]
		}
	}
	flags, valued := commandFlags(ctx, e, name)
	if len(before) > 0 && valued[before[len(before)-1]] {
		return nil // a flag's value: a file, a duration… the shell's default
	}
	var out []string
	switch {
	case strings.HasPrefix(cur, "-"):
		out = flags
	case len(before) == 0:
		for _, c := range commands() {
			if c.name != "" && c.run != nil {
				out = append(out, c.name)
			}
		}
		out = append(out, "help")
		out = append(out, hostNames(e, before)...)
	case name == "help" || before[0] == "help":
		for _, c := range commands() {
			if c.name != "" {
				out = append(out, c.name)
			}
		}
	default:
		out = hostNames(e, before)
	}
	var keep []string
	for _, c := range out {
		if strings.HasPrefix(c, cur) && !slices.Contains(keep, c) {
			keep = append(keep, c)
		}
	}
	return keep
}

// commandFlags reads command name's flags from its own --help, so the
// completion is never out of step with the flags: their spellings, and
// which take a value.
func commandFlags(ctx context.Context, e env, name string) (flags []string, valued map[string]bool) {
	var help bytes.Buffer
	quiet := env{stdout: &help, stderr: &bytes.Buffer{}, getenv: e.getenv}
	if c, ok := lookupCommand(name); ok {
		c.run(ctx, quiet, []string{"--help"})
	} else {
		runConsole(ctx, quiet, []string{"--help"})
	}
	valued = map[string]bool{}
	// One flag of the usage: "  -c, --config FILE   …" or "      --json   …".
	flagUsage := regexp.MustCompile(`(?m)^\s+(?:-(\S), )?--([a-z][a-z-]*)( \S+)?\s{2,}`)
	for _, m := range flagUsage.FindAllStringSubmatch(help.String(), -1) {
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

// hostNames are the host and group names of the config the words name
// (--config/-c, else the environment's or the default one); none when it
// cannot be read.
func hostNames(e env, words []string) []string {
	var f config.Flags
	for i, w := range words {
		switch {
		case (w == "--config" || w == "-c") && i+1 < len(words):
			f.Path = words[i+1]
		case strings.HasPrefix(w, "--config="):
			f.Path = strings.TrimPrefix(w, "--config=")
		}
	}
	cfg, hosts, err := f.Open(e.getenv, nil)
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
