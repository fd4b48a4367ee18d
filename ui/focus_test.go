package ui

import (
	"slices"
	"testing"
)

// TestFocusTransitions: which key, in which focus, leads to which focus.
// Each case brings a fresh model to from, checks it got there, presses
// one key and compares the whole stack, so esc is seen to go back to
// what was under the layer it closes.
func TestFocusTransitions(t *testing.T) {
	t.Parallel() // pure: a model over a fake source
	keys := func(ks ...string) func(*testing.T, *Model) {
		return func(_ *testing.T, m *Model) { press(m, ks...) }
	}
	line := func(pre []string, text string) func(*testing.T, *Model) {
		return keys(append(append(pre, ":"), typed(text)...)...)
	}
	then := func(setup func(*testing.T, *Model, *fakeSource), ks ...string) func(*testing.T, *Model) {
		return func(t *testing.T, m *Model) {
			setup(t, m, nil)
			press(m, ks...)
		}
	}
	var (
		table       = focusStack{focusTable}
		host        = focusStack{focusTable, focusHost}
		ro          = focusStack{focusTable, focusRollout}
		roHost      = focusStack{focusTable, focusRollout, focusHost}
		over        = func(s focusStack, f focus) focusStack { return append(slices.Clone(s), f) }
		runningHost = then(setupRolloutRunning, "enter")
	)
	cases := []struct {
		name  string
		reach func(*testing.T, *Model)
		from  focusStack
		key   string
		to    focusStack
	}{
		{"esc on the table stays", keys(), table, "esc", table},
		{"enter opens the host", keys(), table, "enter", host},
		{"esc leaves the host", keys("enter"), host, "esc", table},

		{"/ opens the host filter", keys(), table, "/", over(table, focusHostFilter)},
		{"host filter: esc", keys("/"), over(table, focusHostFilter), "esc", table},
		{"host filter: enter keeps it", keys(append([]string{"/"}, typed("gpu")...)...), over(table, focusHostFilter), "enter", table},
		{"host filter: : is text", keys("/"), over(table, focusHostFilter), ":", over(table, focusHostFilter)},

		{": opens the palette", keys(), table, ":", over(table, focusPalette)},
		{"palette: esc", keys(":"), over(table, focusPalette), "esc", table},
		{"palette: :host", line(nil, "host gpu2"), over(table, focusPalette), "enter", host},
		{"palette: :help", line(nil, "help"), over(table, focusPalette), "enter", over(table, focusCommands)},
		{"palette: an error keeps it", line(nil, "restart gpu9"), over(table, focusPalette), "enter", over(table, focusPalette)},
		{"palette: a dialog in its place", line(nil, "restart gpu4"), over(table, focusPalette), "enter", over(table, focusDialog)},
		{"commands: esc", keys(append(append([]string{":"}, typed("help")...), "enter")...), over(table, focusCommands), "esc", table},

		{"? opens the help", keys(), table, "?", over(table, focusHelp)},
		{"help: ? closes", keys("?"), over(table, focusHelp), "?", table},
		{"help: esc closes", keys("?"), over(table, focusHelp), "esc", table},
		{"help: : swaps for the palette", keys("?"), over(table, focusHelp), ":", over(table, focusPalette)},
		{"help: other keys do nothing", keys("?"), over(table, focusHelp), "j", over(table, focusHelp)},
		{"@ opens the commands run", keys(), table, "@", over(table, focusActions)},
		{"actions: @ closes", keys("@"), over(table, focusActions), "@", table},
		{"actions: : swaps for the palette", keys("@"), over(table, focusActions), ":", over(table, focusPalette)},
		{"actions: j scrolls", keys("@"), over(table, focusActions), "j", over(table, focusActions)},

		{"m opens a dialog", keys(), table, "m", over(table, focusDialog)},
		{"dialog: a choice leads to the confirmation", keys("m"), over(table, focusDialog), "enter", over(table, focusDialog)},
		{"dialog: y confirms", keys("m", "enter"), over(table, focusDialog), "y", table},
		{"dialog: esc", keys("m"), over(table, focusDialog), "esc", table},
		{"dialog: : does nothing", keys("m"), over(table, focusDialog), ":", over(table, focusDialog)},
		{"preflight: esc", keys("j", "j", "r"), over(table, focusDialog), "esc", table},

		{"R opens the rollout form", keys(), table, "R", over(table, focusRolloutForm)},
		{"rollout form: esc", keys("R"), over(table, focusRolloutForm), "esc", table},
		{"rollout form: enter asks", keys("R", "l"), over(table, focusRolloutForm), "enter", over(table, focusRolloutForm)},
		{"rollout form: esc leaves the question", keys("R", "l", "enter"), over(table, focusRolloutForm), "esc", over(table, focusRolloutForm)},
		{"rollout form: y starts it", keys("R", "l", "enter"), over(table, focusRolloutForm), "y", ro},
		{"rollout form: a refusal in its place", keys("R", "l", "l"), over(table, focusRolloutForm), "enter", over(table, focusDialog)},

		{"host: / opens the log filter", keys("enter"), host, "/", over(host, focusLogFilter)},
		{"log filter: esc", keys("enter", "/"), over(host, focusLogFilter), "esc", host},
		{"log filter: enter", keys("enter", "/", "x"), over(host, focusLogFilter), "enter", host},
		{"log filter: : is text", keys("enter", "/"), over(host, focusLogFilter), ":", over(host, focusLogFilter)},
		{"host: ? and esc", keys("enter", "?"), over(host, focusHelp), "esc", host},
		{"host: r asks", keys("enter"), host, "r", over(host, focusDialog)},
		{"host: the dialog's esc", keys("enter", "r"), over(host, focusDialog), "esc", host},
		{"host: :host in its place", line([]string{"enter"}, "host gpu2"), over(host, focusPalette), "enter", host},
		{"host: :filter goes to the table", line([]string{"enter"}, "filter gpu"), over(host, focusPalette), "enter", table},

		{"rollout: esc", then(setupRolloutRunning), ro, "esc", table},
		{"rollout: enter opens the lane's host", then(setupRolloutRunning), ro, "enter", roHost},
		{"rollout host: esc back to the rollout", runningHost, roHost, "esc", ro},
		{"rollout host: R back to the rollout", runningHost, roHost, "R", ro},
		{"rollout host: :host in its place", func(t *testing.T, m *Model) {
			runningHost(t, m)
			press(m, append([]string{":"}, typed("host gpu3")...)...)
		}, over(roHost, focusPalette), "enter", roHost},
		{"table: R shows the running rollout", then(setupRolloutRunning, "esc"), table, "R", ro},
		{"rollout: :filter goes to the table", then(setupRolloutRunning, append([]string{":"}, typed("filter gpu")...)...), over(ro, focusPalette), "enter", table},
		{"halted rollout: b asks", then(setupRolloutHalted), ro, "b", over(ro, focusDialog)},
		{"halted rollout: the dialog's esc", then(setupRolloutHalted, "b"), over(ro, focusDialog), "esc", ro},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newTestModel(t, 120, 40)
			tc.reach(t, m)
			if !slices.Equal(m.focus, tc.from) {
				t.Fatalf("reached %v, want %v", m.focus, tc.from)
			}
			press(m, tc.key)
			if !slices.Equal(m.focus, tc.to) {
				t.Fatalf("%q in %v: %v, want %v", tc.key, tc.from, m.focus, tc.to)
			}
			if (m.dialog != nil) != m.focus.top().isDialog() {
				t.Fatalf("dialog %+v under focus %v", m.dialog, m.focus.top())
			}
		})
	}
}
