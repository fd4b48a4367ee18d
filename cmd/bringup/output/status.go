package output

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/deployment"
	"github.com/bringup-dev/bringup/remote/event"
)

// StatusOf is h as the v1 status line of `bringup status --json`.
func StatusOf(h remote.HostState) Line {
	restarts := h.Startup.Restarts
	s := Line{
		Kind: "status", Host: h.Name, Conn: string(h.Conn.State), ConnErr: h.Conn.Err, Unit: h.Unit,
		Phase: string(h.Startup.Phase), Restarts: &restarts, StatePath: h.UnitState.Path, KernelHashes: h.KernelHashes,
		Since: JSONTime(h.Startup.PhaseSince), Run: h.Startup.Run, Engine: h.Startup.Engine, EngineVersion: h.Startup.EngineVersion,
	}
	if len(h.Startup.Runs) > 1 {
		for _, r := range h.Startup.Runs {
			s.Runs = append(s.Runs, RunOf(r))
		}
	}
	if h.UnitState.ActiveState != "" {
		s.State = h.UnitState.State()
	}
	if p := h.Startup.Progress; p.Known() {
		s.Progress = &Progress{Done: p.Done, Total: p.Total, Label: p.Label}
	}
	if len(h.Modes) > 0 {
		s.Modes = map[string]string{}
		for _, m := range h.Modes {
			s.Modes[m.Kernel] = m.Mode
		}
	}
	if p := h.Probe; p.Path != "" {
		s.Probe = &Probe{Path: p.Path, Status: p.Status, OK: p.OK, Latency: p.Latency.Round(time.Millisecond).Seconds(), Err: p.Err}
	}
	if ab := h.Throughput; ab.Known() {
		s.Throughput = &ab
	}
	if st := h.Startup.Stats; st != nil {
		l := st.Latest
		s.Stats = &Stats{GenTPS: l.GenTPS, PromptTPS: l.PromptTPS, Running: l.Running, Queued: l.Queued, KVUsage: l.KVUsage, Graph: l.Graph}
	}
	if d := h.Startup.Diag; d != nil {
		s.Cause, s.Summary, s.Hint, s.Evidence, s.KernelMode, s.FailedIn = d.Cause, d.Summary, d.Hint, d.Evidence, d.KernelMode, string(d.Phase)
		if d.Fix != nil {
			s.Fix = fmt.Sprintf("bringup mode %s %s=%s --restart", h.Name, d.Fix.Kernel, d.Fix.Mode)
		}
	}
	return s
}

// StatusJSON prints hosts as v1 status lines, a host each (the time is
// this machine's, when status read them; a node of a multi-node
// deployment names it), then the summary line with the outcome, exit
// code and each deployment's verdict.
func StatusJSON(w io.Writer, hosts []remote.HostState, declared []deployment.Declared, outcome string, exit int) {
	now := JSONTime(time.Now())
	deps := FindDeployments(declared, hosts)
	for _, h := range hosts {
		l := StatusOf(h)
		l.Time, l.Deployment = now, deps.Of(h.Name)
		emit(w, l)
	}
	WatchSummary(w, "status", hosts, deps, outcome, exit, "")
}

// StatusTable prints hosts as a table, a row each.
func StatusTable(w io.Writer, hosts []remote.HostState) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tCONN\tUNIT STATE\tPHASE\tPROBE\tMODES\tDIAGNOSIS")
	for _, h := range hosts {
		s := StatusOf(h)
		probe := "-"
		if h.Probe.Path != "" {
			if h.Probe.Status > 0 {
				probe = fmt.Sprintf("%d %v", h.Probe.Status, h.Probe.Latency.Round(time.Millisecond))
			} else {
				probe = "no answer"
			}
		}
		var modes []string
		for _, m := range h.Modes {
			modes = append(modes, m.Kernel+"="+m.Mode)
		}
		diag := ""
		if s.Cause != "" {
			diag = s.Summary + " [" + s.Cause + "]"
		}
		if s.ConnErr != "" && s.Conn != string(event.ConnUp) {
			diag = s.ConnErr
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Host, s.Conn, dash(s.State), s.Phase, probe, dash(strings.Join(modes, ",")), diag)
	}
	tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
