package rollout

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/startup"
)

// TestLaneRates: each lane's decode rate before (the plan's previous run,
// or the run found serving with a steady rate of its own) and after (the
// steady rate of the run the rollout's restart began, never the old
// run's), its ratio, and the slower mark; the last host's rate still
// comes in after the rollout is done, and a rollback drops it.
func TestLaneRates(t *testing.T) {
	f := newFleet(t, "gpu1", "gpu2", "gpu3")
	off := map[string]string{"kdtree-verify": "off"}
	// gpu2 serves with a steady rate of its own: that run is its before,
	// not the older one the history holds.
	f.host("gpu2").Throughput = history.ModeAB{Modes: "kdtree-verify=validate", TPS: 500, Live: true}
	f.plan(Plan{Hosts: []string{"gpu1", "gpu2", "gpu3"}, Mode: modeOn(),
		Before: map[string]Rate{"gpu1": {Modes: off, TPS: 410}, "gpu2": {Modes: off, TPS: 300}}})
	if l := f.lane("gpu1"); l.Before.TPS != 410 || l.Before.Modes["kdtree-verify"] != "off" {
		t.Errorf("gpu1 before %+v, want the plan's 410 in off", l.Before)
	}
	// The old run's rate, still live while the restart is under way, is
	// not the new run's.
	f.host("gpu1").Throughput = history.ModeAB{TPS: 400, Live: true}
	for f.lastStep("gpu1").Action.Kind != "restart" {
		f.done("gpu1")
	}
	f.done("gpu1")
	f.run("gpu1", "gpu1-inv1", startup.Starting, nil)
	f.host("gpu1").Throughput = history.ModeAB{} // a new run: the fleet has no rate for it yet
	f.run("gpu1", "gpu1-inv1", startup.Serving, nil)
	if l := f.lane("gpu1"); l.After.Known() {
		t.Errorf("gpu1 after %+v before its new run had a steady rate", l.After)
	}
	if _, ok := f.lane("gpu1").Ratio(); ok {
		t.Error("a ratio without an after")
	}
	f.host("gpu1").Throughput = history.ModeAB{TPS: 1920, Live: true}
	f.observe()
	l := f.lane("gpu1")
	if r, ok := l.Ratio(); !ok || math.Abs(r-1920.0/410) > 1e-9 || l.After.Modes["kdtree-verify"] != "on" || l.Slower {
		t.Errorf("gpu1 after %+v ratio %v %v slower %v, want 1920 in on, 4.68×", l.After, r, ok, l.Slower)
	}

	if l := f.lane("gpu2"); l.Before.TPS != 500 || l.Before.Modes["kdtree-verify"] != "validate" {
		t.Errorf("gpu2 before %+v, want its own live 500 in validate", l.Before)
	}
	f.through("gpu2", "gpu2-inv1")
	f.host("gpu2").Throughput = history.ModeAB{TPS: 350, Live: true}
	f.observe()
	if l := f.lane("gpu2"); !l.Slower {
		t.Errorf("gpu2: 350 after 500 (−30 %%) is not marked slower: %+v", l)
	}

	// gpu3: no rate before; done before its rate is steady, which still
	// comes in after.
	f.through("gpu3", "gpu3-inv1")
	if st := f.r.State(); st.Status != Done {
		t.Fatalf("status %s, want done", st.Status)
	}
	f.host("gpu3").Throughput = history.ModeAB{TPS: 1800, Live: true}
	f.observe()
	if l := f.lane("gpu3"); l.After.TPS != 1800 || l.Before.Known() || l.Slower {
		t.Errorf("gpu3 %+v, want after 1800, no before", l)
	}
	if _, ok := f.lane("gpu3").Ratio(); ok {
		t.Error("gpu3: a ratio without a before")
	}

	// A rollback undoes the rollout's run: its rate no longer counts.
	if _, err := f.r.Rollback("gpu2"); err != nil {
		t.Fatal(err)
	}
	if l := f.lane("gpu2"); l.After.Known() || l.Slower || l.Before.TPS != 500 {
		t.Errorf("gpu2 after the rollback %+v", l)
	}
}

// TestLaneConnErr: a host the rollout waits on that goes down says why in
// its lane (the dial error), and the timeout that halts on it too; the
// reason goes once the host is back.
func TestLaneConnErr(t *testing.T) {
	f := newFleet(t, "gpu1")
	f.plan(Plan{Hosts: []string{"gpu1"}, Timeout: time.Minute})
	f.done("gpu1") // the restart
	h := f.host("gpu1")
	h.Conn = event.Conn{State: event.ConnDown, Err: "dial tcp 10.0.0.1:22: connect: connection refused"}
	f.observe()
	if l := f.lane("gpu1"); l.ConnErr != h.Conn.Err {
		t.Errorf("lane %+v, want the dial error", l)
	}
	h.Conn = event.Conn{State: event.ConnUp}
	f.observe()
	if l := f.lane("gpu1"); l.ConnErr != "" {
		t.Errorf("lane %+v: the reason stayed after the host came back", l)
	}
	h.Conn = event.Conn{State: event.ConnDown, Err: "dial tcp 10.0.0.1:22: connect: connection refused"}
	f.now = f.now.Add(2 * time.Minute)
	f.observe()
	if st := f.r.State(); st.Status != Halted || !st.TimedOut || !strings.Contains(st.Err, "not reached: dial tcp 10.0.0.1:22: connect: connection refused") {
		t.Errorf("state %+v, want a timeout naming the dial error", st)
	}
}
