package kernels

// ModeStatus is one kernel's line in the host view: the mode the unit's
// next start gets (its Environment property, drop-ins included: "on
// disk") against the mode the running process started with.
type ModeStatus struct {
	Kernel string
	OnDisk ActiveMode
	// Running is the running process's mode; meaningful when HasRunning.
	Running    ActiveMode
	HasRunning bool
	// RestartPending is true when the process runs in another mode than
	// the one on disk: the change takes effect at the next restart.
	RestartPending bool
}

// CompareModes pairs each kernel's mode in unitEnv (the unit's Environment
// property) with its mode in procEnv (the main process's environment; nil
// when no process runs).
func (c Catalog) CompareModes(unitEnv, procEnv []string) []ModeStatus {
	disk := c.ModesIn(unitEnv)
	var run []ActiveMode
	if procEnv != nil {
		run = c.ModesIn(procEnv)
	}
	out := make([]ModeStatus, len(disk))
	for i, d := range disk {
		out[i] = ModeStatus{Kernel: d.Kernel, OnDisk: d}
		if run != nil {
			out[i].Running, out[i].HasRunning = run[i], true
			out[i].RestartPending = run[i].Mode != d.Mode
		}
	}
	return out
}
