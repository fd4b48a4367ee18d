package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/sim/sglang"
	"github.com/bringup-dev/bringup/remote/sim/vllm"
)

// systemd's MESSAGE_IDs for its messages about a unit (logformats.md §6.4).
const (
	midStarting  = "7d4958e842da4a758f6c1cdc7b36dcc5"
	midStarted   = "39f53479d3a045ac8e11786248231fbf"
	midStopping  = "de5b426a63be47a7b6ac3eaac82e2f6f"
	midStopped   = "9d1aaa27d60140bd96365438aad20286"
	midExited    = "98e322203f7a4ed290d09fe03c09fe15"
	midResult    = "d9b373ed55a64feb8242e02dbe79a49c"
	midSuccess   = "7ad2d189f7e94e70a38c781354912448"
	midScheduled = "5eb03494b6584870a536b337290809b3"
)

// Timings of the simulated host, in virtual time.
const (
	gpuEvery     = 5 * time.Second  // GPU sample interval
	probeEvery   = 10 * time.Second // readiness probe interval
	stopTime     = 1500 * time.Millisecond
	restartDelay = 10 * time.Second // RestartSec= of a crash-looping unit
	devices      = 8
)

// HostSpec is one simulated host of a scenario.
type HostSpec struct {
	Name string
	// Engine is the server the host runs: "sglang" (also when empty) or
	// "vllm". Both play the same timeline (Params); they differ in their
	// unit (sglang.service, vllm.service), command line and log texts.
	Engine string
	// Modes is the starting mode of each kernel, by kernel name; kernels
	// not listed start "off".
	Modes map[string]string
	// StartAfter is when, after the fleet starts, systemd starts the unit.
	StartAfter time.Duration
	// Params shape each invocation's log; Seed, Kernel and Failure are
	// filled in per invocation.
	Params sglang.Params
	// Failure is scripted into every invocation (a capture failure needs
	// none: it follows from the kernel mode).
	Failure sglang.Failure
	// Restart makes systemd restart the unit RestartSec after a failure
	// (Restart=on-failure), as a crash loop needs.
	Restart bool
	// ClockOffset is how far the host's clock is off the fleet's: its
	// journal and its lines' own stamps show times that far off, and its
	// connection reports the offset (event.Clock), as a real host's
	// measurement does.
	ClockOffset time.Duration
	// Earlier are the kernel modes of the host's earlier runs (History);
	// nil: the modes it starts with, a mode that is not capture-safe
	// replaced by a safe one.
	Earlier map[string]string
}

// invocation is one run of the unit's main process.
type invocation struct {
	id    string
	pid   int
	start time.Time
	// script is the startup's timeline, whose GPU readings the host
	// reports; lines are what the engine writes over it, in time order.
	script *sglang.Script
	lines  []output
	next   int // index of the next line to emit
	// open is the start of a line the process has not ended yet (a vLLM
	// tqdm bar refreshing in place): journald records it, with whatever
	// the process writes next, at the next newline.
	open string
	// listen is when the server starts accepting connections, ready when
	// /health turns 200; exit when the process exits on its own, with
	// exitCode (each sglang.Never when the startup does not get there).
	listen, ready, exit time.Duration
	exitCode            int
	exited              bool
	probes              int
	// stats counts the engine's periodic stats lines written once ready;
	// rng varies their rate.
	stats int
	rng   *rand.Rand
}

// simStatsEvery is how often a simulated engine prints its stats line
// while it serves: vLLM's interval; SGLang's 40 decode steps are a second
// or two, but a fleet simulated a thousand times faster than life (the
// rollout tests) would spend itself on them.
const simStatsEvery = 10 * time.Second

// statsEvery is how often the engine prints its stats line while it
// serves.
func (h *Host) statsEvery() time.Duration { return simStatsEvery }

// statsDue is when inv's next stats line is due; zero when it prints none
// (not ready, or gone).
func (h *Host) statsDue(inv *invocation) time.Time {
	if inv.exited || inv.ready == sglang.Never {
		return time.Time{}
	}
	return inv.start.Add(inv.ready + time.Duration(inv.stats+1)*h.statsEvery())
}

