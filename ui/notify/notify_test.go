package notify

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/startup"
)

// fleet is a snapshot from "name=phase" words; a failed host's diagnosis
// summary is "<name> broke".
func fleet(words ...string) []remote.HostState {
	var hs []remote.HostState
	for _, w := range words {
		name, phase, _ := strings.Cut(w, "=")
		h := remote.HostState{Name: name}
		h.Startup.Phase = startup.Phase(phase)
		if h.Startup.Phase == startup.Failed {
			h.Startup.Diag = &startup.Diagnosis{Summary: name + " broke"}
		}
		hs = append(hs, h)
	}
	return hs
}

// say is Signals as a short string: "bell", the notes' titles, the bar.
func say(s Signals) string {
	var out []string
	if s.Bell {
		out = append(out, "bell")
	}
	for _, n := range s.Notes {
		out = append(out, "note["+n.Title+": "+n.Body+"]")
	}
	if p := s.Progress; p != nil {
		out = append(out, fmt.Sprintf("bar%d:%d", p.State, p.Percent))
	}
	return strings.Join(out, " ")
}

// TestTrackerTransitions: each signal is given once, on its transition,
// not on every frame.
func TestTrackerTransitions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps [][]string      // snapshots in order
		want  []string        // say() after each
		at    []time.Duration // when each step comes; nil: every 10 s
	}{
		{"the demo story: a failure, the fix, every host up",
			[][]string{
				{"gpu1=weights", "gpu2=weights", "gpu3=weights", "gpu4=weights"},
				{"gpu1=weights", "gpu2=weights", "gpu3=weights", "gpu4=weights"}, // the same frame again: nothing
				{"gpu1=serving", "gpu2=weights", "gpu3=graph-capture", "gpu4=weights"},
				{"gpu1=serving", "gpu2=serving", "gpu3=failed", "gpu4=warmup"},
				{"gpu1=serving", "gpu2=serving", "gpu3=failed", "gpu4=warmup"}, // still failed: no second bell
				{"gpu1=serving", "gpu2=serving", "gpu3=failed", "gpu4=serving"},
				{"gpu1=serving", "gpu2=serving", "gpu3=starting", "gpu4=serving"},
				{"gpu1=serving", "gpu2=serving", "gpu3=serving", "gpu4=serving"},
				{"gpu1=serving", "gpu2=serving", "gpu3=serving", "gpu4=serving"}, // still up: no second bell
			},
			[]string{
				"bar1:0",
				"",
				"bar1:25",
				"bell note[bringup: gpu3 failed: gpu3 broke] bar2:50",
				"",
				"bar0:0", // nothing starts any more: the bar goes
				"bar1:75",
				"bell note[bringup: every host serving: 4/4 serving] bar0:0",
				"",
			}, nil},
		{"already serving when the console opens: no bell",
			[][]string{{"a=serving", "b=serving"}, {"a=serving", "b=serving"}},
			[]string{"", ""}, nil},
		{"failed when the console opens: one bell, then quiet",
			[][]string{{"a=failed", "b=serving"}, {"a=failed", "b=serving"}},
			[]string{"bell note[bringup: a failed: a broke]", ""}, nil},
		{"two hosts fail in one frame: one bell, two notes",
			[][]string{{"a=weights", "b=init"}, {"a=failed", "b=failed"}},
			[]string{"bar1:0", "bell note[bringup: a failed: a broke] note[bringup: b failed: b broke] bar0:0"}, nil},
		{"a host that fails again after a minute rings again",
			[][]string{{"a=weights"}, {"a=failed"}, {"a=restarting"}, {"a=failed"}},
			[]string{"bar1:0", "bell note[bringup: a failed: a broke] bar0:0", "bar1:0", "bell note[bringup: a failed: a broke] bar0:0"},
			[]time.Duration{0, time.Second, 30 * time.Second, 61 * time.Second}},
		{"a crash loop failing again within the minute: one bell, the bar still moves",
			[][]string{{"a=weights"}, {"a=failed"}, {"a=restarting"}, {"a=failed"}},
			[]string{"bar1:0", "bell note[bringup: a failed: a broke] bar0:0", "bar1:0", "bar0:0"},
			[]time.Duration{0, time.Second, 5 * time.Second, 10 * time.Second}},
		{"a host that goes unknown and back is no startup",
			[][]string{{"a=serving", "b=serving"}, {"a=unknown", "b=serving"}, {"a=serving", "b=serving"}},
			[]string{"", "", ""}, nil},
		{"no hosts: nothing",
			[][]string{{}, {}},
			[]string{"", ""}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tr Tracker
			for i, st := range tc.steps {
				at := t0.Add(time.Duration(i) * 10 * time.Second)
				if tc.at != nil {
					at = t0.Add(tc.at[i])
				}
				if got := say(tr.Step(at, fleet(st...), Rollout{})); got != tc.want[i] {
					t.Errorf("step %d %v: %q, want %q", i, st, got, tc.want[i])
				}
			}
		})
	}
}

