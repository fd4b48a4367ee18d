package ui

import (
	"image/color"

	"charm.land/bubbles/v2/help"
	"charm.land/lipgloss/v2"

	"github.com/bringup-dev/bringup/remote/startup"
)

// palette is the handful of colours the UI uses, picked for the terminal's
// background. Render code never names a colour; it asks Styles.
type palette struct {
	fg, dim, faint, accent, selBg     color.Color
	red, green, yellow, blue, magenta color.Color
	matchBg                           color.Color
}

func newPalette(isDark bool) palette {
	ld := lipgloss.LightDark(isDark)
	c := lipgloss.Color
	return palette{
		fg:      ld(c("#1c1c1c"), c("#d0d0d0")),
		dim:     ld(c("#6c6c6c"), c("#8a8a8a")),
		faint:   ld(c("#a8a8a8"), c("#585858")),
		accent:  ld(c("#5f00d7"), c("#af87ff")),
		selBg:   ld(c("#dadada"), c("#303030")),
		red:     ld(c("#d70000"), c("#ff5f5f")),
		green:   ld(c("#008700"), c("#5fd75f")),
		yellow:  ld(c("#af8700"), c("#ffd75f")),
		blue:    ld(c("#005fd7"), c("#5fafff")),
		magenta: ld(c("#af00af"), c("#ff87ff")),
		matchBg: ld(c("#ffd75f"), c("#875f00")),
	}
}

// Styles is every style the UI renders with, built once from a palette and
// the background. With NO_COLOR every style is plain: the selection stays
// visible through the cursor gutter, not through colour.
type Styles struct {
	Title    lipgloss.Style // the header's title
	Header   lipgloss.Style // table column headers
	Dim      lipgloss.Style // secondary text
	Selected lipgloss.Style // the cursor row
	Mark     lipgloss.Style // multi-select mark
	Badge    lipgloss.Style // "read-only"

	PhaseFailed, PhaseServing, PhaseStuck, PhaseUnknown lipgloss.Style
	PhaseActive, PhaseStopped, PhaseRestarting          lipgloss.Style

	BarFull  lipgloss.Style
	BarEmpty lipgloss.Style
	Warn     lipgloss.Style // not capture-safe, pending restart

	DiagBorder    lipgloss.Style // the diagnosis box's border
	DiagSummary   lipgloss.Style
	DiagHint      lipgloss.Style
	EvidenceFirst lipgloss.Style
	Evidence      lipgloss.Style

	LogTime   lipgloss.Style
	LogErr    lipgloss.Style // journal priority err and worse
	LogGap    lipgloss.Style
	LogAction lipgloss.Style
	LogMatch  lipgloss.Style // a filter match inside a line
	LogCur    lipgloss.Style // the gutter of the current match
	LogFold   lipgloss.Style // the count at the end of a row of folded ranks' lines
	Rule      lipgloss.Style // pane titles and dividers

	Status    lipgloss.Style
	StatusErr lipgloss.Style

	DialogBorder lipgloss.Style // the border of dialogs and overlays
	DialogTitle  lipgloss.Style
	Choice       lipgloss.Style // the chooser's cursor item

	Help help.Styles

	log   logInks   // the log pane's styles as inks, for the per-line path
	table tableInks // the fleet table's, for the per-cell path
}

// tableInks are the fleet table's per-cell styles reduced to SGR strings:
// lipgloss's Render measures and re-splits its text on every call, which
// at 256 hosts was most of a table frame (five calls a row).
type tableInks struct {
	header, dim, mark, barFull, barEmpty, unknownRow ink
	phase                                            map[startup.Phase]ink
}

// logInks are the log pane's styles reduced to SGR strings.
type logInks struct{ time, err, gap, action, match, cur, mark, fold ink }

func (s *Styles) makeInks() {
	s.log = logInks{time: inkOf(s.LogTime), err: inkOf(s.LogErr), gap: inkOf(s.LogGap),
		action: inkOf(s.LogAction), match: inkOf(s.LogMatch), cur: inkOf(s.LogCur), mark: inkOf(s.Title), fold: inkOf(s.LogFold)}
	s.table = tableInks{header: inkOf(s.Header), dim: inkOf(s.Dim), mark: inkOf(s.Mark),
		barFull: inkOf(s.BarFull), barEmpty: inkOf(s.BarEmpty), unknownRow: inkOf(s.PhaseUnknown),
		phase: map[startup.Phase]ink{}}
	for _, p := range append(startup.All(), "") {
		s.table.phase[p] = inkOf(s.Phase(p))
	}
}