// statsLine is the engine's stats line at t under a steady load at the
// rate of the mode the invocation started in.
func (h *Host) statsLine(inv *invocation, t time.Time) event.Event {
	inv.stats++
	p := inv.script.Params
	b := sglang.SteadyLoad(p.Rates.Rate(p.Kernel.Mode), inv.stats, inv.rng)
	if h.engine == kernels.EngineVLLM {
		return h.line(t, vllm.StatsLine(p, b, h.local(t)))
	}
	return h.line(t, sglang.Line{Prefix: sglang.PrefixLogger, Tag: " TP0", Text: sglang.DecodeLine(b)}.Render(h.local(t)))
}

// output is one write of the service's process: a line, or (partial) the
// start of one.
type output struct {
	at      time.Duration
	render  func(time.Time) string
	partial bool
}

// Host is a simulated GPU host running one SGLang or vLLM unit. It is a
// deterministic state machine driven by Step; Run drives it in real time.
// Its methods are safe for concurrent use.
type Host struct {
	spec    HostSpec
	engine  string // kernels.EngineSGLang or kernels.EngineVLLM
	unit    string
	catalog kernels.Catalog
	clock   Clock
	seen    func() time.Time
	tick    time.Duration
	wake    chan struct{} // an action queued events; Run should step now

	mu        sync.Mutex
	modes     map[string]string
	undo      map[string]string // kernel → mode before the last change
	deploys   map[string]int    // redeploys per kernel, which change its content hash
	active    string            // ActiveState
	sub       string            // SubState
	result    string
	nRestarts int
	inv       *invocation
	nInv      int
	startAt   time.Time // a start is due then; zero when none is
	autoStart bool      // the due start is systemd's automatic restart
	nextGPU   time.Time
	nextProbe time.Time
	cursor    int
	pending   []event.Event // queued by actions, handed out by the next Step
	// load is the smoke load under way (nil: none); benches counts the
	// loads run, which seeds each one's jitter.
	load    *benchLoad
	benches int
}

// NewHost returns a simulated host whose unit is inactive until
// spec.StartAfter has passed on clock from its current time. Its unit is
// opts.Unit, or its engine's own: sglang.service, vllm.service. An engine
// other than those two is an error.
func NewHost(spec HostSpec, opts Options) (*Host, error) {
	opts = opts.withDefaults()
	engine, unit := kernels.EngineSGLang, "sglang.service"
	switch spec.Engine {
	case "", kernels.EngineSGLang:
	case kernels.EngineVLLM:
		engine, unit = kernels.EngineVLLM, "vllm.service"
	default:
		return nil, fmt.Errorf("simulated host %s: engine %q (want %s or %s)", spec.Name, spec.Engine, kernels.EngineSGLang, kernels.EngineVLLM)
	}
	if opts.Unit != "" {
		unit = opts.Unit
	}
	now := opts.Clock.Now()
	h := &Host{
		spec: spec, engine: engine, unit: unit, catalog: opts.Kernels, clock: opts.Clock, seen: opts.Seen, tick: opts.Tick,
		wake:   make(chan struct{}, 1),
		modes:  map[string]string{},
		active: "inactive", sub: "dead",
		deploys: map[string]int{},
		startAt: now.Add(spec.StartAfter),
		nextGPU: now,
	}
	for k, m := range spec.Modes {
		h.modes[k] = m
	}
	return h, nil
}

// Name is the host's name.
func (h *Host) Name() string { return h.spec.Name }

// Unit is the systemd unit the host runs its server as.
func (h *Host) Unit() string { return h.unit }

// Engine is the server the host runs: sglang or vllm.
func (h *Host) Engine() string { return h.engine }

