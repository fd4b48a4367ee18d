package deployment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/logfile"
	"github.com/bringup-dev/bringup/remote/startup"
)

// The real multi-node logs of the corpus the verdicts are judged on: a
// node that died of its own cause, and the texts its peers print.
const (
	// https://github.com/sgl-project/sglang/issues/4289: NCCL failed in
	// init (unhandled system error).
	logNCCLInit = "sglang-4289-init-nccl-unhandled-system.log"
	// https://github.com/sgl-project/sglang/issues/4205: gloo's
	// "Connection closed by peer" while capturing.
	logPeerClosed = "sglang-4205-capture-gloo-peer.log"
	// https://github.com/sgl-project/sglang/issues/7478: the TCPStore
	// client of a two-node deployment timed out.
	logStoreTimeout = "sglang-7478-multinode-ipv6-store-timeout.log"
	// https://github.com/sgl-project/sglang/issues/3368: a two-node
	// deployment's NCCL watchdog after weights.
	logWatchdog = "sglang-3368-multinode-watchdog-allreduce-after-weights.log"
)

// t0 is the reference time the stories start at.
var t0 = time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)

// failedAt is the state of a host whose journal held one corpus log, as
// explain reads it, which failed at host time at: the real lines pick the
// cause, the test the time.
func failedAt(t *testing.T, host, log string, at time.Time) remote.HostState {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "startup", "testdata", "corpus", log))
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(data), "\n---\n")
	if !ok {
		t.Fatalf("%s: no --- line", log)
	}
	lg, err := logfile.Read(strings.NewReader(body), log, logfile.Options{Host: host, Year: 2026})
	if err != nil {
		t.Fatal(err)
	}
	s := startup.Explain(lg.Events, startup.Options{Engine: "sglang", Kernels: kernels.DefaultCatalog()}).Startup
	if s.Phase != startup.Failed || s.Diag == nil {
		t.Fatalf("%s: phase %s, diagnosis %v: want a failure", log, s.Phase, s.Diag)
	}
	diag := *s.Diag
	diag.Time = at
	s.Diag = &diag
	return remote.HostState{Name: host, Unit: "sglang.service", Startup: s}
}

func inPhase(host string, p startup.Phase, eta time.Time) remote.HostState {
	return remote.HostState{Name: host, Startup: startup.Startup{Phase: p, PhaseSince: t0}, ETA: eta}
}

var pair = Deployment{Name: "kimi", Nodes: []Node{{"gpu0", 0}, {"gpu1", 1}}}

func TestPeerLogsAreSymptoms(t *testing.T) {
	// The peer texts must carry a peer cause in the rules, the dead
	// node's not: else the test below would prove nothing.
	for _, c := range []struct {
		log     string
		symptom bool
	}{{logNCCLInit, false}, {logPeerClosed, true}, {logStoreTimeout, true}, {logWatchdog, true}} {
		s := failedAt(t, "h", c.log, t0)
		if PeerSymptom(s.Startup.Diag.Cause) != c.symptom {
			t.Errorf("%s: cause %s, peer symptom %v; want %v", c.log, s.Startup.Diag.Cause, !c.symptom, c.symptom)
		}
	}
}

