package ui

import (
	"fmt"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/deployment"
	"github.com/bringup-dev/bringup/remote/event"
)

// stagedPlan is an action on a multi-node deployment that the console
// drives step by step (deployment.Steps, by the action's spec: a restart
// stops every node, then starts them head first): each step goes to the
// source once those it waits for have ended.
type stagedPlan struct {
	sched *deployment.Schedule
	steps int
	ids   map[actionKey]int // an issued step's action → the step
}

// actionKey names one action of one host.
type actionKey struct {
	host string
	id   int
}

// plans are the staged plans under way, and the ends of actions seen
// while any is (an action may end before its step's issue is heard).
type plans struct {
	list  []*stagedPlan
	ended map[actionKey]bool // ok
}

// stepIssued is the source's answer to one step of a plan.
type stepIssued struct {
	plan *stagedPlan
	step int
	actionIssued
}

// withDeployments is hosts with every node of each deployment one of them
// is in: a deployment is acted on as a whole.
func (m *Model) withDeployments(hosts []string) []string {
	out := slices.Clone(hosts)
	for _, h := range hosts {
		if d, _, ok := deployment.Of(m.table.deployments, h); ok {
			for _, n := range d.Hosts() {
				if !slices.Contains(out, n) {
					out = append(out, n)
				}
			}
		}
	}
	return out
}

// planNote says how a deployment among hosts takes a: "gpu3:5000 as a
// whole: stop gpu3, gpu4; then restart gpu3; then restart gpu4"; "" when
// hosts are in none.
func (m *Model) planNote(hosts []string, a remote.Action) string {
	steps, err := deployment.Steps(m.table.deployments, m.withDeployments(hosts), []remote.Action{a})
	if err != nil {
		return err.Error()
	}
	var notes []string
	var group string
	var stages [][]string
	flush := func() {
		if group == "" {
			return
		}
		parts := make([]string, 0, len(stages))
		for _, st := range stages {
			parts = append(parts, strings.Join(st, ", "))
		}
		notes = append(notes, group+" as a whole: "+strings.Join(parts, "; then "))
	}
	for _, s := range steps {
		if s.Group == "" {
			continue
		}
		if s.Group != group {
			flush()
			group, stages = s.Group, nil
		}
		for len(stages) <= s.Stage {
			stages = append(stages, nil)
		}
		stages[s.Stage] = append(stages[s.Stage], string(s.Action.Kind)+" "+s.Host)
	}
	flush()
	return strings.Join(notes, ". ")
}

// notePlan adds to a confirmation's note how a deployment among its
// hosts takes its action.
func (m *Model) notePlan(d *dialog, hosts []string) *dialog {
	if len(hosts) == 0 {
		hosts = []string{d.host}
	}
	if n := m.planNote(hosts, d.action); n != "" {
		if d.note != "" {
			d.note += ". "
		}
		d.note += n
	}
	return d
}

// doPlanned issues a on hosts: on hosts in no deployment at once, as
// before; on a deployment's nodes (all of them) as a staged plan.
func (m *Model) doPlanned(hosts []string, a remote.Action) tea.Cmd {
	steps, err := deployment.Steps(m.table.deployments, m.withDeployments(hosts), []remote.Action{a})
	if err != nil {
		return m.setStatus(err.Error(), true)
	}
	if !slices.ContainsFunc(steps, func(s remote.Step) bool { return s.Group != "" }) {
		return doOn(m.src, hosts, a)
	}
	p := &stagedPlan{sched: deployment.NewSchedule(steps), steps: len(steps), ids: map[actionKey]int{}}
	m.plans.list = append(m.plans.list, p)
	if m.plans.ended == nil {
		m.plans.ended = map[actionKey]bool{}
	}
	return m.advance(p)
}

// advance issues the plan's steps that may go now; a step that never
// will (one it waited for failed) is said in the status line.
func (m *Model) advance(p *stagedPlan) tea.Cmd {
	issue, skip := p.sched.Next()
	var cmds []tea.Cmd
	for _, i := range skip {
		st := p.sched.Step(i)
		cmds = append(cmds, m.setStatus(fmt.Sprintf("%s: %s not issued: a step of %s before it failed", st.Host, st.Action, st.Group), true))
	}
	src := m.src
	for _, i := range issue {
		st := p.sched.Step(i)
		cmds = append(cmds, func() tea.Msg {
			id, err := src.Do(st.Host, st.Action)
			return stepIssued{plan: p, step: i, actionIssued: actionIssued{host: st.Host, action: st.Action, id: id, err: err}}
		})
	}
	m.dropFinished()
	return tea.Batch(cmds...)
}

// stepAnswered takes the source's answer to a step: refused, the step
// failed; issued, its end is awaited (or was already seen).
func (m *Model) stepAnswered(msg stepIssued) tea.Cmd {
	p := msg.plan
	status := m.issued(msg.actionIssued)
	if msg.err != nil {
		p.sched.Ended(msg.step, false)
		return tea.Batch(status, m.advance(p))
	}
	k := actionKey{msg.host, msg.id}
	if ok, seen := m.plans.ended[k]; seen {
		p.sched.Ended(msg.step, ok)
		return tea.Batch(status, m.advance(p))
	}
	p.ids[k] = msg.step
	return status
}

// actionEnded moves the plans on at the end of one of their actions.
func (m *Model) actionEnded(ev event.Event) tea.Cmd {
	if len(m.plans.list) == 0 {
		return nil
	}
	k, ok := actionKey{ev.Host, ev.Action.ID}, ev.Action.Stage == event.ActionDone
	m.plans.ended[k] = ok
	for _, p := range m.plans.list {
		if i, mine := p.ids[k]; mine {
			delete(p.ids, k)
			p.sched.Ended(i, ok)
			return m.advance(p)
		}
	}
	return nil
}

// dropFinished forgets the plans none of whose steps is waiting or under
// way, and the action ends once no plan is left.
func (m *Model) dropFinished() {
	m.plans.list = slices.DeleteFunc(m.plans.list, func(p *stagedPlan) bool {
		for i := range p.steps {
			if st := p.sched.State(i); st == deployment.StepWaiting || st == deployment.StepIssued {
				return false
			}
		}
		return true
	})
	if len(m.plans.list) == 0 {
		m.plans.ended = nil
	}
}
