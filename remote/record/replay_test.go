package record

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/sim"
)

// tenSeconds is a one-host recording with an entry every 10 s of host
// time, from +10 s to +n×10 s.
func tenSeconds(t0 time.Time, n int) *Recording {
	rec := &Recording{Header: Header{Format: Format, Started: t0, Speed: 1, Hosts: []Host{{Name: "gpu1", Unit: "u.service"}}}}
	for i := 1; i <= n; i++ {
		at := t0.Add(time.Duration(i) * 10 * time.Second)
		rec.Entries = append(rec.Entries, Entry{At: at, Event: event.Event{Host: "gpu1", Kind: event.KindJournal,
			Time: at, Seen: at, Journal: &event.Journal{Message: fmt.Sprintf("line %d", i)}}})
	}
	return rec
}

// TestClockPauseAndSpeed checks that pausing freezes host time, resuming
// goes on from where it stopped, and a new speed keeps host time
// continuous, applying only from the change on.
func TestClockPauseAndSpeed(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	type step struct {
		do     func(c *Clock)
		real   time.Duration // real time that passes after do
		want   time.Time     // host time then
		paused bool
		speed  float64
	}
	pause := func(c *Clock) { c.Pause() }
	resume := func(c *Clock) { c.Resume() }
	speed := func(s float64) func(c *Clock) { return func(c *Clock) { c.SetSpeed(s) } }
	cases := []struct {
		name  string
		steps []step
	}{
		{"pause freezes", []step{
			{nil, time.Second, at(10), false, 10},
			{pause, time.Hour, at(10), true, 10},
			{pause, time.Second, at(10), true, 10}, // pausing twice changes nothing
		}},
		{"resume continues", []step{
			{nil, time.Second, at(10), false, 10},
			{pause, time.Minute, at(10), true, 10},
			{resume, 2 * time.Second, at(30), false, 10},
			{resume, time.Second, at(40), false, 10}, // resuming a running clock changes nothing
		}},
		{"speed keeps continuity", []step{
			{nil, time.Second, at(10), false, 10},
			{speed(100), time.Second, at(110), false, 100},
			{speed(1), time.Second, at(111), false, 1},
			{speed(0), time.Second, at(112), false, 1}, // ignored
		}},
		{"speed while paused", []step{
			{nil, time.Second, at(10), false, 10},
			{pause, time.Second, at(10), true, 10},
			{speed(40), time.Second, at(10), true, 40},
			{resume, time.Second, at(50), false, 40},
		}},
		{"faster and slower", []step{
			{func(c *Clock) { c.Faster() }, time.Second, at(20), false, 20},
			{func(c *Clock) { c.Slower(); c.Slower() }, time.Second, at(25), false, 5},
			{func(c *Clock) { c.Slower(); c.Slower(); c.Slower(); c.Slower() }, time.Second, at(26), false, MinSpeed},
		}},
		{"toggle", []step{
			{func(c *Clock) { c.TogglePause() }, time.Second, at(0), true, 10},
			{func(c *Clock) { c.TogglePause() }, time.Second, at(10), false, 10},
		}},
		{"stops at the end", []step{
			{nil, time.Hour, at(1000), false, 10},
			{pause, time.Second, at(1000), true, 10},
			{resume, time.Second, at(1000), false, 10},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fr := sim.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) // real time, moved by hand
			_, c := tenSeconds(t0, 100).Play(10, fr.Now)                          // ends at +1000 s
			for i, s := range tc.steps {
				if s.do != nil {
					before := c.Now()
					s.do(c)
					if after := c.Now(); !after.Equal(before) {
						t.Fatalf("step %d: host time jumped from %s to %s", i, before, after)
					}
				}
				fr.Advance(s.real)
				if got := c.Now(); !got.Equal(s.want) || c.Paused() != s.paused || c.Speed() != s.speed {
					t.Fatalf("step %d: now %s paused %v ×%g; want %s paused %v ×%g",
						i, got.Sub(t0), c.Paused(), c.Speed(), s.want.Sub(t0), s.paused, s.speed)
				}
			}
		})
	}
}

func TestClockSpeedBounds(t *testing.T) {
	fr := sim.NewManualClock(time.Time{})
	_, c := tenSeconds(time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC), 1).Play(6000, fr.Now)
	if got := c.Faster(); got != MaxSpeed {
		t.Errorf("Faster from ×6000 = ×%g, want ×%d", got, MaxSpeed)
	}
	if got := c.Faster(); got != MaxSpeed {
		t.Errorf("Faster at the bound = ×%g, want ×%d", got, MaxSpeed)
	}
	c.SetSpeed(0.5) // --speed 0.5: slower than the bound stays where it is
	if got := c.Slower(); got != 0.5 {
		t.Errorf("Slower from ×0.5 = ×%g, want it left at ×0.5", got)
	}
	if got := c.Faster(); got != 1 {
		t.Errorf("Faster from ×0.5 = ×%g, want ×1", got)
	}
}

