package ui

import (
	"fmt"
	"strings"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/deployment"
	"github.com/bringup-dev/bringup/remote/rollout"
)

// rolloutForm is the rollout dialog: the hosts (fixed when R is pressed),
// the mode change, the redeploy and the batch size, then a confirmation
// that names the hosts and what will be done to them.
type rolloutForm struct {
	hosts []string
	// deployments are the fleet's: a deployment's nodes go as one step,
	// which a batch's size counts as one.
	deployments []deployment.Deployment
	unit        string
	// modes are "" (no mode change) then every kernel=mode of the catalog;
	// redeploys are "" (none) then every kernel.
	modes, redeploys []string
	mode, redeploy   int // indices into modes and redeploys
	batch            int // 1..len(hosts)
	field            int // the row the cursor is on: 0 mode, 1 redeploy, 2 batch
	confirming       bool
	skipCheck        bool   // the capture checks were skipped (s): the restarts say so
	filter           string // the table's filter the hosts were taken under, if any
}

// Rollout form rows.
const (
	fieldMode = iota
	fieldRedeploy
	fieldBatch
	numFields
)

func newRolloutForm(hosts []string, unit string, cat kernels.Catalog) *rolloutForm {
	f := &rolloutForm{hosts: hosts, unit: unit, modes: []string{""}, redeploys: []string{""}, batch: 1}
	for _, k := range cat.Kernels {
		for _, md := range k.Modes {
			f.modes = append(f.modes, k.Name+"="+md.Name)
		}
		f.redeploys = append(f.redeploys, k.Name)
	}
	return f
}

// plan is the rollout the form describes.
func (f *rolloutForm) plan() rollout.Plan {
	p := rollout.Plan{Hosts: f.hosts, Batch: f.batch, Redeploy: f.redeploys[f.redeploy], Deployments: f.deployments}
	if k, md, ok := strings.Cut(f.modes[f.mode], "="); ok {
		p.Mode = &rollout.ModeChange{Kernel: k, Mode: md}
	}
	return p
}

// change moves the value of the cursor's row by n, wrapping.
func (f *rolloutForm) change(n int) {
	wrap := func(v, size int) int { return ((v+n)%size + size) % size }
	switch f.field {
	case fieldMode:
		f.mode = wrap(f.mode, len(f.modes))
	case fieldRedeploy:
		f.redeploy = wrap(f.redeploy, len(f.redeploys))
	case fieldBatch:
		f.batch = wrap(f.batch-1, len(f.hosts)) + 1
	}
}

// render draws the form, or its confirmation with check (what the lint
// and the capture checks gave, or that they run).
func (f *rolloutForm) render(iw int, s Styles, check []string) []string {
	p := f.plan()
	lines := []string{s.DialogTitle.Render(clip(fmt.Sprintf("Rollout to %d %s", len(f.hosts), plural(len(f.hosts), "host", "hosts")), iw)), ""}
	if f.confirming {
		lines = append(lines, s.DialogTitle.Render(clip("Start the rollout?", iw)))
		lines = append(lines, wrapLines(p.String()+"; halt on the first failure.", iw)...)
		lines = append(lines, wrapLines(fmt.Sprintf("Each %s restarts: it stops serving until its new run is up.", f.unit), iw)...)
		lines = append(lines, check...)
		return append(lines, "", s.Dim.Render(clip("[y/enter] start · [esc] back", iw)))
	}
	mode := "no mode change"
	if p.Mode != nil {
		mode = "set " + p.Mode.String()
	}
	redeploy := "no"
	if p.Redeploy != "" {
		redeploy = "yes, " + p.Redeploy
	}
	rows := []struct{ name, value string }{
		{"mode", mode}, {"redeploy", redeploy}, {"batch", fmt.Sprintf("%d at a time", f.batch)},
	}
	for i, r := range rows {
		line := fmt.Sprintf("  %-9s ‹ %s ›", r.name, r.value)
		if i == f.field {
			lines = append(lines, s.Choice.Render(fit("›"+line[1:], iw)))
			continue
		}
		lines = append(lines, clip(line, iw))
	}
	lines = append(lines, "")
	hosts := "hosts: "
	if f.filter != "" {
		hosts = fmt.Sprintf("hosts (shown by the filter %q): ", f.filter)
	}
	lines = append(lines, wrapLines(hosts+strings.Join(f.hosts, ", "), iw)...)
	return append(lines, "", s.Dim.Render(clip("[↑/↓] field · [←/→] change · [enter] next · [esc] cancel", iw)))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
