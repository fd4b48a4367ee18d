// Command bringup is a terminal console for bringing up LLM inference
// services (SGLang, vLLM) on fleets of GPU hosts: it follows each host's
// journal and unit state over SSH, shows every startup as live phases,
// explains failures, and puts the fixes one keystroke away.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/explainlog"
	"github.com/bringup-dev/bringup/cmd/bringup/logs"
	"github.com/bringup-dev/bringup/remote/sanitize"
)

// Exit codes, for scripts: the one table in package cli.
const (
	exitServing     = cli.ExitOK          // every watched host is serving
	exitFailed      = cli.ExitFailed      // at least one host failed
	exitTimeout     = cli.ExitTimeout     // --timeout passed first
	exitUsage       = cli.ExitUsage       // bad flags, config or hosts: nothing was watched
	exitAborted     = cli.ExitAborted     // a rollout stopped part way
	exitInterrupted = cli.ExitInterrupted // ctrl-c or SIGTERM
)

// env is the slice of the process environment the commands read, so tests
// can hand in their own.
type env struct {
	stdin          io.Reader // nil when the command may not read it
	stdout, stderr io.Writer
	getenv         func(string) string
}

// fail says what stopped command name, on stderr, and returns the usage
// exit code: nothing was done. The message often quotes what the user did
// not write (a file name, a rule pack's field, a host's answer): it is
// sanitised here, once for every command.
func (e env) fail(name string, format string, a ...any) int {
	fmt.Fprintf(e.stderr, "bringup %s: %s\n", name, sanitize.Text(fmt.Sprintf(format, a...)))
	return exitUsage
}

// interruptedOr is fail, unless ctx ended on ctrl-c or SIGTERM: then
// the command was stopped, not refused, and exits as interrupted.
func (e env) interruptedOr(ctx context.Context, name string, format string, a ...any) int {
	if cli.WasInterrupted(ctx) {
		return exitInterrupted
	}
	return e.fail(name, format, a...)
}

// command is one subcommand.
type command struct {
	name, usage, summary string
	run                  func(ctx context.Context, e env, args []string) int
}

func commands() []command {
	return slices.Concat([]command{
		{"", "bringup [-H hosts | --config F] [--read-only] [--record FILE] [--quiet] [HOST|GROUP...]", "the console over real hosts, from the config file or -H", nil},
		{"demo", "bringup demo [--speed N] [--scenario seed|mixed|all-ok|crashloop|multinode] [--read-only] [--record FILE] [--quiet]", "the console over simulated hosts (no hosts needed); mixed adds vLLM hosts, multinode two-node deployments", runDemo},
		{"watch", "bringup watch [--json] [--timeout D] [--record FILE] [-H hosts] [HOST|GROUP...]  (or --demo, --replay FILE)", "print phase changes and failures until all hosts serve or fail; exit 0 serving, 1 failed, 2 timeout", runWatchCmd},
		{"status", "bringup status [--json] [-H hosts | --config F] [HOST|GROUP...]", "one look at every host: unit state, phase, probe, kernel modes, diagnosis; exit 0 all serving, 1 any failed, 2 otherwise", runStatus},
		{"bench", "bringup bench [-n N] [--concurrency C] [--max-tokens T] [--json] [--demo] [-H hosts | --config F] [HOST|GROUP...]", "a bounded smoke load on each serving host's /v1/completions over its SSH tunnel (--demo: the simulated hosts'): req/s, output tok/s, TTFT and latency p50/p99, errors; exit 0 clean, 1 errors, 3 a host refused (not serving)", runBench},
		{"logs", logs.Usage, "the unit's journal with phase marks, then the diagnosis; -f follows, with the diagnosis each time a run settles", func(ctx context.Context, e env, args []string) int {
			return logs.Command(ctx, logs.Streams{Out: e.stdout, Err: e.stderr, Getenv: e.getenv}, args)
		}},
		{"doctor", "bringup doctor [--json] [-H hosts | --config F] [--trust HOST] [HOST|GROUP...]", "check each host (ssh, host key, auth, sudo, systemd, journald, unit, nvidia-smi) and say how to fix what fails", runDoctor},
	}, actionCommands(), []command{
		{"rollout", "bringup rollout [--mode KERNEL=MODE] [--redeploy KERNEL] [--batch N] [--yes] [--rollback-on-failure] [--json] [HOST|GROUP...]  (or --demo)", "set the mode / redeploy, then restart host by host, waiting for serving; halt on the first failure, offer rollback; exit 0 serving, 1 halted, 2 timeout, 3 refused, 4 aborted",
			func(ctx context.Context, e env, args []string) int { return rolloutCmd(ctx, e, args, stdinTerminal()) }},
		{"explain", explainlog.Usage, "diagnose a saved log offline (a paste, journalctl output in short, short-iso, cat or json, engine output): phases with timings, cause, hint, evidence; several logs (a file per node, or a journal of several hosts) are judged by deployment, the node that failed first blamed; exit 0 served, 1 failed, 2 undecided", func(ctx context.Context, e env, args []string) int {
			return explainlog.Command(ctx, explainlog.Streams{In: e.stdin, Out: e.stdout, Err: e.stderr}, args)
		}},
		{"lint", "bringup lint [--json] [--kernel NAME] [--config F] [DIR|HOST]", "find host syncs and capture-illegal calls in a kernel's Python (a DIR, or a HOST's files over SSH), the modes that reach each, and check the catalog's declared capture safety; exit 1 when a declared-safe mode syncs", runLint},
		{"replay", "bringup replay [--speed N] FILE", "the console over a recording made with --record (read-only); `bringup watch --replay FILE` prints it as lines", runReplay},
		{"init", "bringup init [-F ssh_config] [-o FILE|-] [--force] HOST...", "write a starter config: each host's inference unit and engine, found over SSH", runInit},
		{"version", "bringup version  (or --version, -v)", "print the version", runVersion},
		{"completion", "bringup completion bash|zsh|fish", "print the shell's completion script (commands, flags, host and group names from the config)", runCompletion},
	})
}

