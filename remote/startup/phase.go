package startup

// phaseFacts are what the layers ask of a phase: the pacer, the table's
// sort and colours, the log budget, the notifier, the rollout, the ETA.
// Each is a column of phaseTable, so a new phase is one row there.
type phaseFacts struct {
	path     bool // on the startup path (the table lists the path first, in order)
	underway bool // on the path between stopped and serving: a startup is climbing it
	up       bool // the service's process is up: on the path past stopped
	steady   bool // nothing moves, so samplers slow down
	terminal bool // ends a startup
	quiet    bool // neither starting nor failing now: its log can be trimmed first
	// attention ranks how much a host in the phase needs a person: 0
	// most (failed), then unreachable or stuck, starting, serving.
	attention int
}

// phaseTable is the one table of phase facts: the startup path in order,
// then the phases off it, then "" (no state read yet).
var phaseTable = []struct {
	phase Phase
	phaseFacts
}{
	//                 path   underway up     steady terminal quiet  attention
	{Stopped, phaseFacts{true, false, false, true, false, true, 2}},
	{Starting, phaseFacts{true, true, true, false, false, false, 2}},
	{Init, phaseFacts{true, true, true, false, false, false, 2}},
	{Weights, phaseFacts{true, true, true, false, false, false, 2}},
	{KVCache, phaseFacts{true, true, true, false, false, false, 2}},
	{GraphCapture, phaseFacts{true, true, true, false, false, false, 2}},
	{HTTP, phaseFacts{true, true, true, false, false, false, 2}},
	{Warmup, phaseFacts{true, true, true, false, false, false, 2}},
	{Serving, phaseFacts{true, false, true, true, true, true, 3}},

	{Failed, phaseFacts{false, false, false, true, true, false, 0}},
	// Restarting and stuck are not steady: a person is likely watching.
	{Restarting, phaseFacts{false, false, false, false, false, false, 2}},
	{Stuck, phaseFacts{false, false, false, false, false, false, 1}},
	// Unknown is not steady either: the connection is down and nothing is
	// sampled anyway.
	{Unknown, phaseFacts{false, false, false, false, false, true, 1}},

	{"", phaseFacts{false, false, false, false, false, true, 2}},
}

// unlisted are the facts of a phase the table lacks (a newer writer's).
var unlisted = phaseFacts{attention: 2}

// phaseIndex is phaseTable by phase, with each path phase's rank.
var phaseIndex = indexPhases()

type indexedPhase struct {
	phaseFacts
	rank int
}

func indexPhases() map[Phase]indexedPhase {
	idx := make(map[Phase]indexedPhase, len(phaseTable))
	rank := 0
	for _, row := range phaseTable {
		r := -1
		if row.path {
			r = rank
			rank++
		}
		idx[row.phase] = indexedPhase{row.phaseFacts, r}
	}
	return idx
}

func (p Phase) facts() indexedPhase {
	if f, ok := phaseIndex[p]; ok {
		return f
	}
	return indexedPhase{unlisted, -1}
}

// Order is the startup path in order.
var Order = pathPhases()

func pathPhases() []Phase {
	var ps []Phase
	for _, row := range phaseTable {
		if row.path {
			ps = append(ps, row.phase)
		}
	}
	return ps
}

// All is every phase a host may be in: the path in order, then the ones
// off it.
func All() []Phase {
	var ps []Phase
	for _, row := range phaseTable {
		if row.phase != "" {
			ps = append(ps, row.phase)
		}
	}
	return ps
}

// Rank is p's position on the startup path, or -1 for phases off it.
func (p Phase) Rank() int { return p.facts().rank }

// Path reports whether p is on the startup path (stopped to serving).
func (p Phase) Path() bool { return p.facts().path }

// Underway reports whether p is on the startup path between stopped and
// serving: a startup is climbing it.
func (p Phase) Underway() bool { return p.facts().underway }

// Up reports whether the service's process is up as far as p says: on the
// path past stopped, serving included.
func (p Phase) Up() bool { return p.facts().up }

// Steady reports whether a host in p is steady for its pace: serving,
// stopped or failed. Every other phase is a startup under way (stuck and
// restarting included: a person is likely watching those), or unknown
// (the connection is down and nothing is sampled anyway).
func (p Phase) Steady() bool { return p.facts().steady }

// Terminal reports whether p ends a startup (serving or failed).
func (p Phase) Terminal() bool { return p.facts().terminal }

// Quiet reports whether a host in p is neither starting nor failing now
// (serving, stopped, unknown, or no state yet), so its log can go first
// when logs are over their memory budget.
func (p Phase) Quiet() bool { return p.facts().quiet }

// Attention ranks how much a host in p needs a person: 0 for failed, 1
// for unreachable or stuck, 2 for starting (and stopped, restarting or not
// yet known), 3 for serving.
func (p Phase) Attention() int { return p.facts().attention }
