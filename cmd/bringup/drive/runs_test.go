package drive

import (
	"testing"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/startup"
)

// loopHost is a host whose unit's runs ended as given, the last one the
// current run, in phase.
func loopHost(phase startup.Phase, provisional bool, outcomes ...startup.Phase) remote.HostState {
	h := remote.HostState{Name: "gpu3", Provisional: provisional}
	h.Startup.Phase, h.Startup.Run = phase, len(outcomes)
	for i, o := range outcomes {
		h.Startup.Runs = append(h.Startup.Runs, startup.Run{N: i + 1, Outcome: o})
	}
	return h
}

// endedBefore is h with its first run ended an hour before since.
func endedBefore(h remote.HostState, since time.Time) remote.HostState {
	h.Startup.Runs[0].End = since.Add(-time.Hour)
	return h
}

// TestRunVerdicts: a failed run fails the host although systemd restarts
// the unit, once its cause settled, unless within --allow-restarts; a
// unit failed for good fails it whatever the allowance; serving after
// allowed failures is serving.
func TestRunVerdicts(t *testing.T) {
	F, S := startup.Failed, startup.Serving
	since := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		allow int
		seen  []remote.HostState // batches, in order
		done  bool
		code  int
	}{
		{"first run restarting, provisional", 0, []remote.HostState{loopHost(startup.Restarting, true, F)}, false, cli.ExitOK},
		{"first run restarting, settled", 0, []remote.HostState{loopHost(startup.Restarting, false, F)}, true, cli.ExitFailed},
		{"first run ended, second starting", 0, []remote.HostState{loopHost(startup.Init, false, F, startup.Init)}, true, cli.ExitFailed},
		{"one allowed, second starting", 1, []remote.HostState{loopHost(startup.Init, false, F, startup.Init)}, false, cli.ExitOK},
		{"one allowed, second failed", 1, []remote.HostState{loopHost(startup.Init, false, F, startup.Init), loopHost(startup.Restarting, false, F, F)}, true, cli.ExitFailed},
		{"two allowed, then served", 2, []remote.HostState{loopHost(startup.Init, false, F, F, startup.Init), loopHost(S, false, F, F, S)}, true, cli.ExitOK},
		{"allowed, but failed for good", 5, []remote.HostState{loopHost(F, false, F)}, true, cli.ExitFailed},
		{"failed for good, provisional", 5, []remote.HostState{loopHost(F, true, F)}, false, cli.ExitOK},
		{"a run that ended before the watch, then one serving", 0, []remote.HostState{endedBefore(loopHost(startup.Init, false, F, startup.Init), since), endedBefore(loopHost(S, false, F, S), since)}, true, cli.ExitOK},
		{"a run that ended before the watch, then one failing", 0, []remote.HostState{endedBefore(loopHost(startup.Init, false, F, startup.Init), since), endedBefore(loopHost(startup.Restarting, false, F, F), since)}, true, cli.ExitFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newRunVerdicts(tt.allow, since)
			var last []remote.HostState
			for _, h := range tt.seen {
				last = []remote.HostState{h}
				v.see(last)
			}
			if got := v.allDone(last); got != tt.done {
				t.Errorf("done %v, want %v", got, tt.done)
			}
			if !tt.done {
				return
			}
			if got := v.outcome(last); got != tt.code {
				t.Errorf("exit %d, want %d", got, tt.code)
			}
			if sum := v.asSettled(last); tt.code == cli.ExitFailed && sum[0].Startup.Phase != startup.Failed {
				t.Errorf("summary phase %s, want failed", sum[0].Startup.Phase)
			}
		})
	}
}
