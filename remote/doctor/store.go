package doctor

import (
	"fmt"
	"time"

	"github.com/bringup-dev/bringup/remote/vlogs"
)

// skewLimit is how far ahead of this machine a host's newest entry may be
// before its clock is called wrong: phase durations are the host's own,
// but a clock ahead puts its lines in the future of the tail's window.
const skewLimit = 5 * time.Second

// StoreSurvey is one look at the log store for every host (vlogs
// Source.Survey), which Store turns into each host's checks.
type StoreSurvey struct {
	URL      string
	LookBack time.Duration
	Arrivals map[string]vlogs.Arrival
	Err      error     // the store did not answer
	At       time.Time // when the survey ran (this machine's clock)
}

// Store adds the log store's checks to rep: that the store answers, that
// the host's journal arrives in it and the unit's entries with it (with
// how to set up uploading when nothing does), and that the host's clock is
// not ahead.
func Store(rep *Report, s StoreSurvey) {
	if s.Err != nil {
		rep.add("log store", Fail, s.Err.Error(), "start VictoriaLogs at "+s.URL+" or fix source.url")
		rep.add("uploads", Skip, "the store did not answer", "")
		return
	}
	rep.add("log store", OK, s.URL+" answers", "")
	a, ok := s.Arrivals[rep.Host]
	switch {
	case !ok:
		rep.add("uploads", Fail, fmt.Sprintf("no entry from _HOSTNAME=%s in the last %s", rep.Host, s.LookBack), vlogs.UploadFix(s.URL))
		return
	case a.Unit == 0:
		rep.add("uploads", Warn, fmt.Sprintf("%d entries, newest %s, none of the unit (not started in the last %s?)",
			a.Entries, a.Newest.UTC().Format(time.RFC3339), s.LookBack), "")
	default:
		rep.add("uploads", OK, fmt.Sprintf("%d entries, %d of the unit, newest %s", a.Entries, a.Unit, a.Newest.UTC().Format(time.RFC3339)), "")
	}
	if ahead := a.Newest.Sub(s.At); ahead > skewLimit {
		rep.add("clock", Warn, fmt.Sprintf("the host's newest entry is %s ahead of this machine", ahead.Round(time.Second)), "run NTP (chrony, systemd-timesyncd) on the host")
	} else {
		rep.add("clock", OK, "no entry from the future", "")
	}
}
