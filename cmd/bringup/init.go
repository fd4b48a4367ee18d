package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/config"
	"github.com/bringup-dev/bringup/cmd/bringup/livefleet"
	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/cmd/bringup/starter"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/live"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/systemd"
)

func runInit(ctx context.Context, e env, args []string) int {
	flags := cli.NewFlags(e.stdout, e.stderr, "init", "bringup init [-F ssh_config] [-o FILE|-] [--force] [--json] HOST...\n\n"+
		"Connects to each HOST (an ssh_config name or user@host:port), finds its inference unit (a service whose\n"+
		"ExecStart runs sglang or vllm) and writes a starter config naming them. With --json, stdout has a v1\n"+
		"line of kind found per host (unit, engine, port, state, also; conn_error: why it was not reached),\n"+
		"then a summary (outcome written, failed, interrupted or error; config: the file written).\n\n"+output.JSONHelp())
	out := flags.StringP("output", "o", "", "write the config to `FILE` (- for standard output; default $XDG_CONFIG_HOME/bringup/config.yaml)")
	force := flags.Bool("force", false, "overwrite an existing config file")
	sshConfig := flags.StringP("ssh-config", "F", "", "read this ssh_config `FILE` (like ssh -F); it is named in the config written")
	timeout := flags.Duration("timeout", 20*time.Second, "time (`D`) allowed for each host")
	asJSON := flags.Bool("json", false, "print what was found as JSON lines (schema v1) on stdout, then a summary")
	if code, stop := cli.ParseArgs(flags, args); stop {
		return code
	}
	names := flags.Args()
	if len(names) == 0 {
		return flags.Usagef("name the hosts to look at: bringup init gpu1 gpu2 …")
	}
	if *asJSON && *out == "-" {
		return flags.Usagef("--json and -o - both want standard output: write the config to a file with -o FILE")
	}
	path := *out
	if path == "" {
		path = config.DefaultPath(e.getenv)
	}
	if path != "-" && !*force {
		if _, err := os.Stat(path); err == nil {
			return e.fail("init", "%s exists: --force to overwrite it, or -o FILE to write elsewhere", path)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return e.fail("init", "%v", err)
		}
	}
	ssh := *sshConfig
	if ssh != "" {
		abs, err := filepath.Abs(ssh)
		if err != nil {
			return e.fail("init", "ssh config: %v", err)
		}
		ssh = abs
	}
	targets := make([]live.Target, len(names))
	for i, n := range names {
		t, err := config.ParseTarget(n)
		if err != nil {
			return e.fail("init", "host %q: %v", n, err)
		}
		targets[i] = live.Target{Host: remote.Host{Name: n}, SSH: live.SSHTarget(t)}
	}
	opts, closeKeys, err := live.Resolve(ctx, targets, ssh, sshx.TerminalPassphrase(e.stderr))
	if err != nil {
		return e.fail("init", "%v", err)
	}
	defer closeKeys()

	type found struct {
		units []systemd.InferenceUnit
		err   error
	}
	var hosts []config.StarterHost
	var outcomes []output.HostOutcome
	failed := false
	for o, f := range livefleet.EachHost(ctx, opts, *timeout, func(ctx context.Context, o live.Options) found {
		units, err := live.Discover(ctx, o)
		return found{units, err}
	}) {
		h, fd := starter.Host(o.Name, f.units, f.err)
		hosts, failed = append(hosts, h), failed || f.err != nil
		fmt.Fprintf(e.stderr, "%s: %s\n", o.Name, fd.Text())
		if *asJSON {
			outcomes = append(outcomes, output.InitJSON(e.stdout, fd))
		}
	}
	// summary ends init's JSON (nothing without --json) and returns code.
	summary := func(outcome string, code int, written, err string) int {
		if *asJSON {
			output.InitSummary(e.stdout, outcome, code, outcomes, written, err)
		}
		return code
	}
	if cli.WasInterrupted(ctx) {
		fmt.Fprintln(e.stderr, "bringup init: interrupted: nothing written")
		return summary("interrupted", exitInterrupted, "", "interrupted: nothing written")
	}

	// failWith prints err as init's error and ends the JSON with it.
	failWith := func(format string, a ...any) int {
		code := e.fail("init", format, a...)
		return summary("error", code, "", fmt.Sprintf(format, a...))
	}
	data, err := starter.Config(path, names, hosts, ssh)
	if err != nil {
		return failWith("%v", err)
	}
	if path == "-" {
		_, _ = e.stdout.Write(data)
	} else {
		if err := starter.Write(path, data); err != nil {
			return failWith("%v", err)
		}
		fmt.Fprintf(e.stderr, "wrote %s (%d hosts)\n", path, len(hosts))
	}
	if failed {
		fmt.Fprintln(e.stderr, "bringup init: some hosts were not reached; they are in the config with the defaults and a note")
		return summary("failed", exitFailed, path, "")
	}
	return summary("written", exitServing, path, "")
}
