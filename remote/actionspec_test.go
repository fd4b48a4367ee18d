package remote

import (
	"strings"
	"testing"
)

// TestSpecsAreOneTable: every kind is named once, says what it does and
// asks in words, and its key, palette command and command are each
// taken by it alone.
func TestSpecsAreOneTable(t *testing.T) {
	kinds, keys, palette := map[ActionKind]bool{}, map[string]ActionKind{}, map[string]ActionKind{}
	for _, s := range Specs() {
		if s.Kind == "" || kinds[s.Kind] {
			t.Errorf("kind %q empty or twice", s.Kind)
		}
		kinds[s.Kind] = true
		if got, ok := s.Kind.Spec(); !ok || got.Kind != s.Kind {
			t.Errorf("%s: Spec() = %v, %v", s.Kind, got.Kind, ok)
		}
		a := Action{Kind: s.Kind, Kernel: "k", Mode: "on", Requests: 2, Concurrency: 1}
		if s.Effect == nil || s.Question == nil || a.Effect("u.service") == "" || !strings.HasSuffix(a.Question("u.service", "gpu1"), "?") {
			t.Errorf("%s: effect %q, question %q", s.Kind, a.Effect("u.service"), a.Question("u.service", "gpu1"))
		}
		if s.Key != nil {
			if other, ok := keys[s.Key.Key]; ok || s.Key.Help == "" {
				t.Errorf("%s: key %q (also %q), help %q", s.Kind, s.Key.Key, other, s.Key.Help)
			}
			keys[s.Key.Key] = s.Kind
		}
		if s.Palette != nil {
			if other, ok := palette[s.Palette.Name]; ok || s.Palette.Help == "" {
				t.Errorf("%s: palette %q (also %q), help %q", s.Kind, s.Palette.Name, other, s.Palette.Help)
			}
			palette[s.Palette.Name] = s.Kind
		}
		if s.Command != nil && (s.Command.Args == "" || s.Command.Summary == "") {
			t.Errorf("%s: command %+v", s.Kind, *s.Command)
		}
	}
	if _, ok := ActionKind("nope").Spec(); ok || !ActionKind("nope").Changes() {
		t.Error("an unknown kind has a spec, or counts as changing nothing")
	}
	if ActBench.Changes() || !ActStop.Changes() {
		t.Error("bench changes the host, or stop does not")
	}
}

// TestActionWords pins what the table says for a few actions: the log's
// label, the plan's effect, the confirmation's question.
func TestActionWords(t *testing.T) {
	for _, tc := range []struct {
		a                       Action
		label, effect, question string
	}{
		{Action{Kind: ActRestart, Force: true}, "restart (preflight overridden)",
			"restart u (it stops serving until the new run is up)", "Restart u on gpu1?"},
		{Action{Kind: ActStop}, "stop", "stop u", "Stop u on gpu1?"},
		{Action{Kind: ActRedeploy}, "redeploy",
			"copy the local build of the kernel to the host (takes effect at the next restart)", "Redeploy  to gpu1?"},
		{Action{Kind: ActSetMode, Kernel: "k", Mode: "on"}, "mode k=on",
			`set k to mode "on" for u (takes effect at the next restart)`, `Set k to mode "on" on gpu1?`},
		{Action{Kind: "nope"}, "nope", "nope", "nope on gpu1?"},
	} {
		if got := tc.a.String(); got != tc.label {
			t.Errorf("%v: label %q, want %q", tc.a.Kind, got, tc.label)
		}
		if got := tc.a.Effect("u"); got != tc.effect {
			t.Errorf("%v: effect %q, want %q", tc.a.Kind, got, tc.effect)
		}
		if got := tc.a.Question("u", "gpu1"); got != tc.question {
			t.Errorf("%v: question %q, want %q", tc.a.Kind, got, tc.question)
		}
	}
}