func TestJudgeBlamesTheNodeThatFailedFirst(t *testing.T) {
	sec := time.Second
	cases := []struct {
		name    string
		dep     Deployment
		states  func(t *testing.T) map[string]remote.HostState
		offsets map[string]time.Duration
		first   int
		cause   string
	}{
		{
			name: "node 1 NCCL, node 0 sees the peer close a second later",
			dep:  pair,
			states: func(t *testing.T) map[string]remote.HostState {
				return map[string]remote.HostState{
					"gpu0": failedAt(t, "gpu0", logPeerClosed, t0.Add(sec)),
					"gpu1": failedAt(t, "gpu1", logNCCLInit, t0),
				}
			},
			first: 1, cause: "nccl-error",
		},
		{
			name: "node 1's clock 3 s behind: still node 1",
			dep:  pair,
			states: func(t *testing.T) map[string]remote.HostState {
				return map[string]remote.HostState{
					"gpu0": failedAt(t, "gpu0", logStoreTimeout, t0.Add(sec)),
					"gpu1": failedAt(t, "gpu1", logNCCLInit, t0.Add(-3*sec)),
				}
			},
			offsets: map[string]time.Duration{"gpu1": -3 * sec},
			first:   1, cause: "nccl-error",
		},
		{
			name: "node 1's clock 3 s ahead, its stamps later than node 0's: corrected, node 1",
			dep:  pair,
			states: func(t *testing.T) map[string]remote.HostState {
				return map[string]remote.HostState{
					"gpu0": failedAt(t, "gpu0", logWatchdog, t0.Add(sec)),
					"gpu1": failedAt(t, "gpu1", logNCCLInit, t0.Add(3*sec)),
				}
			},
			offsets: map[string]time.Duration{"gpu1": 3 * sec},
			first:   1, cause: "nccl-error",
		},
		{
			name: "node 1's clock 3 s behind makes it look first: corrected, node 0 failed first",
			dep:  pair,
			states: func(t *testing.T) map[string]remote.HostState {
				return map[string]remote.HostState{
					"gpu0": failedAt(t, "gpu0", logNCCLInit, t0),
					"gpu1": failedAt(t, "gpu1", logPeerClosed, t0.Add(sec-3*sec)),
				}
			},
			offsets: map[string]time.Duration{"gpu1": -3 * sec},
			first:   0, cause: "nccl-error",
		},
		{
			name: "the same instant: the node whose cause is no peer's symptom",
			dep:  pair,
			states: func(t *testing.T) map[string]remote.HostState {
				return map[string]remote.HostState{
					"gpu0": failedAt(t, "gpu0", logWatchdog, t0),
					"gpu1": failedAt(t, "gpu1", logNCCLInit, t0),
				}
			},
			first: 1, cause: "nccl-error",
		},
		{
			name: "only peers' symptoms: the first of them is all there is",
			dep:  Deployment{Name: "r1", Nodes: []Node{{"a", 0}, {"b", 1}, {"c", 2}}},
			states: func(t *testing.T) map[string]remote.HostState {
				return map[string]remote.HostState{
					"a": failedAt(t, "a", logStoreTimeout, t0.Add(2*sec)),
					"b": failedAt(t, "b", logPeerClosed, t0.Add(sec)),
					"c": inPhase("c", startup.Weights, time.Time{}),
				}
			},
			first: 1, cause: "peer-crashed",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Judge(c.dep, c.states(t), c.offsets)
			// The same offsets, measured by the hosts' connections and
			// carried in their states, as the console hands them over.
			carried := c.states(t)
			for h, off := range c.offsets {
				s := carried[h]
				s.Clock = event.Clock{Offset: off, RTT: 20 * time.Millisecond}
				carried[h] = s
			}
			if vc := Judge(c.dep, carried, Offsets(carried)); vc.First != v.First {
				t.Errorf("with the offsets carried in the states: node %d first, want %d", vc.First, v.First)
			}
			if v.Outcome != OutcomeFailed || v.Phase != startup.Failed {
				t.Fatalf("outcome %s, phase %s; want failed", v.Outcome, v.Phase)
			}
			if v.First != c.first || v.Diag == nil || v.Diag.Cause != c.cause {
				t.Fatalf("first %d, cause %v; want node %d, %s", v.First, v.Diag, c.first, c.cause)
			}
			for _, n := range v.Nodes {
				want := "peer lost (node " + string(rune('0'+c.first)) + " failed first)"
				if n.Rank == c.first {
					want = "failed first"
				}
				if n.Blame != want {
					t.Errorf("node %d: blame %q, want %q", n.Rank, n.Blame, want)
				}
			}
		})
	}
}