// Run emits the host's events as the clock reaches them until ctx ends.
// It starts no goroutines.
func (h *Host) Run(ctx context.Context, emit remote.Emit) error {
	if !emit(h.stamp(event.Event{Kind: event.KindConn, Time: h.clock.Now(), Conn: &event.Conn{State: event.ConnUp}})) {
		return nil
	}
	if ev, ok := h.clockEvent(); ok && !emit(ev) {
		return nil
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		now := h.clock.Now()
		for _, ev := range h.Step(now) {
			if !emit(ev) {
				return nil
			}
		}
		timer.Reset(h.sleep(now))
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-h.wake:
		}
	}
}

// sleep is how long Run waits in real time: until the next due event when
// the clock's speed is known, never longer than a tick.
func (h *Host) sleep(now time.Time) time.Duration {
	s, ok := h.clock.(speeder)
	if !ok {
		return h.tick
	}
	h.mu.Lock()
	next := h.nextDue()
	h.mu.Unlock()
	d := time.Duration(float64(next.Sub(now)) / s.Speed())
	return min(max(d, time.Millisecond), h.tick)
}

// Step returns every event due up to now (virtual time), in time order,
// after the events that actions have queued.
func (h *Host) Step(now time.Time) []event.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := append(h.pending, h.advance(now)...)
	h.pending = nil
	return out
}

// advance fires everything due up to now and returns the events.
// Callers hold h.mu.
func (h *Host) advance(now time.Time) []event.Event {
	var out []event.Event
	for {
		t := h.nextDue()
		if t.After(now) {
			return out
		}
		out = append(out, h.fire(t)...)
	}
}

// nextDue is the time of the host's next scheduled event.
func (h *Host) nextDue() time.Time {
	next := h.nextGPU
	consider := func(t time.Time) {
		if !t.IsZero() && t.Before(next) {
			next = t
		}
	}
	consider(h.startAt)
	if inv := h.inv; inv != nil && !inv.exited {
		if inv.next < len(inv.lines) {
			consider(inv.start.Add(inv.lines[inv.next].at))
		}
		if inv.exit != sglang.Never {
			consider(inv.start.Add(inv.exit))
		}
		consider(h.statsDue(inv))
		consider(h.nextProbe)
	}
	consider(h.load.due())
	return next
}

// fire performs what is due at t, in a fixed order so that ties resolve
// the same way every time: a start, a log line, the exit, a probe, a
// bench's requests, a GPU sample.
func (h *Host) fire(t time.Time) []event.Event {
	if !h.startAt.IsZero() && !h.startAt.After(t) {
		return h.start(t)
	}
	if inv := h.inv; inv != nil && !inv.exited {
		if inv.next < len(inv.lines) {
			if l := inv.lines[inv.next]; !inv.start.Add(l.at).After(t) {
				inv.next++
				text := inv.open + l.render(h.local(t))
				inv.open = ""
				if l.partial {
					inv.open = text
					return nil
				}
				return []event.Event{h.line(t, text)}
			}
		}
		if inv.exit != sglang.Never && !inv.start.Add(inv.exit).After(t) {
			return h.exit(t)
		}
		if due := h.statsDue(inv); !due.IsZero() && !due.After(t) {
			return []event.Event{h.statsLine(inv, t)}
		}
		if !h.nextProbe.After(t) {
			h.nextProbe = t.Add(probeEvery)
			return []event.Event{h.probe(t)}
		}
	}
	if due := h.load.due(); !due.IsZero() && !due.After(t) {
		h.benchFire(t) // its progress goes out through the action's emit
		return nil
	}
	h.nextGPU = t.Add(gpuEvery)
	return []event.Event{h.gpu(t)}
}

// stamp fills in the host and the real time the event is seen, and puts
// the event's times on the host's own clock (ClockOffset).
func (h *Host) stamp(ev event.Event) event.Event {
	ev.Host = h.spec.Name
	ev.Seen = h.seen()
	if off := h.spec.ClockOffset; off != 0 {
		ev.Time = ev.Time.Add(off)
		if ev.Unit != nil && !ev.Unit.ExecMainStart.IsZero() {
			u := *ev.Unit
			u.ExecMainStart = u.ExecMainStart.Add(off)
			ev.Unit = &u
		}
	}
	return ev
}

