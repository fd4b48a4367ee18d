package startup

import "time"

// Settler says when a failed run's cause is settled: when a reader that
// acts on it (a rollout, `bringup watch`) may take it, no journal line
// still to come able to change it. It runs on the reader's wall clock, not
// on host time, since what it waits for is lines still on their way.
//
// A failure is provisional while any of these holds, and for at most the
// settle wait after it was first seen or after the last journal line that
// followed it, whichever is later:
//   - the cause is not settled (Diagnosis.Settled): only the unit's state
//     or a wrapper explains it yet;
//   - the journal has not shown the run's end (Startup.LogEnded): systemd's
//     D-Bus signal beats the journal, and journald stamps a line when it
//     reads it, so the lines that place the failure may still come;
//   - the unit's state has not named the failed run: it may be an earlier
//     run replayed from the journal's backlog, its own end included, and
//     only once its lines go quiet has the backlog reached the current run.
//
// The wait restarts with every journal line: a failed run's log can take
// longer than the wait to arrive (a long log caught up, a follow started
// after the unit's state was read), and while its lines still come the
// traceback that places the failure may be among them. Until the host's
// first line the wait is FirstLineExtra longer: a fleet starts its hosts'
// journal follows once its table of unit states is full, seconds after a
// host's own state said failed, and a failure settled before its log
// arrived would be settled on the unit's state alone.
//
// A Settler is one host's; it is not safe for concurrent use.
type Settler struct {
	wait time.Duration
	// firstLine and running are FirstLineExtra and RunningWait unless
	// set otherwise (NewSettlerWith).
	firstLine, running time.Duration
	// failKey names the failure last found provisional, first seen at
	// failWall; provisional is the last answer.
	failKey     string
	failWall    time.Time
	provisional bool
	// isRunning: the failure last found provisional is the engine's word
	// while its process still runs (RunningWait).
	isRunning bool
	// lineWall is when the host's last journal line arrived.
	lineWall time.Time
}

// NewSettler returns a settler whose failures wait wait after their last
// line.
func NewSettler(wait time.Duration) Settler {
	return Settler{wait: wait, firstLine: FirstLineExtra, running: RunningWait}
}

// NewSettlerWith is NewSettler with its own FirstLineExtra and RunningWait
// (zero: the default): a test fleet's short settle wants short ones too.
func NewSettlerWith(wait, firstLine, running time.Duration) Settler {
	s := NewSettler(wait)
	if firstLine > 0 {
		s.firstLine = firstLine
	}
	if running > 0 {
		s.running = running
	}
	return s
}

// Heard notes that a journal line of the host arrived at wall.
func (s *Settler) Heard(wall time.Time) { s.lineWall = wall }

// Provisional says whether st's failure is provisional at wall, given the
// invocation id the unit's state names now (unitRun; "" when it names
// none). When it is, wake is when it settles unless another line comes
// first; otherwise wake is zero.
func (s *Settler) Provisional(st Startup, unitRun string, wall time.Time) (provisional bool, wake time.Time) {
	s.provisional = false
	s.isRunning = st.UnitActive && !st.LogEnded && st.Phase == Failed
	if !s.waits(st, unitRun) {
		return false, time.Time{}
	}
	if key := st.InvocationID + "|" + st.PhaseSince.String(); key != s.failKey {
		s.failKey, s.failWall = key, wall
	}
	wake = s.Wake()
	s.provisional = wall.Before(wake)
	if !s.provisional {
		return false, time.Time{}
	}
	return true, wake
}

// waits says whether st's failure is one that waits for its lines: failed,
// and either not yet explained, or its end not yet read, or not the run
// the unit's state names.
func (s *Settler) waits(st Startup, unitRun string) bool {
	// A run that failed and waits for systemd's restart of the unit
	// (Restart=) is as failed: its cause settles the same way.
	if st.Phase != Failed && !(st.Phase == Restarting && st.Diag != nil) {
		return false
	}
	named := unitRun != "" && unitRun == st.InvocationID
	return !named || !st.Diag.Settled() || !st.LogEnded
}

// FirstLineExtra is how much longer than the settle wait a failure waits
// for the host's first journal line: a live fleet holds each host's follow
// until every host's state is read, at most 5 s (live.TableFirstWait).
const FirstLineExtra = 5 * time.Second

// RunningWait is the settle wait of a failure the engine reported while
// its process still runs (the unit active, no end in the journal): the
// rest of its log, the traceback that names the cause among it, is still
// to come, however slowly it comes (a wrapper's "Received sigquit from a
// child process" nine lines before the child's exception, seen settled on
// the wrapper when a delivery stalled past the settle wait).
const RunningWait = 10 * time.Second

// Wake is when the failure last found provisional settles unless a line
// comes first: the settle wait after it was first seen or after its last
// line, whichever is later; with no line heard yet, FirstLineExtra more.
// While the failed run's process still runs the wait is RunningWait.
func (s *Settler) Wake() time.Time {
	wait := s.wait
	if s.isRunning {
		wait = max(wait, s.running)
	}
	if s.lineWall.IsZero() {
		return s.failWall.Add(wait + s.firstLine)
	}
	from := s.failWall
	if s.lineWall.After(from) {
		from = s.lineWall
	}
	return from.Add(wait)
}

// Due says whether the failure last found provisional has waited its wait
// out at wall, counting the lines heard since: it settles at the next
// look (Provisional).
func (s *Settler) Due(wall time.Time) bool {
	return s.provisional && !wall.Before(s.Wake())
}

// Pending says whether the last answer was provisional: the failure is to
// be looked at again by its Wake.
func (s *Settler) Pending() bool { return s.provisional }
