package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/livefleet"
	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote/doctor"
	"github.com/bringup-dev/bringup/remote/live"
	"github.com/bringup-dev/bringup/remote/sshx"
)

func runDoctor(ctx context.Context, e env, args []string) int {
	fs := cli.NewFlags(e.stdout, e.stderr, "doctor", "bringup doctor [--json] [-H hosts | --config F] [--trust HOST [--fingerprint SHA256:…]] [HOST|GROUP...]\n\n"+strings.TrimSpace(output.JSONHelp()))
	var ff fleetFlags
	ff.register(fs)
	trust := fs.String("trust", "", "fetch `HOST`'s key, print its fingerprint and add exactly that key to known_hosts")
	pin := fs.String("fingerprint", "", "with --trust: add the key only if its fingerprint is this `SHA256:…` (ssh-keygen -lf on the host)")
	asJSON := fs.Bool("json", false, "print the checks as JSON lines, then a summary (schema below)")
	timeout := fs.Duration("timeout", 20*time.Second, "time (`D`) allowed for each host's checks")
	if code, stop := cli.ParseArgs(fs, args); stop {
		return code
	}
	names := fs.Args()
	if *trust != "" && *asJSON {
		return e.fail("doctor", "--trust prints a fingerprint for a person to compare: no --json")
	}
	if *trust != "" {
		names = []string{*trust}
	}
	cfg, hosts, err := ff.load(ctx, e, names)
	defer ff.releaseTunnel()
	if err != nil {
		return e.interruptedOr(ctx, "doctor", "%v", err)
	}
	if *trust != "" {
		sc, err := live.ResolveSSH(ctx, livefleet.Target(hosts[0]), cfg.SSHConfig)
		if err == nil {
			err = doctor.Trust(ctx, e.stdout, sc, sshx.DialOptions{Resolve: sshx.ResolveOptions{ConfigFile: cfg.SSHConfig}}, *pin)
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "bringup doctor: trust %s: %v\n", hosts[0].Name, err)
			return 1
		}
		return 0
	}
	rs, closeKeys, err := livefleet.Resolve(ctx, e.stderr, cfg, hosts)
	if err != nil {
		return e.fail("doctor", "%v", err)
	}
	defer closeKeys()
	code, outcome := exitServing, "ok"
	var hostsOut []output.HostOutcome
	survey, err := livefleet.Survey(ctx, cfg, hosts, *timeout, func() (*live.Tunnel, error) { return ff.tunnel(ctx, e, cfg) })
	if err != nil {
		return e.fail("doctor", "%v", err)
	}
	for _, rep := range livefleet.EachHost(ctx, rs, *timeout, doctor.Host) {
		if survey != nil {
			doctor.Store(rep, *survey)
		}
		if *asJSON {
			hostsOut = append(hostsOut, output.DoctorJSON(e.stdout, rep))
		} else {
			output.Doctor(e.stdout, rep)
		}
		if rep.Failed() {
			code, outcome = exitFailed, "failed"
		}
		if cli.WasInterrupted(ctx) {
			code, outcome = exitInterrupted, "interrupted"
			break
		}
	}
	if *asJSON {
		output.Summary(e.stdout, "doctor", outcome, code, hostsOut, "")
	}
	return code
}
