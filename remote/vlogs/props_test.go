package vlogs

import (
	"context"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
)

// TestUnitReadOncePerFailedRun replays PID 1's real messages about two
// hosts' unit (gpu2 in validate: three runs fail, two with a restart
// scheduled): each failed run asks for the unit's properties once, a run
// that does not fail never does.
func TestUnitReadOncePerFailedRun(t *testing.T) {
	states := map[string]*unitState{"gpu1": {}, "gpu2": {}}
	asked := map[string]string{}
	asks := map[string][]string{}
	for _, l := range lines(t, "pid1-unit-messages.jsonl") {
		r, err := ParseRow(l, 0)
		if err != nil {
			t.Fatal(err)
		}
		u, ok := states[r.Hostname].apply("sglang.service", r.Entry)
		if !ok {
			continue
		}
		if key, ask := wantsUnitRead(u, asked[r.Hostname]); ask {
			asked[r.Hostname] = key
			asks[r.Hostname] = append(asks[r.Hostname], key)
		}
	}
	if len(asks["gpu1"]) != 0 {
		t.Errorf("gpu1 never failed, yet asked for %v", asks["gpu1"])
	}
	if got := asks["gpu2"]; len(got) != 3 || got[0] == got[1] || got[1] == got[2] || got[0] == "" {
		t.Errorf("gpu2 asked %q, want once for each of its 3 failed runs", got)
	}
}

func TestWantsUnitRead(t *testing.T) {
	start := time.Date(2026, 12, 1, 22, 31, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		u     event.Unit
		asked string
		want  bool
	}{
		{"running", event.Unit{ActiveState: "active", SubState: "running", InvocationID: "a"}, "", false},
		{"failed", event.Unit{ActiveState: "failed", SubState: "failed", Result: "exit-code", InvocationID: "a"}, "", true},
		{"failed, asked for this run", event.Unit{ActiveState: "failed", SubState: "failed", InvocationID: "a"}, "a", false},
		{"failed, asked for the run before", event.Unit{ActiveState: "failed", SubState: "failed", InvocationID: "b"}, "a", true},
		{"restart after a failure", event.Unit{ActiveState: "activating", SubState: "auto-restart", Result: "exit-code", InvocationID: "a"}, "", true},
		{"restart after a clean exit", event.Unit{ActiveState: "activating", SubState: "auto-restart", Result: "success", InvocationID: "a"}, "", false},
		{"stopped", event.Unit{ActiveState: "inactive", SubState: "dead", Result: "success", InvocationID: "a"}, "", false},
		{"failed, no invocation id: keyed by start", event.Unit{ActiveState: "failed", ExecMainStart: start}, "", true},
		{"failed, no invocation id, asked", event.Unit{ActiveState: "failed", ExecMainStart: start}, runKey(event.Unit{ExecMainStart: start}), false},
	} {
		if _, got := wantsUnitRead(tc.u, tc.asked); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestPropsMergeIntoJournalState: properties read over SSH before the
// journal gave a state wait for it; after, they go out with the
// journal's state at once and stay on every later state.
func TestPropsMergeIntoJournalState(t *testing.T) {
	var s unitState
	for _, l := range lines(t, "pid1-unit-messages.jsonl")[:1] {
		r, _ := ParseRow(l, 0)
		var before unitState
		if u, ok := before.apply("sglang.service", r.Entry); !ok || !u.PropsUnread {
			t.Errorf("a state before any reading over SSH: %+v, want PropsUnread (its modes unknown, not off)", u)
		}
	}
	env := []string{"KDTREE_MODE=validate"}
	if _, ok := s.withProps(event.Unit{ActiveState: "active", Environment: env, ExecStart: "/usr/bin/infersim"}); ok {
		t.Fatal("properties before any state from the journal went out")
	}
	rows := lines(t, "pid1-unit-messages.jsonl")
	var first event.Unit
	for _, l := range rows {
		r, _ := ParseRow(l, 0)
		if r.Hostname != "gpu2" {
			continue
		}
		if u, ok := s.apply("sglang.service", r.Entry); ok {
			first = u
			break
		}
	}
	if first.State() != "active/running" || !slices.Equal(first.Environment, env) || first.ExecStart != "/usr/bin/infersim" || first.Path != PathJournal || first.PropsUnread {
		t.Errorf("first state %+v, want the journal's active/running with the properties", first)
	}
	u, ok := s.withProps(event.Unit{ActiveState: "inactive", Environment: []string{"KDTREE_MODE=on"}})
	if !ok || u.State() != "active/running" || !slices.Equal(u.Environment, []string{"KDTREE_MODE=on"}) {
		t.Errorf("after a second read: %+v (ok %v), want the journal's state with the new Environment", u, ok)
	}
	u.Environment[0] = "changed by the fleet's sanitiser"
	if s.u.Environment[0] != "KDTREE_MODE=on" {
		t.Error("an emitted state shares its Environment with the source's")
	}
	if u, _ := s.withProps(event.Unit{}); u.Environment == nil {
		t.Error("an empty Environment read over SSH went out as not read (nil)")
	}
}

// companion is a Companion that records what the store host tells it
// and reports one reading of the unit when its Run starts.
type companion struct {
	mu    sync.Mutex
	paces []remote.Pace
	reads int
	ran   chan struct{}
}

func (c *companion) Do(context.Context, remote.Action, remote.Emit) error { return nil }
func (c *companion) SetPace(p remote.Pace) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paces = append(c.paces, p)
}
func (c *companion) ReadUnit() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
}
func (c *companion) Run(ctx context.Context, emit remote.Emit) error {
	defer close(c.ran)
	emit(event.Event{Host: "gpu1", Kind: event.KindUnit, Unit: &event.Unit{ActiveState: "inactive", SubState: "dead",
		Environment: []string{"KDTREE_MODE=validate"}, Path: "dbus"}})
	emit(event.Event{Host: "gpu1", Kind: event.KindProbe, Probe: &event.Probe{Path: "/health", Status: 200, OK: true}})
	<-ctx.Done()
	return nil
}

