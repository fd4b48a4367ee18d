package startup

import "github.com/bringup-dev/bringup/remote/sanitize"

// shownText makes every text of a user's pack that bringup shows (its
// engine's name, a failure's cause id, summary and hint, a phase's
// progress label) safe for a terminal, once, where the pack is read: a
// rule file is text the user did not necessarily write, and a summary
// holding `ESC ] 52` would write to the clipboard of whoever reads the
// diagnosis. Keywords and patterns are matched against sanitised lines,
// so they are left as written.
func shownText(p RulePack) RulePack {
	p.Engine = sanitize.String(p.Engine)
	p.Phases = append([]PhaseRule(nil), p.Phases...)
	for i := range p.Phases {
		p.Phases[i].Label = sanitize.String(p.Phases[i].Label)
	}
	p.Failures = append([]FailureRule(nil), p.Failures...)
	for i := range p.Failures {
		f := &p.Failures[i]
		f.Cause, f.Summary, f.Hint = sanitize.String(f.Cause), sanitize.String(f.Summary), sanitize.String(f.Hint)
	}
	return p
}
