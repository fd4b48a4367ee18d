package main

import (
	"bytes"
	"context"
	"fmt"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/complete"
)

// runCompletion is `bringup completion bash|zsh|fish`.
func runCompletion(_ context.Context, e env, args []string) int {
	fs := cli.NewFlags(e.stdout, e.stderr, "completion", "bringup completion bash|zsh|fish\n\n"+
		"bash: source <(bringup completion bash)   zsh: source <(bringup completion zsh)\nfish: bringup completion fish | source")
	if code, stop := cli.ParseArgs(fs, args); stop {
		return code
	}
	scripts := complete.Scripts()
	if fs.NArg() != 1 || scripts[fs.Arg(0)] == "" {
		return fs.Usagef("want one shell: bash, zsh or fish")
	}
	fmt.Fprint(e.stdout, scripts[fs.Arg(0)])
	return exitServing
}

// runComplete is `bringup __complete WORD...`: the candidates for the last
// word, one a line, each with its description after a tab. It prints nothing it cannot work out (the shell then
// completes file names).
func runComplete(ctx context.Context, e env, args []string) int {
	for _, c := range completeWords(ctx, e, args) {
		fmt.Fprintln(e.stdout, c)
	}
	return exitServing
}

// completeWords is the candidates for the last of words (the command
// line after "bringup", up to the cursor), from this binary's commands,
// their --help and the config in force.
func completeWords(ctx context.Context, e env, words []string) []complete.Candidate {
	var cmds []complete.Command
	for _, c := range commands() {
		if c.name != "" && c.run != nil {
			cmds = append(cmds, complete.Command{Name: c.name, Summary: c.summary})
		}
	}
	return complete.Words(complete.Binary{
		Commands: cmds,
		Help: func(name string) string {
			var help bytes.Buffer
			quiet := env{stdout: &help, stderr: &bytes.Buffer{}, getenv: e.getenv}
			if c, ok := lookupCommand(name); ok {
				c.run(ctx, quiet, []string{"--help"})
			} else {
				runConsole(ctx, quiet, []string{"--help"})
			}
			return help.String()
		},
		Hosts: func(words []string) []complete.Candidate { return complete.HostNames(e.getenv, words) },
	}, words)
}
