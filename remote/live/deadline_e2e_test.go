package live

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// actionEnd is how one action of the fleet went.
type actionEnd struct {
	event.ActionResult
	started, ended time.Time // the fleet's stamps; zero started: never started
}

// awaitActions reads the fleet's batches until each of ids has ended,
// keeping every report on them.
func awaitActions(t *testing.T, ctx context.Context, f *fleet.Fleet, ids ...int) map[int]actionEnd {
	t.Helper()
	type report struct {
		event.ActionResult
		at time.Time // the fleet's stamp
	}
	trail := map[int][]report{}
	final := func(id int) (report, bool) {
		r := trail[id]
		if len(r) == 0 || r[len(r)-1].Stage != event.ActionDone && r[len(r)-1].Stage != event.ActionFailed {
			return report{}, false
		}
		return r[len(r)-1], true
	}
	waitBatch(t, ctx, f, fmt.Sprintf("the end of actions %v", ids), func(b remote.Batch) bool {
		for _, ev := range b.Events {
			if a := ev.Action; ev.Kind == event.KindAction && slices.Contains(ids, a.ID) {
				trail[a.ID] = append(trail[a.ID], report{*a, ev.Time})
			}
		}
		return !slices.ContainsFunc(ids, func(id int) bool { _, ok := final(id); return !ok })
	}, nil)
	out := map[int]actionEnd{}
	for _, id := range ids {
		end, _ := final(id)
		e := actionEnd{ActionResult: end.ActionResult, ended: end.at}
		if first := trail[id][0]; first.Stage == event.ActionStarted {
			e.started = first.at
		}
		out[id] = e
	}
	return out
}

// TestFleetActionsNeverStuckOnTestbed runs real actions on a host whose
// systemd never answers them: a restart hung in ExecStartPre, and a mode
// change whose daemon-reload outlasts its deadline. Each fails at its
// deadline with "no answer from systemd" and what to check; a stop and a
// reset-failed issued after them go through, and a stop issued while a
// restart hangs preempts it.
func TestFleetActionsNeverStuckOnTestbed(t *testing.T) {
	tb := testbed.StartWith(t, testbed.Options{Hosts: 1, Host: func(int) testbed.HostOptions {
		return testbed.HostOptions{Env: fastEnv, KernelMode: "on"}
	}})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	const h, deadline = "gpu1", 4 * time.Second
	f := liveFleetWith(t, ctx, tb, fleet.Options{Deadlines: fleet.Deadlines{Systemd: deadline}})
	fl := fleet.Follow(ctx, f)
	defer func() {
		if err := fl.Stop(10 * time.Second); err != nil {
			t.Error(err)
		}
	}()
	waitBatch(t, ctx, f, "the unit's state", func(b remote.Batch) bool { return b.Hosts[0].UnitState.ActiveState != "" }, nil)
	run := func(cmd string) {
		t.Helper()
		if out, err := tb.Run(ctx, h, cmd); err != nil {
			t.Fatalf("%s: %v: %s", cmd, err, out)
		}
	}
	do := func(a remote.Action) int {
		t.Helper()
		id, err := f.Do(h, a)
		if err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		return id
	}
	noAnswer := func(what string, e actionEnd) {
		t.Helper()
		want := fmt.Sprintf("%s on %s: no answer from systemd after %d s; check `systemctl list-jobs` on %s", what, h, deadline/time.Second, h)
		if e.Stage != event.ActionFailed || !strings.Contains(e.Err, want) {
			t.Errorf("%s: %s %q; want failed with %q", what, e.Stage, e.Err, want)
		}
		if took := e.ended.Sub(e.started); took < deadline || took > deadline+3*time.Second {
			t.Errorf("%s ended %v after its start, want at its deadline %v", what, took, deadline)
		}
		t.Logf("%s: %s after %v: %s", what, e.Stage, e.ended.Sub(e.started).Round(time.Millisecond), e.Err)
	}
	goesThrough := func(a remote.Action) actionEnd {
		t.Helper()
		id := do(a)
		e := awaitActions(t, ctx, f, id)[id]
		if e.Stage != event.ActionDone {
			t.Fatalf("%s after a hung action: %s %q, want done", a, e.Stage, e.Err)
		}
		return e
	}

	// A restart whose start never finishes.
	run("mkdir -p /run/systemd/system/sglang.service.d && printf '[Service]\\nExecStartPre=/bin/sleep infinity\\nTimeoutStartSec=infinity\\n' > /run/systemd/system/sglang.service.d/50-hang.conf && systemctl daemon-reload")
	restart := do(remote.Action{Kind: remote.ActRestart, Force: true})
	noAnswer("restart (preflight overridden)", awaitActions(t, ctx, f, restart)[restart])
	goesThrough(remote.Action{Kind: remote.ActStop})
	goesThrough(remote.Action{Kind: remote.ActResetFailed})

	// A stop issued while a restart hangs runs at once.
	restart = do(remote.Action{Kind: remote.ActRestart, Force: true})
	time.Sleep(time.Second)
	stopID := do(remote.Action{Kind: remote.ActStop})
	got := awaitActions(t, ctx, f, restart, stopID)
	if r := got[restart]; r.Stage != event.ActionFailed || !strings.Contains(r.Err, fmt.Sprintf("cancelled: stop (#%d)", stopID)) {
		t.Errorf("restart under a stop: %s %q, want cancelled by the stop", r.Stage, r.Err)
	}
	if s := got[stopID]; s.Stage != event.ActionDone || s.ended.Sub(got[restart].started) >= deadline {
		t.Errorf("stop: %s %q, done %v after the restart began; want done before the restart's deadline %v",
			s.Stage, s.Err, s.ended.Sub(got[restart].started), deadline)
	}
	goesThrough(remote.Action{Kind: remote.ActResetFailed})
	run("rm -f /run/systemd/system/sglang.service.d/50-hang.conf && systemctl daemon-reload")

	// A mode change whose daemon-reload outlasts its deadline: a
	// generator that takes longer than that holds PID 1 in the reload.
	const hold = deadline + 3*time.Second
	run(fmt.Sprintf("mkdir -p /etc/systemd/system-generators && printf '#!/bin/sh\\nsleep %d\\n' > /etc/systemd/system-generators/hold && chmod +x /etc/systemd/system-generators/hold",
		hold/time.Second))
	mode := do(remote.Action{Kind: remote.ActSetMode, Kernel: "kdtree-verify", Mode: "validate", Runtime: true})
	began := time.Now()
	noAnswer("mode kdtree-verify=validate", awaitActions(t, ctx, f, mode)[mode])
	time.Sleep(time.Until(began.Add(hold + time.Second))) // the reload is over
	run("rm -f /etc/systemd/system-generators/hold")
	goesThrough(remote.Action{Kind: remote.ActStop})
}
