package vlogs

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/startup"
	"github.com/bringup-dev/bringup/remote/startup/corpus"
	"github.com/bringup-dev/bringup/remote/testkit/scalerig"
)

// TestCorpusFailuresSettleLive replays every failed startup of the corpus
// the way the store fleet reads it live, with no store and no host: the
// scale rig's own journal entries of each (PID 1's "Started", the log's
// lines under the run's invocation id, PID 1's "Main process exited" and
// "Failed with result" with their MESSAGE_IDs), as the store returns them
// (the plain query's fields, the message in _msg, the time in _time),
// through the source's delivery (the unit's state from PID 1's messages,
// emitted before the line) into a fleet, whose settle decides when a
// failure's cause is final. Each host's cause, in the first batch where
// its failure is no longer provisional (what `testbed scale` counts), must
// be the corpus's: the live verdict is `bringup explain`'s.
func TestCorpusFailuresSettleLive(t *testing.T) {
	t.Parallel()
	logs, err := corpus.ReadAll(corpus.Dir())
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, l := range logs {
		if l.Expect == "failed" {
			failed++
		}
	}
	// Every host fails (FailEvery 1), each with the next failed log: as
	// its first run, and as the run after one that failed the same way
	// (the scale rig's second run follows the backlog's).
	for _, runs := range [][]int{{0}, {1, 2}} {
		t.Run("runs"+fmt.Sprint(runs), func(t *testing.T) {
			t.Parallel()
			var hosts []scalerig.Host
			for i, run := range runs {
				first := time.Now().Add(time.Duration(i-len(runs)) * 10 * time.Minute)
				hs, err := scalerig.Plan(logs, scalerig.PlanOptions{Hosts: failed, FailEvery: 1, First: first, Run: run})
				if err != nil {
					t.Fatal(err)
				}
				hosts = append(hosts, hs...)
			}
			last := hosts[len(hosts)-failed:]
			got := settleAll(t, last, deliverAll(t, hosts), len(runs))
			wrong := 0
			for _, h := range last {
				if got[h.Name] != h.Cause {
					wrong++
					t.Errorf("%s: settled live as %q, the corpus says %q", h.Log, got[h.Name], h.Cause)
				}
			}
			t.Logf("%d of %d failed corpus logs settle live on the corpus's cause", len(last)-wrong, len(last))
		})
	}
}

// deliverAll hands every host's rig entries, as store rows in time order,
// to the source's delivery and returns each host's events.
func deliverAll(t *testing.T, hosts []scalerig.Host) map[string][]event.Event {
	t.Helper()
	src, err := New(Options{URL: "http://127.0.0.1:9", Unit: scalerig.Unit})
	if err != nil {
		t.Fatal(err)
	}
	evs := map[string][]event.Event{}
	for _, h := range hosts {
		// Attached without a stream: the test is the stream.
		src.hosts[h.Name] = &sink{name: h.Name, emit: func(ev event.Event) bool {
			evs[ev.Host] = append(evs[ev.Host], ev)
			return true
		}}
	}
	st := &stream{seen: map[string]time.Time{}, pruneAt: minPrune}
	var rows []Row
	for _, e := range scalerig.All(hosts) {
		r, err := ParseRow(storeRow(t, e), 0)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	for _, r := range inJournalOrder(rows) {
		src.deliver(st, r)
	}
	return evs
}

// storeRow is a rig entry as VictoriaLogs returns it to the source's
// plain query: the fields the query names, MESSAGE as _msg, the entry's
// time as _time.
func storeRow(t *testing.T, e scalerig.Entry) []byte {
	t.Helper()
	want := strings.Split(rowFields, ", ")
	m := map[string]string{"_time": e.Time.UTC().Format(time.RFC3339Nano)}
	for _, f := range e.Fields {
		k := f[0]
		if k == "MESSAGE" {
			k = "_msg"
		}
		if slices.Contains(want, k) {
			m[k] = f[1]
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// replayDriver is a host whose events are given: it emits them and waits.
type replayDriver struct {
	name string
	evs  []event.Event
}

func (d replayDriver) Name() string { return d.name }

func (d replayDriver) Run(ctx context.Context, emit remote.Emit) error {
	for _, ev := range d.evs {
		if !emit(ev) {
			return nil
		}
	}
	<-ctx.Done()
	return nil
}

func (d replayDriver) Do(context.Context, remote.Action, remote.Emit) error { return nil }

// settleAll runs a read-only fleet over the hosts' events and returns
// each host's cause in the first batch where its failure in run minRun
// (startup.Startup.Run) or later is settled.
func settleAll(t *testing.T, hosts []scalerig.Host, evs map[string][]event.Event, minRun int) map[string]string {
	t.Helper()
	specs := make([]fleet.HostSpec, len(hosts))
	for i, h := range hosts {
		specs[i] = fleet.HostSpec{Driver: replayDriver{name: h.Name, evs: evs[h.Name]}, Unit: scalerig.Unit, Engine: h.Engine}
	}
	f, err := fleet.New(specs, fleet.Options{Kernels: kernels.DefaultCatalog(), ReadOnly: true, Settle: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	got := map[string]string{}
	for len(got) < len(hosts) {
		select {
		case b := <-f.Updates():
			for _, h := range b.Hosts {
				st := h.Startup
				if _, ok := got[h.Name]; !ok && st.Run >= minRun && st.Phase == startup.Failed && !h.Provisional && st.Diag != nil {
					got[h.Name] = st.Diag.Cause
				}
			}
		case <-ctx.Done():
			t.Fatalf("%d of %d hosts settled in time", len(got), len(hosts))
		}
	}
	return got
}
