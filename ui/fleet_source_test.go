package ui

import "github.com/bringup-dev/bringup/remote/fleet"

// The fleet is the source the command layer passes, with every optional
// feature the UI asks a Source for. Checked here rather than in the UI's
// own files, so that the UI links only the contract (remote), not the
// fleet that implements it.
var (
	_ Source        = (*fleet.Fleet)(nil)
	_ localHasher   = (*fleet.Fleet)(nil)
	_ catalogSource = (*fleet.Fleet)(nil)
	_ budgetSource  = (*fleet.Fleet)(nil)
	_ reconnecter   = (*fleet.Fleet)(nil)
	_ viewTeller    = (*fleet.Fleet)(nil)
	_ canceller     = (*fleet.Fleet)(nil)
	_ previousRuns  = (*fleet.Fleet)(nil)
)
