package ui

import (
	"testing"

	"github.com/bringup-dev/bringup/remote/fleet"
)

// The fleet is the source the command layer passes, with every optional
// feature in its capability set. Checked here rather than in the UI's own
// files, so that the UI links only the contract (remote), not the fleet
// that implements it.
var _ Source = (*fleet.Fleet)(nil)

// TestFleetOffersEveryCapability: the fleet the command layer passes
// offers the console each optional feature; one left nil would silently
// turn a key off (ctrl+r, the bench's stop, the drift badges).
func TestFleetOffersEveryCapability(t *testing.T) {
	f, err := fleet.New(nil, fleet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := f.Capabilities()
	for name, missing := range map[string]bool{
		"LocalHashes": c.LocalHashes == nil, "Kernels": c.Kernels == nil, "LogBudget": c.LogBudget == nil,
		"Reconnect": c.Reconnect == nil, "View": c.View == nil, "Cancel": c.Cancel == nil,
		"PreviousRun": c.PreviousRun == nil, "SlowerBy": c.SlowerBy == nil,
	} {
		if missing {
			t.Errorf("the fleet's capabilities lack %s", name)
		}
	}
}
