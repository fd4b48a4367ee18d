// Package hostclock measures a host's clock against the local one from
// one round trip: the local times a command was sent and its answer came
// back, and the host's time the command printed. The command's run is
// the caller's (IO at the edge); this package only reads its output and
// does the arithmetic, so both are table-tested.
package hostclock

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
)

// Command prints the host's time as seconds and nanoseconds since the
// epoch (GNU date): what Parse reads.
const Command = "date +%s.%N"

// Parse reads Command's output: "1733472000.123456789".
func Parse(out string) (time.Time, error) {
	s := strings.TrimSpace(out)
	secs, frac, _ := strings.Cut(s, ".")
	sec, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("host time %q: seconds: %w", s, err)
	}
	var nsec int64
	if frac != "" {
		// A date without %N prints it literally ("N" or "%N"): whole
		// seconds would put the host up to 1 s off, so it is refused.
		if len(frac) > 9 || strings.Trim(frac, "0123456789") != "" {
			return time.Time{}, fmt.Errorf("host time %q: not nanoseconds after the point", s)
		}
		n, _ := strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
		nsec = n
	}
	return time.Unix(sec, nsec), nil
}

// Measure is the host's clock against the local one: host is the time
// the host printed, sent and received the local times around the round
// trip. The host read its clock somewhere within the trip; its middle is
// the best guess, which is off by at most half the trip.
func Measure(sent, host, received time.Time) (event.Clock, error) {
	rtt := received.Sub(sent)
	if rtt < 0 {
		return event.Clock{}, fmt.Errorf("clock round trip ends before it begins (%v)", rtt)
	}
	mid := sent.Add(rtt / 2)
	return event.Clock{Offset: host.Sub(mid), RTT: rtt}, nil
}
