package record

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/sanitize"
)

// TestReplayedHostileRecordComesOutSanitised replays a crafted recording
// whose entries hold escape sequences in every field the console shows
// (and in fields a real host never sets that way, such as an action's
// name or a gap's reason) and checks that the fleet playing it hands out
// only sanitised text: a recording is as untrusted as a host.
func TestReplayedHostileRecordComesOutSanitised(t *testing.T) {
	const hostile = "x\x1b]0;pwned\x07\x1b[2J\u009b31m\u202e"
	t0 := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	evs := []event.Event{
		{Kind: event.KindUnit, Unit: &event.Unit{Name: "u.service", ActiveState: "active", SubState: hostile,
			InvocationID: hostile, Path: hostile, ExecStart: hostile, Environment: []string{"KDTREE_MODE=" + hostile}}},
		{Kind: event.KindJournal, Journal: &event.Journal{Unit: hostile, InvocationID: hostile, Message: hostile}},
		{Kind: event.KindConn, Conn: &event.Conn{State: event.ConnState(hostile), Err: hostile}},
		{Kind: event.KindAction, Action: &event.ActionResult{ID: 1, Name: hostile, Stage: event.ActionFailed, Detail: hostile, Err: hostile}},
		{Kind: event.KindGap, Gap: &event.Gap{Reason: hostile, Message: hostile}},
		{Kind: event.KindCommand, Command: &event.Command{Via: hostile, Text: hostile, Result: hostile, Err: hostile}},
	}
	var file bytes.Buffer
	enc := json.NewEncoder(&file)
	if err := enc.Encode(Header{Format: Format, Started: t0, Speed: 1, Kernels: kernels.DefaultCatalog(),
		Hosts: []Host{{Name: "gpu1", Unit: "u.service", Engine: "sglang"}}}); err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		at := t0.Add(time.Duration(i) * time.Second)
		ev.Host, ev.Time, ev.Seen = "gpu1", at, at
		if err := enc.Encode(Entry{At: at, Event: ev}); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := Read("hostile.jsonl", &file)
	if err != nil {
		t.Fatal(err)
	}
	specs, clock := rec.Play(MaxSpeed, nil)
	theFleet, err := fleet.New(specs, fleet.Options{Kernels: rec.Kernels, Clock: clock, ReadOnly: true, Flush: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	done := make(chan error, 1)
	go func() { done <- theFleet.Run(ctx) }()
	defer func() { cancel(); _ = <-done }()

	var got []event.Event
	var last remote.Batch
	for len(got) < len(evs) {
		select {
		case last = <-theFleet.Updates():
			got = append(got, last.Events...)
		case <-ctx.Done():
			t.Fatalf("%d of %d events replayed", len(got), len(evs))
		}
	}
	check := func(what, s string) {
		t.Helper()
		if sanitize.String(s) != s {
			t.Errorf("%s not sanitised: %q", what, s)
		}
	}
	for _, ev := range got {
		switch {
		case ev.Unit != nil:
			check("unit sub-state", ev.Unit.SubState)
			check("unit invocation", ev.Unit.InvocationID)
			check("unit read path", ev.Unit.Path)
			check("unit ExecStart", ev.Unit.ExecStart)
		case ev.Journal != nil:
			check("journal line", ev.Journal.Message)
			check("journal invocation", ev.Journal.InvocationID)
		case ev.Conn != nil:
			check("connection state", string(ev.Conn.State))
		case ev.Action != nil:
			check("action name", ev.Action.Name)
			check("action error", ev.Action.Err)
		case ev.Gap != nil:
			check("gap reason", ev.Gap.Reason)
		case ev.Command != nil:
			check("command via", ev.Command.Via)
			check("command text", ev.Command.Text)
		}
	}
	h := last.Hosts[0]
	check("snapshot invocation", h.Startup.InvocationID)
	check("snapshot connection error", h.Conn.Err)
	if len(h.Modes) != 1 || h.Action == nil {
		t.Fatalf("snapshot lacks the replayed mode or action: %+v", h)
	}
	check("snapshot mode", h.Modes[0].Mode)
	check("snapshot action name", h.Action.Name)
}
