package drive

import (
	"fmt"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/sanitize"
)

// engineNotes says, once per host and release, which engine release a
// host's log states: the release whose startup strings the phase rules
// read it with (--json carries it in the summary's hosts instead).
type engineNotes map[string]string

// say prints (through put, with its host time) a line for each host of
// b whose log stated a release not said yet, stamped with the host's
// first change in b so the line sits among that host's lines; a host
// with no change in b waits for one.
func (n engineNotes) say(b remote.Batch, put func(at time.Time, text string)) {
	for _, h := range b.Hosts {
		v := h.Startup.EngineVersion
		if v == "" || n[h.Name] == v {
			continue
		}
		for _, c := range b.Changes {
			if c.Host == h.Name {
				put(c.Time, fmt.Sprintf("%s %-8s engine %s %s\n", c.Time.Format(output.TimeLayout), h.Name, sanitize.String(h.Startup.Engine), sanitize.String(v)))
				n[h.Name] = v
				break
			}
		}
	}
}
