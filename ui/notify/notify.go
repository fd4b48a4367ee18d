// Package notify decides when the console signals a person who is not
// looking at it — the tool lives in a background tmux pane during a
// rollout — and spells the signals as terminal sequences: a bell when a
// host fails and when every host serves, the fleet's counts in the window
// title, OSC 9;4 progress while a startup or rollout runs, and optional
// desktop notifications (OSC 9 or OSC 777), passed through tmux where
// tmux would swallow them.
//
// It is pure: a Tracker folds fleet snapshots into the signals due, once
// per transition (not on every frame), and an Encoder turns them into
// bytes. Writing them is the caller's (Bubble Tea's, through tea.Raw).
package notify

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/startup"
)

// The desktop notification sequences Settings.Desktop can name.
const (
	DesktopOff    = ""       // none
	DesktopOSC9   = "osc9"   // OSC 9 ; text: iTerm2, WezTerm, Windows Terminal, ghostty
	DesktopOSC777 = "osc777" // OSC 777 ; notify ; title ; body: urxvt, foot, ghostty, Konsole
)

// Settings say which signals to give. The zero value gives none.
type Settings struct {
	Bell     bool   // BEL when a host fails and when every host serves
	Title    bool   // the fleet's counts in the window title
	Progress bool   // OSC 9;4 progress while a startup or rollout runs
	Desktop  string // DesktopOff, DesktopOSC9 or DesktopOSC777
}

// Defaults are the settings without a notify: section: everything but
// desktop notifications, which not every terminal shows.
func Defaults() Settings { return Settings{Bell: true, Title: true, Progress: true} }

// CheckDesktop validates a desktop setting as written in a config
// ("off" is DesktopOff).
func CheckDesktop(s string) (string, error) {
	switch s {
	case "off", DesktopOff:
		return DesktopOff, nil
	case DesktopOSC9, DesktopOSC777:
		return s, nil
	}
	return "", fmt.Errorf("unknown desktop notification %q (want off, osc9 or osc777)", s)
}

// Counts are the fleet's hosts by where they stand.
type Counts struct {
	Hosts, Serving, Failed, Starting, Other int
}

// Count counts hosts by phase: starting covers every phase on the way to
// serving and an auto-restart scheduled.
func Count(hosts []remote.HostState) Counts {
	c := Counts{Hosts: len(hosts)}
	for _, h := range hosts {
		switch p := h.Startup.Phase; {
		case p == startup.Serving:
			c.Serving++
		case p == startup.Failed || h.Startup.Loop != nil:
			// A crash loop is a failure, whatever run it is in.
			c.Failed++
		case starting(p):
			c.Starting++
		default:
			c.Other++
		}
	}
	return c
}

// starting reports whether p is on the way to serving.
func starting(p startup.Phase) bool {
	return p.Underway() || p == startup.Restarting
}

// Title is the window title for counts: "bringup · 3/4 serving · 1 failed".
func Title(c Counts) string {
	s := fmt.Sprintf("bringup · %d/%d serving", c.Serving, c.Hosts)
	if c.Failed > 0 {
		s += fmt.Sprintf(" · %d failed", c.Failed)
	}
	return s
}

// ProgressState is the state an OSC 9;4 progress bar shows.
type ProgressState int

// The progress states used.
const (
	ProgressNone  ProgressState = iota // no bar: nothing runs
	ProgressOK                         // running, nothing failed
	ProgressError                      // running, something failed
)

// Progress is a progress bar's state and fill (0-100).
type Progress struct {
	State   ProgressState
	Percent int
}

// Note is one desktop notification.
type Note struct {
	Title, Body string
}

// Signals are what is due after one snapshot.
type Signals struct {
	Bell bool
	// Notes are desktop notifications, one per event.
	Notes []Note
	// Progress is the new bar, or nil when it has not changed.
	Progress *Progress
}

// Empty reports whether nothing is due.
func (s Signals) Empty() bool { return !s.Bell && len(s.Notes) == 0 && s.Progress == nil }

