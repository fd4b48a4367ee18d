package explainlog

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/deployment"
	"github.com/bringup-dev/bringup/remote/sanitize"
)

// Deployments are the deployments the nodes' logs make: all of them,
// named name, where the caller names one; else those their roles say.
func Deployments(nodes []Node, name string) []deployment.Deployment {
	members := make([]deployment.Member, 0, len(nodes))
	for _, n := range nodes {
		m := deployment.Member{Host: n.Name, Addrs: []string{n.Name}}
		if n.HasRole {
			m.Role = n.Role
		}
		if name != "" || n.HasRole {
			members = append(members, m)
		}
	}
	if name != "" {
		return []deployment.Deployment{deployment.Named(name, members)}
	}
	return deployment.InferRoles(members)
}

// states are the nodes' explained startups as the fleet's host states,
// which the deployment's verdict reads.
func states(nodes []Node) []remote.HostState {
	out := make([]remote.HostState, len(nodes))
	for i, n := range nodes {
		out[i] = remote.HostState{Name: n.Name, Startup: n.X.Startup}
	}
	return out
}

// order is the nodes grouped by deployment, each deployment's in rank
// order, then the nodes of none in the order given.
func order(nodes []Node, deps []deployment.Deployment) [][]Node {
	byName := map[string]Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	var groups [][]Node
	placed := map[string]bool{}
	for _, d := range deps {
		var g []Node
		for _, h := range d.Hosts() {
			g = append(g, byName[h])
			placed[h] = true
		}
		groups = append(groups, g)
	}
	var rest []Node
	for _, n := range nodes {
		if !placed[n.Name] {
			rest = append(rest, n)
		}
	}
	if len(rest) > 0 {
		groups = append(groups, rest)
	}
	return groups
}

// printText prints each node's block as a lone log's, then, after a
// deployment's nodes, its verdict.
func printText(w io.Writer, nodes []Node, deps []deployment.Deployment) {
	outcomes := output.DeploymentsOf(deps).Outcomes(states(nodes))
	for i, g := range order(nodes, deps) {
		for _, n := range g {
			output.Explain(w, n.Name, n.X, n.Sum, n.Notes)
			fmt.Fprintln(w)
		}
		if i < len(deps) {
			printVerdict(w, deps[i], outcomes[i], g)
		}
	}
}

// printVerdict is a deployment's verdict: its outcome and, failed, the
// node that failed first with its cause; a line per node after.
func printVerdict(w io.Writer, d deployment.Deployment, o output.DeploymentOutcome, nodes []Node) {
	head := fmt.Sprintf("deployment %s (%s, %d nodes): ", sanitize.String(d.Name), d.Kind, len(d.Nodes))
	switch {
	case o.BlamedRank != nil && o.Cause != "":
		head += fmt.Sprintf("FAILED: node %d (%s) failed first: %s [%s]", *o.BlamedRank, sanitize.String(o.Blamed), o.Summary, o.Cause)
	case o.BlamedRank != nil:
		head += fmt.Sprintf("FAILED: node %d (%s) failed first", *o.BlamedRank, sanitize.String(o.Blamed))
	default:
		head += strings.ToUpper(o.Outcome)
	}
	fmt.Fprintln(w, head)
	v := deployment.Judge(d, statesByName(nodes), nil)
	for _, nv := range v.Nodes {
		line := fmt.Sprintf("  node %d  %s  %s", nv.Rank, sanitize.String(nv.Host), nv.Phase)
		if nv.Cause != "" {
			line += " [" + nv.Cause + "]"
		}
		if !nv.Failed.IsZero() && timed(nodes, nv.Host) {
			line += " at " + nv.Failed.Format(time.DateTime)
		}
		if nv.Blame != "" {
			line += " · " + nv.Blame
		}
		fmt.Fprintln(w, line)
	}
	for _, p := range d.Problems {
		fmt.Fprintf(w, "  note: %s\n", sanitize.String(p))
	}
}

func statesByName(nodes []Node) map[string]remote.HostState {
	out := map[string]remote.HostState{}
	for _, s := range states(nodes) {
		out[s.Name] = s
	}
	return out
}

// timed reports whether host's log carried times: a failure's time means
// something.
func timed(nodes []Node, host string) bool {
	for _, n := range nodes {
		if n.Name == host {
			return n.Sum.Timed
		}
	}
	return false
}

// printJSON prints each node's changes as watch --json would for a host
// of its name, then one summary: every node's outcome and every
// deployment's.
func printJSON(w io.Writer, nodes []Node, deps []deployment.Deployment, code int) {
	var hosts []output.HostOutcome
	outcome := "served"
	ds := output.DeploymentsOf(deps)
	for _, n := range nodes {
		output.ExplainChanges(w, n.Name, ds.Of(n.Name), n.X, n.Sum)
		h := output.HostOutcome{Host: n.Name, Outcome: string(n.X.Outcome), Phase: string(n.X.Startup.Phase), Engine: n.X.Startup.Engine, EngineVersion: n.X.Startup.EngineVersion}
		if d := n.X.Startup.Diag; d != nil {
			h.Cause = d.Cause
		}
		hosts = append(hosts, h)
	}
	switch code {
	case Failed:
		outcome = "failed"
	case Undecided:
		outcome = "undecided"
	}
	output.ExplainSummary(w, outcome, code, hosts, ds.Outcomes(states(nodes)))
}