// clockEvent is the host's clock as a real host's connection measures
// it; none when the host's clock is the fleet's.
func (h *Host) clockEvent() (event.Event, bool) {
	off := h.spec.ClockOffset
	if off == 0 {
		return event.Event{}, false
	}
	return h.stamp(event.Event{Kind: event.KindClock, Time: h.clock.Now(), Clock: &event.Clock{Offset: off}}), true
}

// local is the host's own clock at t: what it stamps and prints. The
// host runs on the fleet's clock; only what it shows is off.
func (h *Host) local(t time.Time) time.Time { return t.Add(h.spec.ClockOffset) }

// journal makes a journal event about the unit.
func (h *Host) journal(t time.Time, inv string, pid, prio int, mid, msg string, fields map[string]string) event.Event {
	h.cursor++
	return h.stamp(event.Event{Kind: event.KindJournal, Time: t, Journal: &event.Journal{
		Cursor:       fmt.Sprintf("s=%s;i=%x", h.hash("seqnum"), h.cursor),
		Unit:         h.unit,
		InvocationID: inv,
		PID:          pid,
		Priority:     prio,
		MessageID:    mid,
		Message:      msg,
		Fields:       fields,
	}})
}

// systemd makes a journal event of PID 1 about the unit.
func (h *Host) systemd(t time.Time, prio int, mid, msg string, fields map[string]string) event.Event {
	inv := ""
	if h.inv != nil {
		inv = h.inv.id
	}
	return h.journal(t, inv, 1, prio, mid, msg, fields)
}

// line makes a journal event of a line the service wrote.
func (h *Host) line(t time.Time, msg string) event.Event {
	return h.journal(t, h.inv.id, h.inv.pid, 6, "", msg, nil)
}

// unitEvent reports the unit's state as it is now.
func (h *Host) unitEvent(t time.Time) event.Event {
	u := &event.Unit{
		Name: h.unit, ActiveState: h.active, SubState: h.sub, Result: h.result, NRestarts: h.nRestarts,
		Environment: h.environment(), ExecStart: h.execStart(), Path: "sim",
	}
	for _, k := range h.catalog.Kernels {
		u.DropInPaths = append(u.DropInPaths, fmt.Sprintf("/etc/systemd/system/%s.d/50-%s.conf", h.unit, k.Name))
	}
	if h.inv != nil {
		u.InvocationID = h.inv.id
		u.ExecMainStart = h.inv.start
		if !h.inv.exited {
			u.MainPID = h.inv.pid
		}
	}
	return h.stamp(event.Event{Kind: event.KindUnit, Time: t, Unit: u})
}

func (h *Host) setState(active, sub string) {
	h.active, h.sub = active, sub
}

// description is the unit's Description=, which systemd's job messages quote.
func (h *Host) description() string {
	if h.engine == kernels.EngineVLLM {
		return h.unit + " - vLLM server"
	}
	return h.unit + " - SGLang server"
}

// start begins a new invocation at t.
func (h *Host) start(t time.Time) []event.Event {
	var out []event.Event
	if h.autoStart {
		out = append(out,
			h.systemd(t, 6, midScheduled, fmt.Sprintf("%s: Scheduled restart job, restart counter is at %d.", h.unit, h.nRestarts),
				map[string]string{"N_RESTARTS": fmt.Sprint(h.nRestarts)}),
			h.systemd(t, 6, midStopped, "Stopped "+h.description()+".", map[string]string{"JOB_TYPE": "restart", "JOB_RESULT": "done"}))
	}
	h.startAt, h.autoStart = time.Time{}, false
	out = append(out, h.journal(t, "", 1, 6, midStarting, "Starting "+h.description()+"...", map[string]string{"JOB_TYPE": "start"}))

	h.nInv++
	p := h.spec.Params
	p.Seed = int64(h.nInv)*7919 + int64(len(h.spec.Name))
	p.PID = 4000 + int(h.hash("pid")[0])*8 + h.nInv*97
	p.Failure = h.spec.Failure
	p.Kernel = h.kernel()
	h.inv = &invocation{id: h.hash(fmt.Sprint("invocation", h.nInv)), pid: p.PID, start: t,
		rng: rand.New(rand.NewPCG(uint64(p.Seed), 1))}
	h.play(h.inv, sglang.New(p))
	h.nextProbe = t.Add(probeEvery)
	h.result = "success"
	h.setState("activating", "start")
	out = append(out, h.unitEvent(t))
	// Type=simple: systemd calls the unit started as soon as it has forked.
	h.setState("active", "running")
	out = append(out, h.unitEvent(t),
		h.systemd(t, 6, midStarted, "Started "+h.description()+".", map[string]string{"JOB_TYPE": "start", "JOB_RESULT": "done"}))
	return out
}

