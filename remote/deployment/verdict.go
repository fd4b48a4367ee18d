package deployment

import (
	"fmt"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/startup"
)

// The outcomes of a deployment.
const (
	OutcomeServing  = "serving"  // every node serves
	OutcomeStarting = "starting" // under way, none failed
	OutcomeFailed   = "failed"   // a node failed: the deployment cannot serve
	OutcomeStopped  = "stopped"  // every node stopped
	OutcomeUnknown  = "unknown"  // a node's state is not known (no state yet, unreachable)
)

// peerSymptoms are the causes a node shows when another node of its
// deployment died: its connection to the peer closed (peer-crashed), the
// rendezvous or store timed out waiting for it (dist-init-failed), a
// collective never completed (nccl-timeout). They tell of a node's peer,
// never of the node: a node showing one is a victim, and its cause is
// not the deployment's unless no node failed of anything else.
var peerSymptoms = map[string]bool{"peer-crashed": true, "dist-init-failed": true, "nccl-timeout": true}

// PeerSymptom reports whether cause is one a node shows when a peer died.
func PeerSymptom(cause string) bool { return peerSymptoms[cause] }

// NodeVerdict is one node's part in its deployment's verdict.
type NodeVerdict struct {
	Node
	Phase startup.Phase `json:"phase"`
	// Failed is when the node's run failed, on the reference clock (the
	// host's journal time less its clock offset); zero if it did not.
	Failed time.Time `json:"failed,omitzero"`
	// Cause is the node's own diagnosis' cause; "" without one.
	Cause string `json:"cause,omitempty"`
	// Blame is the node's part in a failed deployment: "failed first",
	// or "peer lost (node N failed first)"; "" while none failed.
	Blame string `json:"blame,omitempty"`
}

// Verdict is a deployment's state as one row: the slowest node's phase
// and ETA, one outcome, and where it failed, the node that failed first
// and its cause.
type Verdict struct {
	Name    string        `json:"deployment"`
	Outcome string        `json:"outcome"`
	Phase   startup.Phase `json:"phase"`
	// Slowest is the host the phase is from: the node furthest from
	// serving (for a failed deployment, the node that failed first).
	Slowest string `json:"slowest,omitempty"`
	// ETA is when the last node is expected to serve (reference clock);
	// zero when a node still under way has no estimate.
	ETA time.Time `json:"eta,omitzero"`
	// First is the rank of the node that failed first (-1: none failed);
	// Diag is its diagnosis, the deployment's cause.
	First int                `json:"first_failed"`
	Diag  *startup.Diagnosis `json:"diagnosis,omitempty"`
	// Provisional: a failed node's cause may still change (its journal
	// has not shown the end yet), so the blame may too.
	Provisional bool          `json:"provisional,omitempty"`
	Nodes       []NodeVerdict `json:"nodes"`
}

// Judge gives d's verdict from its nodes' states (by host name) and each
// host's clock offset (host clock minus the reference clock: a host whose
// clock is 3 s behind has -3 s). A node without a state is unknown.
//
// The node that failed first by its journal's time, corrected for its
// offset, carries the cause; a tie goes to the node whose cause is not a
// peer's symptom, then to the lower rank. The cause is that node's even
// where another node's diagnosis looks more specific: a peer's lines are
// about the node that died, never the reason it did.
func Judge(d Deployment, states map[string]remote.HostState, offsets map[string]time.Duration) Verdict {
	v := Verdict{Name: d.Name, First: -1}
	first := -1
	for _, n := range d.Nodes {
		s, ok := states[n.Host]
		nv := NodeVerdict{Node: n, Phase: startup.Unknown}
		if ok {
			nv.Phase = s.Startup.Phase
			if diag, at, failed := failure(s); failed {
				nv.Failed = at.Add(-offsets[n.Host])
				if diag != nil {
					nv.Cause = diag.Cause
				}
				v.Provisional = v.Provisional || s.Provisional
			}
		}
		v.Nodes = append(v.Nodes, nv)
		i := len(v.Nodes) - 1
		if !nv.Failed.IsZero() && (first < 0 || before(nv, v.Nodes[first])) {
			first = i
		}
	}
	if first >= 0 {
		f := v.Nodes[first]
		v.Outcome, v.Phase, v.Slowest, v.First = OutcomeFailed, startup.Failed, f.Host, f.Rank
		if diag, _, _ := failure(states[f.Host]); diag != nil {
			v.Diag = diag
		}
		for i := range v.Nodes {
			if i == first {
				v.Nodes[i].Blame = "failed first"
				continue
			}
			v.Nodes[i].Blame = fmt.Sprintf("peer lost (node %d failed first)", f.Rank)
		}
		return v
	}
	v.Outcome, v.Phase, v.Slowest, v.ETA = progress(d, v.Nodes, states, offsets)
	return v
}

