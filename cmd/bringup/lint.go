package main

import (
	"context"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/config"
	"github.com/bringup-dev/bringup/cmd/bringup/livefleet"
	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/kernels/capturelint"
)

// runLint reads a kernel's Python for host syncs and calls CUDA graph
// capture forbids, says which modes reach each, and sets the catalog's
// declared capture safety beside it: exit 1 when a mode declared safe is
// reached by a sync (without a kernel: when any sync is found).
func runLint(ctx context.Context, e env, args []string) int {
	fs := cli.NewFlags(e.stdout, e.stderr, "lint", "bringup lint [--json] [--kernel NAME] [--config F] [DIR|HOST]")
	asJSON := fs.Bool("json", false, "print the findings and the verdicts as one JSON object")
	name := fs.String("kernel", "", "the catalog's `KERNEL` whose modes to resolve (default: the catalog's only one)")
	cfgPath := fs.String("config", "", "the config `FILE` whose kernel catalog to use")
	if code, stop := cli.ParseArgs(fs, args); stop {
		return code
	}
	if fs.NArg() > 1 {
		return e.fail("lint", "one directory at a time (got %d)", fs.NArg())
	}
	cat, err := config.Catalog(*cfgPath, e.getenv)
	if err != nil {
		return e.fail("lint", "%v", err)
	}
	k, err := cat.Pick(*name)
	if err != nil {
		return e.fail("lint", "%v", err)
	}
	res := output.LintResult{Kernel: k.Name}
	tree, where, release, err := livefleet.KernelTree(ctx, e.stderr, *cfgPath, e.getenv, fs.Arg(0), k) // a DIR, or a HOST's files over SSH
	if err != nil {
		return e.fail("lint", "%v", err)
	}
	defer release()
	res.Dir = where
	lint, err := capturelint.LintTree(tree, k)
	if err != nil {
		return e.fail("lint", "%s: %v", res.Dir, err)
	}
	res.Skipped, res.Report, res.Verdicts = lint.Skipped, lint.Report, lint.Verdicts
	if lint.Failed {
		res.Exit = cli.ExitFailed
	}
	if *asJSON {
		output.LintJSON(e.stdout, res)
	} else {
		output.Lint(e.stdout, res)
	}
	return res.Exit
}
