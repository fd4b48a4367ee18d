// Package event defines the signals that flow up from a host: journal
// entries, unit-state changes, probe results, GPU samples, connection state
// and action results. Every producer (SSH-backed or simulated) emits these,
// and every consumer (the phase engine, the fleet, the recorder) reads them,
// so the package is a leaf: it imports nothing of bringup.
package event

import (
	"fmt"
	"time"
)

// Kind names which payload of an Event is set.
type Kind string

// The kinds of event. Exactly one payload field of Event matches the kind.
const (
	KindJournal Kind = "journal" // a journal entry of the unit (Journal)
	KindUnit    Kind = "unit"    // a unit property change (Unit)
	KindProbe   Kind = "probe"   // a readiness probe result (Probe)
	KindGPU     Kind = "gpu"     // a GPU sample (GPU)
	KindConn    Kind = "conn"    // the host connection changed state (Conn)
	KindAction  Kind = "action"  // an action started, progressed or ended (Action)
	KindGap     Kind = "gap"     // lines may be missing: cursor lost, journald suppression, dropped (Gap)
	KindCommand Kind = "command" // a remote command or D-Bus call bringup made, with its result (Command)
	KindClock   Kind = "clock"   // the host's clock was measured against this one (Clock)
)

// Event is one signal from one host. Time is the host's own timestamp
// (journald __REALTIME_TIMESTAMP, a unit *Timestamp property); Seen is when
// this process received it. Durations are computed from Time only.
type Event struct {
	Host string    `json:"host"`
	Kind Kind      `json:"kind"`
	Time time.Time `json:"time"`
	Seen time.Time `json:"seen"`

	Journal *Journal      `json:"journal,omitempty"`
	Unit    *Unit         `json:"unit,omitempty"`
	Probe   *Probe        `json:"probe,omitempty"`
	GPU     *GPU          `json:"gpu,omitempty"`
	Conn    *Conn         `json:"conn,omitempty"`
	Action  *ActionResult `json:"action,omitempty"`
	Gap     *Gap          `json:"gap,omitempty"`
	Command *Command      `json:"command,omitempty"`
	Clock   *Clock        `json:"clock,omitempty"`
}

// Journal is one journald entry about the watched unit.
type Journal struct {
	Cursor       string `json:"cursor,omitempty"`
	Unit         string `json:"unit,omitempty"`          // _SYSTEMD_UNIT or UNIT
	InvocationID string `json:"invocation_id,omitempty"` // _SYSTEMD_INVOCATION_ID or INVOCATION_ID
	PID          int    `json:"pid,omitempty"`
	Priority     int    `json:"priority"`
	MessageID    string `json:"message_id,omitempty"` // set on systemd's own lines about the unit
	Message      string `json:"message"`              // sanitised text, one line
	Truncated    bool   `json:"truncated,omitempty"`  // the message was cut at the size limit
	// Fields holds the structured extras systemd attaches to its messages
	// (JOB_RESULT, UNIT_RESULT, EXIT_CODE, EXIT_STATUS, N_RESTARTS).
	Fields map[string]string `json:"fields,omitempty"`
}

// Unit is the state of the watched systemd unit as read from the host.
type Unit struct {
	Name string `json:"name"`
	// LoadState is systemd's: "loaded", or "not-found" when the host has
	// no such unit ("masked", "bad-setting", "error"); "" when the source
	// does not say (older recordings, the simulator), read as loaded.
	LoadState     string    `json:"load_state,omitempty"`
	ActiveState   string    `json:"active_state"` // active, activating, deactivating, inactive, failed
	SubState      string    `json:"sub_state"`    // running, start, auto-restart, dead, failed, …
	Result        string    `json:"result,omitempty"`
	InvocationID  string    `json:"invocation_id,omitempty"`
	NRestarts     int       `json:"n_restarts"`
	MainPID       int       `json:"main_pid,omitempty"`
	ExecMainStart time.Time `json:"exec_main_start,omitzero"`
	// Environment is the unit's Environment property (KEY=VALUE), which
	// carries the kernel mode variables the next start will use.
	Environment      []string `json:"environment,omitempty"`
	DropInPaths      []string `json:"drop_in_paths,omitempty"`
	NeedDaemonReload bool     `json:"need_daemon_reload,omitempty"`
	ExecStart        string   `json:"exec_start,omitempty"`
	// Path says how the state was read: "dbus", "stdio-bridge", "systemctl", "sim".
	Path string `json:"path,omitempty"`
	// PropsUnread says the source has not read the unit's properties
	// (Environment, ExecStart, drop-ins): a log store's state from PID 1's
	// journal messages until they are read over SSH. Its kernel modes are
	// unknown then, not "off".
	PropsUnread bool `json:"props_unread,omitempty"`
}

