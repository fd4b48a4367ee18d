package main

import (
	"context"
	"fmt"
	"time"

	"bringup/cmd/bringup/cli"
	"bringup/cmd/bringup/output"
	"bringup/remote/doctor"
	"bringup/remote/live"
	"bringup/remote/sshx"
)

func runDoctor(ctx context.Context, e env, args []string) int {
	fs := cli.NewFlags(e.stderr, "doctor", "bringup doctor [-H hosts | --config F] [--trust HOST] [HOST|GROUP...]")
	var ff fleetFlags
	ff.register(fs)
	trust := fs.String("trust", "", "fetch HOST's key and add it to known_hosts (check the fingerprint it prints)")
	timeout := fs.Duration("timeout", 20*time.Second, "time allowed for each host's checks")
	if code, stop := cli.ParseArgs(fs, args); stop {
		return code
	}
	names := fs.Args()
	if *trust != "" {
		names = []string{*trust}
	}
	cfg, hosts, err := ff.load(e, names)
	if err != nil {
		return e.fail("doctor", "%v", err)
	}
	if *trust != "" {
		h := hosts[0]
		sc, err := live.ResolveSSH(ctx, target(h), cfg.SSHConfig)
		if err != nil {
			fmt.Fprintf(e.stderr, "bringup doctor: %v\n", err)
			return 1
		}
		fp, err := sshx.Trust(ctx, sc, sshx.DialOptions{Resolve: sshx.ResolveOptions{ConfigFile: cfg.SSHConfig}})
		if err != nil {
			fmt.Fprintf(e.stderr, "bringup doctor: trust %s: %v\n", h.Name, err)
			return 1
		}
		fmt.Fprintf(e.stdout, "%s: trusted %s\n", h.Name, fp)
		return 0
	}
	rs, closeKeys, err := resolve(ctx, e, cfg, hosts)
	if err != nil {
		return e.fail("doctor", "%v", err)
	}
	defer closeKeys()
	code := 0
	for _, r := range rs {
		hctx, cancel := context.WithTimeout(ctx, *timeout)
		rep := doctor.Host(hctx, r)
		cancel()
		output.Doctor(e.stdout, rep)
		if rep.Failed() {
			code = 1
		}
	}
	return code
}
