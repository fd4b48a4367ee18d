package remote

// Pace is what the fleet tells a host's driver about how closely the host
// is being looked at, so that the driver samples hard only while that is
// worth it: a serving fleet of hundreds of hosts is otherwise kept busy by
// its own once-a-second samplers (measured: the GPU stream and the probe
// were a third of a quiet 64-host console's CPU).
type Pace struct {
	// Steady says the host is not starting: the phase engine has it
	// serving, stopped or failed (startup.Phase.Steady). While it starts, the GPU
	// memory climb feeds the weights estimate and the table's sparkline,
	// and readiness should be seen soon after it happens.
	Steady bool
	// Viewed says its host view is open in the console, which shows every
	// sample as it comes.
	Viewed bool
}

// Pacer is a driver that adjusts its sampling to the host's Pace.
// SetPace is called from the fleet's fold loop and from the console's
// Update: it must not block or do IO (a live host stores it and wakes its
// samplers).
type Pacer interface {
	SetPace(Pace)
}
