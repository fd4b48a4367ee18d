package vlogs

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// DefaultDiscoverWindow is how far back Discover looks for hosts: a
// serving unit may print nothing for hours, so a day, as doctor's
// survey reads.
const DefaultDiscoverWindow = 24 * time.Hour

// Discovery is the hosts a store knows for the unit.
type Discovery struct {
	// Hosts are the distinct _HOSTNAMEs with an entry of the unit (its
	// own or PID 1's about it) within the window, sorted.
	Hosts []string
	// Refused are the _HOSTNAMEs that are not host names (remote text
	// that would become an SSH target): left out, and said.
	Refused []string
}

// Discover asks the store which hosts logged the unit within window
// (DefaultDiscoverWindow when 0): the fleet of a config that lists no
// hosts.
func (s *Source) Discover(ctx context.Context, window time.Duration) (Discovery, error) {
	defer s.hold()()
	if window <= 0 {
		window = DefaultDiscoverWindow
	}
	q := fmt.Sprintf("_time:%ds %s | uniq by (_HOSTNAME)", int64(window/time.Second), s.unitFilter())
	var d Discovery
	err := s.query(ctx, q, func(line []byte) error {
		var row struct {
			Host string `json:"_HOSTNAME"`
		}
		if err := json.Unmarshal(line, &row); err != nil {
			return fmt.Errorf("log store uniq row: %w", err)
		}
		if validHostname(row.Host) {
			d.Hosts = append(d.Hosts, row.Host)
		} else {
			d.Refused = append(d.Refused, strconv.QuoteToASCII(row.Host))
		}
		return nil
	})
	if err != nil {
		return Discovery{}, fmt.Errorf("discover hosts: %w", err)
	}
	slices.Sort(d.Hosts)
	d.Hosts = slices.Compact(d.Hosts)
	return d, nil
}

// validHostname accepts what a hostname may be (RFC 1123 labels: letters,
// digits, '-', dots between), at most 253 bytes, not starting with '-'
// (ssh would read an option): the store's _HOSTNAME is the host's own
// say, and it becomes an SSH destination and a row in the console.
func validHostname(h string) bool {
	if h == "" || len(h) > 253 || h[0] == '-' || h[0] == '.' || h[len(h)-1] == '.' {
		return false
	}
	label := 0
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c == '.':
			if label == 0 {
				return false
			}
			label = 0
			continue
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
		label++
		if label > 63 {
			return false
		}
	}
	return true
}