// phaseInk is the ink of phase p (the style Phase gives it).
func (k tableInks) phaseInk(s Styles, p startup.Phase) ink {
	if i, ok := k.phase[p]; ok {
		return i
	}
	return inkOf(s.Phase(p)) // a phase the map was not built with
}

// NewStyles builds the styles for a background; noColor gives plain ones.
func NewStyles(isDark, noColor bool) Styles {
	s := newStyles(isDark, noColor)
	s.makeInks()
	return s
}

func newStyles(isDark, noColor bool) Styles {
	plain := lipgloss.NewStyle()
	if noColor {
		return Styles{
			Title: plain, Header: plain, Dim: plain, Selected: plain, Mark: plain, Badge: plain,
			PhaseFailed: plain, PhaseServing: plain, PhaseStuck: plain, PhaseUnknown: plain,
			PhaseActive: plain, PhaseStopped: plain, PhaseRestarting: plain,
			BarFull: plain, BarEmpty: plain, Warn: plain,
			DiagBorder: plain, DiagSummary: plain, DiagHint: plain, EvidenceFirst: plain, Evidence: plain,
			LogTime: plain, LogErr: plain, LogGap: plain, LogAction: plain, LogMatch: plain, LogCur: plain, LogFold: plain, Rule: plain,
			Status: plain, StatusErr: plain,
			DialogBorder: plain, DialogTitle: plain, Choice: plain,
			Help: help.Styles{Ellipsis: plain, ShortKey: plain, ShortDesc: plain, ShortSeparator: plain,
				FullKey: plain, FullDesc: plain, FullSeparator: plain},
		}
	}
	p := newPalette(isDark)
	fg := func(c color.Color) lipgloss.Style { return plain.Foreground(c) }
	return Styles{
		Title:    fg(p.accent).Bold(true),
		Header:   fg(p.dim).Bold(true),
		Dim:      fg(p.dim),
		Selected: plain.Background(p.selBg).Bold(true),
		Mark:     fg(p.accent).Bold(true),
		Badge:    fg(p.yellow).Bold(true),

		PhaseFailed:     fg(p.red).Bold(true),
		PhaseServing:    fg(p.green).Bold(true),
		PhaseStuck:      fg(p.yellow).Bold(true),
		PhaseUnknown:    fg(p.faint),
		PhaseActive:     fg(p.blue),
		PhaseStopped:    fg(p.dim),
		PhaseRestarting: fg(p.yellow),

		BarFull:  fg(p.blue),
		BarEmpty: fg(p.faint),
		Warn:     fg(p.yellow),

		DiagBorder:    fg(p.red),
		DiagSummary:   fg(p.red).Bold(true),
		DiagHint:      fg(p.green),
		EvidenceFirst: fg(p.fg).Bold(true),
		Evidence:      fg(p.dim),

		LogTime:   fg(p.faint),
		LogErr:    fg(p.red),
		LogGap:    fg(p.yellow).Italic(true),
		LogAction: fg(p.magenta),
		LogMatch:  plain.Background(p.matchBg).Foreground(p.fg),
		LogCur:    fg(p.accent).Bold(true),
		LogFold:   fg(p.accent),
		Rule:      fg(p.dim),

		Status:    fg(p.fg),
		StatusErr: fg(p.red).Bold(true),

		DialogBorder: fg(p.accent),
		DialogTitle:  fg(p.accent).Bold(true),
		Choice:       plain.Background(p.selBg).Foreground(p.accent).Bold(true),

		Help: help.DefaultStyles(isDark),
	}
}

// Phase is the style a phase is drawn in: failed red, serving green, stuck
// yellow, unknown grey, the startup path blue.
func (s Styles) Phase(p startup.Phase) lipgloss.Style {
	switch p {
	case startup.Failed:
		return s.PhaseFailed
	case startup.Serving:
		return s.PhaseServing
	case startup.Stuck:
		return s.PhaseStuck
	case startup.Unknown:
		return s.PhaseUnknown
	case startup.Stopped, "":
		return s.PhaseStopped
	case startup.Restarting:
		return s.PhaseRestarting
	default: // the startup path
	}
	return s.PhaseActive
}
