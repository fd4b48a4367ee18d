package fleet

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/sanitize"
)

// hostile is text a host, or a crafted recording, may send: OSC 52 (set
// the clipboard), a window title, a screen clear, a C1 CSI, DEL and a bidi
// override.
const hostile = "x\x1b]52;c;cGF5bG9hZA==\x07 \x1b]0;pwned\x07 \x1b[2J \u009b31m \x7f \u202eevil"

// fillStrings sets every exported string (named string types included)
// reachable from v to s: struct fields, pointers, slice elements and map
// values. A field added to an event later is filled without this test
// changing, so the sanitiser cannot silently miss it.
func fillStrings(v reflect.Value, s string) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			fillStrings(v.Elem(), s)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillStrings(v.Field(i), s)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			fillStrings(v.Index(i), s)
		}
	case reflect.Map:
		if v.Type().Elem().Kind() == reflect.String {
			for _, k := range v.MapKeys() {
				v.SetMapIndex(k, reflect.ValueOf(s).Convert(v.Type().Elem()))
			}
		}
	case reflect.String:
		v.SetString(s)
	default: // no string inside
	}
}

// unsanitised lists the paths of the strings reachable from v that the
// sanitiser would still change: what the fleet hands out must be a fixed
// point of it. skip names paths left alone on purpose.
func unsanitised(v reflect.Value, path string, skip map[string]bool, out *[]string) {
	if skip[path] {
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			unsanitised(v.Elem(), path, skip, out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				unsanitised(v.Field(i), path+"."+f.Name, skip, out)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			unsanitised(v.Index(i), path+"[]", skip, out)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			unsanitised(v.MapIndex(k), path+"[]", skip, out)
		}
	case reflect.String:
		if s := v.String(); sanitize.String(s) != s {
			*out = append(*out, path+": "+s)
		}
	default: // no string inside
	}
}

// hostileEvents are one event of every kind with every string hostile,
// then a startup that fails on a hostile error line, so that the
// snapshot's derived text (modes, diagnosis) is built from hostile input
// too.
func hostileEvents(t0 time.Time) []event.Event {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	filled := []event.Event{
		{Kind: event.KindUnit, Unit: &event.Unit{Environment: []string{""}, DropInPaths: []string{""}}},
		{Kind: event.KindJournal, Journal: &event.Journal{Fields: map[string]string{"EXIT_STATUS": ""}}},
		{Kind: event.KindProbe, Probe: &event.Probe{}},
		{Kind: event.KindGPU, GPU: &event.GPU{Devices: []event.GPUDevice{{}}}},
		{Kind: event.KindConn, Conn: &event.Conn{}},
		{Kind: event.KindAction, Action: &event.ActionResult{}},
		{Kind: event.KindGap, Gap: &event.Gap{}},
		{Kind: event.KindCommand, Command: &event.Command{}},
	}
	for i := range filled {
		kind := filled[i].Kind
		fillStrings(reflect.ValueOf(&filled[i]).Elem(), hostile)
		filled[i].Kind, filled[i].Time = kind, at(0)
	}
	unit := func(s int, active, sub string) event.Event {
		return event.Event{Kind: event.KindUnit, Time: at(s), Unit: &event.Unit{Name: "sglang.service",
			ActiveState: active, SubState: sub, InvocationID: "inv" + hostile, Environment: []string{"KDTREE_MODE=" + hostile}}}
	}
	line := func(s, prio int, msg string) event.Event {
		return event.Event{Kind: event.KindJournal, Time: at(s), Journal: &event.Journal{Unit: "sglang.service",
			InvocationID: "inv" + hostile, Priority: prio, Message: msg}}
	}
	return append(filled, unit(1, "activating", "start"), unit(2, "active", "running"),
		line(3, 6, "[2026-11-30 10:00:03] server_args=ServerArgs(model_path='"+hostile+"', tp_size=8)"),
		line(20, 3, "RuntimeError: CUDA error: "+hostile),
		unit(21, "failed", "failed"))
}

// TestFleetHandsOutOnlySanitisedText feeds every kind of event with every
// string hostile (journal lines, unit state, probe, GPU names, connection
// errors, action results, gaps, commands) and checks that nothing the
// fleet hands out, neither the events nor the snapshot built from them,
// holds text the sanitiser would change. The UI shows it as it is.
func TestFleetHandsOutOnlySanitisedText(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	evs := hostileEvents(t0)
	want := 0
	for _, ev := range evs {
		if ev.Kind != event.KindGPU { // GPU samples live in the snapshot only
			want++
		}
	}
	d := &scriptDriver{name: "gpu1", events: evs}
	f, _, _ := startFleet(t, Options{Kernels: kernels.DefaultCatalog(), Flush: 5 * time.Millisecond}, d)
	all, last := collect(t, f, func(all []event.Event, last remote.Batch) bool { return len(all) == want })

	h := last.Hosts[0]
	if h.Startup.Diag == nil || len(h.Modes) == 0 || h.UnitState.ActiveState != "failed" || h.Action == nil || len(h.GPU) == 0 {
		t.Fatalf("the hostile text did not reach every part of the snapshot: %+v", h)
	}
	if !strings.Contains(h.Startup.Diag.Summary+strings.Join(h.Startup.Diag.Evidence, "\n"), "␛]0;pwned␇") {
		t.Errorf("diagnosis does not show the error line's text made visible: %+v", h.Startup.Diag)
	}
	var bad []string
	// The journal cursor is an opaque token for journald, never shown.
	skip := map[string]bool{"events[].Journal.Cursor": true}
	unsanitised(reflect.ValueOf(all), "events", skip, &bad)
	unsanitised(reflect.ValueOf(last.Hosts), "hosts", skip, &bad)
	for _, b := range bad {
		t.Errorf("not sanitised: %q", b)
	}
}

// TestFleetSanitisesActionErrors checks the action path: the name of an
// action (which carries the kernel and mode asked for) and the error a
// driver returns reach the events and the snapshot sanitised.
func TestFleetSanitisesActionErrors(t *testing.T) {
	d := &scriptDriver{name: "gpu1", err: errors.New("sudo: " + hostile)}
	f, _, _ := startFleet(t, Options{Kernels: kernels.DefaultCatalog(), Flush: 5 * time.Millisecond}, d)
	collect(t, f, func([]event.Event, remote.Batch) bool { return true }) // running
	if _, err := f.Do("gpu1", remote.Action{Kind: remote.ActSetMode, Kernel: "k" + hostile, Mode: "on"}); err != nil {
		t.Fatal(err)
	}
	all, last := collect(t, f, func(_ []event.Event, last remote.Batch) bool {
		return last.Hosts[0].Action != nil && last.Hosts[0].Action.Stage == event.ActionFailed
	})
	a := last.Hosts[0].Action
	if !strings.HasPrefix(a.Err, "sudo: x␛]52;") || !strings.HasPrefix(a.Name, "mode kx␛]52;") {
		t.Fatalf("action %+v: want the error and name with their escapes made visible", a)
	}
	var bad []string
	unsanitised(reflect.ValueOf(all), "events", nil, &bad)
	unsanitised(reflect.ValueOf(last.Hosts), "hosts", nil, &bad)
	for _, b := range bad {
		t.Errorf("not sanitised: %q", b)
	}
}
