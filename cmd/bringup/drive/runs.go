package drive

import (
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/startup"
)

// runVerdicts is watch's reading of each host's runs: a run that failed
// is a failure even when systemd restarts the unit (Restart=on-failure),
// once its cause has settled, unless the failed runs so far are within
// the restarts allowed.
type runVerdicts struct {
	allow int
	// since is when the watch began: a run that ended before it is
	// history the journal's backlog replays (the failure someone
	// already reset), not a failure of this watch.
	since time.Time
	// failed holds, per host, the numbers of its runs seen failed with a
	// settled cause (at most allow+1: one more decides).
	failed map[string]map[int]bool
}

func newRunVerdicts(allow int, since time.Time) *runVerdicts {
	return &runVerdicts{allow: max(0, allow), since: since, failed: map[string]map[int]bool{}}
}

// see notes the failed runs of hosts whose cause has settled: a run that
// ended before the current one (its lines are all in: later ones of its
// invocation are stale), and the current run once it failed, restarting
// or not, and is not Provisional.
func (v *runVerdicts) see(hosts []remote.HostState) {
	for _, h := range hosts {
		st := h.Startup
		for _, r := range st.Runs {
			current := r.N == st.Run
			if !r.Failed() || current && (h.Provisional || st.Phase != startup.Failed && st.Phase != startup.Restarting) {
				continue
			}
			if !current && !r.End.IsZero() && r.End.Before(v.since) {
				continue
			}
			set := v.failed[h.Name]
			if set == nil {
				set = map[int]bool{}
				v.failed[h.Name] = set
			}
			if len(set) <= v.allow {
				set[r.N] = true
			}
		}
	}
}

// failedHost reports whether h counts as failed: more failed runs than
// allowed, or its unit failed for good (no restart coming) with a
// settled cause.
func (v *runVerdicts) failedHost(h remote.HostState) bool {
	return len(v.failed[h.Name]) > v.allow || h.Startup.Phase == startup.Failed && !h.Provisional
}

// allDone reports whether every host has an outcome: it serves or it
// failed (failedHost).
func (v *runVerdicts) allDone(hosts []remote.HostState) bool {
	if len(hosts) == 0 {
		return false
	}
	for _, h := range hosts {
		if h.Startup.Phase != startup.Serving && !v.failedHost(h) {
			return false
		}
	}
	return true
}

// outcome is the exit code for hosts: failed if one failed, else OK.
func (v *runVerdicts) outcome(hosts []remote.HostState) int {
	for _, h := range hosts {
		if v.failedHost(h) {
			return cli.ExitFailed
		}
	}
	return cli.ExitOK
}

// asSettled is hosts as the summary reports them: a host failed by its
// runs while systemd restarts it shows the failed run's phase, failed.
func (v *runVerdicts) asSettled(hosts []remote.HostState) []remote.HostState {
	out := make([]remote.HostState, len(hosts))
	copy(out, hosts)
	for i := range out {
		if v.failedHost(out[i]) && out[i].Startup.Phase != startup.Failed {
			out[i].Startup.Phase = startup.Failed
		}
	}
	return out
}
