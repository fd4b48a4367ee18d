package fleet

import (
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/capturecheck"
)

// Capabilities offers the console every optional feature of the fleet.
// It looks once for the kernels' local trees (CaptureWeighs answers from
// that, doing no IO).
func (f *Fleet) Capabilities() remote.Capabilities {
	local := map[string]bool{}
	for _, k := range f.opts.Kernels.Kernels {
		local[k.Name] = capturecheck.HasLocalTree(k)
	}
	return remote.Capabilities{
		CaptureWeighs: func(w remote.CheckWant) bool {
			if w.Command != "" || local[w.Kernel] {
				return true
			}
			_, reads := driverAs[remote.KernelReader](f, w.Host)
			return reads
		},
		LocalHashes:  f.LocalHashes,
		Kernels:      f.Kernels,
		LogBudget:    f.LogBudget,
		Reconnect:    f.Reconnect,
		View:         f.View,
		Cancel:       f.Cancel,
		PreviousRun:  f.PreviousRun,
		SlowerBy:     f.SlowerBy,
		CaptureCheck: f.CaptureCheck,
	}
}
