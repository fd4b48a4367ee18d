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
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"bringup/cmd/bringup/cli"
)

// env is the slice of the process environment the commands read, so tests
// can hand in their own.
type env struct {
	stdin          io.Reader // nil when the command may not read it
	stdout, stderr io.Writer
	getenv         func(string) string
}

// fail says what stopped command name, on stderr, and returns the usage
// exit code: nothing was done.
func (e env) fail(name string, format string, a ...any) int {
	fmt.Fprintf(e.stderr, "bringup %s: %s\n", name, fmt.Sprintf(format, a...))
	return exitUsage
}

// command is one subcommand.
type command struct {
	name, usage, summary string
	run                  func(ctx context.Context, e env, args []string) int
}

func commands() []command {
	return []command{
		{"", "bringup [-H hosts | --config F] [--read-only] [--record FILE] [HOST|GROUP...]", "the console over real hosts, from the config file or -H", nil},
		{"demo", "bringup demo [--speed N] [--scenario seed|mixed|all-ok|crashloop] [--read-only] [--record FILE]", "the console over simulated hosts (no hosts needed); mixed adds vLLM hosts", runDemo},
		{"watch", "bringup watch [--json] [--timeout D] [--record FILE] [-H hosts] [HOST|GROUP...]  (or --demo, --replay FILE)", "print phase changes and failures until all hosts serve or fail; exit 0 serving, 1 failed, 2 timeout", runWatchCmd},
		{"status", "bringup status [--json] [-H hosts | --config F] [HOST|GROUP...]", "one look at every host: unit state, phase, probe, kernel modes, diagnosis; exit 0 all serving, 1 any failed, 2 otherwise", runStatus},
		{"bench", "bringup bench [-n N] [-c C] [--max-tokens T] [--json] [-H hosts | --config F] [HOST|GROUP...]", "a bounded smoke load on each serving host's /v1/completions over its SSH tunnel: req/s, output tok/s, TTFT and latency p50/p99, errors; exit 0 clean, 1 errors, 3 a host refused (not serving)", runBench},
		{"doctor", "bringup doctor [-H hosts | --config F] [--trust HOST] [HOST|GROUP...]", "check each host (ssh, host key, auth, sudo, systemd, journald, unit, nvidia-smi) and say how to fix what fails", runDoctor},
		actionCommand("mode"),
		actionCommand("redeploy"),
		actionCommand("restart"),
		actionCommand("stop"),
		actionCommand("reset-failed"),
		{"rollout", "bringup rollout [--mode KERNEL=MODE] [--redeploy KERNEL] [--batch N] [--yes] [--rollback-on-failure] [--json] [HOST|GROUP...]  (or --demo)", "set the mode / redeploy, then restart host by host, waiting for serving; halt on the first failure, offer rollback; exit 0 serving, 1 halted, 2 timeout, 3 refused, 4 aborted",
			func(ctx context.Context, e env, args []string) int { return rolloutCmd(ctx, e, args, stdinTerminal()) }},
		{"explain", "bringup explain [--json] [--engine sglang|vllm|auto] [--rules FILE]... [FILE|-]", "diagnose a saved log offline (a paste, journalctl output in short, short-iso, cat or json, engine output): phases with timings, cause, hint, evidence; exit 0 served, 1 failed, 2 undecided", runExplain},
		{"replay", "bringup replay [--speed N] FILE", "the console over a recording made with --record (read-only); `bringup watch --replay FILE` prints it as lines", runReplay},
		{"version", "bringup version", "print the version", runVersion},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}, os.Args[1:])
	stop()
	os.Exit(code)
}

func run(ctx context.Context, e env, args []string) int {
	if len(args) == 0 || (strings.HasPrefix(args[0], "-") && !slices.Contains([]string{"-h", "--help", "-help"}, args[0])) {
		return runConsole(ctx, e, args)
	}
	switch args[0] {
	case "-h", "--help", "help":
		if len(args) > 1 {
			for _, c := range commands() {
				if c.name == args[1] && c.run != nil {
					return c.run(ctx, e, []string{"--help"})
				}
			}
		}
		usage(e.stdout)
		return 0
	}
	for _, c := range commands() {
		if c.name == args[0] && c.run != nil {
			return c.run(ctx, e, args[1:])
		}
	}
	fmt.Fprintf(e.stderr, "bringup: unknown command %q\n\n", args[0])
	usage(e.stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "bringup — bring up LLM inference services on GPU hosts and see why they fail.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %s\n      %s\n", c.usage, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run `bringup help COMMAND` for a command's flags. In the console, press ? for keys.")
}

func runVersion(_ context.Context, e env, args []string) int {
	fs := cli.NewFlags(e.stderr, "version", "bringup version")
	if code, stop := cli.Parse(fs, args); stop {
		return code
	}
	v := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " " + s.Value[:12]
			}
		}
		fmt.Fprintf(e.stdout, "bringup %s (%s)\n", v, bi.GoVersion)
		return 0
	}
	fmt.Fprintf(e.stdout, "bringup %s\n", v)
	return 0
}
