package scalerig

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/startup/corpus"
)

// TestPlan: a tenth of the hosts replay a failed corpus startup, the rest
// a served one; each host's entries are PID 1's start, the log's lines as
// the unit's (with its invocation id), and for a failure PID 1's exit and
// result, in time order, with cursors whose sequence numbers rise; a
// second run gets a new invocation id and later sequence numbers.
func TestPlan(t *testing.T) {
	logs, err := corpus.ReadAll(corpus.Dir())
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	hosts, err := Plan(logs, PlanOptions{Hosts: 40, First: t0, Stagger: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	fails := 0
	for i, h := range hosts {
		if h.Name != Name(i) || !h.Start.Equal(t0.Add(time.Duration(i)*time.Second)) {
			t.Fatalf("host %d: %s at %s", i, h.Name, h.Start)
		}
		field := func(e Entry, k string) string {
			for _, f := range e.Fields {
				if f[0] == k {
					return f[1]
				}
			}
			return ""
		}
		if field(h.Entries[0], "MESSAGE_ID") != msgStarted || field(h.Entries[0], "UNIT") != Unit {
			t.Fatalf("%s: first entry is not PID 1's Started: %v", h.Name, h.Entries[0].Fields)
		}
		inv := field(h.Entries[0], "INVOCATION_ID")
		for j, e := range h.Entries {
			if field(e, "_HOSTNAME") != h.Name || !strings.Contains(field(e, "__CURSOR"), ";i=") {
				t.Fatalf("%s entry %d: %v", h.Name, j, e.Fields)
			}
			if j > 0 && e.Time.Before(h.Entries[j-1].Time) {
				t.Fatalf("%s: entry %d before the one before it", h.Name, j)
			}
			if field(e, "_SYSTEMD_UNIT") == Unit && field(e, "_SYSTEMD_INVOCATION_ID") != inv {
				t.Fatalf("%s: a unit line without the run's invocation id", h.Name)
			}
		}
		if h.Fail {
			fails++
			last := h.Entries[len(h.Entries)-1]
			if field(last, "MESSAGE_ID") != msgFailureResult || !last.Time.Equal(h.FailedAt) || h.Cause == "" {
				t.Fatalf("%s: a failure must end with PID 1's result at FailedAt: %v", h.Name, last.Fields)
			}
		} else if !h.FailedAt.IsZero() {
			t.Fatalf("%s serves but has a failure time", h.Name)
		}
	}
	if fails != 4 {
		t.Errorf("%d of 40 hosts fail, want 4", fails)
	}
	again, _ := Plan(logs, PlanOptions{Hosts: 40, First: t0, Run: 1})
	if again[0].Entries[0].Fields[0] == hosts[0].Entries[0].Fields[0] {
		t.Error("a second run repeats the first's cursor")
	}
}

func TestAppendExport(t *testing.T) {
	var b bytes.Buffer
	appendExport(&b, Entry{Fields: [][2]string{{"A", "plain"}, {"MESSAGE", "two\nlines"}}})
	want := "A=plain\nMESSAGE\n\x09\x00\x00\x00\x00\x00\x00\x00two\nlines\n\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