// Loaded reports whether systemd has the unit loaded: false for a unit
// the host does not have (not-found), masked or broken.
func (u Unit) Loaded() bool { return u.LoadState == "" || u.LoadState == "loaded" }

// State is the unit's state as people read it: "active/running", or for a
// unit that is not loaded its load state ("not-found"), with the
// active state when something still runs ("active/running, not-found":
// the unit file went away under a running service).
func (u Unit) State() string {
	s := u.ActiveState + "/" + u.SubState
	switch {
	case u.Loaded():
		return s
	case u.ActiveState == "" || u.ActiveState == "inactive":
		return u.LoadState
	}
	return s + ", " + u.LoadState
}

// Probe is one readiness probe of the service's HTTP endpoint.
type Probe struct {
	Path    string        `json:"path"`
	Status  int           `json:"status"` // HTTP status; 0 when no answer
	OK      bool          `json:"ok"`
	Latency time.Duration `json:"latency"`
	Err     string        `json:"err,omitempty"`
	// Stopped says the prober has stopped (a source that probes only
	// while the host's view is open, the log store's, when it closes): no
	// answer is due until it starts again, so serving no longer waits for
	// one.
	Stopped bool `json:"stopped,omitempty"`
}

// GPU is one sample of every GPU on a host.
type GPU struct {
	Devices []GPUDevice `json:"devices"`
}

// GPUDevice is one GPU's reading in a sample.
type GPUDevice struct {
	Index       int     `json:"index"`
	Name        string  `json:"name,omitempty"`
	MemUsedMiB  int     `json:"mem_used_mib"`
	MemTotalMiB int     `json:"mem_total_mib"`
	UtilPct     int     `json:"util_pct"`
	PowerW      float64 `json:"power_w"`
}

// ConnState is the state of the connection to a host.
type ConnState string

// Connection states.
const (
	ConnConnecting  ConnState = "connecting"
	ConnUp          ConnState = "up"
	ConnDown        ConnState = "down"        // lost; reconnecting with backoff
	ConnUnreachable ConnState = "unreachable" // gave up, or a failure that is never retried (host key, auth)
)

// Clock is a measurement of a host's clock against the local one, made
// once per connection: journal times of hosts whose clocks disagree are
// put on one axis with it (which node of a deployment failed first).
type Clock struct {
	// Offset is the host's clock minus the local clock: a host whose
	// clock is 3 s behind has -3 s.
	Offset time.Duration `json:"offset"`
	// RTT is the round trip the measurement took; the offset is good to
	// within half of it.
	RTT time.Duration `json:"rtt"`
}

// Conn reports a change of the connection to a host.
type Conn struct {
	State ConnState `json:"state"`
	Err   string    `json:"err,omitempty"`
	// Retry is when the next attempt is due, for ConnDown.
	Retry time.Time `json:"retry,omitzero"`
	// HostKeyRisk flags settings of the host's ssh_config that let host
	// keys in unchecked, for the console's warning.
	HostKeyRisk HostKeyRisk `json:"host_key_risk,omitempty"`
}

// HostKeyRisk is a set of ssh_config settings that weaken host key
// checking. It is a set of bits, not text, so that no string from a
// recording reaches the screen through it.
type HostKeyRisk uint8

// The settings HostKeyRisk flags.
const (
	RiskStrictNo       HostKeyRisk = 1 << iota // StrictHostKeyChecking no: unknown keys accepted without asking
	RiskKnownHostsNull                         // UserKnownHostsFile /dev/null: nothing remembered, every contact is a first one
)

// String names the settings, as ssh_config spells them.
func (r HostKeyRisk) String() string {
	var s string
	for _, x := range []struct {
		bit  HostKeyRisk
		name string
	}{{RiskStrictNo, "StrictHostKeyChecking no"}, {RiskKnownHostsNull, "UserKnownHostsFile /dev/null"}} {
		if r&x.bit != 0 {
			if s != "" {
				s += ", "
			}
			s += x.name
		}
	}
	return s
}

// ActionStage says where an action is.
type ActionStage string

// Action stages.
const (
	ActionStarted  ActionStage = "started"
	ActionProgress ActionStage = "progress"
	ActionDone     ActionStage = "done"
	ActionFailed   ActionStage = "failed"
)

