// Package rollout is a gated rollout over a fleet: apply a kernel mode
// change and/or a redeploy, then restart, host by host (or in batches),
// waiting for each restarted host to serve before touching the next, and
// halting on the first failure with its diagnosis, with a rollback of that
// host to its previous mode on offer.
//
// It is a pure state machine: no IO, no goroutines, and no clock but the
// one in Plan.Now. The loop that drives it is Driver (driver.go), which
// both the `bringup rollout` command and the console's rollout view use.
//
// A host's sequence is [mode change] → [redeploy] → restart, one action at
// a time (the next is issued only when the one before is done, so a failed
// mode change never leads to a restart), then the wait for the restart's
// new invocation to reach serving (the host is done) or fail (the rollout
// halts). The invocation that was running when the restart was issued
// never counts: the new one is recognised by its invocation id or start
// time differing from the ones recorded when the restart was issued, and
// only after the restart action is done. Its failure counts once the unit
// agrees that the process is gone (or after a grace period), so that a
// unit read mid-restart does not fail a host that is starting.
//
// A multi-node deployment (Plan.Deployments) is one step of the rollout:
// its nodes are in one batch, a batch's size counts it as one, they get
// the mode change and are restarted as deployment.Steps plans it (every
// node stopped, then started head first), and the gate is the
// deployment's verdict (deployment.Judge): they serve together, or the
// node that failed first halts the rollout, its peers failing with it.
package rollout

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/deployment"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/startup"
)

// ModeChange is the kernel mode a rollout sets.
type ModeChange struct {
	Kernel string `json:"kernel"`
	Mode   string `json:"mode"`
}

// String is "KERNEL=MODE".
func (m ModeChange) String() string { return m.Kernel + "=" + m.Mode }

// Plan is what a rollout does.
type Plan struct {
	// Hosts are the hosts in rollout order.
	Hosts []string `json:"hosts"`
	// Batch is how many hosts go at once (0 means 1); a deployment of
	// Deployments counts as one.
	Batch int `json:"batch"`
	// Deployments are the fleet's multi-node deployments (the caller
	// reads them: deployment.FromStates); a host that is a node of one is
	// rolled out with its peers, every one of which must be in Hosts.
	Deployments []deployment.Deployment `json:"deployments,omitempty"`
	// Mode is the mode change to apply before the restart; nil for none.
	Mode *ModeChange `json:"mode,omitempty"`
	// Redeploy names the kernel to redeploy before the restart; "" for none.
	Redeploy string `json:"redeploy,omitempty"`
	// Force restarts even though the capture-safety preflight refuses:
	// the person confirmed.
	Force bool `json:"force,omitempty"`
	// SkipCheck: the kernels' capture checks were skipped (--skip-check);
	// each restart says so in its audit line.
	SkipCheck bool `json:"skip_check,omitempty"`
	// Timeout is how long one host may take from its first action to
	// serving before the rollout halts on it; 0 means no limit.
	Timeout time.Duration `json:"timeout,omitempty"`
	// StepTimeout is how long a step may go without word from its action
	// (the door's answer, its start, its progress, its end) before the
	// rollout halts on it, naming the step; 0 means DefaultStepTimeout.
	// The fleet ends every action at its own deadline, so this is the
	// backstop for an answer that never comes back at all.
	StepTimeout time.Duration `json:"step_timeout,omitempty"`
	// Now is the clock for lane times and the timeout (a simulated fleet
	// passes its host-time clock); nil means time.Now.
	Now func() time.Time `json:"-"`
	// Before is each host's previous serving run's decode rate, from the
	// history (the caller looks it up: the rollout does no IO); a host
	// missing has none. A host found serving with a steady rate of its own
	// when the rollout reaches it is compared with that run instead.
	Before map[string]Rate `json:"-"`
	// SlowerBy is the drop against Before that marks a host's new run as
	// slower (0: history.DefaultSlowerBy).
	SlowerBy float64 `json:"-"`
}

// Rate is a run's steady decode rate (tokens/s) and the kernel modes it
// ran with (kernel → mode).
type Rate struct {
	Modes map[string]string `json:"modes,omitempty"`
	TPS   float64           `json:"decode_tps"`
}

// Known reports whether r holds a rate.
func (r Rate) Known() bool { return r.TPS > 0 }

// DefaultStepTimeout is Plan.StepTimeout's default: well past the fleet's
// deadline for systemd's answer (fleet.DefaultSystemdDeadline) and its
// grace, and past the silence between a redeploy's progress reports.
const DefaultStepTimeout = 2 * time.Minute

// Changes are the mode changes the plan makes before each restart, as
// actions: what the preflight applies to see each host as it will start.
func (p Plan) Changes() []remote.Action {
	if p.Mode == nil {
		return nil
	}
	return []remote.Action{{Kind: remote.ActSetMode, Kernel: p.Mode.Kernel, Mode: p.Mode.Mode}}
}

