package output

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"bringup/remote"
	"bringup/remote/startup"
)

// StatsEvery is how much host time goes by between two stats lines of one
// host in a watch: vLLM logs its stats every 10 s, SGLang every 40 decode
// steps (a second or two), and a watch is a summary, not the log.
const StatsEvery = 10 * time.Second

// StatsLine is one line of kind "stats" in `bringup watch --json`: the
// latest sample of a serving host's engine stats lines.
type StatsLine struct {
	Time  string         `json:"time"` // host time of the sample
	Host  string         `json:"host"`
	Kind  string         `json:"kind"` // "stats"
	Phase string         `json:"phase"`
	Stats startup.Sample `json:"stats"`
}

// StatsWatch prints a serving host's stats as watch lines, at most one a
// host per StatsEvery of host time. Its zero value is ready to use; it is
// not safe for concurrent use.
type StatsWatch struct {
	last map[string]time.Time // host → time of the sample last printed
}

// Hosts prints a line for each host whose engine printed new stats since
// the last line printed for it, StatsEvery or more before.
func (s *StatsWatch) Hosts(w io.Writer, hosts []remote.HostState, asJSON bool) {
	if s.last == nil {
		s.last = map[string]time.Time{}
	}
	for _, h := range hosts {
		st := h.Startup.Stats
		if st == nil || st.Latest.GenTime.IsZero() {
			continue
		}
		at := st.Latest.Time
		if prev, ok := s.last[h.Name]; ok && at.Sub(prev) < StatsEvery {
			continue
		}
		s.last[h.Name] = at
		Stats(w, h.Name, h.Startup.Phase, st.Latest, asJSON)
	}
}

// Stats prints one host's sample as a text line or a JSON line (StatsLine).
func Stats(w io.Writer, host string, phase startup.Phase, l startup.Sample, asJSON bool) {
	if asJSON {
		b, err := json.Marshal(StatsLine{Time: l.Time.Format(TimeLayout), Host: host, Kind: "stats", Phase: string(phase), Stats: l})
		if err != nil { // cannot happen for this struct; say so rather than drop the line
			fmt.Fprintf(w, "{\"host\":%q,\"kind\":\"error\",\"err\":%q}\n", host, err.Error())
			return
		}
		fmt.Fprintf(w, "%s\n", b)
		return
	}
	fmt.Fprintf(w, "%s %-8s %s\n", l.Time.Format(TimeLayout), host, SampleText(l))
}

// SampleText is a sample as one phrase: "decode 1921.7 tok/s · 8 running,
// 0 queued · KV 12% · cuda graph on · prompt 559.5 tok/s".
func SampleText(l startup.Sample) string {
	s := fmt.Sprintf("decode %.1f tok/s · %d running, %d queued · KV %.0f%%", l.GenTPS, l.Running, l.Queued, l.KVUsage*100)
	if l.Graph != "" {
		s += " · cuda graph " + l.Graph
	}
	if l.PromptTPS > 0 {
		s += fmt.Sprintf(" · prompt %.1f tok/s", l.PromptTPS)
	}
	return s
}
