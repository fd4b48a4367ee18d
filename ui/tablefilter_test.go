package ui

import (
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/startup"
)

// TestHostFilterTerms filters the fixture fleet (gpu1 serving, gpu2 in
// weights, gpu3 failed in validate, gpu4 in graph capture).
func TestHostFilterTerms(t *testing.T) {
	hosts := fleetFixture().Hosts
	names := []string{"gpu1", "gpu2", "gpu3", "gpu4", "deploy@gpu9:2222"}
	cases := []struct {
		text string
		want []string
		err  string
	}{
		{"", []string{"gpu1", "gpu2", "gpu3", "gpu4"}, ""},
		{"gpu", []string{"gpu1", "gpu2", "gpu3", "gpu4"}, ""},
		{"GPU3", []string{"gpu3"}, ""},
		{"phase:failed", []string{"gpu3"}, ""},
		{"Phase:Failed", []string{"gpu3"}, ""},
		{"phase:weights", []string{"gpu2"}, ""},
		{"phase:graph", []string{"gpu4"}, ""}, // the start of graph-capture
		{"phase:s", []string{"gpu1"}, ""},     // starting, stopped, serving, stuck
		{"mode:validate", []string{"gpu3"}, ""},
		{"mode:kdtree-verify=on", []string{"gpu1", "gpu2", "gpu4"}, ""},
		{"state:failed", []string{"gpu3"}, ""},
		{"state:running", []string{"gpu1", "gpu2", "gpu4"}, ""},
		{"state:up", []string{"gpu1", "gpu2", "gpu3", "gpu4"}, ""},
		{"mode:on phase:weights", []string{"gpu2"}, ""},
		{"mode:on phase:failed", nil, ""},
		{"gpu9:2222", nil, ""}, // a host name with a colon in it
		{"gpu[12]", []string{"gpu1", "gpu2"}, ""},
		{"GPU[34]$", []string{"gpu3", "gpu4"}, ""},
		{"^gpu(1|4)", []string{"gpu1", "gpu4"}, ""},
		{"gpu[12] phase:weights", []string{"gpu2"}, ""},
		{"gpu[", nil, ""}, // no regexp: matched as text, which no name holds
		{"phase:nope", nil, `unknown phase "nope": stopped, starting, init, weights, kv-cache, graph-capture, http, warmup, serving, failed, restarting, stuck, unknown`},
		{"phase:", nil, `unknown phase ""`},
		{"mode:fast", nil, `unknown mode "fast": off, validate, on`},
		{"mode:kdtree-verify=fast", nil, `kernel kdtree-verify has no mode "fast"`},
		{"state:", nil, "state: needs a unit state: failed, active"},
		{"phse:failed", nil, `unknown filter term "phse:failed": use a host name or a phase:, mode: or state: term`},
	}
	for _, tc := range cases {
		t.Run(tc.text, func(t *testing.T) {
			f, err := parseHostFilter(tc.text, names, kernels.DefaultCatalog())
			if !checkErr(t, err, tc.err) {
				return
			}
			var got []string
			for i := range hosts {
				if f.match(&hosts[i]) {
					got = append(got, hosts[i].Name)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("%q shows %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

// TestHostFilterKeys types a filter on the table: the rows follow as it
// is typed, the header counts them, the cursor keeps its host as rows
// come and go, and esc clears it.
func TestHostFilterKeys(t *testing.T) {
	m, _ := newTestModel(t, 120, 40)
	press(m, "j", "j", "j", "/") // gpu4
	if m.focus.top() != focusHostFilter {
		t.Fatal("/ on the table did not open the filter prompt")
	}
	press(m, typed("phase:")...)
	if !strings.HasPrefix(m.table.filterErr, `unknown phase ""`) || !strings.Contains(render(m), `unknown phase ""`) {
		t.Fatalf("half a term: error %q; want it beside the prompt", m.table.filterErr)
	}
	press(m, typed("failed")...)
	if got := m.table.shown(); !slices.Equal(got, []string{"gpu3"}) || m.table.filterErr != "" {
		t.Fatalf("phase:failed shows %q (error %q)", got, m.table.filterErr)
	}
	if got := m.selectedName(); got != "gpu3" {
		t.Fatalf("cursor on %q once gpu4 is hidden, want gpu3", got)
	}
	out := render(m)
	if h := lines(out)[0]; !strings.Contains(h, "filter: phase:failed  1/4 hosts") {
		t.Fatalf("header %q lacks the filter and its count", h)
	}
	if !strings.Contains(lines(out)[len(lines(out))-1], "/phase:failed") {
		t.Fatalf("no prompt on the last line:\n%s", out)
	}
	press(m, "enter")
	if m.focus.top() == focusHostFilter || !m.table.filter.active() {
		t.Fatal("enter did not keep the filter")
	}
	if rowOf(render(m), "gpu1") != "" || rowOf(render(m), "gpu3") == "" {
		t.Fatalf("table under phase:failed:\n%s", render(m))
	}

	// gpu1 fails too: it comes in above the cursor, which stays on gpu3.
	feed(t, m, func(hs []remote.HostState) { hs[0].Startup.Phase = startup.Failed })
	if got := m.table.shown(); !slices.Equal(got, []string{"gpu1", "gpu3"}) || m.selectedName() != "gpu3" {
		t.Fatalf("rows %q, cursor on %q; want gpu1, gpu3 with the cursor on gpu3", got, m.selectedName())
	}
	press(m, "k")
	if m.selectedName() != "gpu1" {
		t.Fatalf("k went to %q", m.selectedName())
	}
	press(m, "esc")
	if m.table.filter.active() || len(m.table.rows) != 4 || m.selectedName() != "gpu1" {
		t.Fatalf("esc: filter %q, %d rows, cursor on %q", m.table.filter.text, len(m.table.rows), m.selectedName())
	}
	if h := lines(render(m))[0]; strings.Contains(h, "filter:") || !strings.Contains(h, "4 hosts") {
		t.Fatalf("header after esc %q", h)
	}
}

func TestHostFilterPromptEnterOnAMistakeKeepsIt(t *testing.T) {
	m, _ := newTestModel(t, 120, 40)
	press(m, "/")
	press(m, typed("phse:failed")...)
	press(m, "enter")
	if m.focus.top() != focusHostFilter || m.table.filterInput.Value() != "phse:failed" || !m.statusErr || !strings.Contains(m.status, `unknown filter term "phse:failed"`) {
		t.Fatalf("typing %v, text %q, status %q", m.focus.top() == focusHostFilter, m.table.filterInput.Value(), m.status)
	}
	press(m, "esc")
	if m.focus.top() == focusHostFilter || m.table.filter.active() {
		t.Fatal("esc in the prompt did not clear the filter")
	}
	press(m, "/")
	press(m, typed("gpu9")...)
	press(m, "enter")
	if out := render(m); !strings.Contains(out, `no host matches the filter "gpu9" (esc clears it)`) || !strings.Contains(lines(out)[0], "0/4 hosts") {
		t.Fatalf("a filter that matches nothing:\n%s", out)
	}
	if cmd := press(m, "r"); m.dialog != nil || !strings.Contains(m.status, "no host selected") {
		t.Fatalf("r with no rows: dialog %+v, status %q (%v)", m.dialog, m.status, cmd)
	}
}

// TestHostFilterLimitsMarksAndRollout: a marked host the filter hides is
// not in "marked", and R over "all" takes the hosts shown, naming them.
func TestHostFilterLimitsMarksAndRollout(t *testing.T) {
	m, _ := newTestModel(t, 120, 40)
	press(m, "space") // mark gpu1
	press(m, "/")
	press(m, typed("mode:on")...) // gpu1, gpu2, gpu4
	press(m, "enter", "j", "j", "space")
	if got := m.table.shownMarked(); !slices.Equal(got, []string{"gpu1", "gpu4"}) {
		t.Fatalf("marked and shown %q", got)
	}
	if err := m.table.setFilter("phase:failed"); err != nil { // gpu3 only: both marks hidden
		t.Fatal(err)
	}
	if h := lines(render(m))[0]; !strings.Contains(h, "0 selected +2 hidden") {
		t.Fatalf("header %q does not say the marks are hidden", h)
	}
	press(m, "R")
	if m.dialog == nil || m.dialog.rollout == nil || !slices.Equal(m.dialog.rollout.hosts, []string{"gpu3"}) {
		t.Fatalf("R under the filter: %+v", m.dialog)
	}
	if out := render(m); !strings.Contains(out, `hosts (shown by the filter "phase:failed"): gpu3`) {
		t.Fatalf("rollout form does not name the hosts and the filter:\n%s", out)
	}
}

func TestHostFilterPaste(t *testing.T) {
	m, _ := newTestModel(t, 120, 40)
	press(m, "/")
	m.Update(tea.PasteMsg{Content: "state:failed"})
	if got := m.table.shown(); !slices.Equal(got, []string{"gpu3"}) {
		t.Fatalf("pasted state:failed shows %q", got)
	}
}

// TestHostFilterPasteDropsControls pins why the filter text, shown in the
// header and the rollout form, needs no sanitiser of the UI's own: the
// input drops control characters as they are typed or pasted.
func TestHostFilterPasteDropsControls(t *testing.T) {
	m, _ := newTestModel(t, 120, 40)
	press(m, "/")
	m.Update(tea.PasteMsg{Content: "gpu\x1b]0;pwned\x07\u009b3"})
	press(m, "enter")
	if m.table.filter.text != "gpu]0;pwned3" {
		t.Fatalf("filter text %q, want the pasted text without its control characters", m.table.filter.text)
	}
	if h := lines(render(m))[0]; !strings.Contains(h, `filter: gpu]0;pwned3`) {
		t.Fatalf("header %q", h)
	}
}

// TestHostFilterCrashLoopIsFailed: phase:failed shows a crash-looping
// host while its next run starts.
func TestHostFilterCrashLoopIsFailed(t *testing.T) {
	hosts := fleetFixture().Hosts
	hosts[1].Startup.Loop = &startup.CrashLoop{Runs: 2, Cause: "gpu-oom"}
	f, err := parseHostFilter("phase:failed", []string{"gpu1", "gpu2", "gpu3", "gpu4"}, kernels.DefaultCatalog())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range hosts {
		if f.match(&hosts[i]) {
			got = append(got, hosts[i].Name)
		}
	}
	if !slices.Equal(got, []string{"gpu2", "gpu3"}) {
		t.Errorf("phase:failed shows %q, want gpu2 (its loop) and gpu3", got)
	}
}

// TestHostFilterRegexpFallsBack: a word that is no regular expression
// is matched as a substring, and the filter says so; one that is says
// nothing.
func TestHostFilterRegexpFallsBack(t *testing.T) {
	names := []string{"gpu1", "gpu[2]"}
	f, err := parseHostFilter("gpu[", names, kernels.DefaultCatalog())
	if err != nil {
		t.Fatal(err)
	}
	if want := `"gpu[" is no regular expression (missing closing ]): matched as text`; f.note != want {
		t.Errorf("note %q, want %q", f.note, want)
	}
	h := remote.HostState{Name: "gpu[2]"}
	if !f.match(&h) {
		t.Errorf("gpu[ does not match %q as text", h.Name)
	}
	if f, _ := parseHostFilter("gpu[12]", names, kernels.DefaultCatalog()); f.note != "" {
		t.Errorf("a valid regexp has a note: %q", f.note)
	}
	// The prompt's line says it while typing.
	m, _ := newTestModel(t, 80, 24)
	press(m, append([]string{"/"}, typed("gpu[")...)...)
	if foot := lines(render(m))[22]; !strings.Contains(foot, "no regular expression") {
		t.Errorf("filter line while typing gpu[: %q", foot)
	}
	press(m, "esc", "/")
	press(m, typed("gpu[12]")...)
	press(m, "enter")
	if got := m.table.shown(); !slices.Equal(got, []string{"gpu1", "gpu2"}) {
		t.Errorf("/gpu[12] shows %v, want gpu1 and gpu2", got)
	}
}