// String says what the plan will do, for the confirmation prompt, e.g.
// "set kdtree-verify=on, then restart, on gpu1, gpu2, gpu3 one at a time,
// waiting for serving".
func (p Plan) String() string {
	var what []string
	if p.Mode != nil {
		what = append(what, "set "+p.Mode.String())
	}
	if p.Redeploy != "" {
		what = append(what, "redeploy "+p.Redeploy)
	}
	what = append(what, "restart")
	pace := "one at a time"
	if p.Batch > 1 {
		pace = fmt.Sprintf("%d at a time", p.Batch)
	}
	var on []string
	grouped := false
	for _, u := range p.units() {
		if u.dep == nil {
			on = append(on, u.hosts[0])
			continue
		}
		grouped = true
		on = append(on, fmt.Sprintf("deployment %s (%s)", u.dep.Name, strings.Join(u.hosts, ", ")))
	}
	out := fmt.Sprintf("%s, on %s %s, waiting for serving", strings.Join(what, ", then "), strings.Join(on, ", "), pace)
	if grouped {
		out += " (a deployment counts as one: its nodes stopped together, started head first, serving together)"
	}
	return out
}

// unit is one step of the rollout: a host, or every node of a
// deployment in rank order.
type unit struct {
	hosts []string
	dep   *deployment.Deployment
}

// units are the plan's steps in the order their first host is listed.
func (p Plan) units() []unit {
	var out []unit
	seen := map[string]bool{}
	for _, h := range p.Hosts {
		d, _, ok := deployment.Of(p.Deployments, h)
		if !ok || len(d.Nodes) < 2 {
			out = append(out, unit{hosts: []string{h}})
			continue
		}
		if seen[d.Name] {
			continue
		}
		seen[d.Name] = true
		out = append(out, unit{hosts: d.Hosts(), dep: &d})
	}
	return out
}

// Step is an action the loop must issue with Fleet.Do, then report with
// Rollout.Issued.
type Step struct {
	Host   string        `json:"host"`
	Action remote.Action `json:"action"`
}

// Status is where the rollout as a whole is.
type Status string

// The statuses.
const (
	Running Status = "running" // hosts are being changed or awaited
	Halted  Status = "halted"  // a host failed (or timed out); the rest are untouched
	Done    Status = "done"    // every host is serving
	Aborted Status = "aborted" // the person stopped it; hosts not reached are untouched
)

// State is the rollout's outcome so far.
type State struct {
	Status Status `json:"status"`
	// Host is the host the rollout halted on.
	Host string `json:"host,omitempty"`
	// Diag is the halted host's diagnosis when its startup failed.
	Diag *startup.Diagnosis `json:"diagnosis,omitempty"`
	// Err is the action error or timeout that halted the rollout (a step
	// that never answered is named there).
	Err string `json:"err,omitempty"`
	// TimedOut says the halt was the per-host timeout (Plan.Timeout).
	TimedOut bool `json:"timed_out,omitempty"`
}

// Stage is where one host is in the rollout.
type Stage string

// The stages of a lane.
const (
	StagePending        Stage = "pending"         // not reached yet
	StageApplying       Stage = "applying"        // mode change or redeploy under way
	StageRestarting     Stage = "restarting"      // restart issued; the new invocation not seen yet
	StageStarting       Stage = "starting"        // the new invocation is starting up
	StageServing        Stage = "serving"         // the new invocation serves
	StageFailed         Stage = "failed"          // an action failed, the startup failed, or it timed out
	StageUntouched      Stage = "untouched"       // the rollout stopped before reaching the host
	StageHalted         Stage = "halted"          // the rollout stopped mid-way on the host, before its restart
	StageRollingBack    Stage = "rolling-back"    // undo of the mode change (and restart) under way
	StageRolledBack     Stage = "rolled-back"     // back in its previous mode (serving again if it was before)
	StageRollbackFailed Stage = "rollback-failed" // the undo failed, or the restarted host did not serve
)

// Final reports whether nothing more will happen to a lane in s unless a
// rollback is asked for.
func (s Stage) Final() bool {
	switch s {
	case StageServing, StageFailed, StageUntouched, StageHalted, StageRolledBack, StageRollbackFailed:
		return true
	default:
		return false
	}
}

