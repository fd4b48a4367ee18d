package ui

import (
	"slices"
	"testing"
)

// The console tells its source which host's view is open, once per
// change: on opening, not again for an overlay over it, "" on leaving.
func TestModelTellsTheOpenHostView(t *testing.T) {
	m, src := newTestModel(t, 160, 48)
	if len(src.views) != 0 {
		t.Fatalf("told %q before any host view opened", src.views)
	}
	press(m, "j", "j", "enter")
	host := m.host.name
	if host == "" || !slices.Equal(src.views, []string{host}) {
		t.Fatalf("opened %q, told %q", host, src.views)
	}
	press(m, "?") // help over the host view: it is still what shows
	press(m, "esc")
	if !slices.Equal(src.views, []string{host}) {
		t.Fatalf("help over the host view told %q", src.views)
	}
	press(m, "esc")
	if !slices.Equal(src.views, []string{host, ""}) {
		t.Fatalf("back to the table told %q, want %q then \"\"", src.views, host)
	}
}