// t0 is the tests' start of time.
var t0 = time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)

// crashLoop is host a failing n times, restarted in between: the
// snapshots failed, restarting, failed, … one a step.
func crashLoop(n int) [][]string {
	var out [][]string
	for range n {
		out = append(out, []string{"a=failed", "b=serving"}, []string{"a=restarting", "b=serving"})
	}
	return out
}

// TestBellRateLimit: a crash-looping unit (a restart every 5 s) rings
// once a minute, not on every failure; several hosts failing at once ring
// at most FleetBells times a minute; the bar still follows each change.
func TestBellRateLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps [][]string
		every time.Duration
		bells int // bells over all steps
		notes int
	}{
		// 24 failures over 4 minutes (one every 10 s): one bell a minute.
		{"crash loop every 5 s for 4 minutes", crashLoop(24), 5 * time.Second, 4, 4},
		// the same loop slower than the limit: every failure rings.
		{"crash loop every 90 s", crashLoop(4), 45 * time.Second, 4, 4},
		{"five hosts fail a second apart: three bells", [][]string{
			{"a=weights", "b=weights", "c=weights", "d=weights", "e=weights"},
			{"a=failed", "b=weights", "c=weights", "d=weights", "e=weights"},
			{"a=failed", "b=failed", "c=weights", "d=weights", "e=weights"},
			{"a=failed", "b=failed", "c=failed", "d=weights", "e=weights"},
			{"a=failed", "b=failed", "c=failed", "d=failed", "e=weights"},
			{"a=failed", "b=failed", "c=failed", "d=failed", "e=failed"},
		}, time.Second, 3, 3},
		{"five hosts fail in one frame: one bell, three notes", [][]string{
			{"a=weights", "b=weights", "c=weights", "d=weights", "e=weights"},
			{"a=failed", "b=failed", "c=failed", "d=failed", "e=failed"},
		}, time.Second, 1, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tr Tracker
			bells, notes, bars := 0, 0, 0
			for i, st := range tc.steps {
				s := tr.Step(t0.Add(time.Duration(i)*tc.every), fleet(st...), Rollout{})
				if s.Bell {
					bells++
				}
				notes += len(s.Notes)
				if s.Progress != nil {
					bars++
				}
			}
			if bells != tc.bells || notes != tc.notes {
				t.Errorf("%d bells and %d notes, want %d and %d", bells, notes, tc.bells, tc.notes)
			}
			// The first snapshot has nothing starting, as before it: no bar;
			// every later one of a crash loop moves it.
			if strings.Contains(tc.name, "crash loop") && bars != len(tc.steps)-1 {
				t.Errorf("the bar changed %d times over %d steps that each (but the first) change it", bars, len(tc.steps))
			}
		})
	}
}

// TestBellLimitWindow: the limiter itself, bell by bell: a host's second
// bell waits HostBellEvery; the fleet's fourth within FleetBellWindow is
// held back, and allowed once the first has left the window.
func TestBellLimitWindow(t *testing.T) {
	var l bellLimit
	for i, tc := range []struct {
		key  string
		at   time.Duration
		want bool
	}{
		{"a", 0, true},
		{"a", 59 * time.Second, false},
		{"b", 10 * time.Second, true},
		{"c", 20 * time.Second, true},
		{"d", 30 * time.Second, false}, // a, b, c within the minute
		{"", 40 * time.Second, false},  // the fleet's "every host serving" too
		{"d", 61 * time.Second, true},  // a's bell left the window
		{"a", 62 * time.Second, false}, // b, c, d within the minute
		{"a", 81 * time.Second, true},
	} {
		if got := l.allow(tc.key, t0.Add(tc.at)); got != tc.want {
			t.Errorf("step %d: %q at +%s: %v, want %v", i, tc.key, tc.at, got, tc.want)
		}
	}
}