// exit ends the invocation with its failure status at t.
func (h *Host) exit(t time.Time) []event.Event {
	code := h.inv.exitCode
	out := append(h.flush(t),
		h.systemd(t, 5, midExited, fmt.Sprintf("%s: Main process exited, code=exited, status=%d/FAILURE", h.unit, code),
			map[string]string{"EXIT_CODE": "exited", "EXIT_STATUS": fmt.Sprint(code), "COMMAND": "ExecStart"}),
		h.systemd(t, 4, midResult, fmt.Sprintf("%s: Failed with result 'exit-code'.", h.unit), map[string]string{"UNIT_RESULT": "exit-code"}))
	h.inv.exited = true
	h.result = "exit-code"
	if h.spec.Restart {
		h.nRestarts++
		h.setState("activating", "auto-restart")
		h.startAt, h.autoStart = t.Add(restartDelay), true
	} else {
		h.setState("failed", "failed")
	}
	return append(out, h.unitEvent(t))
}

// probe is a /health probe of the invocation at t: refused until uvicorn
// listens, 503 until the warmup has passed (SGLang; vLLM listens only
// once it is ready), then 200.
func (h *Host) probe(t time.Time) event.Event {
	inv := h.inv
	inv.probes++
	at := t.Sub(inv.start)
	p := &event.Probe{Path: "/health"}
	switch {
	case inv.listen == sglang.Never || at < inv.listen:
		p.Latency = 300 * time.Microsecond
		p.Err = fmt.Sprintf("dial tcp 127.0.0.1:%d: connect: connection refused", inv.script.Params.Port)
	case inv.ready == sglang.Never || at < inv.ready:
		p.Status, p.Latency = 503, time.Millisecond+time.Duration(inv.probes%4)*100*time.Microsecond
	default:
		// /health generates one token once the server is up.
		p.Status, p.OK, p.Latency = 200, true, 14*time.Millisecond+time.Duration(inv.probes%5)*700*time.Microsecond
	}
	return h.stamp(event.Event{Kind: event.KindProbe, Time: t, Probe: p})
}

// servingUtilPct is a serving GPU's utilisation under the simulated
// steady load, less a device's few points of difference.
const servingUtilPct = 88

// gpu samples the host's eight GPUs at t.
func (h *Host) gpu(t time.Time) event.Event {
	g := &event.GPU{Devices: make([]event.GPUDevice, devices)}
	for i := range g.Devices {
		r := sglang.Idle(i)
		if inv := h.inv; inv != nil && !inv.exited {
			at := t.Sub(inv.start)
			r = inv.script.GPU(at, i)
			if inv.ready != sglang.Never && at >= inv.ready {
				// A simulated engine serves under a steady load (its stats
				// lines say it decodes): its GPUs are busy, not idle.
				r.UtilPct = servingUtilPct + i%5
			}
		}
		g.Devices[i] = event.GPUDevice{Index: i, Name: sglang.GPUName, MemUsedMiB: r.MemUsedMiB,
			MemTotalMiB: sglang.GPUTotalMiB, UtilPct: r.UtilPct, PowerW: r.PowerW}
	}
	return h.stamp(event.Event{Kind: event.KindGPU, Time: t, GPU: g})
}

