package capturelint

import (
	"fmt"

	"github.com/bringup-dev/bringup/kernels"
)

// ForKernel is the Options that resolve k's modes.
func ForKernel(k kernels.Kernel) Options { return Options{EnvVar: k.EnvVar, Modes: k.ModeNames()} }

// ModeVerdict sets what the catalog declares about one mode beside what
// the lint found.
type ModeVerdict struct {
	Mode string `json:"mode"`
	// Declared is the catalog's CaptureSafe.
	Declared bool `json:"declared_capture_safe"`
	// Syncs are the high-confidence findings that reach the mode;
	// Possible the low-confidence ones.
	Syncs    int `json:"syncs"`
	Possible int `json:"possible"`
	// Agree is false when the catalog and the lint disagree: a mode
	// declared capture-safe that a sync reaches, or one declared unsafe
	// in which the lint finds nothing.
	Agree bool   `json:"agree"`
	Note  string `json:"note"`
}

// Compare sets k's declared capture safety beside the report, mode by
// mode. A mode declared unsafe that the lint finds clean is a
// disagreement too, but the weaker one: the lint can miss a sync, so the
// declaration stands.
func Compare(k kernels.Kernel, r Report) []ModeVerdict {
	out := make([]ModeVerdict, 0, len(k.Modes))
	for _, m := range k.Modes {
		v := ModeVerdict{Mode: m.Name, Declared: m.CaptureSafe, Syncs: len(r.Reached(m.Name, High))}
		v.Possible = len(r.Reached(m.Name, Low)) - v.Syncs
		switch {
		case m.CaptureSafe && v.Syncs == 0:
			v.Agree, v.Note = true, "clean: declared capture-safe, no host sync found"
		case m.CaptureSafe:
			v.Note = fmt.Sprintf("DISAGREE: declared capture-safe, but %d host sync(s) reach it", v.Syncs)
		case v.Syncs > 0:
			v.Agree, v.Note = true, fmt.Sprintf("not capture-safe: declared so, and %d host sync(s) reach it", v.Syncs)
		default:
			v.Note = "DISAGREE: declared not capture-safe, but the lint finds no sync (it can miss one: the declaration stands)"
		}
		out = append(out, v)
	}
	return out
}

// Unsafe reports whether a verdict refuses its mode: declared unsafe, or
// reached by a sync.
func (v ModeVerdict) Unsafe() bool { return !v.Declared || v.Syncs > 0 }

// Evidence is the lint's verdict on mode, for kernels.PreflightWith: safe
// when no high-confidence finding reaches it, else the first sync's place.
func (r Report) Evidence(mode string) kernels.Evidence {
	syncs := r.Reached(mode, High)
	if len(syncs) == 0 {
		return kernels.Evidence{Source: kernels.SourceLint, Safe: true, Detail: "no host sync found"}
	}
	f := syncs[0]
	d := fmt.Sprintf("%s:%d %s in %s", f.File, f.Line, f.Call, f.Func)
	if len(syncs) > 1 {
		d += fmt.Sprintf(" (and %d more)", len(syncs)-1)
	}
	return kernels.Evidence{Source: kernels.SourceLint, Detail: d}
}
