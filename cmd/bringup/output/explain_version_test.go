package output

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/remote/logfile"
	"github.com/bringup-dev/bringup/remote/startup"
)

// TestExplainEngineVersion: explain's text head and JSON summary name the
// engine's release when the log states it, and leave it out when not.
func TestExplainEngineVersion(t *testing.T) {
	lg := logfile.Summary{Format: logfile.FormatJournal, Timed: true, Lines: 2}
	for _, tc := range []struct{ version, head, field string }{
		{"0.27.1", "x.log · vllm 0.27.1 · 2 lines", `"engine":"vllm","engine_version":"0.27.1"`},
		{"", "x.log · vllm · 2 lines", `"engine":"vllm"}`},
	} {
		x := startup.Explanation{Outcome: startup.OutcomeUndecided,
			Startup: startup.Startup{Engine: "vllm", EngineVersion: tc.version, Phase: startup.Init}}
		var txt bytes.Buffer
		Explain(&txt, "x.log", x, lg, nil)
		if !strings.HasPrefix(txt.String(), tc.head) {
			t.Errorf("text head %q, want %q", strings.SplitN(txt.String(), "\n", 2)[0], tc.head)
		}
		var js bytes.Buffer
		ExplainJSON(&js, x, lg, 0, nil)
		if !strings.Contains(js.String(), tc.field) {
			t.Errorf("JSON %s lacks %s", js.String(), tc.field)
		}
		if tc.version == "" && strings.Contains(js.String(), "engine_version") {
			t.Errorf("JSON %s has an engine_version the log never stated", js.String())
		}
		sc := bufio.NewScanner(&js)
		for sc.Scan() {
			if err := ValidateLine(sc.Bytes()); err != nil {
				t.Errorf("%s: %v", sc.Text(), err)
			}
		}
	}
}
