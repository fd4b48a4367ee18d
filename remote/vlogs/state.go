package vlogs

import (
	"slices"
	"strconv"

	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/journal"
)

// PathJournal is the event.Unit Path of a state read from PID 1's journal
// messages: the console's header and status say "state via journal".
const PathJournal = "journal"

// The MESSAGE_IDs of PID 1's messages about a unit (systemd's
// src/systemd/sd-messages.h, the catalog's ids for these events).
const (
	msgStarting        = "7d4958e842da4a758f6c1cdc7b36dcc5" // SD_MESSAGE_UNIT_STARTING: "Starting U..."
	msgStarted         = "39f53479d3a045ac8e11786248231fbf" // SD_MESSAGE_UNIT_STARTED: "Started U."
	msgFailed          = "be02cf6855d2428ba40df7e9d022f03d" // SD_MESSAGE_UNIT_FAILED: "Failed to start U."
	msgStopping        = "de5b426a63be47a7b6ac3eaac82e2f6f" // SD_MESSAGE_UNIT_STOPPING: "Stopping U..."
	msgStopped         = "9d1aaa27d60140bd96365438aad20286" // SD_MESSAGE_UNIT_STOPPED: "Stopped U."
	msgSuccess         = "7ad2d189f7e94e70a38c781354912448" // SD_MESSAGE_UNIT_SUCCESS: "Deactivated successfully."
	msgFailureResult   = "d9b373ed55a64feb8242e02dbe79a49c" // SD_MESSAGE_UNIT_FAILURE_RESULT: "Failed with result 'R'."
	msgRestartSchedule = "5eb03494b6584870a536b337290809b3" // SD_MESSAGE_UNIT_RESTART_SCHEDULED: "Scheduled restart job, restart counter is at N."
)

// unitState folds PID 1's messages about one host's unit into the unit
// state the SSH path reads over D-Bus, as far as the messages tell it:
// active and sub state, result, invocation, restart count. What only
// D-Bus knows (Environment, ExecStart, drop-ins) is empty until withProps
// brings it from an SSH read; the main PID stays empty.
type unitState struct {
	u   event.Unit
	set bool // a message has set it
	// props says the unit's properties were read (withProps): until
	// then the states say PropsUnread.
	props bool
}

// apply reads one entry; it returns the new state when the entry changed
// it. Entries that are not PID 1's about the unit change nothing.
func (s *unitState) apply(unit string, e journal.Entry) (event.Unit, bool) {
	if e.Unit != unit || e.MessageID == "" {
		return event.Unit{}, false
	}
	u := s.u
	u.Name, u.Path, u.LoadState = unit, PathJournal, "loaded"
	if e.InvocationID != "" {
		u.InvocationID = e.InvocationID
	}
	switch e.MessageID {
	case msgStarting:
		u.ActiveState, u.SubState, u.Result = "activating", "start", "success"
		u.ExecMainStart = e.Realtime
	case msgStarted:
		// systemd 252 logs no "Starting" for a Type=simple service: the
		// run begins here, with its own invocation id.
		if u.ActiveState != "active" {
			u.ExecMainStart = e.Realtime
		}
		u.ActiveState, u.SubState, u.Result = "active", "running", "success"
	case msgFailed:
		u.ActiveState, u.SubState = "failed", "failed"
		if u.Result == "" || u.Result == "success" {
			u.Result = "resources"
		}
	case msgStopping:
		u.ActiveState, u.SubState = "deactivating", "stop"
	case msgStopped:
		// The stop of a restart job (JOB_TYPE=restart, after "Scheduled
		// restart job") leaves the unit in auto-restart; a failed unit
		// stays failed.
		if e.Fields["JOB_TYPE"] != "restart" && u.ActiveState != "failed" {
			u.ActiveState, u.SubState = "inactive", "dead"
		}
	case msgSuccess:
		u.ActiveState, u.SubState, u.Result = "inactive", "dead", "success"
	case msgFailureResult:
		u.ActiveState, u.SubState = "failed", "failed"
		if r := e.Fields["UNIT_RESULT"]; r != "" {
			u.Result = r
		}
	case msgRestartSchedule:
		u.ActiveState, u.SubState = "activating", "auto-restart"
		if n, err := strconv.Atoi(e.Fields["N_RESTARTS"]); err == nil {
			u.NRestarts = n
		}
	default:
		return event.Unit{}, false
	}
	if s.set && u.ActiveState == s.u.ActiveState && u.SubState == s.u.SubState && u.Result == s.u.Result &&
		u.InvocationID == s.u.InvocationID && u.NRestarts == s.u.NRestarts {
		return event.Unit{}, false
	}
	s.u, s.set = u, true
	return s.out(), true
}

// out is the state to emit: its own copy of the lists, which the fleet
// sanitises in place.
func (s *unitState) out() event.Unit {
	u := s.u
	u.Environment, u.DropInPaths = slices.Clone(u.Environment), slices.Clone(u.DropInPaths)
	u.PropsUnread = !s.props
	return u
}

// withProps takes the properties the journal does not carry from p, a
// reading of the unit over SSH: Environment (the kernel modes),
// ExecStart, drop-ins, NeedDaemonReload. The state stays the journal's:
// p's own active state may be older or newer than the stream's position.
// It returns the state with them, ok false while the journal has given
// no state yet (they are kept for it).
func (s *unitState) withProps(p event.Unit) (event.Unit, bool) {
	s.u.Environment = p.Environment
	if s.u.Environment == nil {
		// Read, and empty: not "not read" (the tracker keeps the modes it
		// has on nil).
		s.u.Environment = []string{}
	}
	s.u.ExecStart, s.u.DropInPaths, s.u.NeedDaemonReload = p.ExecStart, p.DropInPaths, p.NeedDaemonReload
	s.props = true
	return s.out(), s.set
}