// Rollout is where a running rollout stands, for its progress bar.
type Rollout struct {
	Running     bool
	Done, Total int // lanes settled, lanes in all
	Failed      bool
}

// Bell limits: a crash-looping unit (restarting every few seconds) fails
// again and again, and a bell each time teaches a person to ignore the
// bell. A host rings at most once per HostBellEvery, the whole fleet at
// most FleetBells times per FleetBellWindow; the title and the bar still
// follow every change, and a desktop note goes with its bell or not at
// all.
const (
	HostBellEvery   = time.Minute
	FleetBells      = 3
	FleetBellWindow = time.Minute
)

// Tracker remembers what has been signalled. The zero value is ready.
type Tracker struct {
	failed     map[string]bool // hosts failed at the last step
	upSignaled bool            // "every host serving" given since the last startup seen
	sawStart   bool            // a host was starting since the last "every host serving"
	progress   Progress        // the bar as last given
	limit      bellLimit
}

// bellLimit is the bell's rate limit: when each host last rang, and the
// fleet's recent bells.
type bellLimit struct {
	host   map[string]time.Time
	recent []time.Time // the fleet's bells in the last FleetBellWindow, oldest first
}

// allow reports whether key (a host, or "" for the fleet's "every host
// serving") may ring at now, and if so counts the bell.
func (l *bellLimit) allow(key string, now time.Time) bool {
	if last, ok := l.host[key]; ok && now.Sub(last) < HostBellEvery {
		return false
	}
	kept := l.recent[:0]
	for _, t := range l.recent {
		if now.Sub(t) < FleetBellWindow {
			kept = append(kept, t)
		}
	}
	l.recent = kept
	if len(l.recent) >= FleetBells {
		return false
	}
	if l.host == nil {
		l.host = map[string]time.Time{}
	}
	l.host[key] = now
	l.recent = append(l.recent, now)
	return true
}

// Step folds one snapshot at now (the clock the console runs on; the
// demo's is simulated) and a rollout's state, if one runs, and returns
// the signals it makes due: a bell and a note for each host newly failed
// (one that was not failed at the last step), a bell and a note when
// every host serves after a startup was seen, and the progress bar when
// it changed. Bells and their notes are rate limited (HostBellEvery,
// FleetBells per FleetBellWindow); a transition whose bell is held back
// is not rung later.
func (t *Tracker) Step(now time.Time, hosts []remote.HostState, ro Rollout) Signals {
	var s Signals
	failedNow := map[string]bool{}
	for _, h := range hosts {
		if h.Startup.Phase != startup.Failed {
			continue
		}
		failedNow[h.Name] = true
		if !t.failed[h.Name] && t.limit.allow(h.Name, now) {
			s.Bell = true
			s.Notes = append(s.Notes, Note{Title: "bringup: " + h.Name + " failed", Body: failure(h)})
		}
	}
	t.failed = failedNow

	c := Count(hosts)
	if c.Starting > 0 {
		t.sawStart, t.upSignaled = true, false
	}
	if c.Hosts > 0 && c.Serving == c.Hosts && t.sawStart && !t.upSignaled {
		t.sawStart, t.upSignaled = false, true
		if t.limit.allow("", now) {
			s.Bell = true
			s.Notes = append(s.Notes, Note{Title: "bringup: every host serving", Body: fmt.Sprintf("%d/%d serving", c.Serving, c.Hosts)})
		}
	}

	p := progressOf(c, ro)
	if p != t.progress {
		t.progress = p
		s.Progress = &p
	}
	return s
}

// failure is the note's text for a failed host: its diagnosis.
func failure(h remote.HostState) string {
	if d := h.Startup.Diag; d != nil && d.Summary != "" {
		return d.Summary
	}
	return "the unit failed"
}

