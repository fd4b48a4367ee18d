package capturecheck

import (
	"context"
	"sync"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
)

// Deadline bounds one check on a host: the reference check took 4 to 7 s
// on an H100 (importing torch, a warm-up, one capture and replay); a cold
// cache of torch's imports can take several times that.
const Deadline = 60 * time.Second

// Run runs each want with a check command on its host through runner (the host's driver, when
// it can run a check) at once, each under deadline, and judges the
// outputs: the evidence per host and kernel. A host whose driver cannot
// run checks, or whose run never began, gives evidence that counts
// neither way (Skipped) and says why. It returns when every run has.
func Run(ctx context.Context, cat kernels.Catalog, wants []remote.CheckWant, runner func(host string) (remote.CheckRunner, bool), deadline time.Duration) remote.SafetyEvidence {
	wants = remote.Checked(wants)
	ev := make([]kernels.Evidence, len(wants))
	var wg sync.WaitGroup
	for i, w := range wants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev[i] = runOne(ctx, cat, w, runner, deadline)
		}()
	}
	wg.Wait()
	out := remote.SafetyEvidence{}
	for i, w := range wants {
		k := remote.HostKernel{Host: w.Host, Kernel: w.Kernel}
		out[k] = append(out[k], ev[i])
	}
	return out
}

// runOne runs and judges one want.
func runOne(ctx context.Context, cat kernels.Catalog, w remote.CheckWant, runner func(string) (remote.CheckRunner, bool), deadline time.Duration) kernels.Evidence {
	k, _ := cat.Kernel(w.Kernel)
	r, ok := runner(w.Host)
	if !ok {
		return kernels.Evidence{Source: kernels.SourceCheck, Skipped: true, Detail: CannotRun + "this host's connection runs no commands"}
	}
	out, err := r.RunCheck(ctx, w.Command, w.Env, deadline)
	if err != nil {
		return kernels.Evidence{Source: kernels.SourceCheck, Skipped: true, Took: out.Took, Detail: CannotRun + err.Error()}
	}
	return Judge(k, w.Mode, out)
}
