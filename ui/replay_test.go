package ui

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"charm.land/bubbles/v2/key"
)

// fakeReplay counts the calls the keys make and keeps the state a replay
// clock would.
type fakeReplay struct {
	paused          bool
	speed           float64
	toggles, faster int
	slower          int
}

func (f *fakeReplay) TogglePause() bool { f.toggles++; f.paused = !f.paused; return f.paused }
func (f *fakeReplay) Faster() float64   { f.faster++; f.speed *= 2; return f.speed }
func (f *fakeReplay) Slower() float64   { f.slower++; f.speed /= 2; return f.speed }

// position is the header text the command layer builds from the clock.
func (f *fakeReplay) position() string {
	mark := "▶"
	if f.paused {
		mark = "⏸"
	}
	return fmt.Sprintf("%s 10:41:03 of 10:52:10 ×%g", mark, f.speed)
}

// replayModel is the test model replaying through a fake clock.
func replayModel(t *testing.T) (*Model, *fakeReplay) {
	t.Helper()
	m, _ := newTestModel(t, 160, 40)
	r := &fakeReplay{speed: 20}
	m.opts.Replay, m.opts.Position = r, r.position
	return m, r
}

// TestReplayKeys checks that p, >, +, < and - pause and change the speed
// of a replay, in every view and in the help, and that the header shows
// what they did.
func TestReplayKeys(t *testing.T) {
	m, r := replayModel(t)
	press(m, "p")
	if !r.paused || !strings.Contains(firstLine(render(m)), "⏸ 10:41:03 of 10:52:10 ×20") {
		t.Fatalf("after p: paused %v, header %q", r.paused, firstLine(render(m)))
	}
	if !strings.Contains(render(m), "replay paused") {
		t.Errorf("no word of the pause in the status line:\n%s", render(m))
	}
	press(m, ">", "+")
	if r.speed != 80 || !strings.Contains(firstLine(render(m)), "×80") {
		t.Fatalf("after > +: speed %g, header %q", r.speed, firstLine(render(m)))
	}
	press(m, "<")
	press(m, "enter", "-") // the host view
	press(m, "?", "p")     // the help overlay
	if r.speed != 20 || r.paused || r.toggles != 2 || r.faster != 2 || r.slower != 2 {
		t.Fatalf("replay %+v, want ×20 running after 2 toggles, 2 faster, 2 slower", *r)
	}
	if !strings.Contains(firstLine(render(m)), "▶ 10:41:03 of 10:52:10 ×20") {
		t.Errorf("header %q", firstLine(render(m)))
	}
}

// TestReplayKeysTypeInPrompts checks that in the filters, the palette and
// dialogs the replay's keys are what they are: characters typed or
// nothing, never a pause or a new speed.
func TestReplayKeysTypeInPrompts(t *testing.T) {
	keys := []string{"p", "<", ">", "+", "-"}
	t.Run("host filter", func(t *testing.T) {
		m, r := replayModel(t)
		press(m, "/")
		press(m, keys...)
		if got := m.table.filterInput.Value(); got != "p<>+-" || *r != (fakeReplay{speed: 20}) {
			t.Errorf("filter %q, replay %+v", got, *r)
		}
	})
	t.Run("log filter", func(t *testing.T) {
		m, r := replayModel(t)
		press(m, "enter", "/")
		press(m, keys...)
		if got := m.host.filterInput.Value(); got != "p<>+-" || *r != (fakeReplay{speed: 20}) {
			t.Errorf("filter %q, replay %+v", got, *r)
		}
	})
	t.Run("palette", func(t *testing.T) {
		m, r := replayModel(t)
		press(m, ":")
		press(m, keys...)
		if got := m.commandPalette.input.Value(); got != "p<>+-" || *r != (fakeReplay{speed: 20}) {
			t.Errorf("palette %q, replay %+v", got, *r)
		}
	})
	t.Run("dialog", func(t *testing.T) {
		m, r := replayModel(t)
		press(m, "r")
		if m.dialog == nil {
			t.Fatal("r opened no dialog")
		}
		press(m, keys...)
		if *r != (fakeReplay{speed: 20}) {
			t.Errorf("replay %+v", *r)
		}
	})
}

// TestReplayKeysOnlyWithReplay checks that without a replay the keys do
// nothing and no help lists them, and that with one the help and the
// footer do.
func TestReplayKeysOnlyWithReplay(t *testing.T) {
	m, _ := newTestModel(t, 160, 40)
	before := render(m)
	press(m, "p", ">", "<", "+", "-")
	if after := render(m); after != before {
		t.Errorf("replay keys changed the screen without a replay:\n%s", after)
	}
	for _, view := range [][]string{nil, {"enter"}} {
		press(m, view...)
		if s := render(m); strings.Contains(s, "pause/resume") {
			t.Errorf("footer lists replay keys without a replay:\n%s", s)
		}
		press(m, "?")
		if s := render(m); !strings.Contains(s, "keys · ") || strings.Contains(s, "pause/resume") {
			t.Errorf("help lists replay keys without a replay:\n%s", s)
		}
		press(m, "esc")
	}

	m, _ = replayModel(t)
	for _, view := range [][]string{nil, {"enter"}} {
		press(m, view...)
		if s := render(m); !strings.Contains(s, "p pause/resume replay") {
			t.Errorf("footer lacks the replay keys:\n%s", s)
		}
		press(m, "?")
		s := render(m)
		for _, want := range []string{"pause/resume replay", ">/+", "replay faster", "</-", "replay slower"} {
			if !strings.Contains(s, want) {
				t.Errorf("help lacks %q:\n%s", want, s)
			}
		}
		press(m, "esc")
	}
}

// TestReplayKeysAreFree checks that no other binding of the key map
// answers to the replay's keys.
func TestReplayKeysAreFree(t *testing.T) {
	km := DefaultKeyMap()
	replay := slices.Concat(km.Pause.Keys(), km.Faster.Keys(), km.Slower.Keys())
	v := reflect.ValueOf(km)
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if name == "Pause" || name == "Faster" || name == "Slower" {
			continue
		}
		bs, ok := v.Field(i).Interface().([]ActionKey)
		if !ok {
			bs = []ActionKey{{Binding: v.Field(i).Interface().(key.Binding)}}
		}
		for _, b := range bs {
			for _, k := range b.Keys() {
				if slices.Contains(replay, k) {
					t.Errorf("%s %s answers to %q, a replay key", name, b.Kind, k)
				}
			}
		}
	}
}
