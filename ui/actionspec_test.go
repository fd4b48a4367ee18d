package ui

import (
	"slices"
	"strings"
	"testing"

	"charm.land/bubbles/v2/key"

	"github.com/bringup-dev/bringup/remote"
)

// TestANewActionKeyNeedsNoUIEdit: an action key the console's code does
// not name (as a new spec entry's would be) is listed in the help, refused
// in read-only mode, and otherwise leads to its confirmation and, once
// confirmed, to Do on the selected host.
func TestANewActionKeyNeedsNoUIEdit(t *testing.T) {
	const kind remote.ActionKind = "probe-new"
	add := func(m *Model) {
		m.keys.ActionKeys = append(m.keys.ActionKeys, ActionKey{kind, key.NewBinding(key.WithKeys("Z"), key.WithHelp("Z", "probe"))})
	}
	m, src := newTestModel(t, 120, 40)
	add(m)
	full := m.keys.tableHelp().full
	if col := full[len(full)-1]; !slices.ContainsFunc(col, func(b key.Binding) bool { return b.Help().Key == "Z" }) {
		t.Errorf("the table's help lacks the new key: %v", col)
	}
	press(m, "Z")
	if m.dialog == nil || m.dialog.kind != dlgConfirm || m.dialog.action.Kind != kind {
		t.Fatalf("Z opened %+v, want the confirmation of %s", m.dialog, kind)
	}
	if q := m.dialog.question(); q != "probe-new on gpu1?" {
		t.Errorf("question %q", q)
	}
	runCmd(t, m, press(m, "y"))
	if got := calls(src); len(got) != 1 || got[0].host != "gpu1" || got[0].a.Kind != kind {
		t.Errorf("Do calls %v, want %s on gpu1", got, kind)
	}

	ro, roSrc := newTestModel(t, 120, 40)
	add(ro)
	roSrc.ro = true
	press(ro, "Z")
	if ro.dialog != nil || !strings.HasPrefix(ro.status, "read-only: ") {
		t.Errorf("read-only: dialog %+v, status %q", ro.dialog, ro.status)
	}
}

// TestANewActionInThePalette: a spec's palette entry becomes a palette
// command after the other actions' and before the console's own, and its
// line resolves its hosts and names its action.
func TestANewActionInThePalette(t *testing.T) {
	specs := append(remote.Specs(), remote.ActionSpec{Kind: "probe-new", Changes: true,
		Palette: &remote.PaletteEntry{Name: "probe-new", Args: "HOST…", Help: "probe"}})
	cmds := paletteCommandsOf(specs)
	i := slices.IndexFunc(cmds, func(c paletteCommand) bool { return c.name == "probe-new" })
	if i < 0 || cmds[i+1].name != "rollout" || cmds[i].action != "probe-new" || !cmds[i].hosts {
		t.Fatalf("palette %v", cmds)
	}
	if got, want := len(cmds), len(paletteCommands())+1; got != want {
		t.Errorf("%d commands, want %d", got, want)
	}
	call, err := parsePalette("stop gpu1 gpu2", paletteEnv{hosts: []string{"gpu1", "gpu2"}})
	if err != nil || call.action != remote.ActStop || !slices.Equal(call.hosts, []string{"gpu1", "gpu2"}) {
		t.Errorf("stop: %+v, %v", call, err)
	}
}
