// Command testbed boots and removes bringup's test hosts: Debian images
// under systemd-nspawn, each in its own network namespace, running
// infersim as sglang.service. It needs root.
//
//	testbed up [--hosts N] [--inventory DIR] [--mode gpu2=validate] [--args gpu1=--disable-cuda-graph]
//	           [--sudo gpu2=none] [--enable] [--journal-rate-limit] [--cache DIR] [--infersim BIN]
//	testbed down [--inventory DIR]     (no --inventory: every run made by `testbed up`, and all leftovers)
//	testbed status [--inventory DIR]
//	testbed bench [--hosts N] [--quiet 60s] [--catchup-lines 400000] [--catchup-runs 3] [-o FILE]
//
// up prints the inventory directory and one line per host, then exits
// leaving the hosts running; `ssh -F INVENTORY/ssh_config gpu1` reaches
// them. bench boots N hosts, measures bringup's fleet side by side with
// plain `ssh host journalctl` (remote/testkit/fleetbench), prints a table, writes
// a JSON summary and takes the hosts down again, on Ctrl-C too. scale
// feeds a VictoriaLogs N hosts' startups from the corpus with no host
// booted (remote/testkit/scalerig) and measures the store fleet and the
// console on it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "testbed:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  testbed up [--hosts N] [--inventory DIR] [--mode HOST=MODE]... [--args HOST=ARGS]...
             [--sudo HOST=nopasswd|none]... [--enable] [--journal-rate-limit]
             [--cache DIR] [--infersim BIN]
  testbed down [--inventory DIR]
  testbed status [--inventory DIR]
  testbed bench [--hosts N] [--quiet D] [--catchup-lines N] [--catchup-runs N] [-o FILE]
                [--cache DIR] [--infersim BIN]
  testbed scale [--hosts N] [--quiet D] [--window D] [-o FILE]   (no root, no host booted)`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "up":
		return up(ctx, args[1:], stdout, stderr)
	case "down":
		return down(ctx, args[1:], stderr)
	case "status":
		return status(ctx, args[1:], stdout)
	case "bench":
		return bench(ctx, args[1:], stdout, stderr)
	case "scale":
		return scale(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}

// hostValues collects repeated HOST=VALUE flags.
type hostValues map[string][]string

func (m hostValues) String() string { return fmt.Sprint(map[string][]string(m)) }

func (m hostValues) Set(s string) error {
	h, v, ok := strings.Cut(s, "=")
	if !ok || h == "" {
		return fmt.Errorf("%q: want HOST=VALUE", s)
	}
	m[h] = append(m[h], v)
	return nil
}

func up(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o testbed.Options
	modes, extra, sudo := hostValues{}, hostValues{}, hostValues{}
	fs.IntVar(&o.Hosts, "hosts", 3, "how many hosts (gpu1…gpuN)")
	fs.StringVar(&o.InventoryDir, "inventory", "", "inventory directory (default "+testbed.DefaultRunDir+"/RUNID)")
	fs.StringVar(&o.CacheDir, "cache", "", "image cache (default $"+testbed.EnvCache+" or "+testbed.DefaultCacheDir+")")
	fs.StringVar(&o.Infersim, "infersim", "", "prebuilt static infersim binary (default: build ./cmd/infersim)")
	fs.BoolVar(&o.JournalRateLimit, "journal-rate-limit", false, "keep journald's default rate limit on the hosts")
	fs.BoolVar(&o.LogStore, "log-store", false, "start VictoriaLogs "+testbed.VictoriaLogsVersion+" and point every host's systemd-journal-upload at it")
	enable := fs.Bool("enable", false, "start sglang.service at boot")
	fs.Var(modes, "mode", "HOST=MODE: KDTREE_MODE on a host (repeatable)")
	fs.Var(extra, "args", "HOST=ARGS: extra infersim arguments on a host, space-separated (repeatable)")
	fs.Var(sudo, "sudo", "HOST=nopasswd|none: the deploy user's sudo (default: nopasswd on gpu1 only)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, m := range []hostValues{modes, extra, sudo} {
		for h := range m {
			if !validHost(h, o.Hosts) {
				return fmt.Errorf("no host %q among gpu1…gpu%d", h, o.Hosts)
			}
		}
	}
	o.Host = func(i int) testbed.HostOptions {
		name := fmt.Sprintf("gpu%d", i+1)
		ho := testbed.HostOptions{Enable: *enable}
		if v := modes[name]; len(v) > 0 {
			ho.KernelMode = v[len(v)-1]
		}
		for _, a := range extra[name] {
			ho.Args = append(ho.Args, strings.Fields(a)...)
		}
		if v := sudo[name]; len(v) > 0 {
			ho.DeploySudo = testbed.Sudo(v[len(v)-1])
		}
		return ho
	}
	o.Detach = true
	o.Logf = func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) }
	start := time.Now()
	tb, err := testbed.Up(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "inventory %s (%d hosts in %s)\n", tb.Inventory(), len(tb.Hosts()), time.Since(start).Round(100*time.Millisecond))
	if u := tb.LogStoreURL(); u != "" {
		fmt.Fprintf(stdout, "log store %s (VictoriaLogs %s; every host's journal uploads to it): bringup --config %s\n",
			u, testbed.VictoriaLogsVersion, filepath.Join(tb.Inventory(), testbed.StoreConfigName))
	}
	for _, h := range tb.Hosts() {
		mode := h.Options.KernelMode
		if mode == "" {
			mode = "off"
		}
		fmt.Fprintf(stdout, "%s %s KDTREE_MODE=%s  ssh -F %s %s\n", h.Name, h.Addr, mode, tb.SSHConfig(), h.Name)
	}
	return nil
}

func validHost(name string, n int) bool {
	for i := 1; i <= n; i++ {
		if name == fmt.Sprintf("gpu%d", i) {
			return true
		}
	}
	return false
}

func down(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("down", flag.ContinueOnError)
	fs.SetOutput(stderr)
	inv := fs.String("inventory", "", "inventory of the run to remove (default: every run made by testbed up, and leftovers)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *inv == "" {
		return testbed.Clean(ctx, "", func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) })
	}
	tb, err := testbed.Open(*inv)
	if err != nil {
		return err
	}
	return tb.Down(ctx)
}

func status(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	inv := fs.String("inventory", "", "inventory of one run (default: list all runs)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *inv != "" {
		tb, err := testbed.Open(*inv)
		if err != nil {
			return err
		}
		for _, h := range tb.Hosts() {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			out, err := tb.Run(cctx, h.Name, "systemctl is-system-running; systemctl is-active "+testbed.UnitName)
			cancel()
			state := strings.Join(strings.Fields(out), " ")
			if err != nil && state == "" {
				state = "unreachable: " + err.Error()
			}
			fmt.Fprintf(stdout, "%s %s system/sglang: %s\n", h.Name, h.Addr, state)
		}
		return nil
	}
	runs, err := testbed.Runs("")
	if err != nil {
		return err
	}
	for _, r := range runs {
		kind := "test"
		if r.Detached {
			kind = "detached"
		}
		live := "live"
		if !r.Live {
			live = "leftover"
		}
		fmt.Fprintf(stdout, "run %s %s %s inventory %s: %s\n", r.ID, kind, live, r.Inventory, strings.Join(r.Hosts, ", "))
	}
	left, err := testbed.Leftovers()
	if err != nil {
		return err
	}
	for _, l := range left {
		fmt.Fprintln(stdout, "exists:", l)
	}
	return nil
}