// Lane is one host's part of the rollout, for display.
type Lane struct {
	Host string `json:"host"`
	// Deployment names the multi-node deployment the host is a node of,
	// rolled out as one; "" for a host on its own.
	Deployment string `json:"deployment,omitempty"`
	Batch      int    `json:"batch"` // 0-based batch number
	Stage      Stage  `json:"stage"`
	// Action names the action under way ("mode kdtree-verify=on",
	// "restart"), with its latest progress detail in Detail.
	Action  string `json:"action,omitempty"`
	Detail  string `json:"detail,omitempty"`
	Percent int    `json:"percent,omitempty"`
	// Phase and Phases are the startup of the invocation the rollout (or
	// rollback) started; empty until it is seen.
	Phase    startup.Phase    `json:"phase,omitempty"`
	Phases   []startup.Span   `json:"phases,omitempty"`
	Progress startup.Progress `json:"progress,omitzero"`
	// Diag is why the startup failed.
	Diag *startup.Diagnosis `json:"diagnosis,omitempty"`
	// Err is the action error or timeout that failed the lane.
	Err string `json:"err,omitempty"`
	// PrevMode is the mode of Plan.Mode's kernel before the rollout
	// reached the host: what a rollback restores ("" without a mode change,
	// before the host is reached, or when its unit state was not known).
	PrevMode string `json:"prev_mode,omitempty"`
	// Since is when the rollout (or the rollback) began on the host, Until
	// when it ended; zero while not begun / not ended.
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
	// Before is the decode rate of the host's run before the rollout's
	// (Plan.Before, or the run it found serving); After is the steady
	// rate of the run the rollout started, once it serves and its engine
	// has printed enough decode lines (history.SteadyMin). Slower says
	// After dropped against Before by more than Plan.SlowerBy.
	Before Rate `json:"before,omitzero"`
	After  Rate `json:"after,omitzero"`
	Slower bool `json:"slower,omitempty"`
	// ConnErr is why the host is not reached while its connection is not
	// up (its last dial error); "" while it is.
	ConnErr string `json:"conn_error,omitempty"`
}

// Ratio is After against Before (4.7: the new run decodes 4.7 times as
// fast); ok is false until both are known.
func (l Lane) Ratio() (ratio float64, ok bool) {
	if !l.Before.Known() || !l.After.Known() {
		return 0, false
	}
	return l.After.TPS / l.Before.TPS, true
}

// ErrNoRollback is returned by Rollback for a host with nothing to put
// back: the rollout changed no mode on it.
var ErrNoRollback = errors.New("nothing to roll back")

// lane is a Lane with what the machine needs to drive it.
type lane struct {
	Lane
	// group is the deployment the host is a node of; nil for a host on
	// its own. A node's steps come from the group's schedule, cur being
	// the one it is on.
	group    *group
	cur      int
	queue    []remote.Action // actions still to issue, in order
	issuing  bool            // a step was handed out and not reported yet
	inflight int             // id of the action awaited; 0 for none
	kind     remote.ActionKind
	// The step under way: its number in the lane's sequence (from 1), how
	// many the sequence has, and when its action last gave word.
	step, steps int
	heard       time.Time
	// The restart being awaited: done, and the invocation that ran when
	// it was issued (which must not count).
	awaiting    bool
	restartDone bool
	baseInv     string
	baseStart   time.Time
	// failSeen is when the new invocation was first seen failed while its
	// unit still said it ran.
	failSeen time.Time
	// modeIssued says a mode change was issued on the host: there is
	// something to undo.
	modeIssued bool
	// wasRunning says the service was running (or starting) when the
	// rollout reached the host: a rollback restarts it.
	wasRunning bool
	rollback   bool // the lane is in its rollback
}

// group is a deployment's nodes driven as one: the steps that
// deployment.Steps plans for them, scheduled by deployment.Schedule.
type group struct {
	dep   deployment.Deployment
	lanes []*lane // in rank order, the head first
	sched *deployment.Schedule
	n     int // steps in sched
}

// Rollout is the state machine of one rollout. It is not safe for
// concurrent use: its loop owns it.
type Rollout struct {
	plan    Plan
	lanes   []*lane
	byHost  map[string]*lane
	ids     map[int]*lane
	snap    map[string]remote.HostState
	state   State
	batch   int // current batch number
	started bool
}

