package main

import (
	"cmp"
	"context"
	"os"
	"slices"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/config"
	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/kernels/capturelint"
)

// runLint reads a kernel's Python for host syncs and calls CUDA graph
// capture forbids, says which modes reach each, and sets the catalog's
// declared capture safety beside it: exit 1 when a mode declared safe is
// reached by a sync (without a kernel: when any sync is found).
func runLint(_ context.Context, e env, args []string) int {
	fs := cli.NewFlags(e.stdout, e.stderr, "lint", "bringup lint [--json] [--kernel NAME] [--config F] [DIR]")
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
	var k kernels.Kernel
	switch i := slices.IndexFunc(cat.Kernels, func(k kernels.Kernel) bool { return k.Name == *name }); {
	case *name != "" && i < 0:
		return e.fail("lint", "--kernel %q: not in the catalog", *name)
	case i >= 0:
		k = cat.Kernels[i]
	case len(cat.Kernels) == 1:
		k = cat.Kernels[0]
	case len(cat.Kernels) > 1:
		return e.fail("lint", "the catalog has %d kernels: name one with --kernel", len(cat.Kernels))
	}
	res := output.LintResult{Dir: cmp.Or(fs.Arg(0), k.LocalDir), Kernel: k.Name}
	if res.Dir == "" {
		return e.fail("lint", "name the kernel's DIR (the catalog gives no local_dir)")
	}
	files, skipped, err := capturelint.ReadTree(os.DirFS(res.Dir))
	if err != nil {
		return e.fail("lint", "%s: %v", res.Dir, err)
	}
	res.Skipped, res.Report = skipped, capturelint.Lint(files, capturelint.ForKernel(k))
	res.Verdicts = capturelint.Compare(k, res.Report)
	if k.Name == "" && len(res.Report.Reached("", capturelint.High)) > 0 ||
		slices.ContainsFunc(res.Verdicts, func(v capturelint.ModeVerdict) bool { return v.Declared && v.Syncs > 0 }) {
		res.Exit = cli.ExitFailed
	}
	if *asJSON {
		output.LintJSON(e.stdout, res)
	} else {
		output.Lint(e.stdout, res)
	}
	return res.Exit
}
