package ui

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
)

// twoKernels is the default catalog and a second kernel, so that kernel
// names and KERNEL=MODE have something to tell apart.
func twoKernels() kernels.Catalog {
	cat := kernels.DefaultCatalog()
	cat.Kernels = append(cat.Kernels, kernels.Kernel{Name: "topk", EnvVar: "TOPK_MODE",
		Modes: []kernels.Mode{{Name: "off", CaptureSafe: true}, {Name: "fast", CaptureSafe: true}}})
	return cat
}

// testEnv is four hosts, gpu2 and gpu4 marked, a filter showing gpu2 to
// gpu4 (gpu1 hidden), and a group.
func testEnv() paletteEnv {
	return paletteEnv{
		hosts:  []string{"gpu1", "gpu2", "gpu3", "gpu4"},
		shown:  []string{"gpu2", "gpu3", "gpu4"},
		marked: []string{"gpu2", "gpu4"},
		groups: map[string][]string{"rack-a": {"gpu1", "gpu3", "gone"}},
		cat:    twoKernels(),
	}
}

func TestParsePalette(t *testing.T) {
	cases := []struct {
		line string
		want paletteCall
		err  string // a substring of the error; "" when the line parses
	}{
		{line: "host gpu3", want: paletteCall{cmd: "host", hosts: []string{"gpu3"}}},
		{line: "  restart   gpu3 gpu1 gpu3 ", want: paletteCall{cmd: "restart", hosts: []string{"gpu3", "gpu1"}}},
		{line: "restart all", want: paletteCall{cmd: "restart", hosts: []string{"gpu2", "gpu3", "gpu4"}}},
		{line: "stop marked", want: paletteCall{cmd: "stop", hosts: []string{"gpu2", "gpu4"}}},
		{line: "reset-failed rack-a gpu4", want: paletteCall{cmd: "reset-failed", hosts: []string{"gpu1", "gpu3", "gpu4"}}},
		{line: "redeploy gpu3", want: paletteCall{cmd: "redeploy", hosts: []string{"gpu3"}, kernel: "kdtree-verify"}},
		{line: "redeploy gpu3 topk", want: paletteCall{cmd: "redeploy", hosts: []string{"gpu3"}, kernel: "topk"}},
		{line: "mode gpu3 kdtree-verify=on", want: paletteCall{cmd: "mode", hosts: []string{"gpu3"}, kernel: "kdtree-verify", mode: "on"}},
		{line: "mode KDTREE-VERIFY=On gpu3 gpu4", want: paletteCall{cmd: "mode", hosts: []string{"gpu3", "gpu4"}, kernel: "kdtree-verify", mode: "on"}},
		{line: "undo gpu2", want: paletteCall{cmd: "undo", hosts: []string{"gpu2"}}},
		{line: "rollout marked topk=fast", want: paletteCall{cmd: "rollout", hosts: []string{"gpu2", "gpu4"}, kernel: "topk", mode: "fast"}},
		{line: "rollout all", want: paletteCall{cmd: "rollout", hosts: []string{"gpu2", "gpu3", "gpu4"}}},
		{line: "filter phase:failed  gpu", want: paletteCall{cmd: "filter", text: "phase:failed  gpu"}},
		{line: "filter", want: paletteCall{cmd: "filter"}},
		{line: "wrap", want: paletteCall{cmd: "wrap"}},
		{line: "help", want: paletteCall{cmd: "help"}},
		{line: "q", want: paletteCall{cmd: "quit"}},
		{line: "quit", want: paletteCall{cmd: "quit"}},

		{line: "", err: "no command: host, restart,"},
		{line: "restrat gpu3", err: `unknown command "restrat": host, restart, stop, reset-failed, redeploy, mode, undo, bench, rollout, reconnect, filter, group, follow, wrap, help, quit`},
		{line: "restart gpu9", err: `unknown host "gpu9": gpu1, gpu2, gpu3, gpu4`},
		{line: "restart", err: "restart: name the hosts (restart HOST…): a host, a group, marked or all"},
		{line: "host", err: "host: name one host: gpu1, gpu2, gpu3, gpu4"},
		{line: "host gpu1 gpu2", err: "host: name one host"},
		{line: "host all", err: `unknown host "all"`},
		{line: "mode gpu3", err: "mode: give KERNEL=MODE: kdtree-verify=off, kdtree-verify=validate, kdtree-verify=on, topk=off, topk=fast"},
		{line: "mode gpu3 kdtree-verify=fast", err: `kernel kdtree-verify has no mode "fast" (modes: off, validate, on)`},
		{line: "mode gpu3 kdtree=on", err: `unknown kernel "kdtree" (known: kdtree-verify, topk)`},
		{line: "mode gpu3 topk=off kdtree-verify=on", err: "one KERNEL=MODE"},
		{line: "restart gpu3 kdtree-verify=on", err: `restart takes hosts, not "kdtree-verify=on"`},
		{line: "redeploy topk", err: `unknown host "topk"`},
		{line: "follow", err: "follow: only in the host view"},
		{line: "wrap gpu3", err: "wrap takes no arguments"},
		{line: "filter phase:nope", err: `unknown phase "nope"`},
	}
	for _, tc := range cases {
		t.Run(tc.line, func(t *testing.T) {
			got, err := parsePalette(tc.line, testEnv())
			if !checkErr(t, err, tc.err) {
				return
			}
			if got.cmd != tc.want.cmd || !slices.Equal(got.hosts, tc.want.hosts) || got.kernel != tc.want.kernel ||
				got.mode != tc.want.mode || got.text != tc.want.text {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// checkErr fails t unless err holds want ("": unless err is nil), and
// reports whether there is a result to check (no error wanted).
func checkErr(t *testing.T, err error, want string) bool {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatal(err)
		}
		return true
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one holding %q", err, want)
	}
	return false
}

func TestParsePaletteMarkedAndAllUnderAFilter(t *testing.T) {
	env := testEnv()
	env.marked, env.hidden = nil, 2
	if _, err := parsePalette("restart marked", env); err == nil || !strings.Contains(err.Error(), "the 2 marked hosts are hidden by the filter") {
		t.Errorf("marked hosts all hidden: %v", err)
	}
	env.hidden = 0
	if _, err := parsePalette("restart marked", env); err == nil || !strings.Contains(err.Error(), "no hosts are marked (space marks") {
		t.Errorf("nothing marked: %v", err)
	}
	env.shown = nil
	if _, err := parsePalette("stop all", env); err == nil || !strings.Contains(err.Error(), "the filter shows no hosts") {
		t.Errorf("all under a filter that shows none: %v", err)
	}
	// A host named explicitly is taken even when the filter hides it.
	if c, err := parsePalette("stop gpu1", env); err != nil || !slices.Equal(c.hosts, []string{"gpu1"}) {
		t.Errorf("a hidden host named: %+v, %v", c, err)
	}
	env.hostView = true
	if c, err := parsePalette("follow", env); err != nil || c.cmd != "follow" {
		t.Errorf("follow in the host view: %+v, %v", c, err)
	}
}

func TestUnknownHostListsAFewOfALargeFleet(t *testing.T) {
	env := paletteEnv{}
	for i := range 64 {
		env.hosts = append(env.hosts, "node"+string(rune('a'+i/26))+string(rune('a'+i%26)))
	}
	_, err := parsePalette("restart nodezz", env)
	if err == nil || !strings.HasPrefix(err.Error(), `unknown host "nodezz": nodeaa, nodeab,`) || !strings.HasSuffix(err.Error(), ", … (64 hosts)") {
		t.Fatalf("error %v", err)
	}
}

func TestCompletePalette(t *testing.T) {
	cases := []struct {
		line, base string
		want       []string
	}{
		{"", "", commandNames()},
		{"re", "", []string{"restart", "reset-failed", "redeploy", "reconnect"}},
		{"RO", "", []string{"rollout"}},
		{"zz", "", nil},
		{"host ", "host ", []string{"gpu1", "gpu2", "gpu3", "gpu4"}},
		{"host gpu3 ", "host gpu3 ", nil},
		{"restart ", "restart ", []string{"all", "marked", "rack-a", "gpu1", "gpu2", "gpu3", "gpu4"}},
		{"restart gpu3 g", "restart gpu3 ", []string{"gpu1", "gpu2", "gpu4"}},
		{"restart m", "restart ", []string{"marked"}},
		{"mode gpu3 ", "mode gpu3 ", []string{"all", "marked", "rack-a", "gpu1", "gpu2", "gpu4",
			"kdtree-verify=off", "kdtree-verify=validate", "kdtree-verify=on", "topk=off", "topk=fast"}},
		{"mode gpu3 kd", "mode gpu3 ", []string{"kdtree-verify=off", "kdtree-verify=validate", "kdtree-verify=on"}},
		{"mode gpu3 kdtree-verify=v", "mode gpu3 ", []string{"kdtree-verify=validate"}},
		{"mode gpu3 topk=off g", "mode gpu3 topk=off ", []string{"gpu1", "gpu2", "gpu4"}},
		{"rollout all t", "rollout all ", []string{"topk=off", "topk=fast"}},
		{"redeploy gpu3 t", "redeploy gpu3 ", []string{"topk"}},
		{"redeploy t", "redeploy ", nil},
		{"filter phase:f", "filter ", []string{"phase:failed"}},
		{"filter phase:failed mode:", "filter phase:failed ", []string{"mode:off", "mode:validate", "mode:on", "mode:fast"}},
		{"filter state:fa", "filter ", []string{"state:failed"}},
		{"wrap ", "wrap ", nil},
		{"nope ", "nope ", nil},
	}
	for _, tc := range cases {
		t.Run(tc.line, func(t *testing.T) {
			base, got := completePalette(tc.line, testEnv())
			if base != tc.base || !slices.Equal(got, tc.want) {
				t.Fatalf("completePalette(%q) = %q, %q; want %q, %q", tc.line, base, got, tc.base, tc.want)
			}
		})
	}
}

func TestFoldHosts(t *testing.T) {
	cases := []struct {
		in   []string
		want string
	}{
		{[]string{"gpu1", "gpu2"}, "gpu1, gpu2"},
		{[]string{"gpu1", "gpu2", "gpu3", "gpu4"}, "gpu[1-4]"},
		{[]string{"gpu1", "gpu2", "gpu3", "gpu5", "x", "node08", "node09", "node10"}, "gpu[1-3], gpu5, x, node[08-10]"},
		{[]string{"a9", "a10", "a11"}, "a[9-11]"},
		{[]string{"n07", "n8", "n9"}, "n07, n8, n9"},
		{[]string{"gpu3", "gpu2", "gpu1"}, "gpu3, gpu2, gpu1"},
		{[]string{"db", "db1"}, "db, db1"},
	}
	for _, tc := range cases {
		if got := foldHosts(tc.in); got != tc.want {
			t.Errorf("foldHosts(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	var many []string
	for i := 1; i <= 64; i++ {
		many = append(many, "gpu"+strconv.Itoa(i))
	}
	if got := foldHosts(many); got != "gpu[1-64]" {
		t.Errorf("64 hosts fold to %q", got)
	}
}

// runLine opens the palette, types line and presses enter, returning the
// command enter gave.
func runLine(m *Model, line string) tea.Cmd {
	press(m, ":")
	press(m, typed(line)...)
	return press(m, "enter")
}

// TestPaletteOpensTheKeysDialogs: each changing command opens the very
// dialog its key opens on the same host, and its confirmation issues the
// same Do calls.
func TestPaletteOpensTheKeysDialogs(t *testing.T) {
	cases := []struct {
		line    string
		keys    []string // on gpu3, the key path to the same dialog
		confirm []string
	}{
		{"restart gpu3", []string{"r"}, []string{"enter"}},  // the preflight: gpu3 is in validate
		{"restart gpu4", []string{"j", "r"}, []string{"y"}}, // passes the preflight
		{"reset-failed gpu3", []string{"x"}, []string{"y"}}, //
		{"redeploy gpu3", []string{"d"}, []string{"y"}},     //
		{"undo gpu3", []string{"u"}, []string{"y"}},         //
		{"mode gpu3 kdtree-verify=on", []string{"m", "3"}, []string{"y"}},
		{"rollout gpu3", []string{"space", "R"}, []string{"l", "l", "l", "enter", "y"}},
	}
	for _, tc := range cases {
		t.Run(tc.line, func(t *testing.T) {
			byKey, keySrc := newTestModel(t, 120, 40)
			press(byKey, "j", "j")
			press(byKey, tc.keys...)
			byLine, lineSrc := newTestModel(t, 120, 40)
			runLine(byLine, tc.line)
			if byKey.dialog == nil || !reflect.DeepEqual(byKey.dialog, byLine.dialog) {
				t.Fatalf("dialogs differ:\nkeys %+v\nline %+v", byKey.dialog, byLine.dialog)
			}
			if byLine.focus.top() == focusPalette {
				t.Fatal("the palette stayed open over the dialog")
			}
			drive(t, byKey, press(byKey, tc.confirm...))
			drive(t, byLine, press(byLine, tc.confirm...))
			if len(keySrc.calls) == 0 || !slices.Equal(calls(keySrc), calls(lineSrc)) {
				t.Fatalf("Do calls: keys %+v, line %+v", keySrc.calls, lineSrc.calls)
			}
		})
	}
}

func TestPaletteStopSeveralHostsNamesThem(t *testing.T) {
	m, src := newTestModel(t, 120, 40)
	runLine(m, "stop gpu1 gpu2 gpu4")
	out := render(m)
	for _, want := range []string{"Stop sglang.service on 3 hosts?", "stop sglang.service", "hosts: gpu1, gpu2, gpu4"} {
		if !strings.Contains(out, want) {
			t.Errorf("confirmation lacks %q:\n%s", want, out)
		}
	}
	if len(src.calls) != 0 {
		t.Fatal("Do called before the confirmation")
	}
	drive(t, m, press(m, "y"))
	stop := remote.Action{Kind: remote.ActStop}
	got := calls(src)
	slices.SortFunc(got, func(a, b doCall) int { return strings.Compare(a.host, b.host) })
	if want := []doCall{{"gpu1", stop}, {"gpu2", stop}, {"gpu4", stop}}; !slices.Equal(got, want) {
		t.Fatalf("Do calls %+v, want %+v", got, want)
	}
}

// TestPaletteRestartAllRunsThePreflight: "all" is every host shown; the
// preflight refuses gpu3 (validate); the safe mode is set on gpu3 only,
// and every host restarts.
func TestPaletteRestartAllRunsThePreflight(t *testing.T) {
	m, src := newTestModel(t, 120, 40)
	runLine(m, "restart all")
	if m.dialog == nil || m.dialog.kind != dlgPreflight || m.dialog.hosts != 4 {
		t.Fatalf("no preflight dialog for 4 hosts: %+v", m.dialog)
	}
	out := render(m)
	for _, want := range []string{"Restart sglang.service on 4 hosts: preflight refused", "gpu3: kdtree-verify",
		"set kdtree-verify to on on gpu3, then restart all 4", "hosts: gpu[1-4]", "type 4 (the number of hosts)"} {
		if !strings.Contains(out, want) {
			t.Errorf("preflight dialog lacks %q:\n%s", want, out)
		}
	}
	for m.dialog.choices[m.dialog.cursor].value != "on" {
		press(m, "j")
	}
	drive(t, m, press(m, "enter"))
	restart := remote.Action{Kind: remote.ActRestart}
	want := []doCall{{"gpu1", restart}, {"gpu2", restart},
		{"gpu3", remote.Action{Kind: remote.ActSetMode, Kernel: "kdtree-verify", Mode: "on"}}, {"gpu3", restart}, {"gpu4", restart}}
	got := calls(src)
	slices.SortStableFunc(got, func(a, b doCall) int { return strings.Compare(a.host, b.host) })
	if !slices.Equal(got, want) {
		t.Fatalf("Do calls %+v, want %+v", got, want)
	}

	// Going on anyway takes the host count, and forces every restart.
	m, src = newTestModel(t, 120, 40)
	runLine(m, "restart all")
	drive(t, m, press(m, "1", "enter"))
	if len(src.calls) != 0 || m.dialog == nil {
		t.Fatal("the count of one host went on for four")
	}
	drive(t, m, press(m, "backspace", "4", "enter"))
	if len(src.calls) != 4 || !slices.ContainsFunc(src.calls, func(c doCall) bool { return c.host == "gpu3" && c.a.Force }) {
		t.Fatalf("Do calls %+v, want four forced restarts", src.calls)
	}
}

func TestPaletteAllUnderAFilter(t *testing.T) {
	m, src := newTestModel(t, 120, 40)
	if err := m.table.setFilter("mode:on"); err != nil {
		t.Fatal(err)
	}
	runLine(m, "reset-failed all")
	if out := render(m); !strings.Contains(out, "Reset the failed state of sglang.service on 3 hosts?") || !strings.Contains(out, "hosts: gpu1, gpu2, gpu4") {
		t.Fatalf("confirmation under mode:on:\n%s", out)
	}
	drive(t, m, press(m, "y"))
	if len(src.calls) != 3 || slices.ContainsFunc(src.calls, func(c doCall) bool { return c.host == "gpu3" }) {
		t.Fatalf("Do calls %+v: the hidden gpu3 must not be among them", src.calls)
	}
}

// TestPaletteReadOnly: every changing command is refused with the
// message its key gives, opens nothing and calls nothing.
func TestPaletteReadOnly(t *testing.T) {
	cases := []struct{ line, key string }{
		{"mode gpu3 kdtree-verify=on", "m"}, {"restart gpu3", "r"}, {"reset-failed gpu3", "x"},
		{"redeploy gpu3", "d"}, {"undo gpu3", "u"}, {"rollout gpu3", "R"}, {"stop gpu3", ""},
	}
	for _, tc := range cases {
		m, src := newTestModel(t, 80, 24)
		src.ro = true
		want := "read-only: stop is disabled"
		if tc.key != "" {
			press(m, "j", "j", tc.key)
			want = m.status
		}
		m, src = newTestModel(t, 80, 24)
		src.ro = true
		runLine(m, tc.line)
		if m.status != want || !strings.HasPrefix(want, "read-only: ") {
			t.Errorf("%s: status %q, want %q", tc.line, m.status, want)
		}
		if m.dialog != nil || m.focus.view() == focusRollout || len(src.calls) != 0 {
			t.Errorf("%s: dialog %+v, view %v, calls %v in read-only mode", tc.line, m.dialog, m.focus.view(), src.calls)
		}
	}
}

func TestPaletteErrorKeepsTheLine(t *testing.T) {
	m, src := newTestModel(t, 80, 24)
	runLine(m, "restart gpu9")
	if m.focus.top() != focusPalette || m.commandPalette.input.Value() != "restart gpu9" {
		t.Fatalf("palette open %v with %q, want it open with the line", m.focus.top() == focusPalette, m.commandPalette.input.Value())
	}
	if !m.statusErr || m.status != `unknown host "gpu9": gpu1, gpu2, gpu3, gpu4` {
		t.Fatalf("status %q", m.status)
	}
	out := render(m)
	if ls := lines(out); !strings.Contains(ls[len(ls)-2], `unknown host "gpu9"`) || !strings.Contains(ls[len(ls)-1], ":restart gpu9") {
		t.Fatalf("footer:\n%s", out)
	}
	press(m, "backspace", "4", "enter")
	if m.dialog == nil || m.dialog.host != "gpu4" || m.focus.top() == focusPalette {
		t.Fatalf("fixed line: dialog %+v, palette open %v", m.dialog, m.focus.top() == focusPalette)
	}
	if len(src.calls) != 0 {
		t.Fatal("Do called before the confirmation")
	}
}

func TestPaletteTabCyclesAndHistory(t *testing.T) {
	m, _ := newTestModel(t, 120, 40)
	press(m, ":", "r", "e", "tab")
	value := func() string { return m.commandPalette.input.Value() }
	if value() != "restart" || !strings.Contains(render(m), "[restart] reset-failed  redeploy") {
		t.Fatalf("first tab: %q\n%s", value(), render(m))
	}
	press(m, "tab", "tab")
	if value() != "redeploy" {
		t.Fatalf("third tab: %q", value())
	}
	press(m, "tab", "shift+tab", "shift+tab") // round to restart, back to redeploy, reset-failed
	if value() != "reset-failed" {
		t.Fatalf("tab then shift+tab twice: %q", value())
	}
	press(m, "tab")
	press(m, "space", "g", "tab")
	if value() != "redeploy gpu1" {
		t.Fatalf("host completion: %q", value())
	}
	press(m, "space", "k", "tab") // the one kernel: taken, with a space
	if value() != "redeploy gpu1 kdtree-verify " {
		t.Fatalf("kernel completion: %q", value())
	}
	press(m, "esc")
	if m.focus.top() == focusPalette {
		t.Fatal("esc did not close the palette")
	}

	runLine(m, "wrap")
	runLine(m, "filter gpu")
	runLine(m, "filter gpu")
	press(m, ":", "h", "o", "up")
	if value() != "filter gpu" {
		t.Fatalf("up: %q", value())
	}
	press(m, "up", "up")
	if value() != "wrap" {
		t.Fatalf("up past the oldest: %q", value())
	}
	press(m, "down", "down")
	if value() != "ho" {
		t.Fatalf("down past the newest: %q, want the line being typed", value())
	}
}

func TestPaletteOtherCommands(t *testing.T) {
	m, _ := newTestModel(t, 120, 40)
	runLine(m, "host gpu2")
	if m.focus.view() != focusHost || m.host.name != "gpu2" {
		t.Fatalf(":host gpu2: view %v open %q", m.focus.view(), m.host.name)
	}
	follow := m.host.log.follow
	runLine(m, "follow")
	if m.host.log.follow == follow {
		t.Fatal(":follow did not toggle following")
	}
	runLine(m, "wrap")
	if !m.host.log.wrap {
		t.Fatal(":wrap did not turn wrap on")
	}
	press(m, "esc")
	if m.focus.view() != focusTable {
		t.Fatal("esc from a host opened with :host did not go back to the table")
	}
	runLine(m, "filter phase:failed")
	if !slices.Equal(m.table.shown(), []string{"gpu3"}) {
		t.Fatalf(":filter shows %q", m.table.shown())
	}
	runLine(m, "filter")
	if m.table.filter.active() {
		t.Fatal(":filter with no text did not clear it")
	}
	runLine(m, "help")
	out := render(m)
	for _, want := range []string{"commands · :", ":mode HOST… KERNEL=MODE", ":rollout HOST… [KERNEL=MODE]", "HOST… is names, a group, marked or all"} {
		if !strings.Contains(out, want) {
			t.Errorf(":help lacks %q:\n%s", want, out)
		}
	}
	press(m, "esc")
	if cmd := runLine(m, "q"); cmd == nil || cmd() != tea.Quit() {
		t.Fatal(":q does not quit")
	}
}

// TestPaletteNotOverPrompts: `:` is text in the filter prompts, and a
// dialog ignores it.
func TestPaletteNotOverPrompts(t *testing.T) {
	m, _ := newTestModel(t, 120, 40)
	press(m, "/", ":")
	if m.focus.top() == focusPalette || m.table.filterInput.Value() != ":" {
		t.Fatalf("/ then ':' opened the palette (%v) or lost the text %q", m.focus.top() == focusPalette, m.table.filterInput.Value())
	}
	m, _ = newTestModel(t, 120, 40)
	press(m, "enter", "/", ":")
	if m.focus.top() == focusPalette || m.host.filterInput.Value() != ":" {
		t.Fatal("':' in the log filter opened the palette")
	}
	m, _ = newTestModel(t, 120, 40)
	press(m, "j", "j", "m", ":")
	if m.focus.top() == focusPalette || m.dialog == nil {
		t.Fatal("':' over a dialog opened the palette")
	}
	m, _ = newTestModel(t, 120, 40)
	press(m, "?", ":")
	if m.focus.top() != focusPalette || slices.Contains(m.focus, focusHelp) {
		t.Fatal("':' over the help did not open the palette")
	}
}

// TestPaletteGroups: a group from Options names its hosts.
func TestPaletteGroups(t *testing.T) {
	m, src := newTestModel(t, 120, 40)
	m.opts.Groups = map[string][]string{"rack-b": {"gpu2", "gpu4"}}
	press(m, ":", "s", "t", "o", "p", "space", "r", "tab")
	if got := m.commandPalette.input.Value(); got != "stop rack-b " {
		t.Fatalf("group completion %q", got)
	}
	drive(t, m, press(m, "enter", "y"))
	if len(src.calls) != 2 || src.calls[0].host == "gpu3" || src.calls[1].host == "gpu3" {
		t.Fatalf("Do calls %+v, want gpu2 and gpu4", src.calls)
	}
}

// TestPaletteOnSimulatedFleet recovers gpu3 of the simulated seed fleet
// (failed at graph capture in validate) with palette commands only:
// :mode gpu3 kdtree-verify=on, confirmed, then :restart gpu3, confirmed,
// brings it to serving; :restart gpu9 says which hosts there are and
// keeps the line.
func TestPaletteOnSimulatedFleet(t *testing.T) {
	t.Parallel() // a simulated fleet of its own, paced by its clock: waiting, not computing
	p, tm := runSeedConsole(t)
	line := func(s string) {
		send(tm, ":")
		send(tm, typed(s)...)
		send(tm, "enter")
	}

	line("mode gpu3 kdtree-verify=on")
	p.wait(t, tm, "the mode confirmation", func(frame string, _ *rolloutFacts) bool {
		return strings.Contains(frame, `Set kdtree-verify to mode "on" on gpu3?`)
	})
	send(tm, "y")
	p.wait(t, tm, "gpu3 in mode on", func(_ string, f *rolloutFacts) bool {
		a := p.facts.Load().action["gpu3"]
		return a.Name == "mode kdtree-verify=on" && a.Stage == event.ActionDone && f.mode["gpu3"] == "on"
	})

	line("restart gpu3")
	p.wait(t, tm, "the restart confirmation", func(frame string, _ *rolloutFacts) bool {
		return strings.Contains(frame, "Restart sglang.service on gpu3?")
	})
	send(tm, "y")
	p.wait(t, tm, "gpu3 serving", func(frame string, _ *rolloutFacts) bool {
		return p.facts.Load().phase["gpu3"] == startup.Serving && strings.Contains(rowOf(frame, "gpu3"), "serving")
	})

	line("restart gpu9")
	p.wait(t, tm, "the unknown-host error", func(frame string, _ *rolloutFacts) bool {
		ls := lines(frame)
		return len(ls) > 2 && strings.Contains(ls[len(ls)-2], `unknown host "gpu9": gpu1, gpu2, gpu3, gpu4`) &&
			strings.Contains(ls[len(ls)-1], ":restart gpu9")
	})
	send(tm, "esc")

	final := quit(t, tm)
	if got, want := doneActions(final.Model, "gpu3"), []string{"mode kdtree-verify=on", "restart"}; !slices.Equal(got, want) {
		t.Errorf("gpu3 actions done %q, want %q", got, want)
	}
	for _, h := range []string{"gpu1", "gpu2", "gpu4"} {
		if got := doneActions(final.Model, h); len(got) != 0 {
			t.Errorf("%s actions done %q, want none", h, got)
		}
	}
}

// bigFleet is n hosts made from the fixture's four (every fourth one in
// validate, refused by the preflight), named by name(i).
func bigFleet(n int, name func(int) string) remote.Batch {
	b := fleetFixture()
	var hosts []remote.HostState
	for i := range n {
		h := b.Hosts[i%4]
		h.Name = name(i)
		hosts = append(hosts, h)
	}
	return remote.Batch{Hosts: hosts}
}

// TestSeveralHostsDialogsFitAFleetOf64: the confirmation and preflight of
// a command over 64 hosts fit 80×24 and name the hosts (folded, or cut
// with the count).
func TestSeveralHostsDialogsFitAFleetOf64(t *testing.T) {
	for _, tc := range []struct {
		name  func(int) string
		hosts string
	}{
		{func(i int) string { return "gpu" + strconv.Itoa(i+1) }, "hosts: gpu[1-64]"},
		{func(i int) string { return "node-" + string(rune('a'+i%26)) + strconv.Itoa(i) + "x" }, "… 64 hosts in all"},
	} {
		m, src := newTestModel(t, 80, 24)
		m.Update(batchMsg(bigFleet(64, tc.name)))
		runLine(m, "stop all")
		out := render(m)
		checkFits(t, out, 80, 24)
		if !strings.Contains(out, "Stop sglang.service on 64 hosts?") || !strings.Contains(out, tc.hosts) || !strings.Contains(out, "[y/enter] confirm") {
			t.Errorf("stop all over 64 hosts:\n%s", out)
		}
		press(m, "esc")
		runLine(m, "restart all")
		out = render(m)
		checkFits(t, out, 80, 24)
		if !strings.Contains(out, "Restart sglang.service on 64 hosts: preflight refused") || !strings.Contains(out, "then restart all 64") ||
			!strings.Contains(out, "type 64 (the number of hosts)") {
			t.Errorf("restart all over 64 hosts:\n%s", out)
		}
		if m.dialog == nil || len(m.dialog.refused) != 16 {
			t.Fatalf("preflight dialog %+v, want 16 hosts refused", m.dialog)
		}
		if len(src.calls) != 0 {
			t.Fatal("Do called before a confirmation")
		}
	}
}

// TestPaletteErrorThenNewLine: after an error the line stays to be
// fixed, but typing a new command (with or without its colon) starts a
// new line: `:foo` then `:bench gpu1` runs bench, not `foo:bench gpu1`.
func TestPaletteErrorThenNewLine(t *testing.T) {
	for _, next := range []string{":bench gpu1", "bench gpu1"} {
		m, _ := newTestModel(t, 80, 24)
		runLine(m, "foo")
		if !m.statusErr || m.commandPalette.input.Value() != "foo" {
			t.Fatalf(":foo: status %q, line %q", m.status, m.commandPalette.input.Value())
		}
		press(m, typed(next)...)
		if got := m.commandPalette.input.Value(); got != "bench gpu1" {
			t.Fatalf("typed %q after the error: line %q, want %q", next, got, "bench gpu1")
		}
		press(m, "enter")
		if m.dialog == nil || m.dialog.action.Kind != remote.ActBench || m.dialog.host != "gpu1" {
			t.Fatalf(":bench gpu1: dialog %+v, status %q; want the bench confirmation", m.dialog, m.status)
		}
	}
}
