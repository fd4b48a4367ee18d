package ui

import (
	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/remote/rollout"
	"github.com/bringup-dev/bringup/ui/notify"
)

// signal folds the current snapshot into the signals for a person not
// looking (package notify decides, once per transition) and returns the
// command that prints their sequences; nil when none are due or they are
// off. Bubble Tea writes them: Update does no IO.
func (m *Model) signal() tea.Cmd {
	set := m.opts.Signals
	if !set.Bell && !set.Progress && set.Desktop == notify.DesktopOff {
		return nil
	}
	s := m.signals.Step(m.opts.Now(), m.hosts, m.rolloutProgress())
	if seq := (notify.Encoder{Settings: set, Tmux: m.opts.Tmux}).Encode(s); seq != "" {
		return tea.Raw(seq)
	}
	return nil
}

// rolloutProgress is where the console's rollout stands, for the bar.
func (m *Model) rolloutProgress() notify.Rollout {
	if m.rollout == nil {
		return notify.Rollout{}
	}
	lanes := m.rollout.r.Lanes()
	ro := notify.Rollout{Running: !m.rollout.r.Settled(), Total: len(lanes)}
	for _, l := range lanes {
		if l.Stage.Final() {
			ro.Done++
		}
		if l.Stage == rollout.StageFailed || l.Stage == rollout.StageRollbackFailed {
			ro.Failed = true
		}
	}
	return ro
}

// windowTitle is the terminal's title: the fleet's counts when the title
// signal is on ("bringup · 3/4 serving · 1 failed"), else the header's.
func (m *Model) windowTitle() string {
	if m.opts.Signals.Title {
		return notify.Title(m.table.sums.counts)
	}
	return m.opts.Title
}