// kernel describes the first kernel of the catalog that is not off (or
// the first kernel) as the next invocation will load it.
func (h *Host) kernel() sglang.Kernel {
	if len(h.catalog.Kernels) == 0 {
		return sglang.Kernel{}
	}
	k := h.catalog.Kernels[0]
	for _, c := range h.catalog.Kernels {
		if m := h.mode(c.Name); m != "off" {
			k = c
			break
		}
	}
	mode := h.mode(k.Name)
	m, _ := k.Mode(mode)
	return sglang.Kernel{Name: k.Name, Mode: mode, CaptureSafe: m.CaptureSafe || mode == "off", Path: k.PythonPath, Hash: h.kernelHash(k.Name)}
}

func (h *Host) mode(kernel string) string {
	if m := h.modes[kernel]; m != "" {
		return m
	}
	return "off"
}

// environment is the unit's Environment property: the kernels' mode
// variables and their PYTHONPATH entries (and, for vLLM, the usual opt-out
// of its usage reports).
func (h *Host) environment() []string {
	env := []string{"PYTHONUNBUFFERED=1"}
	if h.engine == kernels.EngineVLLM {
		env = append(env, "VLLM_NO_USAGE_STATS=1")
	}
	var paths []string
	for _, k := range h.catalog.Kernels {
		if k.PythonPath != "" {
			paths = append(paths, k.PythonPath)
		}
	}
	if len(paths) > 0 {
		env = append(env, "PYTHONPATH="+strings.Join(paths, ":"))
	}
	for _, k := range h.catalog.Kernels {
		env = append(env, k.EnvVar+"="+h.mode(k.Name))
	}
	return env
}

// execStart is the unit's command line.
func (h *Host) execStart() string {
	p := h.spec.Params
	if h.engine == kernels.EngineVLLM {
		return strings.Join(vllmArgv(p), " ")
	}
	s := fmt.Sprintf("/usr/bin/python3 -m sglang.launch_server --model-path %s --tp %d --host 0.0.0.0 --port %d", p.ModelPath, p.TP, p.Port)
	if p.NNodes > 1 {
		s += fmt.Sprintf(" --nnodes %d --node-rank %d --dist-init-addr %s", p.NNodes, p.NodeRank, p.DistInitAddr)
	}
	if p.DisableCUDAGraph {
		s += " --disable-cuda-graph"
	}
	return s
}

// hash derives a stable hex identifier from the host's name and what.
func (h *Host) hash(what string) string {
	sum := sha256.Sum256([]byte(h.spec.Name + "\x00" + what))
	return hex.EncodeToString(sum[:16])
}

// queue hands events to the next Step and wakes Run. Callers hold h.mu.
func (h *Host) queue(evs ...event.Event) {
	h.pending = append(h.pending, evs...)
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Do performs a on the simulated host. The state changes at once; the
// events it causes come out of Run (or Step) in order with the rest.
func (h *Host) Do(ctx context.Context, a remote.Action, emit remote.Emit) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s on %s: %w", a, h.spec.Name, err)
	}
	if a.Kind == remote.ActBench {
		// A load takes the simulation's time: it waits on the clock
		// outside the lock.
		return h.bench(ctx, a, emit)
	}
	report, err := h.do(a)
	if err == nil && report != nil {
		// Outside the lock: emit blocks while the fleet is busy.
		emit(*report)
	}
	return err
}

