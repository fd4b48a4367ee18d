package fleet

import (
	"context"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/capturecheck"
)

// CaptureCheck runs wants (remote.CheckPlan's) on their hosts through
// their drivers, each under capturecheck.Deadline, and judges what they
// printed. It blocks until every check has ended: the commands call it
// before they ask, the console from a command of its own.
func (f *Fleet) CaptureCheck(ctx context.Context, wants []remote.CheckWant) remote.SafetyEvidence {
	return capturecheck.Run(ctx, f.opts.Kernels, wants, func(host string) (remote.CheckRunner, bool) {
		d, ok := f.Driver(host)
		if !ok {
			return nil, false
		}
		r, ok := d.(remote.CheckRunner)
		return r, ok
	}, capturecheck.Deadline)
}