// Offsets are the clock offsets the hosts' connections measured
// (HostState.Clock), as Judge takes them; a host not measured has none.
func Offsets(states map[string]remote.HostState) map[string]time.Duration {
	out := make(map[string]time.Duration, len(states))
	for h, s := range states {
		if s.Clock.Offset != 0 {
			out[h] = s.Clock.Offset
		}
	}
	return out
}

// before orders two failed nodes: the earlier failure, then the one that
// is no peer's symptom, then the lower rank.
func before(a, b NodeVerdict) bool {
	if !a.Failed.Equal(b.Failed) {
		return a.Failed.Before(b.Failed)
	}
	if sa, sb := PeerSymptom(a.Cause), PeerSymptom(b.Cause); sa != sb {
		return sb
	}
	return a.Rank < b.Rank
}

// failure says whether a host's latest run failed, why, and when by the
// host's journal: the root-cause line's time, else the run's end. A host
// that systemd is restarting after a failure, or that is in a crash loop,
// failed too.
func failure(s remote.HostState) (*startup.Diagnosis, time.Time, bool) {
	st := s.Startup
	var last *startup.Run
	if len(st.Runs) > 0 {
		last = &st.Runs[len(st.Runs)-1]
	}
	switch {
	case st.Phase == startup.Failed:
	case st.Phase == startup.Restarting && (st.Loop != nil || last != nil && last.Failed()):
	default:
		return nil, time.Time{}, false
	}
	diag := st.Diag
	if diag == nil && last != nil {
		diag = last.Diag
	}
	switch {
	case diag != nil && !diag.Time.IsZero():
		return diag, diag.Time, true
	case last != nil && !last.End.IsZero():
		return diag, last.End, true
	}
	return diag, st.PhaseSince, true
}

// progress is the outcome, phase and ETA of a deployment none of whose
// nodes failed: the node furthest from serving gives the phase. A node
// other than the head counts as serving once the head serves and it is
// up: only the head runs the HTTP server and says it serves.
func progress(d Deployment, nodes []NodeVerdict, states map[string]remote.HostState, offsets map[string]time.Duration) (string, startup.Phase, string, time.Time) {
	headServes := len(nodes) > 0 && nodes[0].Phase == startup.Serving
	slowest, stopped := -1, 0
	var eta time.Time
	etaKnown := true
	for i, n := range nodes {
		p := n.Phase
		if headServes && i > 0 && p.Up() {
			p = startup.Serving
		}
		nodes[i].Phase = p
		if p == startup.Stopped {
			stopped++
		}
		if p != startup.Serving && p != startup.Stopped {
			if t := states[n.Host].ETA; t.IsZero() {
				etaKnown = false
			} else if t = t.Add(-offsets[n.Host]); t.After(eta) {
				eta = t
			}
		}
		// A node off the path (unknown, stuck, restarting) is slower than
		// any on it: it may never get there.
		switch {
		case slowest < 0:
			slowest = i
		case !p.Path() && nodes[slowest].Phase.Path():
			slowest = i
		case p.Path() && nodes[slowest].Phase.Path() && p.Rank() < nodes[slowest].Phase.Rank():
			slowest = i
		}
	}
	if slowest < 0 {
		return OutcomeUnknown, startup.Unknown, "", time.Time{}
	}
	if !etaKnown {
		eta = time.Time{}
	}
	s := nodes[slowest]
	switch {
	case stopped == len(nodes):
		return OutcomeStopped, startup.Stopped, "", time.Time{}
	case s.Phase == startup.Serving:
		return OutcomeServing, startup.Serving, "", time.Time{}
	case s.Phase == startup.Unknown || s.Phase == "":
		return OutcomeUnknown, s.Phase, s.Host, eta
	}
	return OutcomeStarting, s.Phase, s.Host, eta
}