// do changes the host's state for a and returns an action report to emit,
// if any.
func (h *Host) do(a remote.Action) (*event.Event, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.clock.Now()
	// Bring the host up to now first, so the action acts on the current
	// state and its events follow everything due before it.
	h.pending = append(h.pending, h.advance(now)...)
	switch a.Kind {
	case remote.ActSetMode:
		k, m, err := h.catalog.ParseAssignment(a.Kernel + "=" + a.Mode)
		if err != nil {
			return nil, fmt.Errorf("set mode on %s: %w", h.spec.Name, err)
		}
		if h.undo == nil {
			h.undo = map[string]string{}
		}
		h.undo[k.Name] = h.mode(k.Name)
		h.modes[k.Name] = m.Name
		// The drop-in changes the Environment at once; the process reads
		// it at its next start.
		h.queue(h.unitEvent(now))
	case remote.ActUndoMode:
		prev, ok := h.undo[a.Kernel]
		if !ok {
			return nil, fmt.Errorf("%s: no mode change of %s to undo in this session", h.spec.Name, a.Kernel)
		}
		h.modes[a.Kernel] = prev
		delete(h.undo, a.Kernel)
		h.queue(h.unitEvent(now))
	case remote.ActRestart:
		if !a.Force {
			// The same capture-safety check a real host's driver makes.
			st := remote.HostState{Name: h.spec.Name, UnitState: event.Unit{Environment: h.environment(), ExecStart: h.execStart()}}
			if pe := remote.Preflight(st, h.catalog, h.engine); pe != nil {
				return nil, pe
			}
		}
		h.stop(now)
		h.startAt, h.autoStart = now.Add(stopTime), false
	case remote.ActStop:
		h.stop(now)
	case remote.ActResetFailed:
		if h.active == "failed" || h.sub == "auto-restart" {
			h.setState("inactive", "dead")
			h.result = "success"
			h.nRestarts = 0
			h.startAt, h.autoStart = time.Time{}, false
			h.queue(h.unitEvent(now))
		}
	case remote.ActRedeploy:
		name := a.Kernel
		if name == "" && len(h.catalog.Kernels) > 0 {
			name = h.catalog.Kernels[0].Name
		}
		k, ok := h.catalog.Kernel(name)
		if !ok {
			return nil, fmt.Errorf("redeploy on %s: unknown kernel %q", h.spec.Name, name)
		}
		h.deploys[k.Name]++
		ev := h.stamp(event.Event{Kind: event.KindAction, Time: now, Action: &event.ActionResult{
			Name: a.String(), Stage: event.ActionProgress,
			Detail: fmt.Sprintf("synced %s (simulated): content sha256 now %s", k.RemoteDir, h.kernelHash(k.Name)),
		}})
		return &ev, nil
	case remote.ActDaemonReload:
		// The simulated unit files never change on disk: the reload
		// changes nothing but says so.
		ev := h.stamp(event.Event{Kind: event.KindAction, Time: now, Action: &event.ActionResult{
			Name: a.String(), Stage: event.ActionProgress, Detail: "unit files and drop-ins re-read (simulated)",
		}})
		return &ev, nil
	case remote.ActBench:
		return nil, errors.New("bench: runs in Do, not do")
	default:
		return nil, fmt.Errorf("%s on %s: unknown action", a.Kind, h.spec.Name)
	}
	return nil, nil
}

// kernelHash is the fake content hash of a kernel's deployed directory,
// which changes with every redeploy.
// kernelHash is the content hash of the kernel build the host has: every
// host starts with the same build (one fleet, one release), and each
// redeploy moves the host to a new one, so hosts drift apart until all are
// redeployed.
func (h *Host) kernelHash(name string) string {
	sum := sha256.Sum256([]byte(fmt.Sprint("kernel build\x00", name, "\x00", h.deploys[name])))
	return hex.EncodeToString(sum[:])
}

