package kernels

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// SafetySource names where a verdict on a mode's capture safety came from.
type SafetySource string

// The sources, in the order Preflight weighs them.
const (
	SourceDeclared SafetySource = "declared" // the catalog's capture_safe
	SourceLint     SafetySource = "lint"     // bringup lint of the kernel's Python
	SourceCheck    SafetySource = "check"    // the kernel's check command, run on the host
)

// Evidence is one verdict on a mode's capture safety beyond the catalog's
// declaration: what the lint found, or what the check proved on a host.
type Evidence struct {
	Source SafetySource  `json:"source"`
	Safe   bool          `json:"safe"`
	Detail string        `json:"detail"`         // the sync found (file:line), the check's cause and line
	Took   time.Duration `json:"took,omitempty"` // how long the check ran
	// Skipped is true for a check a person skipped (--skip-check): it
	// is recorded, and counts neither way.
	Skipped bool `json:"skipped,omitempty"`
}

// PreflightWith is Preflight weighing evidence beside the declaration: a
// restart with CUDA graphs on goes ahead only when the mode is declared
// capture-safe and no lint or check says otherwise. RefusedBy names every
// source that refused, declared first; the reason says the first one's
// detail. Graphs off, nothing refuses.
func PreflightWith(k Kernel, mode, execStart, engine string, ev []Evidence) PreflightResult {
	res := Preflight(k, mode, execStart, engine)
	res.Evidence = ev
	m, known := k.Mode(mode)
	if !known || !res.GraphsOn {
		return res
	}
	if !m.CaptureSafe {
		res.RefusedBy = append(res.RefusedBy, SourceDeclared)
	}
	var first *Evidence
	for i, e := range ev {
		if e.Safe || e.Skipped {
			continue
		}
		res.RefusedBy = append(res.RefusedBy, e.Source)
		if first == nil {
			first = &ev[i]
		}
	}
	if len(res.RefusedBy) == 0 || m.CaptureSafe && first == nil {
		return res
	}
	res.OK = false
	// The mode refused is no safe mode to offer, whatever it declares.
	res.SafeModes = slices.DeleteFunc(slices.Clone(res.SafeModes), func(s string) bool { return s == mode })
	if m.CaptureSafe { // declared safe; the lint or the check found otherwise
		who := "the " + string(first.Source)
		if first.Source == SourceCheck && first.Took > 0 {
			who += fmt.Sprintf(" (%s)", first.Took.Round(100*time.Millisecond))
		}
		res.Reason = fmt.Sprintf("%s=%s is declared capture-safe, but %s says not: %s; refused before the restart", k.Name, mode, who, first.Detail)
		return res
	}
	if first != nil {
		res.Reason += fmt.Sprintf("; the %s agrees: %s", first.Source, first.Detail)
	}
	return res
}

// RefusedByText is res.RefusedBy as words: "declared, check".
func (res PreflightResult) RefusedByText() string {
	parts := make([]string, len(res.RefusedBy))
	for i, s := range res.RefusedBy {
		parts[i] = string(s)
	}
	return strings.Join(parts, ", ")
}