func main() {
	ctx, stop := cli.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}, os.Args[1:])
	stop()
	os.Exit(code)
}

// version is set at link time by a release build (-ldflags "-X
// main.version=v1.2.3"); empty, the module's build info says. It is the
// one package-level variable: the linker can set nothing else.
var version string

func run(ctx context.Context, e env, args []string) int {
	if len(args) == 0 || (strings.HasPrefix(args[0], "-") && !slices.Contains([]string{"-h", "--help", "-help", "-v", "--version"}, args[0])) {
		return runConsole(ctx, e, args)
	}
	switch args[0] {
	case "-v", "--version":
		return runVersion(ctx, e, args[1:])
	case "__complete": // the completion scripts' helper, not listed
		return runComplete(ctx, e, args[1:])
	case "-h", "--help", "-help", "help":
		if len(args) > 2 {
			fmt.Fprintf(e.stderr, "bringup help: one command at a time (got %s)\n", strings.Join(args[1:], " "))
			return exitUsage
		}
		if len(args) == 2 {
			if c, ok := lookupCommand(args[1]); ok {
				return c.run(ctx, e, []string{"--help"})
			}
			fmt.Fprintf(e.stderr, "bringup help: no command %q%s\nRun 'bringup --help' for the commands.\n", args[1], didYouMean(args[1]))
			return exitUsage
		}
		usage(e.stdout)
		return exitServing
	}
	if c, ok := lookupCommand(args[0]); ok {
		return c.run(ctx, e, args[1:])
	}
	// The suggestion alone: the whole usage would bury it.
	fmt.Fprintf(e.stderr, "bringup: unknown command %q%s\nRun 'bringup --help' for usage.\n", args[0], didYouMean(args[0]))
	return exitUsage
}

// lookupCommand finds the subcommand called name.
func lookupCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name && c.run != nil {
			return c, true
		}
	}
	return command{}, false
}

// didYouMean names the command nearest a mistyped one, as text to append
// to the error ("" when none is near).
func didYouMean(name string) string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	names = append(names, "help")
	if s := cli.Suggest(name, names); s != "" {
		return " — did you mean " + s + "?"
	}
	return ""
}

func usage(w io.Writer) {
	fmt.Fprint(w, "bringup — bring up LLM inference services on GPU hosts and see why they fail.\n\nUsage:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %s\n      %s\n", c.usage, c.summary)
	}
	fmt.Fprint(w, "\nFlags take GNU form (--json, -H gpu1,gpu2), before or after host names; -- ends them.\n",
		"Where a setting comes from: flags, then the environment (BRINGUP_CONFIG), then the config file.\n",
		"  -h, --help      this help (bringup help COMMAND, or COMMAND --help, for a command's flags)\n",
		"  -v, --version   print the version\n\n")
	cli.PrintExitCodes(w)
	fmt.Fprint(w, "\nIn the console, press ? for keys.\n")
}

func runVersion(_ context.Context, e env, args []string) int {
	fs := cli.NewFlags(e.stdout, e.stderr, "version", "bringup version  (or bringup --version, -v)")
	if code, stop := cli.Parse(fs, args); stop {
		return code
	}
	bi, ok := debug.ReadBuildInfo()
	fmt.Fprintln(e.stdout, cli.VersionString(version, bi, ok))
	return exitServing
}
