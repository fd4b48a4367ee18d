package ui

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
)

// probe wraps the model in a real program and publishes, after every
// message, what the test waits on: the frame and each host's phase. The
// terminal stream teatest records holds only the cells that changed, so
// "gpu3 … failed" need not appear in it as one run of bytes.
type probe struct {
	*Model
	facts atomic.Pointer[probeFacts]
}

type probeFacts struct {
	frame  string
	phase  map[string]startup.Phase
	action map[string]event.ActionResult
}

func (p *probe) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := p.Model.Update(msg)
	f := &probeFacts{frame: p.render(), phase: map[string]startup.Phase{}, action: map[string]event.ActionResult{}}
	for _, h := range p.hosts {
		f.phase[h.Name] = h.Startup.Phase
		if h.Action != nil {
			f.action[h.Name] = *h.Action
		}
	}
	p.facts.Store(f)
	return p, cmd
}

// waitUntil waits for cond on the published facts, failing with the last
// frame when it does not come.
func (p *probe) waitUntil(t *testing.T, tm *teatest.TestModel, what string, cond func(*probeFacts) bool) {
	t.Helper()
	ok := func() bool { f := p.facts.Load(); return f != nil && cond(f) }
	teatest.WaitFor(t, tm.Output(), func([]byte) bool { return ok() },
		teatest.WithDuration(30*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
	if !ok() {
		f := p.facts.Load()
		t.Fatalf("timed out waiting for %s; last frame:\n%s", what, f.frame)
	}
}

// rowOf is the table row of host in a frame.
func rowOf(frame, host string) string {
	for _, l := range strings.Split(frame, "\n") {
		if f := strings.Fields(l); len(f) > 1 && (f[0] == host || f[1] == host) {
			return l
		}
	}
	return ""
}

// TestSeedFailureAndRecovery runs the seed scenario on simulated hosts at
// rolloutSpeed through the real fleet and tracker, and recovers gpu3 with
// keys the way an operator would: select it, m → on → confirm, r → confirm.
func TestSeedFailureAndRecovery(t *testing.T) {
	t.Parallel() // a simulated fleet of its own, paced by its clock: waiting, not computing
	fleet, clock, cat := runSeedFleet(t, rolloutSpeed)
	p := &probe{Model: New(fleet, Options{Title: "bringup demo · seed ×1200", Kernels: cat, Now: clock.Now})}
	tm := teatest.NewTestModel(t, p, teatest.WithInitialTermSize(120, 40),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii)))

	p.waitUntil(t, tm, "gpu3 failed", func(f *probeFacts) bool {
		return f.phase["gpu3"] == startup.Failed && strings.Contains(rowOf(f.frame, "gpu3"), "failed")
	})
	for _, k := range []string{"j", "j", "m", "3", "y"} { // gpu3; mode 3 is "on"
		tm.Send(keyMsg(k))
	}
	p.waitUntil(t, tm, "the mode change to be done", func(f *probeFacts) bool {
		a := f.action["gpu3"]
		return a.Name == "mode kdtree-verify=on" && a.Stage == event.ActionDone
	})
	tm.Send(keyMsg("r"))
	tm.Send(keyMsg("y"))
	p.waitUntil(t, tm, "gpu3 serving", func(f *probeFacts) bool {
		return f.phase["gpu3"] == startup.Serving && strings.Contains(rowOf(f.frame, "gpu3"), "serving")
	})
	tm.Send(keyMsg("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
	final := tm.FinalModel(t).(*probe)
	var names []string
	for _, a := range final.remoteCommands.entries {
		if a.res.Stage == event.ActionDone {
			names = append(names, a.res.Name)
		}
	}
	if got := strings.Join(names, ","); got != "mode kdtree-verify=on,restart" {
		t.Errorf("actions done: %q", got)
	}
}
