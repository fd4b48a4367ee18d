package output

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/startup"
)

// StatusHost is one host in `bringup status --json`.
type StatusHost struct {
	Host       string             `json:"host"`
	Conn       string             `json:"conn"`
	ConnErr    string             `json:"conn_error,omitempty"`
	Unit       string             `json:"unit"`
	State      string             `json:"state"` // ActiveState/SubState, or "not-found" (event.Unit.State)
	Phase      string             `json:"phase"`
	Since      string             `json:"since,omitempty"` // host time the phase began
	Progress   string             `json:"progress,omitempty"`
	Modes      map[string]string  `json:"modes,omitempty"`
	Probe      *event.Probe       `json:"probe,omitempty"`
	Diagnosis  *startup.Diagnosis `json:"diagnosis,omitempty"`
	Restarts   int                `json:"restarts"`
	StatusPath string             `json:"state_path,omitempty"` // how unit state was read
	// KernelHashes is, per kernel, the content hash the running service
	// loaded: compare with the local build's (deploy.DirHash) for drift.
	KernelHashes map[string]string `json:"kernel_hashes,omitempty"`
	// Stats is the latest sample of the engine's stats lines (throughput,
	// requests, KV use), once it printed one.
	Stats *startup.Sample `json:"stats,omitempty"`
	// Throughput is the decode rate of the current kernel modes against
	// the modes the host ran before (history), once known.
	Throughput *history.ModeAB `json:"throughput,omitempty"`
}

// StatusOf is h as `bringup status --json` prints it.
func StatusOf(h remote.HostState) StatusHost {
	s := StatusHost{
		Host: h.Name, Conn: string(h.Conn.State), ConnErr: h.Conn.Err, Unit: h.Unit,
		Phase: string(h.Startup.Phase), Diagnosis: h.Startup.Diag, Restarts: h.Startup.Restarts,
		StatusPath: h.UnitState.Path, KernelHashes: h.KernelHashes,
	}
	if h.UnitState.ActiveState != "" {
		s.State = h.UnitState.State()
	}
	if !h.Startup.PhaseSince.IsZero() {
		s.Since = h.Startup.PhaseSince.Format(TimeLayout)
	}
	if p := h.Startup.Progress; p.Known() {
		s.Progress = fmt.Sprintf("%d/%d %s", p.Done, p.Total, p.Label)
	}
	if len(h.Modes) > 0 {
		s.Modes = map[string]string{}
		for _, m := range h.Modes {
			s.Modes[m.Kernel] = m.Mode
		}
	}
	if h.Probe.Path != "" {
		p := h.Probe
		s.Probe = &p
	}
	if ab := h.Throughput; ab.Known() {
		s.Throughput = &ab
	}
	if st := h.Startup.Stats; st != nil {
		l := st.Latest
		s.Stats = &l
	}
	return s
}

// StatusJSON prints hosts as one JSON document.
func StatusJSON(w io.Writer, hosts []remote.HostState) {
	out := struct {
		Hosts []StatusHost `json:"hosts"`
	}{Hosts: []StatusHost{}}
	for _, h := range hosts {
		out.Hosts = append(out.Hosts, StatusOf(h))
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	fmt.Fprintf(w, "%s\n", b)
}

// StatusTable prints hosts as a table, a row each.
func StatusTable(w io.Writer, hosts []remote.HostState) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tCONN\tUNIT STATE\tPHASE\tPROBE\tMODES\tDIAGNOSIS")
	for _, h := range hosts {
		s := StatusOf(h)
		probe := "-"
		if s.Probe != nil {
			if s.Probe.Status > 0 {
				probe = fmt.Sprintf("%d %v", s.Probe.Status, s.Probe.Latency.Round(time.Millisecond))
			} else {
				probe = "no answer"
			}
		}
		var modes []string
		for _, m := range h.Modes {
			modes = append(modes, m.Kernel+"="+m.Mode)
		}
		diag := ""
		if s.Diagnosis != nil {
			diag = s.Diagnosis.Summary + " [" + s.Diagnosis.Cause + "]"
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
