package startup

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/event"
)

// t0 is the host time the test stories start at.
var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// host drives a tracker the way a host's event stream would: each event
// one second after the previous one, journal lines tagged with the current
// invocation.
type host struct {
	t       *testing.T
	tr      *Tracker
	now     time.Time
	inv     string
	env     []string
	changes []Change
}

func newHost(t *testing.T, opts Options) *host {
	t.Helper()
	if opts.Kernels.Kernels == nil {
		opts.Kernels = kernels.DefaultCatalog()
	}
	return &host{t: t, tr: NewTracker(opts), now: t0, inv: "inv-1"}
}

func (h *host) apply(ev event.Event) []Change {
	h.now = h.now.Add(time.Second)
	ev.Host, ev.Time = "gpu1", h.now
	ch := h.tr.Apply(ev)
	h.changes = append(h.changes, ch...)
	return ch
}

// unit reports a unit state of the current invocation.
func (h *host) unit(active, sub, result string) []Change {
	return h.apply(event.Event{Kind: event.KindUnit, Unit: &event.Unit{
		Name: "sglang.service", ActiveState: active, SubState: sub, Result: result,
		InvocationID: h.inv, Environment: h.env,
	}})
}

// lines feeds engine output lines, one journal entry each.
func (h *host) lines(msgs ...string) {
	for _, m := range msgs {
		h.apply(event.Event{Kind: event.KindJournal, Journal: &event.Journal{
			Unit: "sglang.service", InvocationID: h.inv, Priority: 6, Message: m,
		}})
	}
}

// systemd feeds systemd's own lines about the unit (PID 1, no MESSAGE_ID,
// as a producer that drops it would pass them).
func (h *host) systemd(msgs ...string) {
	for _, m := range msgs {
		h.apply(event.Event{Kind: event.KindJournal, Journal: &event.Journal{
			Unit: "sglang.service", InvocationID: h.inv, PID: 1, Priority: 6, Message: m,
		}})
	}
}

// exitFailure is what systemd logs when the main process fails.
func (h *host) exitFailure() {
	h.systemd("sglang.service: Main process exited, code=exited, status=1/FAILURE",
		"sglang.service: Failed with result 'exit-code'.")
}

func (h *host) probe(ok bool) {
	status := 503
	if ok {
		status = 200
	}
	h.apply(event.Event{Kind: event.KindProbe, Probe: &event.Probe{Path: "/health", Status: status, OK: ok}})
}

func (h *host) phase() Phase { return h.tr.State().Phase }

// kinds lists the changes of one kind seen so far.
func (h *host) kinds(k ChangeKind) []Change {
	var out []Change
	for _, c := range h.changes {
		if c.Kind == k {
			out = append(out, c)
		}
	}
	return out
}

// fixture reads a file of testdata as lines, trailing blank lines dropped.
func fixture(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
}
