package ui

import (
	"fmt"
	"maps"
	"strings"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
)

// drifts compares, per kernel of the catalog, the build each host's
// service loaded with the local build and with each other; kernels no
// host reports a hash for are left out.
func (m *Model) drifts() map[string]kernels.Drift {
	if c := m.driftsOf; c.v != nil && c.n == len(m.hosts) && (c.n == 0 || c.first == &m.hosts[0]) {
		return c.v
	}
	out := m.computeDrifts()
	m.driftsOf = driftCache{n: len(m.hosts), v: out}
	if len(m.hosts) > 0 {
		m.driftsOf.first = &m.hosts[0]
	}
	return out
}

// driftCache holds drifts' answer for one snapshot, known by its slice:
// a batch brings a new one (and the local hashes with it), so a frame
// between batches reuses the answer instead of comparing every host
// again (twice a frame: header and table; at 10 000 hosts that was a
// third of a frame).
type driftCache struct {
	first *remote.HostState
	n     int
	v     map[string]kernels.Drift
}

// keepDrifts carries the drifts worked out for the snapshot held over to
// b's, before it replaces it, when nothing they rest on changed: b is a
// Delta whose hosts taken anew report the same kernel hashes, and the
// local build's hashes (local before b) are the same.
func (m *Model) keepDrifts(b remote.Batch, local map[string]string) {
	c := &m.driftsOf
	if !b.Delta || c.v == nil || c.n != len(m.hosts) || c.n != len(b.Hosts) || c.n == 0 || c.first != &m.hosts[0] ||
		!maps.Equal(local, m.localHashes) {
		return
	}
	for _, i := range b.Taken {
		if !maps.Equal(m.hosts[i].KernelHashes, b.Hosts[i].KernelHashes) {
			return
		}
	}
	c.first = &b.Hosts[0]
}

// computeDrifts is drifts without the cache.
func (m *Model) computeDrifts() map[string]kernels.Drift {
	out := map[string]kernels.Drift{}
	for _, k := range m.opts.Kernels.Kernels {
		hashes := make(map[string]string, len(m.hosts))
		seen := false
		for i := range m.hosts {
			h := m.hosts[i].KernelHashes[k.Name]
			hashes[m.hosts[i].Name] = h
			seen = seen || h != ""
		}
		if seen {
			out[k.Name] = kernels.CompareHashes(m.localHashes[k.Name], hashes)
		}
	}
	return out
}

// driftBadge is the header's drift badge: "drift 1/4", prefixed with the
// kernel when the catalog has several; "" when nothing drifts.
func (m *Model) driftBadge() string {
	ds := m.drifts()
	var parts []string
	for _, k := range m.opts.Kernels.Kernels {
		d, ok := ds[k.Name]
		if !ok || !d.Drifting() {
			continue
		}
		b := d.Badge()
		if len(m.opts.Kernels.Kernels) > 1 {
			b = k.Name + " " + b
		}
		parts = append(parts, b)
	}
	return strings.Join(parts, " · ")
}

// hostDrifts is each drifting host's badge for the table: "≠build" when
// it runs something other than the local build, "drift" when the build's
// hash is unknown and the host runs another version than most hosts.
func (m *Model) hostDrifts() map[string]string {
	out := map[string]string{}
	for kname, d := range m.drifts() {
		if !d.Drifting() {
			continue
		}
		if d.Differ > 0 {
			for _, h := range d.Differing() {
				out[h] = "≠build"
			}
			continue
		}
		// No local hash: the odd ones out are the hosts off the most
		// common version.
		count := map[string]int{}
		common := ""
		for i := range m.hosts {
			if h := m.hosts[i].KernelHashes[kname]; h != "" {
				count[h]++
				if count[h] > count[common] || count[h] == count[common] && h < common {
					common = h
				}
			}
		}
		for i := range m.hosts {
			if h := m.hosts[i].KernelHashes[kname]; h != "" && h != common && out[m.hosts[i].Name] == "" {
				out[m.hosts[i].Name] = "drift"
			}
		}
	}
	return out
}

// shortHash is the start of a content hash, enough to tell builds apart.
func shortHash(h string) string { return h[:min(len(h), 8)] }

// busy reports whether a's action is under way.
func busy(a *event.ActionResult) bool {
	return a != nil && (a.Stage == event.ActionStarted || a.Stage == event.ActionProgress)
}

// actionProgress is an action under way with a bar when it reports a
// percentage: "redeploy kdtree-verify ███▌░░ 58% · 116/200 files", or
// with barFirst (a narrow table cell) "███▌░░ 58% redeploy kdtree-verify".
func actionProgress(a event.ActionResult, barW int, s Styles, barFirst bool) string {
	t := a.Name + " " + string(a.Stage)
	if a.Percent > 0 || a.Stage == event.ActionProgress {
		b := bar(float64(a.Percent)/100, barW, s) + fmt.Sprintf(" %d%%", a.Percent)
		t = a.Name + " " + b
		if barFirst {
			t = b + " " + a.Name
		}
	}
	if a.Detail != "" {
		t += " · " + a.Detail
	}
	return t
}

// progressLine is the status line while no message shows: the actions
// under way, the selected host's first.
func (m *Model) progressLine(w int) string {
	if m.table.sums.busy == 0 {
		return "" // no action under way: no host to look at
	}
	var parts []string
	sel := m.selectedName()
	for i := range m.hosts {
		h := &m.hosts[i]
		if !busy(h.Action) {
			continue
		}
		p := h.Name + " " + actionProgress(*h.Action, 10, m.styles, false)
		if h.Name == sel {
			parts = append([]string{p}, parts...)
		} else {
			parts = append(parts, p)
		}
	}
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return clip(parts[0], w)
	}
	return clip(parts[0]+fmt.Sprintf(" · +%d more under way", len(parts)-1), w)
}
