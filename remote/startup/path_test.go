package startup

import (
	"reflect"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
)

// TestPhasePathTrimTrail: the trail is made to agree with the phase a
// failure was put in.
func TestPhasePathTrimTrail(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	span := func(p Phase, start, end int) Span { return Span{Phase: p, Start: at(start), End: at(end)} }
	for _, tc := range []struct {
		name     string
		spans    []Span
		phase    Phase
		at       int
		want     []Span
		lastPath Phase
	}{
		{name: "starting or before leaves the trail", spans: []Span{span(Starting, 0, 1), span(Init, 1, 5)},
			phase: Starting, at: 5, want: []Span{span(Starting, 0, 1), span(Init, 1, 5)}, lastPath: Init},
		{name: "phases past it are dropped, its span runs to their end",
			spans: []Span{span(Starting, 0, 1), span(Weights, 1, 5), span(KVCache, 5, 7), span(HTTP, 7, 9)},
			phase: KVCache, at: 9, want: []Span{span(Starting, 0, 1), span(Weights, 1, 5), span(KVCache, 5, 9)}, lastPath: KVCache},
		{name: "a phase past it, it missing, is replaced by it",
			spans: []Span{span(Starting, 0, 1), span(Weights, 1, 5), span(HTTP, 5, 9)},
			phase: GraphCapture, at: 9, want: []Span{span(Starting, 0, 1), span(Weights, 1, 5), span(GraphCapture, 5, 9)}, lastPath: GraphCapture},
		{name: "a phase it already has leaves the trail",
			spans: []Span{span(Starting, 0, 1), span(Weights, 1, 5)},
			phase: Weights, at: 5, want: []Span{span(Starting, 0, 1), span(Weights, 1, 5)}, lastPath: Weights},
		{name: "a phase the log never showed is inserted after the last, inferred",
			spans: []Span{span(Starting, 0, 1), span(Weights, 1, 5)},
			phase: GraphCapture, at: 8, want: []Span{span(Starting, 0, 1), span(Weights, 1, 5), {Phase: GraphCapture, Start: at(5), End: at(8), Inferred: true}},
			lastPath: GraphCapture},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPhasePath(nil)
			p.spans = tc.spans
			p.lastPath = tc.spans[len(tc.spans)-1].Phase
			p.trimTrail(tc.phase, at(tc.at))
			if !reflect.DeepEqual(p.spans, tc.want) || p.lastPath != tc.lastPath {
				t.Errorf("trail %+v, furthest %s\nwant  %+v, furthest %s", p.spans, p.lastPath, tc.want, tc.lastPath)
			}
		})
	}
}

// TestPhasePathOverlays: stuck and unknown show over the phase beneath,
// and each says what it hides; entering a phase clears stuck.
func TestPhasePathOverlays(t *testing.T) {
	p := newPhasePath(map[Phase]time.Duration{Weights: time.Minute})
	var out []Change
	type want struct {
		shown, stuckIn, lastKnown Phase
		changes                   int
	}
	for i, tc := range []struct {
		do   func()
		want want
	}{
		{func() { p.enter(Starting, t0, &out) }, want{Starting, "", "", 1}},
		{func() { p.enter(Weights, t0.Add(time.Second), &out) }, want{Weights, "", "", 2}},
		{func() { p.tick(t0.Add(time.Minute+time.Second), &out) }, want{Weights, "", "", 2}},
		{func() { p.tick(t0.Add(2*time.Minute), &out) }, want{Stuck, Weights, "", 3}},
		{func() { p.conn(event.ConnUnreachable, t0.Add(3*time.Minute), &out) }, want{Unknown, Weights, Stuck, 4}},
		{func() { p.conn(event.ConnUnreachable, t0.Add(4*time.Minute), &out) }, want{Unknown, Weights, Stuck, 4}},
		{func() { p.conn(event.ConnUp, t0.Add(5*time.Minute), &out) }, want{Stuck, Weights, "", 5}},
		{func() { p.enter(Weights, t0.Add(6*time.Minute), &out) }, want{Weights, "", "", 6}},
		{func() { p.enter(KVCache, t0.Add(7*time.Minute), &out) }, want{KVCache, "", "", 7}},
		{func() { p.tick(t0.Add(time.Hour), &out) }, want{KVCache, "", "", 7}}, // no threshold for kv-cache here
	} {
		tc.do()
		got := want{p.shown, p.stuckIn, p.lastKnown, len(out)}
		if got != tc.want {
			t.Errorf("step %d: shown %s (stuck in %q, last known %q), %d changes; want %+v", i, got.shown, got.stuckIn, got.lastKnown, got.changes, tc.want)
		}
	}
	if n := len(p.spans); n != 3 || p.spans[1].End != t0.Add(7*time.Minute) {
		t.Errorf("trail %+v: want starting, weights to +7m, kv-cache", p.spans)
	}
}