// progressOf is the bar for counts: a running rollout's settled lanes,
// else, while hosts start, the share serving; none once nothing runs.
func progressOf(c Counts, ro Rollout) Progress {
	state := func(failed bool) ProgressState {
		if failed {
			return ProgressError
		}
		return ProgressOK
	}
	switch {
	case ro.Running && ro.Total > 0:
		return Progress{State: state(ro.Failed), Percent: ro.Done * 100 / ro.Total}
	case c.Starting > 0:
		return Progress{State: state(c.Failed > 0), Percent: c.Serving * 100 / c.Hosts}
	}
	return Progress{}
}

// Encoder spells signals as terminal sequences.
type Encoder struct {
	Settings Settings
	// Tmux wraps what tmux does not handle itself (OSC 9;4, OSC 9, OSC
	// 777) in its DCS passthrough, so that it reaches the terminal tmux
	// runs in (tmux needs `set -g allow-passthrough on` for it). The
	// bell and the title tmux handles itself: they are never wrapped.
	Tmux bool
}

// Encode is the bytes to write for s, under the settings; "" when none.
func (e Encoder) Encode(s Signals) string {
	var b strings.Builder
	if e.Settings.Bell && s.Bell {
		b.WriteByte('\a')
	}
	if e.Settings.Progress && s.Progress != nil {
		b.WriteString(e.pass(progressSeq(*s.Progress)))
	}
	for _, n := range s.Notes {
		switch e.Settings.Desktop {
		case DesktopOSC9:
			b.WriteString(e.pass("\x1b]9;" + clean(n.Title+": "+n.Body) + "\a"))
		case DesktopOSC777:
			// The title may hold no ';': it ends the title.
			b.WriteString(e.pass("\x1b]777;notify;" + strings.ReplaceAll(clean(n.Title), ";", ",") + ";" + clean(n.Body) + "\a"))
		}
	}
	return b.String()
}

// Clipboard is the sequence that puts text on the system clipboard,
// OSC 52 (ESC ] 52 ; c ; base64 BEL). Control characters are dropped
// first, but for the newlines between lines: the text is remote text,
// sanitised where it entered the fleet, and this keeps what lands in the
// clipboard the text the console shows, whatever it is. Inside tmux it
// goes twice: as it is, for tmux itself (with `set -g set-clipboard on`
// tmux keeps it as a paste buffer and hands it to the terminal outside),
// and through the passthrough (with `set -g allow-passthrough on`)
// straight to that terminal. Either setting is enough; with both, the
// same text is set twice.
func (e Encoder) Clipboard(text string) string {
	seq := ansi.SetSystemClipboard(strings.Map(func(r rune) rune {
		if r == '\n' || r >= ' ' && r != 0x7f && (r < 0x80 || r >= 0xa0) {
			return r
		}
		return -1
	}, text))
	if e.Tmux {
		return seq + e.pass(seq)
	}
	return seq
}

// ClearProgress is the sequence that removes the bar, for when the
// console ends; "" when progress is off.
func (e Encoder) ClearProgress() string {
	if !e.Settings.Progress {
		return ""
	}
	return e.pass(ansi.ResetProgressBar)
}

// pass wraps seq for tmux when inside it.
func (e Encoder) pass(seq string) string {
	if e.Tmux {
		return ansi.TmuxPassthrough(seq)
	}
	return seq
}

func progressSeq(p Progress) string {
	switch p.State {
	case ProgressOK:
		return ansi.SetProgressBar(p.Percent)
	case ProgressError:
		return ansi.SetErrorProgressBar(p.Percent)
	default:
		return ansi.ResetProgressBar
	}
}

// maxNote caps a note's text: a notification is a glance, not a log.
const maxNote = 200

// clean drops control characters (an ESC or BEL would end the sequence
// early) and caps the length. The text is already sanitised where it
// entered the fleet; this keeps the sequence well formed whatever it is.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s)
	if r := []rune(s); len(r) > maxNote {
		s = string(r[:maxNote-1]) + "…"
	}
	return s
}
