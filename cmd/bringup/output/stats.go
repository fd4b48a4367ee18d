package output

import (
	"fmt"

	"github.com/bringup-dev/bringup/remote/startup"
)

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