// New checks p against the catalog and returns the rollout, not started.
func New(p Plan, cat kernels.Catalog) (*Rollout, error) {
	if len(p.Hosts) == 0 {
		return nil, errors.New("rollout: no hosts")
	}
	if p.Batch < 0 {
		return nil, fmt.Errorf("rollout: batch %d: must be at least 1", p.Batch)
	}
	if p.Batch == 0 {
		p.Batch = 1
	}
	if p.Timeout < 0 {
		return nil, fmt.Errorf("rollout: timeout %s: must not be negative", p.Timeout)
	}
	if p.StepTimeout < 0 {
		return nil, fmt.Errorf("rollout: step timeout %s: must not be negative", p.StepTimeout)
	}
	if p.StepTimeout == 0 {
		p.StepTimeout = DefaultStepTimeout
	}
	if p.Mode != nil {
		if _, _, err := cat.ParseAssignment(p.Mode.String()); err != nil {
			return nil, fmt.Errorf("rollout: mode: %w", err)
		}
	}
	if p.Redeploy != "" {
		if _, ok := cat.Kernel(p.Redeploy); !ok {
			return nil, fmt.Errorf("rollout: redeploy: unknown kernel %q", p.Redeploy)
		}
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	p.Hosts = append([]string(nil), p.Hosts...)
	p.Before = maps.Clone(p.Before)
	r := &Rollout{plan: p, byHost: map[string]*lane{}, ids: map[int]*lane{}, snap: map[string]remote.HostState{},
		state: State{Status: Running}}
	seen := map[string]bool{}
	for i, h := range p.Hosts {
		if h == "" {
			return nil, fmt.Errorf("rollout: hosts[%d]: empty name", i)
		}
		if seen[h] {
			return nil, fmt.Errorf("rollout: host %q listed twice", h)
		}
		seen[h] = true
	}
	if _, err := deployment.Steps(p.Deployments, p.Hosts, nil); err != nil {
		return nil, fmt.Errorf("rollout: %w", err)
	}
	for i, u := range p.units() {
		var g *group
		if u.dep != nil {
			g = &group{dep: *u.dep}
		}
		for _, h := range u.hosts {
			l := &lane{Lane: Lane{Host: h, Batch: i / p.Batch, Stage: StagePending}, group: g}
			if g != nil {
				l.Deployment = g.dep.Name
				g.lanes = append(g.lanes, l)
			}
			r.lanes = append(r.lanes, l)
			r.byHost[h] = l
		}
	}
	r.plan.Hosts = make([]string, len(r.lanes))
	for i, l := range r.lanes {
		r.plan.Hosts[i] = l.Host
	}
	return r, nil
}

// Plan is the plan the rollout runs (with its defaults filled in).
func (r *Rollout) Plan() Plan { return r.plan }

// Start begins the rollout on the first batch, given the fleet's latest
// snapshot (each host's mode before the change is recorded from it, for
// the rollback), and returns the steps to issue. Calling it again returns
// nothing.
func (r *Rollout) Start(hosts []remote.HostState) []Step {
	if r.started || r.state.Status != Running {
		return nil
	}
	r.started = true
	r.fold(hosts)
	return r.beginBatch(0)
}

// Issued reports what Fleet.Do returned for s: the action's id, or the
// error that kept it from starting (which fails the host).
func (r *Rollout) Issued(s Step, id int, err error) {
	l, ok := r.byHost[s.Host]
	if !ok || !l.issuing {
		return
	}
	l.issuing = false
	if err != nil {
		r.fail(l, nil, fmt.Sprintf("%s on %s: %v", s.Action, s.Host, err), false)
		return
	}
	l.inflight, l.kind, l.heard = id, s.Action.Kind, r.plan.Now()
	r.ids[id] = l
	if s.Action.Kind == remote.ActRestart {
		st := r.snap[l.Host].Startup
		l.awaiting, l.restartDone, l.failSeen = true, false, time.Time{}
		l.baseInv, l.baseStart = st.InvocationID, st.StartedAt
	}
}

// Observe folds a batch from the fleet: the outcomes of the actions the
// rollout issued, and each host's startup. It returns the steps to issue
// next. An empty batch only checks the timeout.
func (r *Rollout) Observe(b remote.Batch) []Step {
	r.fold(b.Hosts)
	var out []Step
	for _, ev := range b.Events {
		if ev.Kind != event.KindAction || ev.Action == nil {
			continue
		}
		out = append(out, r.onAction(*ev.Action)...)
	}
	for _, l := range r.lanes {
		switch {
		case l.group == nil:
			r.follow(l)
		case l == l.group.lanes[0]:
			r.followGroup(l.group)
		}
		r.rate(l)
		if h, ok := r.snap[l.Host]; ok {
			l.ConnErr = ""
			if h.Conn.State != event.ConnUp {
				l.ConnErr = h.Conn.Err
			}
		}
	}
	r.checkTimeouts()
	if r.state.Status == Running {
		out = append(out, r.advanceBatch()...)
	}
	return out
}

// Rollback undoes the mode change on host after the rollout stopped
// (halted or aborted): the mode's drop-in is put back as it was (undo-mode)
// and, if the service was running when the rollout reached the host, the
// unit is restarted so that it comes back in its previous mode; the
// rollback is over when that restart's invocation serves (rolled-back) or
// fails (rollback-failed). A host that was not running is left stopped or
// failed, in its previous mode. A redeploy is not undone: the previous
// build is not kept.
func (r *Rollout) Rollback(host string) ([]Step, error) {
	l, ok := r.byHost[host]
	switch {
	case !ok:
		return nil, fmt.Errorf("rollback %s: not in the rollout", host)
	case r.state.Status == Running:
		return nil, fmt.Errorf("rollback %s: the rollout is still running", host)
	case l.group != nil:
		return r.rollbackGroup(l.group, host)
	case l.rollback:
		return nil, fmt.Errorf("rollback %s: already rolled back or under way", host)
	case !l.modeIssued || r.plan.Mode == nil:
		return nil, fmt.Errorf("rollback %s: %w: the rollout changed no mode on it", host, ErrNoRollback)
	case l.issuing || l.inflight != 0 && l.kind != remote.ActRestart:
		return nil, fmt.Errorf("rollback %s: an action is still under way; try again when it ends", host)
	}
	r.startRollback(l)
	l.queue = []remote.Action{{Kind: remote.ActUndoMode, Kernel: r.plan.Mode.Kernel}}
	if l.wasRunning {
		l.queue = append(l.queue, remote.Action{Kind: remote.ActRestart})
	}
	l.step, l.steps = 0, len(l.queue)
	return r.next(l), nil
}

// rollbackGroup is Rollback of a deployment's node: the deployment is
// rolled back as a whole (a node put back alone would not rejoin its
// peers), restarted head first if any node was running.
func (r *Rollout) rollbackGroup(g *group, host string) ([]Step, error) {
	issued, running := false, false
	for _, l := range g.lanes {
		switch {
		case l.rollback:
			return nil, fmt.Errorf("rollback %s: deployment %s already rolled back or under way", host, g.dep.Name)
		case l.issuing || l.inflight != 0 && l.kind != remote.ActRestart:
			return nil, fmt.Errorf("rollback %s: an action is still under way on %s (deployment %s); try again when it ends", host, l.Host, g.dep.Name)
		}
		issued = issued || l.modeIssued
		running = running || l.wasRunning
	}
	if !issued || r.plan.Mode == nil {
		return nil, fmt.Errorf("rollback %s: %w: the rollout changed no mode on deployment %s", host, ErrNoRollback, g.dep.Name)
	}
	actions := []remote.Action{{Kind: remote.ActUndoMode, Kernel: r.plan.Mode.Kernel}}
	if running {
		actions = append(actions, remote.Action{Kind: remote.ActRestart})
	}
	for _, l := range g.lanes {
		r.startRollback(l)
	}
	return r.schedule(g, actions), nil
}

// startRollback puts lane l in its rollback, nothing issued yet.
func (r *Rollout) startRollback(l *lane) {
	l.rollback = true
	l.queue = nil
	l.awaiting, l.restartDone, l.inflight, l.failSeen = false, false, 0, time.Time{}
	l.Stage, l.Err, l.Diag = StageRollingBack, "", nil
	l.Phase, l.Phases, l.Progress = "", nil, startup.Progress{}
	l.Since, l.Until = r.plan.Now(), time.Time{}
	l.After, l.Slower = Rate{}, false // the rollout's run is being undone
}

// RollbackTo is the mode a rollback of host puts back, as a change
// (KERNEL=MODE); nil when the rollout changed no mode there.
func (r *Rollout) RollbackTo(host string) *ModeChange {
	l, ok := r.byHost[host]
	if !ok || l.PrevMode == "" || r.plan.Mode == nil {
		return nil
	}
	return &ModeChange{Kernel: r.plan.Mode.Kernel, Mode: l.PrevMode}
}

// Abort stops the rollout: nothing more is issued, hosts not reached stay
// untouched, actions already under way run to their end.
func (r *Rollout) Abort() {
	if r.state.Status != Running {
		return
	}
	r.state = State{Status: Aborted}
	r.stopAll()
}

// State is the rollout's outcome so far.
func (r *Rollout) State() State {
	s := r.state
	if s.Diag != nil {
		d := *s.Diag
		d.Evidence = append([]string(nil), d.Evidence...)
		s.Diag = &d
	}
	return s
}

// Settled reports whether the loop may stop: the rollout is over (done,
// halted or aborted) and no rollback is under way.
func (r *Rollout) Settled() bool {
	if r.state.Status == Running {
		return false
	}
	for _, l := range r.lanes {
		if l.rollback && !l.Stage.Final() {
			return false
		}
	}
	return true
}

// Lanes are the hosts' lanes in plan order, copied.
func (r *Rollout) Lanes() []Lane {
	out := make([]Lane, len(r.lanes))
	for i, l := range r.lanes {
		out[i] = l.Lane
		out[i].Phases = append([]startup.Span(nil), l.Phases...)
		out[i].Before.Modes, out[i].After.Modes = maps.Clone(l.Before.Modes), maps.Clone(l.After.Modes)
		if l.Diag != nil {
			d := *l.Diag
			d.Evidence = append([]string(nil), d.Evidence...)
			out[i].Diag = &d
		}
	}
	return out
}

// fold records the latest snapshot of the plan's hosts.
func (r *Rollout) fold(hosts []remote.HostState) {
	for _, h := range hosts {
		if _, ok := r.byHost[h.Name]; ok {
			r.snap[h.Name] = h
		}
	}
}

// beginBatch starts every host of batch n.
func (r *Rollout) beginBatch(n int) []Step {
	r.batch = n
	var out []Step
	for _, l := range r.lanes {
		switch {
		case l.Batch != n:
		case l.group == nil:
			out = append(out, r.begin(l)...)
		case l == l.group.lanes[0]:
			out = append(out, r.beginGroup(l.group)...)
		}
	}
	return out
}

// begin starts host l's sequence: it records the mode to roll back to and
// whether the service was running, and hands out the first action.
func (r *Rollout) begin(l *lane) []Step {
	r.record(l)
	l.queue = r.actions()
	l.step, l.steps = 0, len(l.queue)
	return r.next(l)
}

// beginGroup starts a deployment's sequence: every node's record, then
// the plan's actions as deployment.Steps plans them for the deployment.
func (r *Rollout) beginGroup(g *group) []Step {
	for _, l := range g.lanes {
		r.record(l)
	}
	return r.schedule(g, r.actions())
}

// schedule plans actions on g's nodes (deployment.Steps) and hands out
// the first steps.
func (r *Rollout) schedule(g *group, actions []remote.Action) []Step {
	steps, err := deployment.Steps([]deployment.Deployment{g.dep}, g.dep.Hosts(), actions)
	if err != nil { // New checked the deployment; kept for a changed one
		r.fail(g.lanes[0], nil, fmt.Sprintf("deployment %s: %v", g.dep.Name, err), false)
		return nil
	}
	g.sched, g.n = deployment.NewSchedule(steps), len(steps)
	for _, l := range g.lanes {
		l.step, l.steps = 0, 0
		for _, s := range steps {
			if s.Host == l.Host {
				l.steps++
			}
		}
	}
	return r.issueGroup(g)
}

// issueGroup hands out the steps of g's schedule that may go now, while
// the rollout (or g's rollback) goes on and none of g's nodes failed.
func (r *Rollout) issueGroup(g *group) []Step {
	for _, l := range g.lanes {
		if l.Stage == StageFailed || l.Stage == StageRollbackFailed || l.Stage == StageHalted ||
			r.state.Status != Running && !l.rollback {
			return nil
		}
	}
	issue, _ := g.sched.Next() // nothing is skipped: a failed step fails the lanes
	var out []Step
	for _, i := range issue {
		s := g.sched.Step(i)
		l := r.byHost[s.Host]
		l.cur = i
		out = append(out, r.hand(l, s.Action))
	}
	return out
}

// actions are the plan's actions on a host, in order.
func (r *Rollout) actions() []remote.Action {
	var out []remote.Action
	if m := r.plan.Mode; m != nil {
		out = append(out, remote.Action{Kind: remote.ActSetMode, Kernel: m.Kernel, Mode: m.Mode})
	}
	if r.plan.Redeploy != "" {
		out = append(out, remote.Action{Kind: remote.ActRedeploy, Kernel: r.plan.Redeploy})
	}
	return append(out, remote.Action{Kind: remote.ActRestart, Force: r.plan.Force, SkipCheck: r.plan.SkipCheck})
}

// record notes, as the rollout reaches host l, the mode to roll back to,
// whether the service was running, and the decode rate before.
func (r *Rollout) record(l *lane) {
	h := r.snap[l.Host]
	if m := r.plan.Mode; m != nil {
		for _, a := range h.Modes { // every kernel of the catalog, "off" when unset
			if a.Kernel == m.Kernel {
				l.PrevMode = a.Mode
			}
		}
	}
	p := h.Startup.Phase
	l.wasRunning = p.Up() || p == startup.Stuck || p == startup.Unknown && h.Startup.LastKnown.Up()
	l.Before = r.plan.Before[l.Host]
	if ab := h.Throughput; ab.Live && ab.TPS > 0 && p == startup.Serving {
		l.Before = Rate{Modes: runModes(h), TPS: ab.TPS}
	}
	l.Since = r.plan.Now()
}

// next hands out l's next action, if any.
func (r *Rollout) next(l *lane) []Step {
	if len(l.queue) == 0 {
		return nil
	}
	a := l.queue[0]
	l.queue = l.queue[1:]
	return []Step{r.hand(l, a)}
}

// hand hands out action a on l's host.
func (r *Rollout) hand(l *lane, a remote.Action) Step {
	l.issuing = true
	l.step++
	l.heard = r.plan.Now()
	l.Action, l.Detail, l.Percent = a.String(), "", 0
	switch {
	case l.rollback:
		l.Stage = StageRollingBack
	case a.Kind == remote.ActRestart || a.Kind == remote.ActStop:
		l.Stage = StageRestarting
	default:
		l.Stage = StageApplying
	}
	if a.Kind == remote.ActSetMode {
		l.modeIssued = true
	}
	return Step{Host: l.Host, Action: a}
}

// onAction folds an outcome of one of the rollout's actions.
func (r *Rollout) onAction(a event.ActionResult) []Step {
	l, ok := r.ids[a.ID]
	if !ok || l.inflight != a.ID {
		return nil
	}
	switch a.Stage {
	case event.ActionStarted, event.ActionProgress:
		l.heard = r.plan.Now()
		if a.Detail != "" {
			l.Detail = a.Detail
		}
		if a.Percent > 0 {
			l.Percent = a.Percent
		}
	case event.ActionFailed:
		l.inflight = 0
		l.awaiting = false
		if l.group != nil {
			l.group.sched.Ended(l.cur, false)
		}
		r.fail(l, nil, fmt.Sprintf("%s on %s: %s", a.Name, l.Host, a.Err), false)
	case event.ActionDone:
		l.inflight = 0
		if l.group != nil {
			return r.groupStepDone(l)
		}
		if l.kind == remote.ActRestart {
			l.restartDone = true
			return nil
		}
		if l.Stage == StageHalted {
			return nil // the rollout stopped while the action ran
		}
		if len(l.queue) == 0 && l.rollback {
			r.finish(l, StageRolledBack) // an undo without a restart
			return nil
		}
		return r.next(l)
	}
	return nil
}

// groupStepDone folds the end of a deployment node's step and hands out
// the steps that may go now; a rollback without a restart is over once
// every node's mode is put back.
func (r *Rollout) groupStepDone(l *lane) []Step {
	g := l.group
	g.sched.Ended(l.cur, true)
	if l.kind == remote.ActRestart {
		l.restartDone = true
	}
	out := r.issueGroup(g)
	if l.rollback && r.groupDone(g) {
		for _, p := range g.lanes {
			if !p.awaiting && !p.Stage.Final() {
				r.finish(p, StageRolledBack)
			}
		}
	}
	return out
}

// groupDone reports whether every step of g's schedule is done.
func (r *Rollout) groupDone(g *group) bool {
	for i := range g.n {
		if g.sched.State(i) != deployment.StepDone {
			return false
		}
	}
	return true
}

// followGroup moves a deployment's nodes along the startups their
// restarts began, and once every node runs its new invocation, gates on
// the deployment's verdict: all serve (only the head says it does), or
// the node that failed first fails, its peers with it.
func (r *Rollout) followGroup(g *group) {
	all := true
	for _, l := range g.lanes {
		h, ok := r.snap[l.Host]
		if !l.awaiting || !ok || !l.restartDone || !l.newRun(h.Startup) {
			all = false
			continue
		}
		st := h.Startup
		l.Phase, l.Phases, l.Progress = st.Phase, st.Spans, st.Progress
		if !l.rollback {
			l.Stage = StageStarting
		}
	}
	if !all {
		return
	}
	v := deployment.Judge(g.dep, r.snap, deployment.Offsets(r.snap))
	switch v.Outcome {
	case deployment.OutcomeServing:
		for _, l := range g.lanes {
			l.awaiting = false
			if l.rollback {
				r.finish(l, StageRolledBack)
			} else {
				r.finish(l, StageServing)
			}
		}
	case deployment.OutcomeFailed:
		first, ok := r.byHost[v.Slowest]
		if !ok || v.Provisional {
			return // its cause, and so the blame, may still change
		}
		now := r.plan.Now()
		if first.failSeen.IsZero() {
			first.failSeen = now
		}
		if !processGone(r.snap[first.Host].UnitState) && now.Sub(first.failSeen) < failGrace {
			return
		}
		first.awaiting = false // its peers, still awaited, fail with it
		r.fail(first, v.Diag, "", false)
	}
}

// follow moves a lane whose restart is awaited along the startup of the
// invocation the restart began.
func (r *Rollout) follow(l *lane) {
	if !l.awaiting {
		return
	}
	h, ok := r.snap[l.Host]
	if !ok {
		return
	}
	st := h.Startup
	fresh := l.newRun(st)
	if !l.restartDone || !fresh {
		return
	}
	l.Phase, l.Phases, l.Progress = st.Phase, st.Spans, st.Progress
	if !l.rollback {
		l.Stage = StageStarting
	}
	switch {
	case st.Phase == startup.Serving:
		l.awaiting = false
		if l.rollback {
			r.finish(l, StageRolledBack)
		} else {
			r.finish(l, StageServing)
		}
	case h.Provisional:
		// Failed, and the journal lines that name the cause may still
		// come: the fleet says when they are in (or will not come).
	case st.Phase == startup.Failed || st.Diag != nil && (st.Phase == startup.Restarting || st.Phase == startup.Unknown):
		now := r.plan.Now()
		if l.failSeen.IsZero() {
			l.failSeen = now
		}
		if processGone(h.UnitState) || now.Sub(l.failSeen) >= failGrace {
			l.awaiting = false
			r.fail(l, st.Diag, "", false)
		}
	default:
		l.failSeen = time.Time{}
	}
}

// newRun says st is of a run other than the one the lane saw before its
// restart: another invocation, or another start time.
func (l *lane) newRun(st startup.Startup) bool {
	return st.InvocationID != "" && st.InvocationID != l.baseInv ||
		!st.StartedAt.IsZero() && !st.StartedAt.Equal(l.baseStart)
}

// rate records the steady decode rate of the run a serving lane's
// restart began, once the fleet has one (HostState.Throughput is live
// only for the run under way). The loop keeps observing after the
// rollout settles, so the last batch's rates still come in.
func (r *Rollout) rate(l *lane) {
	if l.Stage != StageServing || l.rollback {
		return
	}
	h, ok := r.snap[l.Host]
	if !ok {
		return
	}
	st := h.Startup
	fresh := l.newRun(st)
	if ab := h.Throughput; !fresh || st.Phase != startup.Serving || !ab.Live || ab.TPS <= 0 {
		return
	}
	l.After = Rate{Modes: runModes(h), TPS: h.Throughput.TPS}
	drop := r.plan.SlowerBy
	if drop <= 0 {
		drop = history.DefaultSlowerBy
	}
	l.Slower = l.Before.Known() && l.After.TPS < l.Before.TPS*(1-drop)
}

// runModes are the kernel modes h's run started with (the unit's, when
// the run did not say).
func runModes(h remote.HostState) map[string]string {
	if len(h.Startup.Modes) > 0 {
		return kernels.ModeMap(h.Startup.Modes)
	}
	return kernels.ModeMap(h.Modes)
}

// failGrace is how long a failed startup whose unit still says it runs is
// given before the failure counts. A unit read mid-restart can show the
// new invocation id with the old run's "failed" state (seen on real
// hosts); the unit's next reading corrects it.
const failGrace = 30 * time.Second

// processGone reports whether the unit's state says its process has ended
// (or is ending, or is waiting for an automatic restart); an unknown state
// counts as gone, leaving the verdict to the startup.
func processGone(u event.Unit) bool {
	switch u.ActiveState {
	case "", "failed", "inactive", "deactivating":
		return true
	}
	return u.SubState == "auto-restart"
}

// checkTimeouts fails every lane whose step has had no word from its
// action for longer than the plan allows, or that has been under way for
// longer than the plan allows.
func (r *Rollout) checkTimeouts() {
	now := r.plan.Now()
	for _, l := range r.lanes {
		if (l.issuing || l.inflight != 0) && now.Sub(l.heard) > r.plan.StepTimeout {
			what := l.Action
			l.issuing, l.inflight, l.awaiting = false, 0, false
			r.fail(l, nil, fmt.Sprintf("%s: step %d of %d (%s): no answer from its action after %s", l.Host, l.step, l.steps, what, r.plan.StepTimeout), false)
		}
	}
	if r.plan.Timeout <= 0 {
		return
	}
	for _, l := range r.lanes {
		if l.Since.IsZero() || l.Stage.Final() || l.Stage == StagePending || now.Sub(l.Since) <= r.plan.Timeout {
			continue
		}
		l.awaiting = false
		msg := fmt.Sprintf("%s: not serving after %s (stage %s, phase %s)", l.Host, r.plan.Timeout, l.Stage, l.Phase)
		if l.ConnErr != "" {
			msg += ": not reached: " + l.ConnErr
		}
		r.fail(l, nil, msg, true)
	}
}

// advanceBatch starts the next batch once every host of the current one
// serves, and ends the rollout after the last.
func (r *Rollout) advanceBatch() []Step {
	for _, l := range r.lanes {
		if l.Batch == r.batch && l.Stage != StageServing {
			return nil
		}
	}
	if r.batch == r.lanes[len(r.lanes)-1].Batch {
		r.state = State{Status: Done}
		return nil
	}
	return r.beginBatch(r.batch + 1)
}

// fail ends lane l in failure; during the rollout that halts it.
func (r *Rollout) fail(l *lane, d *startup.Diagnosis, msg string, timedOut bool) {
	l.queue = nil
	l.Diag, l.Err = d, msg
	if l.rollback {
		r.finish(l, StageRollbackFailed)
		r.failPeers(l)
		return
	}
	r.finish(l, StageFailed)
	if r.state.Status == Running {
		r.state = State{Status: Halted, Host: l.Host, Diag: d, Err: msg, TimedOut: timedOut}
		r.stopAll()
	} // else a peer of the halted host failing too: its lane says so
	r.failPeers(l)
}

// failPeers fails the nodes of l's deployment that are still under way
// (restarting, or in their rollback) as l fails: a deployment serves only
// whole. Nodes not restarted yet were left where they are by stopAll.
func (r *Rollout) failPeers(l *lane) {
	if l.group == nil {
		return
	}
	rank := l.group.dep.Nodes[slices.Index(l.group.lanes, l)].Rank
	for _, p := range l.group.lanes {
		if p == l || p.Stage.Final() {
			continue
		}
		p.queue, p.awaiting = nil, false
		p.Err = fmt.Sprintf("peer lost (node %d, %s, failed first)", rank, l.Host)
		if p.rollback {
			r.finish(p, StageRollbackFailed)
		} else {
			r.finish(p, StageFailed)
		}
	}
}

// finish puts lane l in its final stage s.
func (r *Rollout) finish(l *lane, s Stage) {
	l.Stage, l.Until = s, r.plan.Now()
	l.Action, l.Detail, l.Percent = "", "", 0
}

// stopAll stops the rollout on every host: those not reached stay
// untouched; those before their restart are left where they are (halted);
// restarts already issued are still followed to their end.
func (r *Rollout) stopAll() {
	now := r.plan.Now()
	for _, l := range r.lanes {
		switch {
		case l.Stage == StagePending:
			l.Stage = StageUntouched
		case l.Stage.Final() || l.awaiting:
		default:
			l.queue = nil
			l.Stage, l.Until = StageHalted, now
		}
	}
}
