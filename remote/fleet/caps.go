package fleet

import "github.com/bringup-dev/bringup/remote"

// Capabilities offers the console every optional feature of the fleet.
func (f *Fleet) Capabilities() remote.Capabilities {
	return remote.Capabilities{
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
