package notify

import (
	"fmt"
	"strings"
	"testing"

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
		steps [][]string // snapshots in order
		want  []string   // say() after each
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
			}},
		{"already serving when the console opens: no bell",
			[][]string{{"a=serving", "b=serving"}, {"a=serving", "b=serving"}},
			[]string{"", ""}},
		{"failed when the console opens: one bell, then quiet",
			[][]string{{"a=failed", "b=serving"}, {"a=failed", "b=serving"}},
			[]string{"bell note[bringup: a failed: a broke]", ""}},
		{"two hosts fail in one frame: one bell, two notes",
			[][]string{{"a=weights", "b=init"}, {"a=failed", "b=failed"}},
			[]string{"bar1:0", "bell note[bringup: a failed: a broke] note[bringup: b failed: b broke] bar0:0"}},
		{"a crash loop fails again after restarting: a bell each time",
			[][]string{{"a=weights"}, {"a=failed"}, {"a=restarting"}, {"a=failed"}},
			[]string{"bar1:0", "bell note[bringup: a failed: a broke] bar0:0", "bar1:0", "bell note[bringup: a failed: a broke] bar0:0"}},
		{"a host that goes unknown and back is no startup",
			[][]string{{"a=serving", "b=serving"}, {"a=unknown", "b=serving"}, {"a=serving", "b=serving"}},
			[]string{"", "", ""}},
		{"no hosts: nothing",
			[][]string{{}, {}},
			[]string{"", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tr Tracker
			for i, st := range tc.steps {
				if got := say(tr.Step(fleet(st...), Rollout{})); got != tc.want[i] {
					t.Errorf("step %d %v: %q, want %q", i, st, got, tc.want[i])
				}
			}
		})
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
		if got := say(tr.Step(hs, tc.ro)); got != tc.want {
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