// TestPlayerPauseAndCatchUp runs a player on a fake real clock: it emits
// nothing while the replay is paused, however much real time passes, and
// after a resume at a new speed it emits each entry once host time has
// reached it, never before.
func TestPlayerPauseAndCatchUp(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	rec := tenSeconds(t0, 3)
	fr := sim.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) // real time, moved by hand
	specs, c := rec.Play(10, fr.Now)
	type emitted struct {
		msg string
		now time.Time // host time when it came out
	}
	out := make(chan emitted, len(rec.Entries))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- specs[0].Driver.Run(ctx, func(e event.Event) bool {
			out <- emitted{e.Journal.Message, c.Now()}
			return true
		})
	}()
	next := func(want string) emitted {
		t.Helper()
		select {
		case e := <-out:
			if e.msg != want {
				t.Fatalf("emitted %q, want %q", e.msg, want)
			}
			return e
		case <-time.After(10 * time.Second):
			t.Fatalf("%q never came out (host time %s)", want, c.Now().Sub(t0))
		}
		return emitted{}
	}

	c.Pause()
	fr.Advance(time.Hour) // an hour of real time: far past every entry, were it running
	// Give the player several steps to look at the clock: it must not move.
	time.Sleep(3 * maxStep)
	select {
	case e := <-out:
		t.Fatalf("emitted %q while paused", e.msg)
	default:
	}

	c.SetSpeed(100)
	c.Resume()
	fr.Advance(100 * time.Millisecond) // +10 s of host time at ×100
	if e := next("line 1"); e.now.Before(rec.Entries[0].At) {
		t.Errorf("line 1 came out at %s, before its time %s", e.now.Sub(t0), rec.Entries[0].At.Sub(t0))
	}
	fr.Advance(200 * time.Millisecond) // +30 s: the rest catch up
	for i, want := range []string{"line 2", "line 3"} {
		if e := next(want); e.now.Before(rec.Entries[i+1].At) {
			t.Errorf("%s came out at %s, before its time", want, e.now.Sub(t0))
		}
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want it stopped by its context", err)
	}
}

// TestPlayerStopsWhilePaused checks that a player waiting on a paused
// clock still stops on its context.
func TestPlayerStopsWhilePaused(t *testing.T) {
	fr := sim.NewManualClock(time.Time{})
	specs, c := tenSeconds(time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC), 2).Play(1, fr.Now)
	c.Pause()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- specs[0].Driver.Run(ctx, func(event.Event) bool { return true }) }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want it stopped by its context", err)
	}
}

// TestReplayPosition checks the header's position text as the person
// watching pauses the replay, changes its speed, and lets it end.
func TestReplayPosition(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 5, 33, 0, 0, time.Local)
	rec := &Recording{Header: Header{Format: Format, Started: t0, Speed: 10,
		Hosts: []Host{{Name: "gpu1", Unit: "u.service"}}}}
	rec.Entries = []Entry{{At: t0.Add(10 * time.Minute), Event: event.Event{Host: "gpu1", Kind: event.KindJournal,
		Time: t0, Journal: &event.Journal{Message: "last"}}}}
	wall := sim.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	_, clock := rec.Play(0, wall.Now)
	steps := []struct {
		do   func()
		want string
	}{
		{func() { wall.Advance(6 * time.Second) }, "▶ 05:34:00 of 05:43:00 ×10"},
		{func() { clock.TogglePause(); wall.Advance(time.Hour) }, "⏸ 05:34:00 of 05:43:00 ×10"},
		{func() { clock.Faster() }, "⏸ 05:34:00 of 05:43:00 ×20"},
		{func() { clock.TogglePause(); wall.Advance(3 * time.Second) }, "▶ 05:35:00 of 05:43:00 ×20"},
		{func() { clock.Slower(); clock.Slower(); wall.Advance(12 * time.Second) }, "▶ 05:36:00 of 05:43:00 ×5"},
		{func() { wall.Advance(time.Hour) }, "■ ended 05:43:00"},
	}
	for i, s := range steps {
		s.do()
		if got := clock.Position(); got != s.want {
			t.Fatalf("step %d: position %q, want %q", i, got, s.want)
		}
	}
}

// TestEndContextEndsWhenEveryHostHasPlayed: the context EndContext gives
// ends with cause ErrEnded once every host has played its last entry
// (a host with none counts as played), and not before: a reader waiting
// for hosts that the recording leaves unsettled is let out at its end.
func TestEndContextEndsWhenEveryHostHasPlayed(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	rec := tenSeconds(t0, 3)
	rec.Hosts = append(rec.Hosts, Host{Name: "gpu2", Unit: "u.service"}) // nothing recorded
	fr := sim.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	specs, c := rec.Play(10, fr.Now)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ended, release := c.endContext(ctx, 10*time.Millisecond)
	defer release()
	emitted := make(chan string, len(rec.Entries))
	errc := make(chan error, len(specs))
	for _, s := range specs {
		go func() {
			errc <- s.Driver.Run(ctx, func(e event.Event) bool {
				emitted <- e.Journal.Message
				return true
			})
		}()
	}
	fr.Advance(1500 * time.Millisecond) // +15 s of host time: line 1 only
	if got := <-emitted; got != "line 1" {
		t.Fatalf("emitted %q, want line 1", got)
	}
	time.Sleep(10 * maxStep)
	if ended.Err() != nil {
		t.Fatalf("ended (%v) with two entries still to play", context.Cause(ended))
	}
	fr.Advance(time.Hour) // past the end
	for _, want := range []string{"line 2", "line 3"} {
		if got := <-emitted; got != want {
			t.Fatalf("emitted %q, want %q", got, want)
		}
	}
	select {
	case <-ended.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the context did not end at the recording's end")
	}
	if cause := context.Cause(ended); !errors.Is(cause, ErrEnded) {
		t.Errorf("cause %v, want ErrEnded", cause)
	}
	cancel()
	for range specs {
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v, want it stopped by its context", err)
		}
	}
}

// TestEndContextReleased: released before the end, the context ends
// without ErrEnded and its goroutine is gone.
func TestEndContextReleased(t *testing.T) {
	_, c := tenSeconds(time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC), 2).Play(1, sim.NewManualClock(time.Time{}).Now)
	ended, release := c.EndContext(context.Background())
	release() // returns once the goroutine has stopped
	if ended.Err() == nil || errors.Is(context.Cause(ended), ErrEnded) {
		t.Errorf("released: err %v cause %v", ended.Err(), context.Cause(ended))
	}
}