// stop stops the unit at now the way systemctl stop does: SIGTERM to a
// running process, which logs its engine's shutdown lines and exits. A
// failed or inactive unit stays as it is. Callers hold h.mu.
func (h *Host) stop(now time.Time) {
	h.startAt, h.autoStart = time.Time{}, false
	if h.sub == "auto-restart" {
		h.setState("inactive", "dead")
		h.queue(h.unitEvent(now))
		return
	}
	if h.inv == nil || h.inv.exited {
		return
	}
	h.queue(h.systemd(now, 6, midStopping, "Stopping "+h.description()+"...", map[string]string{"JOB_TYPE": "stop"}))
	h.setState("deactivating", "stop-sigterm")
	h.queue(h.unitEvent(now))
	h.queue(h.flush(now)...)
	for _, text := range h.stopped(now) {
		h.queue(h.line(now, text))
	}
	// The process exits at once: queued events cannot wait for the clock.
	h.inv.exited = true
	h.queue(h.systemd(now, 6, midSuccess, h.unit+": Deactivated successfully.", nil),
		h.systemd(now, 6, midStopped, "Stopped "+h.description()+".", map[string]string{"JOB_TYPE": "stop", "JOB_RESULT": "done"}))
	h.setState("inactive", "dead")
	h.result = "success"
	h.queue(h.unitEvent(now))
}

// play lays the engine's output over the invocation's timeline: SGLang's
// lines are the timeline's own, vLLM's come from remote/sim/vllm.
func (h *Host) play(inv *invocation, s *sglang.Script) {
	inv.script = s
	if h.engine != kernels.EngineVLLM {
		inv.listen, inv.ready, inv.exit, inv.exitCode = s.Marks.Listening, s.Marks.Ready, s.Exit, s.ExitCode
		for _, l := range s.Lines {
			// A refresh of SGLang's capture bar that does not end its line
			// shows nowhere: the bar's closing line is written whole.
			if !l.Partial {
				inv.lines = append(inv.lines, output{at: l.At, render: l.Render})
			}
		}
		return
	}
	st := vllm.Play(s, vllmArgs(h.spec.Params))
	inv.listen, inv.ready, inv.exit, inv.exitCode = sglang.Never, sglang.Never, st.Exit, st.ExitCode
	for _, l := range st.Lines {
		if l.Listen {
			inv.listen = l.At
		}
		if l.Ready {
			inv.ready = l.At
		}
		// stdout and stderr are one journal stream (StandardError=inherit),
		// so a line left open on one is continued by the next write to
		// either.
		if l.Text != nil {
			inv.lines = append(inv.lines, output{at: l.At, render: l.Text, partial: l.Partial})
		}
	}
}

// flush records the line the process left open, as journald does when
// the process's stream closes. Callers hold h.mu.
func (h *Host) flush(t time.Time) []event.Event {
	if h.inv == nil || h.inv.open == "" {
		return nil
	}
	text := h.inv.open
	h.inv.open = ""
	return []event.Event{h.line(t, text)}
}

// stopped is what the running process writes at t on SIGTERM.
func (h *Host) stopped(t time.Time) []string {
	inv := h.inv
	if h.engine != kernels.EngineVLLM {
		return []string{sglang.Line{Prefix: sglang.PrefixLogger, Text: "SIGTERM received. signum=None frame=None. Draining requests and shutting down..."}.Render(h.local(t))}
	}
	listening := inv.listen != sglang.Never && t.Sub(inv.start) >= inv.listen
	var out []string
	for _, l := range vllm.Stopped(inv.script.Params, listening) {
		out = append(out, l.Text(t))
	}
	return out
}

// vllmPort is vLLM's default port, which its command line then leaves out.
const vllmPort = 8000

// vllmArgv is a vLLM unit's command line for p: `vllm serve MODEL` with
// the tensor-parallel size, the port unless it is vLLM's default, and
// --enforce-eager when CUDA graphs are off.
func vllmArgv(p sglang.Params) []string {
	argv := []string{"/usr/local/bin/vllm", "serve", p.ModelPath, "--tensor-parallel-size", fmt.Sprint(p.TP)}
	if p.Port != vllmPort {
		argv = append(argv, "--port", fmt.Sprint(p.Port))
	}
	if p.DisableCUDAGraph {
		argv = append(argv, "--enforce-eager")
	}
	return argv
}

// vllmArgs is what vllmArgv tells vLLM's "non-default args" line.
func vllmArgs(p sglang.Params) vllm.Args {
	return vllm.Args{ModelTag: p.ModelPath, Set: map[string]bool{"tensor-parallel-size": true, "port": p.Port != vllmPort}}
}