func TestJudgeProgress(t *testing.T) {
	cases := []struct {
		name    string
		states  map[string]remote.HostState
		offsets map[string]time.Duration
		outcome string
		phase   startup.Phase
		slowest string
		eta     time.Time
	}{
		{
			name: "the slowest node's phase and the latest ETA",
			states: map[string]remote.HostState{
				"gpu0": inPhase("gpu0", startup.GraphCapture, t0.Add(time.Minute)),
				"gpu1": inPhase("gpu1", startup.Weights, t0.Add(3*time.Minute)),
			},
			outcome: OutcomeStarting, phase: startup.Weights, slowest: "gpu1", eta: t0.Add(3 * time.Minute),
		},
		{
			name: "an ETA on a host's clock is put on the reference clock",
			states: map[string]remote.HostState{
				"gpu0": inPhase("gpu0", startup.Weights, t0.Add(time.Minute)),
				"gpu1": inPhase("gpu1", startup.Weights, t0.Add(2*time.Minute)),
			},
			offsets: map[string]time.Duration{"gpu1": 90 * time.Second},
			outcome: OutcomeStarting, phase: startup.Weights, slowest: "gpu0", eta: t0.Add(time.Minute),
		},
		{
			name: "a node without an estimate: no ETA",
			states: map[string]remote.HostState{
				"gpu0": inPhase("gpu0", startup.Weights, t0.Add(time.Minute)),
				"gpu1": inPhase("gpu1", startup.Init, time.Time{}),
			},
			outcome: OutcomeStarting, phase: startup.Init, slowest: "gpu1",
		},
		{
			name: "a stuck node is slower than any on the path",
			states: map[string]remote.HostState{
				"gpu0": inPhase("gpu0", startup.Init, time.Time{}),
				"gpu1": inPhase("gpu1", startup.Stuck, time.Time{}),
			},
			outcome: OutcomeStarting, phase: startup.Stuck, slowest: "gpu1",
		},
		{
			name: "the head serves, node 1 is up: the deployment serves",
			states: map[string]remote.HostState{
				"gpu0": inPhase("gpu0", startup.Serving, time.Time{}),
				"gpu1": inPhase("gpu1", startup.GraphCapture, time.Time{}),
			},
			outcome: OutcomeServing, phase: startup.Serving,
		},
		{
			name: "node 1 serves but the head does not yet",
			states: map[string]remote.HostState{
				"gpu0": inPhase("gpu0", startup.HTTP, time.Time{}),
				"gpu1": inPhase("gpu1", startup.Serving, time.Time{}),
			},
			outcome: OutcomeStarting, phase: startup.HTTP, slowest: "gpu0",
		},
		{
			name: "all stopped",
			states: map[string]remote.HostState{
				"gpu0": inPhase("gpu0", startup.Stopped, time.Time{}),
				"gpu1": inPhase("gpu1", startup.Stopped, time.Time{}),
			},
			outcome: OutcomeStopped, phase: startup.Stopped,
		},
		{
			name: "a node with no state yet",
			states: map[string]remote.HostState{
				"gpu0": inPhase("gpu0", startup.Serving, time.Time{}),
			},
			outcome: OutcomeUnknown, phase: startup.Unknown, slowest: "gpu1",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Judge(pair, c.states, c.offsets)
			if v.Outcome != c.outcome || v.Phase != c.phase || v.Slowest != c.slowest || !v.ETA.Equal(c.eta) || v.First != -1 {
				t.Errorf("Judge = %s %s slowest %q eta %v first %d; want %s %s %q %v -1", v.Outcome, v.Phase, v.Slowest, v.ETA, v.First, c.outcome, c.phase, c.slowest, c.eta)
			}
		})
	}
}

// TestJudgeRestartingAfterFailure: systemd restarting a node whose run
// failed is a failed node: its run's time and cause are the ones judged.
func TestJudgeRestartingAfterFailure(t *testing.T) {
	failed := failedAt(t, "gpu1", logNCCLInit, t0)
	run := startup.Run{N: 1, Start: t0.Add(-time.Minute), End: t0, Outcome: startup.Failed, Diag: failed.Startup.Diag}
	restarting := remote.HostState{Name: "gpu1", Startup: startup.Startup{Phase: startup.Restarting, PhaseSince: t0.Add(time.Second), Runs: []startup.Run{run}}}
	v := Judge(pair, map[string]remote.HostState{
		"gpu0": failedAt(t, "gpu0", logPeerClosed, t0.Add(time.Second)),
		"gpu1": restarting,
	}, nil)
	if v.First != 1 || v.Diag == nil || v.Diag.Cause != "nccl-error" {
		t.Errorf("first %d, diag %v; want node 1 with nccl-error", v.First, v.Diag)
	}
}
