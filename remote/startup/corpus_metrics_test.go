package startup_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// statsLineRe finds the engines' stats lines and their generation rate,
// written apart from the packs' labels so that it checks them.
var (
	statsLineRe = regexp.MustCompile(`Decode batch[.,] .*gen throughput \(token/s\): ([\d.]+)|Prefill batch[.,] .*(?:#running-req: |token usage: |input throughput)|Avg generation throughput: ([\d.]+) tokens/s`)
)

// TestCorpusStatsLines: in every real log of the corpus that holds stats
// lines, each is read as one (a line cut before its first value is none), and the last generation rate is the one the
// log printed last; the logs' verdicts are TestCorpus's.
func TestCorpusStatsLines(t *testing.T) {
	logs := 0
	for _, c := range readCorpus(t) {
		var want int
		last := -1.0
		for _, l := range strings.Split(c.Body, "\n") {
			m := statsLineRe.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			want++
			for _, g := range m[1:] {
				if g != "" {
					last, _ = strconv.ParseFloat(g, 64)
				}
			}
		}
		if want == 0 {
			continue
		}
		logs++
		st := explainCorpus(t, c).Startup
		if st.Stats == nil || st.Stats.Lines != want {
			t.Errorf("%s: %d stats lines, read %+v", c.Name, want, st.Stats)
			continue
		}
		if last >= 0 && st.Stats.Latest.GenTPS != last {
			t.Errorf("%s: latest generation rate %v, the log's last %v", c.Name, st.Stats.Latest.GenTPS, last)
		}
	}
	if logs < 5 {
		t.Fatalf("only %d corpus logs with stats lines: the corpus or the pattern changed", logs)
	}
	t.Logf("%d corpus logs with stats lines, all read", logs)
}
