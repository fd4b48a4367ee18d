package output

import (
	"io"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/deployment"
	"github.com/bringup-dev/bringup/remote/logfile"
	"github.com/bringup-dev/bringup/remote/startup"
)

// DeploymentsOf are deployments already worked out (explain's, from the
// logs), for their summary entries.
func DeploymentsOf(list []deployment.Deployment) Deployments {
	d := Deployments{list: list, of: map[string]string{}}
	for _, dep := range list {
		for _, n := range dep.Nodes {
			d.of[n.Host] = dep.Name
		}
	}
	return d
}

// ExplainChanges prints a log's changes as `bringup watch --json` would
// for a host called host (no latency: nothing was received live; no time
// where the log has none), the deployment it is a node of named.
func ExplainChanges(w io.Writer, host, dep string, x startup.Explanation, lg logfile.Summary) {
	for _, c := range x.Changes {
		hc := remote.HostChange{Host: host, Change: c}
		if !lg.Timed { // every line has the same made-up time: say none
			l := changeLine(hc, time.Time{})
			l.Time, l.untimed, l.Deployment = "", true, dep
			emit(w, l)
			continue
		}
		NodeChange(w, hc, x.Startup.StartedAt, dep, true)
	}
}

// ExplainSummary is the summary of explain over several logs: the
// outcome and exit code, each log's host outcome and each deployment's.
func ExplainSummary(w io.Writer, outcome string, exit int, hosts []HostOutcome, deps []DeploymentOutcome) {
	emit(w, Line{Kind: "summary", Command: "explain", Outcome: outcome, Exit: &exit, Hosts: hosts, Deployments: deps})
}
