package remote

import (
	"context"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/history"
)

// Capabilities are what a source of batches (the Fleet) offers a console
// beyond its updates and actions. Each field is one optional feature; a
// nil field is a feature the source lacks (a test fake offers few), and
// the console does without it. None may block or do IO: the console
// calls them from its Update.
type Capabilities struct {
	// LocalHashes is, per kernel, the content hash of the local build:
	// what the hosts should run.
	LocalHashes func() map[string]string
	// Kernels is the kernel catalog, for a console configured without one.
	Kernels func() kernels.Catalog
	// LogBudget is the bytes of log text the console may keep for all
	// hosts together.
	LogBudget func() int
	// Reconnect restarts host's connection, stopped on a failure that is
	// never retried by itself (host key, authentication).
	Reconnect func(host string) error
	// View is told which host's view is open ("" for none), so that the
	// host samples at full rate only while someone looks.
	View func(host string)
	// Cancel ends host's action id under way.
	Cancel func(host string, id int) error
	// PreviousRun is host's previous serving run under unit with its
	// decode rate, from the history; SlowerBy is the drop in rate that
	// counts as slower. A rollout compares against them.
	PreviousRun func(host, unit string) (history.Record, bool)
	SlowerBy    func() float64
	// CaptureCheck lints the kernel files a restart loads and runs the
	// kernels' check commands it asks for (PreflightPlan) on the hosts,
	// and judges them. It blocks for seconds:
	// the console calls it only from a command of its own, never from
	// Update.
	CaptureCheck func(ctx context.Context, wants []CheckWant) SafetyEvidence
	// CaptureWeighs reports whether CaptureCheck has anything to say of
	// w (PreflightPlan's): a check command to run, or kernel files the
	// lint can read (the local tree is here, or the host's driver reads
	// them). nil: only the wants with a check command.
	CaptureWeighs func(w CheckWant) bool
}
