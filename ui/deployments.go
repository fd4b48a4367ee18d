package ui

import (
	"slices"
	"strconv"
	"strings"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/deployment"
	"github.com/bringup-dev/bringup/remote/sanitize"
)

// byDeployment is the grouping's name in the header, the palette's
// :group and the status line.
const byDeployment = "deployment"

// findDeployments works the fleet's deployments out again when a unit's
// command line or the hosts changed, and keeps the deployment grouping
// first among the groupings while there are deployments. The first time
// one is found the table is grouped by them: a deployment is one row.
//
// delta says that the hosts are the last snapshot's but for those taken
// anew: only theirs can have changed.
func (t *tableModel) findDeployments(delta bool, taken []int) {
	if t.execs != nil && !t.execsChanged(delta, taken) {
		return // every snapshot comes here: no allocation while nothing moved
	}
	execs := make(map[string]string, len(t.hosts))
	for _, h := range t.hosts {
		execs[h.Name] = h.UnitState.ExecStart
	}
	t.execs = execs
	deps := deployment.FromStates(t.declared, t.hosts)
	if slices.EqualFunc(deps, t.deployments, sameDeployment) {
		return
	}
	t.deployments = deps
	has := len(t.groupings) > 0 && t.groupings[0].deployments != nil
	switch {
	case len(deps) == 0 && !has:
		return
	case has:
		t.groupings[0] = deploymentGrouping(deps)
		return
	}
	t.groupings = append([]grouping{deploymentGrouping(deps)}, t.groupings...)
	if t.groupBy > 0 {
		t.groupBy++
	}
	if !t.autoGrouped && t.groupBy == 0 {
		t.groupBy, t.autoGrouped = 1, true
	}
}

// execsChanged reports whether the hosts or their units' command lines
// differ from those the deployments were worked out from (or looked at
// since): of a delta, those of the hosts taken anew.
func (t *tableModel) execsChanged(delta bool, taken []int) bool {
	if len(t.hosts) != len(t.execs) {
		return true
	}
	changed := func(h *remote.HostState) bool {
		e, ok := t.execs[h.Name]
		return !ok || e != h.UnitState.ExecStart
	}
	if delta {
		return slices.ContainsFunc(taken, func(i int) bool { return changed(&t.hosts[i]) })
	}
	for i := range t.hosts {
		if changed(&t.hosts[i]) {
			return true
		}
	}
	return false
}

func sameDeployment(a, b deployment.Deployment) bool {
	return a.Name == b.Name && slices.Equal(a.Nodes, b.Nodes) && slices.Equal(a.Problems, b.Problems)
}

// deploymentGrouping puts each deployment's nodes under one row; the
// hosts in none stay plain rows after them (inline), since a host that
// serves alone is a deployment of its own.
func deploymentGrouping(deps []deployment.Deployment) grouping {
	g := grouping{by: byDeployment, of: map[string][]int{}, rest: -1, deployments: deps, inline: true}
	for i, d := range deps {
		for _, n := range d.Nodes {
			g.of[n.Host] = []int{i}
		}
		g.buckets = append(g.buckets, bucket{key: "=" + d.Name, name: sanitize.String(d.Name)})
	}
	if g.deployments == nil {
		g.deployments = []deployment.Deployment{}
	}
	return g.withRest("(no deployment)")
}

// deploymentText is a deployment's row after its name: its verdict, then
// each node's phase, and where it failed which node failed first and why
// and which lost a peer: "failed · node 1 gpu1 failed first: nccl-error
// (NCCL failed) · node 0 gpu0 peer lost".
func (t *fleetTable) deploymentText(d deployment.Deployment) string {
	states := make(map[string]remote.HostState, len(d.Nodes))
	for _, n := range d.Nodes {
		if i := slices.IndexFunc(t.hosts, func(h remote.HostState) bool { return h.Name == n.Host }); i >= 0 {
			states[n.Host] = t.hosts[i]
		}
	}
	v := deployment.Judge(d, states, deployment.Offsets(states))
	k := t.styles.table.phaseInk(t.styles, v.Phase)
	var b strings.Builder
	b.WriteString(k.pre + v.Outcome + k.post)
	if v.Outcome == deployment.OutcomeStarting && v.Phase != "" {
		b.WriteString(" " + string(v.Phase))
		if !v.ETA.IsZero() && v.ETA.After(t.now) {
			b.WriteString(" · eta " + approxLeft(v.ETA.Sub(t.now)))
		}
	}
	for _, n := range v.Nodes {
		b.WriteString(" · node " + strconv.Itoa(n.Rank) + " " + sanitize.String(n.Host) + " ")
		switch {
		case n.Blame == "failed first" && v.Diag != nil:
			b.WriteString(k.pre + "failed first: " + v.Diag.Cause + k.post + " (" + v.Diag.Summary + ")")
		case n.Blame != "":
			b.WriteString("peer lost")
		default:
			pk := t.styles.table.phaseInk(t.styles, n.Phase)
			b.WriteString(pk.pre + string(n.Phase) + pk.post)
		}
	}
	for _, p := range d.Problems {
		b.WriteString(" · " + sanitize.String(p))
	}
	return b.String()
}

// deploymentOf is the deployment a grouping's bucket is, when the
// grouping is by deployment.
func (g *grouping) deploymentOf(b int) (deployment.Deployment, bool) {
	if g.deployments == nil || b < 0 || b >= len(g.deployments) {
		return deployment.Deployment{}, false
	}
	return g.deployments[b], true
}