// TestCompanionThroughTheStoreHost: a store host runs its companion for
// as long as it runs, hands it the fleet's pace, passes its probe through
// and merges its unit reading into the journal's state (no state of its
// own reaches the fleet).
func TestCompanionThroughTheStoreHost(t *testing.T) {
	st := &store{t: t, tail: lines(t, "tail-two-hosts.jsonl"), stats: lines(t, "stats-run-start.jsonl")}
	srv := httptest.NewServer(st)
	defer srv.Close()
	src, err := New(Options{URL: srv.URL, Unit: "sglang.service", Now: func() time.Time {
		return time.Date(2026, 12, 1, 22, 33, 0, 0, time.UTC)
	}})
	if err != nil {
		t.Fatal(err)
	}
	c := &companion{ran: make(chan struct{})}
	h1, h2 := src.Host("gpu1", c), src.Host("gpu2", nil)
	var mu sync.Mutex
	var evs []event.Event
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, h := range []*Host{h1, h2} {
		wg.Go(func() {
			_ = h.Run(ctx, func(ev event.Event) bool {
				mu.Lock()
				defer mu.Unlock()
				if ev.Host == "gpu1" {
					evs = append(evs, ev)
				}
				return true
			})
		})
	}
	h1.SetPace(remote.Pace{Viewed: true})
	h2.SetPace(remote.Pace{Viewed: true}) // no companion: nothing to tell
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		u := lastState(evs)
		mu.Unlock()
		if slices.Equal(u.Environment, []string{"KDTREE_MODE=validate"}) && u.State() == "active/running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gpu1's state never carried the Environment read over SSH: %+v", u)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	select {
	case <-c.ran:
	default:
		t.Error("the companion's Run had not returned when the host's did")
	}
	var probes int
	for _, ev := range evs {
		switch ev.Kind {
		case event.KindProbe:
			probes++
		case event.KindUnit:
			if ev.Unit.Path != PathJournal || ev.Unit.State() == "inactive/dead" {
				t.Errorf("a unit state not the journal's reached the fleet: %+v", ev.Unit)
			}
		default:
		}
	}
	if probes != 1 {
		t.Errorf("%d probe events passed through, want 1", probes)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.paces) != 1 || !c.paces[0].Viewed {
		t.Errorf("paces told %+v, want the view opening", c.paces)
	}
	if c.reads != 0 {
		t.Errorf("%d reads asked for a run that did not fail", c.reads)
	}
}
