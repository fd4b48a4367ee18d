package remote

import (
	"slices"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/startup"
)

// DefaultLogBudget is Options.LogBudget's default: with 256 hosts the
// console holding their logs stays under 200 MiB in all.
const DefaultLogBudget = 128 << 20

// PendingShare is the part of the log budget (one in PendingShare) the
// fleet may hold in a batch its consumer has not taken yet.
const PendingShare = 8

// HostState is one host in a snapshot.
type HostState struct {
	Name    string          `json:"host"`
	Unit    string          `json:"unit"`
	Startup startup.Startup `json:"startup"`
	// UnitState is the last unit state read from the host.
	UnitState event.Unit  `json:"unit_state"`
	Conn      event.Conn  `json:"conn"`
	Probe     event.Probe `json:"probe"`
	// Clock is the host's clock against this one, measured once per
	// connection (zero: not measured; the host's times are taken as
	// they are). Journal times of several hosts are compared through it.
	Clock event.Clock `json:"clock,omitzero"`
	// GPU is the recent GPU samples, oldest first.
	GPU []event.GPU `json:"gpu,omitempty"`
	// Modes are the kernel modes in the unit's environment (what the next
	// start uses).
	Modes []kernels.ActiveMode `json:"modes,omitempty"`
	// Action is the latest action on the host.
	Action *event.ActionResult `json:"action,omitempty"`
	// Dropped counts journal lines dropped because the consumer was slow.
	Dropped int `json:"dropped,omitempty"`
	// KernelHashes is, per kernel, the content hash of the build the
	// running service loaded (from its "sitecustomize loaded" line).
	KernelHashes map[string]string `json:"kernel_hashes,omitempty"`
	// Expected is what earlier startups of this host, unit and modes took
	// (Runs 0: no history).
	Expected history.Expectation `json:"expected,omitzero"`
	// ETA is when the startup is expected to serve (host time); zero when
	// unknown.
	ETA time.Time `json:"eta,omitzero"`
	// MemProgress estimates weight loading from GPU memory climbing toward
	// the level the last successful run reached. It is set only in the
	// weights phase while the logs give no count (journald sees a tqdm bar
	// only when its line ends).
	MemProgress startup.Progress `json:"mem_progress,omitzero"`
	// Provisional marks a failure seen (or followed by a journal line)
	// less than Options.Settle ago whose cause may still change: only the
	// unit's state (or a wrapper's line) explains it yet, or the journal
	// has not yet shown the process's end
	// (startup.Startup.LogEnded), so traceback lines that place it may
	// still come. systemd's D-Bus signal beats the journal follow; a
	// reader that wants the cause waits until this clears (Settled).
	Provisional bool `json:"provisional,omitempty"`
	// Throughput is the decode rate of the host's current kernel modes
	// (the run's steady rate, or earlier runs') against the modes it ran
	// before, from the history; zero without one.
	Throughput history.ModeAB `json:"throughput,omitzero"`
	// Bench is the latest smoke load run on the host since bringup
	// started (the console's b, `bringup bench`); nil: none.
	Bench *BenchRun `json:"bench,omitempty"`
}

// BenchRun is one smoke load's result on a host: when it ended, which
// action it was, the kernel modes the service ran, and what it measured.
type BenchRun struct {
	Time   time.Time         `json:"time"`
	Action int               `json:"action"`
	Modes  map[string]string `json:"modes,omitempty"`
	event.Bench
}

// Settled reports whether h has reached an end a reader can act on: it
// serves, or it failed with a cause later journal lines will not change
// (not Provisional).
func (h HostState) Settled() bool {
	p := h.Startup.Phase
	return p.Terminal() && (p != startup.Failed || !h.Provisional)
}

// HostChange is a startup change on one host.
type HostChange struct {
	Host string `json:"host"`
	// Seen is when the event that caused the change was received here.
	Seen time.Time `json:"seen"`
	startup.Change
	// ConnErr is why the host cannot be reached, on a change to unknown:
	// its connection's last error ("… connection refused"), so that the
	// change says why as status does.
	ConnErr string `json:"conn_error,omitempty"`
}

// Batch is what the fleet hands out each flush: the snapshot of every host,
// and what happened since the last batch. A host that did not change is
// the same snapshot as in the batch before, its slices and maps shared:
// consumers read them and never write to them.
type Batch struct {
	Hosts   []HostState   `json:"hosts"`
	Events  []event.Event `json:"events,omitempty"`
	Changes []HostChange  `json:"changes,omitempty"`
	// Dropped counts events dropped from this batch (journal lines only;
	// state changes are never dropped).
	Dropped int `json:"dropped,omitempty"`
	// Delta says that Hosts holds the same hosts, in the same order, as
	// the batch before from the same source, and that only those Taken
	// lists (indices into Hosts, ascending, each once) were taken anew:
	// every other host is that batch's very snapshot. A consumer that
	// keeps what it worked out from the last batch then updates it for
	// the hosts taken instead of looking at the whole fleet. Without
	// Delta (the first batch, a batch built by hand or replayed) any
	// host may differ.
	Delta bool  `json:"-"`
	Taken []int `json:"-"`
	// States are, in a Delta from a fleet that hands out only what
	// changed (fleet.Options.Deltas), the snapshots of the hosts Taken
	// lists, in its order; Hosts is then nil, and the consumer keeps the
	// whole snapshot itself (Apply).
	States []HostState `json:"-"`
}

// Apply is the snapshot of every host after b, given prev, the one
// after the batch before: b's Hosts when it has them, else prev with the
// States of b's hosts taken anew put in place (a copy: prev is not
// written to).
func (b Batch) Apply(prev []HostState) []HostState {
	if b.Hosts != nil || !b.Delta || len(b.States) != len(b.Taken) {
		return b.Hosts
	}
	out := slices.Clone(prev)
	for k, i := range b.Taken {
		out[i] = b.States[k]
	}
	return out
}

// AllSettled reports whether there are hosts and every one has settled.
func AllSettled(hosts []HostState) bool {
	if len(hosts) == 0 {
		return false
	}
	for _, h := range hosts {
		if !h.Settled() {
			return false
		}
	}
	return true
}