// TestTrackerRollout: a running rollout's bar counts its settled lanes
// and turns red on a failure; it goes when the rollout settles.
func TestTrackerRollout(t *testing.T) {
	var tr Tracker
	hs := fleet("a=serving", "b=serving", "c=serving", "d=serving")
	for i, tc := range []struct {
		ro   Rollout
		want string
	}{
		{Rollout{Running: true, Total: 4}, "bar1:0"},
		{Rollout{Running: true, Done: 1, Total: 4}, "bar1:25"},
		{Rollout{Running: true, Done: 1, Total: 4}, ""},
		{Rollout{Running: true, Done: 2, Total: 4, Failed: true}, "bar2:50"},
		{Rollout{Done: 2, Total: 4, Failed: true}, "bar0:0"},
	} {
		if got := say(tr.Step(t0.Add(time.Duration(i)*time.Second), hs, tc.ro)); got != tc.want {
			t.Errorf("step %d %+v: %q, want %q", i, tc.ro, got, tc.want)
		}
	}
}

// TestEncode: the sequences for each setting, bare and through tmux's
// passthrough (ESC doubled); the bell is never wrapped, since tmux
// handles it itself (the window's bell flag).
func TestEncode(t *testing.T) {
	failed := Signals{Bell: true, Notes: []Note{{Title: "bringup: gpu3 failed", Body: "graph capture failed"}}, Progress: &Progress{State: ProgressError, Percent: 50}}
	for _, tc := range []struct {
		name string
		enc  Encoder
		s    Signals
		want string
	}{
		{"defaults", Encoder{Settings: Defaults()}, failed, "\a\x1b]9;4;2;50\a"},
		{"defaults in tmux", Encoder{Settings: Defaults(), Tmux: true}, failed, "\a\x1bPtmux;\x1b\x1b]9;4;2;50\a\x1b\\"},
		{"quiet", Encoder{}, failed, ""},
		{"bell only", Encoder{Settings: Settings{Bell: true}}, failed, "\a"},
		{"osc9", Encoder{Settings: Settings{Desktop: DesktopOSC9}}, failed, "\x1b]9;bringup: gpu3 failed: graph capture failed\a"},
		{"osc777 in tmux", Encoder{Settings: Settings{Desktop: DesktopOSC777}, Tmux: true}, failed,
			"\x1bPtmux;\x1b\x1b]777;notify;bringup: gpu3 failed;graph capture failed\a\x1b\\"},
		{"progress ok", Encoder{Settings: Settings{Progress: true}}, Signals{Progress: &Progress{State: ProgressOK, Percent: 75}}, "\x1b]9;4;1;75\a"},
		{"progress cleared", Encoder{Settings: Settings{Progress: true}}, Signals{Progress: &Progress{}}, "\x1b]9;4;0\a"},
		{"control characters cannot end the sequence", Encoder{Settings: Settings{Desktop: DesktopOSC777}},
			Signals{Notes: []Note{{Title: "a;b\x1b]0;pwned\a", Body: "x\x07y\x1b\\z"}}}, "\x1b]777;notify;a,b]0,pwned;xy\\z\a"},
	} {
		if got := tc.enc.Encode(tc.s); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := (Encoder{Settings: Defaults(), Tmux: true}).ClearProgress(); got != "\x1bPtmux;\x1b\x1b]9;4;0\a\x1b\\" {
		t.Errorf("clear in tmux: %q", got)
	}
	if got := (Encoder{}).ClearProgress(); got != "" {
		t.Errorf("clear with progress off: %q", got)
	}
}

// TestTitle: the counts as the issue spells them.
func TestTitle(t *testing.T) {
	for words, want := range map[string]string{
		"a=serving b=serving c=serving d=failed": "bringup · 3/4 serving · 1 failed",
		"a=serving b=weights":                    "bringup · 1/2 serving",
		"":                                       "bringup · 0/0 serving",
	} {
		if got := Title(Count(fleet(strings.Fields(words)...))); got != want {
			t.Errorf("%q: %q, want %q", words, got, want)
		}
	}
}

// TestCheckDesktop: the config's words.
func TestCheckDesktop(t *testing.T) {
	for in, want := range map[string]string{"off": "", "": "", "osc9": "osc9", "osc777": "osc777", "bogus": "error"} {
		got, err := CheckDesktop(in)
		if err != nil {
			got = "error"
		}
		if got != want {
			t.Errorf("CheckDesktop(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCountCrashLoop: a host whose unit crash-loops counts failed in the
// header and the title, whatever run it is in.
func TestCountCrashLoop(t *testing.T) {
	hs := fleet("gpu1=serving", "gpu2=init", "gpu3=restarting")
	hs[1].Startup.Loop = &startup.CrashLoop{Runs: 3, Cause: "nccl-error"}
	if c := Count(hs); c.Failed != 1 || c.Starting != 1 || c.Serving != 1 {
		t.Errorf("counts %+v, want 1 serving, 1 failed (the loop), 1 starting", c)
	}
}
