package output

import (
	"fmt"
	"io"
	"strings"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/deployment"
)

// Deployments are a fleet's multi-node deployments as watch and status
// report them: the config's, then those the units' command lines name.
type Deployments struct {
	list []deployment.Deployment
	of   map[string]string // host → its deployment's name
}

// FindDeployments works the deployments out from the config's declared
// ones and the hosts' units.
func FindDeployments(declared []deployment.Declared, hosts []remote.HostState) Deployments {
	return DeploymentsOf(deployment.FromStates(declared, hosts))
}

// Of is the name of the deployment host is a node of; "" for none.
func (d Deployments) Of(host string) string { return d.of[host] }

// Outcomes are the summary's entries, a deployment each: its verdict on
// hosts' states, clocks corrected by each host's measured offset.
func (d Deployments) Outcomes(hosts []remote.HostState) []DeploymentOutcome {
	if len(d.list) == 0 {
		return nil
	}
	states := make(map[string]remote.HostState, len(hosts))
	for _, h := range hosts {
		states[h.Name] = h
	}
	out := make([]DeploymentOutcome, 0, len(d.list))
	for _, dep := range d.list {
		v := deployment.Judge(dep, states, deployment.Offsets(states))
		o := DeploymentOutcome{Deployment: dep.Name, Outcome: v.Outcome, Phase: string(v.Phase), Nodes: dep.Hosts(), Problems: dep.Problems}
		if v.First >= 0 {
			rank := v.First
			for _, n := range v.Nodes {
				if n.Rank == rank {
					o.Blamed = n.Host
				}
			}
			o.BlamedRank = &rank
			if v.Diag != nil {
				o.Cause, o.Summary = v.Diag.Cause, v.Diag.Summary
			}
		}
		out = append(out, o)
	}
	return out
}

// StepsPlan prints, under Plan, the order a plan's deployments are acted
// on in: a line per deployment, its stages in order, the hosts of each.
func StepsPlan(w io.Writer, steps []remote.Step) {
	var groups []string
	stages := map[string][][]string{}
	for _, s := range steps {
		if s.Group == "" {
			continue
		}
		if _, seen := stages[s.Group]; !seen {
			groups = append(groups, s.Group)
		}
		for len(stages[s.Group]) <= s.Stage {
			stages[s.Group] = append(stages[s.Group], nil)
		}
		stages[s.Group][s.Stage] = append(stages[s.Group][s.Stage], s.Action.String()+" "+s.Host)
	}
	for _, g := range groups {
		var parts []string
		for _, st := range stages[g] {
			if len(st) > 0 {
				parts = append(parts, strings.Join(st, ", "))
			}
		}
		fmt.Fprintf(w, "  deployment %s, as a whole: %s\n", g, strings.Join(parts, "; then "))
	}
}
