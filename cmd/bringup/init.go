package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/config"
	"github.com/bringup-dev/bringup/remote/live"
	"github.com/bringup-dev/bringup/remote/sanitize"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/systemd"
	"github.com/bringup-dev/bringup/remote/unitname"
)

func runInit(ctx context.Context, e env, args []string) int {
	flags := cli.NewFlags(e.stdout, e.stderr, "init", "bringup init [-F ssh_config] [-o FILE|-] [--force] HOST...\n\n"+
		"Connects to each HOST (an ssh_config name or user@host:port), finds its inference unit (a service whose\n"+
		"ExecStart runs sglang or vllm) and writes a starter config naming them.")
	out := flags.StringP("output", "o", "", "write the config to `FILE` (- for standard output; default $XDG_CONFIG_HOME/bringup/config.yaml)")
	force := flags.Bool("force", false, "overwrite an existing config file")
	sshConfig := flags.StringP("ssh-config", "F", "", "read this ssh_config `FILE` (like ssh -F); it is named in the config written")
	timeout := flags.Duration("timeout", 20*time.Second, "time (`D`) allowed for each host")
	if code, stop := cli.ParseArgs(flags, args); stop {
		return code
	}
	names := flags.Args()
	if len(names) == 0 {
		return flags.Usagef("name the hosts to look at: bringup init gpu1 gpu2 …")
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
		targets[i] = live.Target{Name: n, Host: t.Host, User: t.User, Port: t.Port}
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
	failed := false
	for o, f := range eachHost(ctx, opts, *timeout, func(ctx context.Context, o live.Options) found {
		units, err := live.Discover(ctx, o)
		return found{units, err}
	}) {
		h, line := starterHost(o.Name, f.units, f.err)
		hosts, failed = append(hosts, h), failed || f.err != nil
		fmt.Fprintf(e.stderr, "%s: %s\n", o.Name, line)
	}
	if cli.WasInterrupted(ctx) {
		fmt.Fprintln(e.stderr, "bringup init: interrupted: nothing written")
		return exitInterrupted
	}

	header := fmt.Sprintf("bringup config written by `bringup init %s`\n(units found over SSH; edit freely: see the README for every field)", strings.Join(names, " "))
	data := config.RenderStarter(hosts, ssh, header)
	if _, err := config.Parse(path, data); err != nil { // never write what Load would refuse
		return e.fail("init", "the config made does not read back (a bug): %v", err)
	}
	if path == "-" {
		_, _ = e.stdout.Write(data)
	} else {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return e.fail("init", "%v", err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return e.fail("init", "%v", err)
		}
		fmt.Fprintf(e.stderr, "wrote %s (%d hosts)\n", path, len(hosts))
	}
	if failed {
		fmt.Fprintln(e.stderr, "bringup init: some hosts were not reached; they are in the config with the defaults and a note")
		return exitFailed
	}
	return exitServing
}

// starterHost is what init writes for host name, from what Discover found
// there (or the error that stopped it), and the line it prints for it.
// With several units it takes the first one running (else the first by
// name) and notes the others. Unit names are systemd's and ExecStart is
// the host's text: both pass the one sanitiser, and a name that is not a
// valid unit name is left out.
func starterHost(name string, found []systemd.InferenceUnit, err error) (config.StarterHost, string) {
	h := config.StarterHost{Name: name}
	if err != nil {
		msg := sanitize.String(err.Error())
		h.Note = "not reached by bringup init: " + msg
		return h, "not reached: " + msg
	}
	var ok []systemd.InferenceUnit
	for _, u := range found {
		if _, verr := unitname.Normalize(u.Name); verr == nil {
			ok = append(ok, u)
		}
	}
	if len(ok) == 0 {
		h.Note = "bringup init found no service running sglang or vllm here: set unit: and engine: by hand"
		return h, "no sglang or vllm unit found"
	}
	pick := ok[0]
	for _, u := range ok {
		if u.ActiveState == "active" {
			pick = u
			break
		}
	}
	h.Unit, h.Engine, h.Port = pick.Name, pick.Engine, pick.Port
	notes := []string{fmt.Sprintf("%s (%s): %s", pick.Name, pick.ActiveState, sanitize.String(pick.ExecStart))}
	var others []string
	for _, u := range ok {
		if u.Name != pick.Name {
			others = append(others, fmt.Sprintf("%s (%s, %s)", u.Name, u.Engine, u.ActiveState))
		}
	}
	if len(others) > 0 {
		notes = append(notes, "also found: "+strings.Join(others, ", "))
	}
	h.Note = strings.Join(notes, "\n")
	line := fmt.Sprintf("%s (%s, port %d, %s)", pick.Name, pick.Engine, pick.Port, pick.ActiveState)
	if len(others) > 0 {
		line += "; also " + strings.Join(others, ", ")
	}
	return h, line
}