// ActionResult reports an action taken on a host.
type ActionResult struct {
	ID      int         `json:"id"`
	Name    string      `json:"name"` // e.g. "restart", "mode kdtree-verify=on"
	Stage   ActionStage `json:"stage"`
	Detail  string      `json:"detail,omitempty"`
	Err     string      `json:"err,omitempty"`
	Percent int         `json:"percent,omitempty"`
	// Done and Total count what the action works through, when it counts
	// (a bench's requests: 24 of 64), for a bar that says n/N.
	Done  int `json:"done,omitempty"`
	Total int `json:"total,omitempty"`
	// Bench is a bench's measurement, on the progress event that ends it
	// (also when it was stopped: Interrupted).
	Bench *Bench `json:"bench,omitempty"`
}

// The smoke load's defaults (remote/bench, the console's b, the simulated
// hosts' load): exactly BenchRequests requests, at most BenchConcurrency
// at a time, BenchMaxTokens tokens each.
const (
	BenchRequests    = 64
	BenchConcurrency = 8
	BenchMaxTokens   = 64
)

// Bench is what a smoke load (`bringup bench`, the console's b) measured
// on one serving host: it lives here, in the leaf package, because the
// action's events carry it up to the fleet, its history and the console.
type Bench struct {
	Model       string `json:"model"`
	Requests    int    `json:"requests"` // sent
	OK          int    `json:"ok"`
	Errors      int    `json:"errors"`
	Concurrency int    `json:"concurrency"`
	// Interrupted says the load was stopped (Ctrl-C, Esc) before all were sent.
	Interrupted bool          `json:"interrupted,omitempty"`
	Duration    time.Duration `json:"duration_ns"`
	ReqPerSec   float64       `json:"req_per_s"`
	// OutputTokens are the completions' tokens (their usage, else the
	// streamed chunks); OutputTPS is them over the duration.
	OutputTokens int     `json:"output_tokens"`
	OutputTPS    float64 `json:"output_tok_per_s"`
	// TTFT is the time to the first streamed token, Latency to the end of
	// the answer, over the requests that succeeded.
	TTFTP50    time.Duration `json:"ttft_p50_ns"`
	TTFTP99    time.Duration `json:"ttft_p99_ns"`
	LatencyP50 time.Duration `json:"latency_p50_ns"`
	LatencyP99 time.Duration `json:"latency_p99_ns"`
	// FirstError is the first error met, for the person reading.
	FirstError string `json:"first_error,omitempty"`
}

// GapHostKey is the Gap reason of a notice, not a loss: a host key was
// learned on first contact (StrictHostKeyChecking accept-new) and added to
// known_hosts. Every reader of the host's log shows it.
const GapHostKey = "host-key"

// Gap says that lines may be missing from the journal view, or carries a
// note about the host for its log ("note", GapHostKey).
type Gap struct {
	Reason  string `json:"reason"`            // "cursor-lost", "suppressed", "dropped", "reconnect", "note", GapHostKey
	Count   int    `json:"count,omitempty"`   // lines known lost, when known
	Message string `json:"message,omitempty"` // human text, sanitised
}

// Command records one thing bringup did on a host for an action: a remote
// command, a D-Bus call, a file transfer. The `@` view lists them.
type Command struct {
	Via      string        `json:"via"`  // "exec", "dbus", "sftp"
	Text     string        `json:"text"` // the command line or call
	Exit     int           `json:"exit"` // exit code, for exec
	Result   string        `json:"result,omitempty"`
	Err      string        `json:"err,omitempty"`
	Duration time.Duration `json:"duration"`
}

// Summary is b in one line, what matters most first (a narrow pane
// clips the end), as the log, the status line and the host view show it:
// "876 output tok/s · 13.7 req/s · TTFT p50 41ms p99 88ms · latency p50
// 610ms p99 930ms · 64/64 ok, 8 at a time".
func (b Bench) Summary() string {
	s := fmt.Sprintf("%.0f output tok/s · %.1f req/s · TTFT p50 %s p99 %s · latency p50 %s p99 %s · %d/%d ok, %d at a time",
		b.OutputTPS, b.ReqPerSec, benchDur(b.TTFTP50), benchDur(b.TTFTP99), benchDur(b.LatencyP50), benchDur(b.LatencyP99), b.OK, b.Requests, b.Concurrency)
	if b.Errors > 0 {
		s += fmt.Sprintf(" · %d errors", b.Errors)
		if b.FirstError != "" {
			s += " (first: " + b.FirstError + ")"
		}
	}
	if b.Interrupted {
		s += " · stopped early"
	}
	return s
}

// benchDur is a latency to the millisecond below 10 s ("41ms", "1.25s").
func benchDur(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}
