package ui

import (
	"strings"
	"testing"
)

// TestDiagDetailShowsTheWholeDiagnosis opens gpu3's diagnosis from the
// table (e) and from its host view (enter) at the reference sizes: the
// summary, the whole hint, the fix command and every evidence line are
// on screen (scrolled to where needed), none cut with "…"; esc goes back
// to the view it was opened from.
func TestDiagDetailShowsTheWholeDiagnosis(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {60, 20}, {160, 48}} {
		for _, open := range [][]string{{"j", "j", "e"}, {"j", "j", "enter", "enter"}} {
			m, _ := newTestModel(t, size[0], size[1])
			press(m, open...)
			if m.focus.view() != focusDiag {
				t.Fatalf("%v after %v: view %s, want the diagnosis", size, open, m.focus.view())
			}
			hs := m.hostState("gpu3")
			d := diagnosisOf(hs)
			// Every row of the content, scrolled through, as one text.
			var seen []string
			for range 20 {
				out := render(m)
				checkFits(t, out, size[0], size[1])
				seen = append(seen, lines(out)...)
				press(m, "pgdown")
			}
			text := joinWrapped(seen)
			for _, want := range append([]string{d.Summary, hintText(d), d.Fix.Command("gpu3")}, d.Evidence...) {
				if !strings.Contains(text, strings.Join(strings.Fields(want), " ")) {
					t.Errorf("%v via %v: %q not on screen whole; screens:\n%s", size, open, want, strings.Join(seen, "\n"))
				}
			}
			press(m, "esc")
			want := focusTable
			if open[len(open)-1] == "enter" {
				want = focusHost
			}
			if m.focus.view() != want {
				t.Errorf("%v: esc goes to %s, want %s", size, m.focus.view(), want)
			}
		}
	}
}

// joinWrapped undoes the detail's wrapping for a search: the frame
// around it, the indent and the evidence rule go, rows join with a space.
func joinWrapped(rows []string) string {
	var words []string
	for _, r := range rows {
		r = strings.TrimSpace(r)
		r = strings.TrimPrefix(r, "│")
		words = append(words, strings.Fields(r)...)
	}
	return strings.Join(words, " ")
}

// TestDiagDetailWithoutDiagnosis: e on a host that has not failed says
// so and stays on the table.
func TestDiagDetailWithoutDiagnosis(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	press(m, "e") // gpu1 serves
	if m.focus.view() != focusTable || !strings.Contains(m.status, "no failure diagnosed") {
		t.Errorf("e on gpu1: view %s, status %q", m.focus.view(), m.status)
	}
}

func TestWrapWords(t *testing.T) {
	for _, tt := range []struct {
		text string
		w    int
		want []string
	}{
		{"or start with --disable-cuda-graph", 20, []string{"or start with", "--disable-cuda-graph"}},
		{"set kdtree-verify=on, then r", 12, []string{"set", "kdtree-verif", "y=on, then r"}},
		{"    if not x: y", 10, []string{"    if not", "x: y"}},
		{"abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"", 5, []string{""}},
	} {
		if got := wrapWords(tt.text, tt.w); strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("wrapWords(%q, %d) = %q, want %q", tt.text, tt.w, got, tt.want)
		}
		for _, l := range wrapWords(tt.text, tt.w) {
			if width(l) > tt.w {
				t.Errorf("wrapWords(%q, %d): row %q wider than %d", tt.text, tt.w, l, tt.w)
			}
		}
	}
}
