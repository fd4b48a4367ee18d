package ui

import (
	"slices"

	"bringup/remote"
	"bringup/remote/sanitize"
)

// safe returns s unchanged when it holds no control character, else its
// sanitised form. The fleet sanitises everything already; this is the
// UI's own guard, since whatever reaches the frame reaches the terminal.
func safe(s string) string {
	if !hasControl(s) {
		return s
	}
	return sanitize.String(s)
}

// scrubHost makes every string of a snapshot that the UI shows safe. It
// copies what it changes that the snapshot shares (the diagnosis, the
// mode and evidence slices), and costs one scan per string otherwise.
func scrubHost(h *remote.HostState) {
	for _, p := range []*string{&h.Name, &h.Unit, &h.UnitState.ActiveState, &h.UnitState.SubState,
		&h.Conn.Err, &h.Startup.Engine, &h.Startup.Progress.Label} {
		*p = safe(*p)
	}
	if d := h.Startup.Diag; d != nil {
		c := *d
		c.Evidence = slices.Clone(d.Evidence)
		for _, p := range []*string{&c.Cause, &c.Summary, &c.Hint, &c.KernelMode} {
			*p = safe(*p)
		}
		for i := range c.Evidence {
			c.Evidence[i] = safe(c.Evidence[i])
		}
		h.Startup.Diag = &c
	}
	if len(h.Modes) > 0 {
		h.Modes = slices.Clone(h.Modes)
		for i := range h.Modes {
			h.Modes[i].Kernel, h.Modes[i].Mode = safe(h.Modes[i].Kernel), safe(h.Modes[i].Mode)
		}
	}
	if a := h.Action; a != nil {
		c := *a
		c.Name, c.Detail, c.Err = safe(c.Name), safe(c.Detail), safe(c.Err)
		h.Action = &c
	}
}
