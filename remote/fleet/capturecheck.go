package fleet

import (
	"context"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/capturecheck"
)

// CaptureCheck weighs wants (remote.PreflightPlan's) beyond the
// declaration: it lints the kernel files each unit will load (LintKernels)
// and, at the same time, runs the check commands on their hosts through
// their drivers, each under capturecheck.Deadline, and judges what they
// printed; the lint's evidence comes first. It blocks until both have
// ended: the commands call it before they ask, the console from a command
// of its own.
func (f *Fleet) CaptureCheck(ctx context.Context, wants []remote.CheckWant) remote.SafetyEvidence {
	var lint remote.SafetyEvidence
	done := make(chan struct{})
	go func() {
		defer close(done)
		lint = f.LintKernels(ctx, wants)
	}()
	checks := capturecheck.Run(ctx, f.opts.Kernels, wants, func(host string) (remote.CheckRunner, bool) {
		r, ok := driverAs[remote.CheckRunner](f, host)
		return r, ok
	}, capturecheck.Deadline)
	<-done
	return lint.Merge(checks)
}

// LintKernels lints, for each of wants, the kernel files its unit will
// load: the catalog's local tree (what redeploy sends), else the host's
// files read over its driver's connection (capturecheck.Lint). It takes
// milliseconds for a local tree, a few round trips for a host's.
func (f *Fleet) LintKernels(ctx context.Context, wants []remote.CheckWant) remote.SafetyEvidence {
	return capturecheck.Lint(ctx, f.opts.Kernels, wants, func(host string) (remote.KernelReader, bool) {
		return driverAs[remote.KernelReader](f, host)
	})
}

// driverAs is host's driver as a T, when it is one.
func driverAs[T any](f *Fleet, host string) (T, bool) {
	var zero T
	d, ok := f.Driver(host)
	if !ok {
		return zero, false
	}
	t, ok := d.(T)
	return t, ok
}
