package deployment

import (
	"fmt"
	"slices"

	"github.com/bringup-dev/bringup/remote"
)

// Steps plans actions on hosts: each host not in a deployment gets them
// in order; a deployment any of hosts is a node of gets them as one, by
// each action's spec (remote.ActionSpec.Across): a mode change on every
// node before the next action, a restart as every node stopped and then
// each started in rank order, the head first, a smoke load on the head.
// Every node of such a deployment must be among hosts: a node acted on
// alone never rejoins the others, so the error names the missing ones.
func Steps(deps []Deployment, hosts []string, actions []remote.Action) ([]remote.Step, error) {
	var out []remote.Step
	planned := map[string]bool{}
	for _, h := range hosts {
		d, _, ok := Of(deps, h)
		if !ok {
			for _, a := range actions {
				out = append(out, remote.Step{Host: h, Action: a})
			}
			continue
		}
		if planned[d.Name] {
			continue
		}
		planned[d.Name] = true
		var missing []string
		for _, n := range d.Nodes {
			if !slices.Contains(hosts, n.Host) {
				missing = append(missing, n.Host)
			}
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("%s is a node of deployment %s, which is acted on as a whole: name %v too", h, d.Name, missing)
		}
		if d.Size > len(d.Nodes) {
			return nil, fmt.Errorf("%s is a node of deployment %s, which is acted on as a whole: it has %d nodes, and only %v are named", h, d.Name, d.Size, d.Hosts())
		}
		out = append(out, deploymentSteps(d, actions)...)
	}
	return out, nil
}

// deploymentSteps are actions on d's nodes, one stage after another.
func deploymentSteps(d Deployment, actions []remote.Action) []remote.Step {
	var out []remote.Step
	head := d.Nodes[0].Host
	stage := 0
	add := func(n Node, a remote.Action) {
		s := remote.Step{Host: n.Host, Action: a, Group: d.Name, Stage: stage}
		if spec, _ := a.Kind.Spec(); spec.Follows && n.Host != head {
			s.Head = head
		}
		out = append(out, s)
	}
	for _, a := range actions {
		spec, _ := a.Kind.Spec()
		switch spec.Across {
		case remote.AcrossHead:
			add(d.Nodes[0], a)
			stage++
		case remote.AcrossRanked:
			for _, n := range d.Nodes {
				add(n, remote.Action{Kind: remote.ActStop})
			}
			stage++
			for _, n := range d.Nodes { // rank order: the head first
				add(n, a)
				stage++
			}
		case remote.AcrossEach:
			for _, n := range d.Nodes {
				add(n, a)
			}
			stage++
		}
	}
	return out
}

// HostsOf are the hosts of steps, each once, in the order they first
// appear.
func HostsOf(steps []remote.Step) []string {
	var out []string
	for _, s := range steps {
		if !slices.Contains(out, s.Host) {
			out = append(out, s.Host)
		}
	}
	return out
}

// StepState is how far one step of a Schedule has got.
type StepState uint8

// The states of a step.
const (
	StepWaiting StepState = iota // not issued yet
	StepIssued                   // issued, not done
	StepDone                     // done
	StepFailed                   // failed (or refused)
	StepSkipped                  // never issued: a step it waited for failed
)

// Schedule says which steps of a plan may be issued as the ones before
// them end. It is pure: the caller issues the steps and reports how
// each ended; the fleet's Apply and the console both drive one.
type Schedule struct {
	steps []remote.Step
	state []StepState
	// after is, per step, the steps it waits for: its host's step before
	// it, and its group's steps of lower stages.
	after [][]int
}

// NewSchedule starts a schedule of steps, none issued.
func NewSchedule(steps []remote.Step) *Schedule {
	s := &Schedule{steps: steps, state: make([]StepState, len(steps)), after: make([][]int, len(steps))}
	last := map[string]int{}
	groups := map[string][]int{}
	for i, st := range steps {
		if j, ok := last[st.Host]; ok {
			s.after[i] = append(s.after[i], j)
		}
		last[st.Host] = i
		if st.Group == "" {
			continue
		}
		for _, j := range groups[st.Group] {
			if steps[j].Stage < st.Stage {
				s.after[i] = append(s.after[i], j)
			}
		}
		groups[st.Group] = append(groups[st.Group], i)
	}
	return s
}

// Step is step i.
func (s *Schedule) Step(i int) remote.Step { return s.steps[i] }

// State is step i's state.
func (s *Schedule) State(i int) StepState { return s.state[i] }

// Next marks issued and returns the steps that may be issued now: those
// whose host's earlier steps are done and whose group's steps of lower
// stages are all done. Steps that can never be issued, because a step
// they wait for failed or was skipped, are marked skipped and returned
// as skip, for the caller to report.
func (s *Schedule) Next() (issue, skip []int) {
	for changed := true; changed; {
		changed = false
		for i := range s.steps {
			if s.state[i] != StepWaiting {
				continue
			}
			switch s.blocked(i) {
			case blockNone:
				s.state[i] = StepIssued
				issue = append(issue, i)
			case blockFailed:
				s.state[i] = StepSkipped
				skip = append(skip, i)
				changed = true // a skip may doom the steps after it
			case blockWait:
			}
		}
	}
	return issue, skip
}

type block uint8

const (
	blockNone   block = iota // may be issued
	blockWait                // waits for a step under way
	blockFailed              // waits for a step that failed or was skipped
)

// blocked says what keeps step i from being issued.
func (s *Schedule) blocked(i int) block {
	b := blockNone
	for _, j := range s.after[i] {
		switch s.state[j] {
		case StepFailed, StepSkipped:
			return blockFailed
		case StepWaiting, StepIssued:
			b = blockWait
		case StepDone:
		}
	}
	return b
}

// Ended records how issued step i ended.
func (s *Schedule) Ended(i int, ok bool) {
	if ok {
		s.state[i] = StepDone
		return
	}
	s.state[i] = StepFailed
}
