package startup_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/logfile"
	"github.com/bringup-dev/bringup/remote/startup"
	"github.com/bringup-dev/bringup/remote/startup/corpus"
)

type corpusLog = corpus.Log

func readCorpus(t testing.TB) []corpusLog {
	t.Helper()
	logs, err := corpus.ReadAll("testdata/corpus")
	if err != nil {
		t.Fatal(err)
	}
	return logs
}

// explainCorpus runs one log the way `bringup explain` does.
func explainCorpus(t testing.TB, c corpusLog) startup.Explanation {
	t.Helper()
	lg, err := logfile.Read(strings.NewReader(c.Body), c.Name, logfile.Options{Host: "corpus", Year: 2026})
	if err != nil {
		t.Fatal(err)
	}
	return startup.Explain(lg.Events, startup.Options{Engine: "auto", Kernels: kernels.DefaultCatalog()})
}

// trail is the path phases a startup went through, starting left out.
func trail(st startup.Startup) []startup.Phase {
	var out []startup.Phase
	for _, s := range st.Spans {
		if s.Phase != startup.Starting {
			out = append(out, s.Phase)
		}
	}
	return out
}

// verdict compares an explanation with what the corpus says, and returns
// what is wrong ("" when it is right) and whether it is a false failure.
func verdict(c corpusLog, x startup.Explanation) (wrong string, falseFailure bool) {
	var errs []string
	st := x.Startup
	got := trail(st)
	want := make([]startup.Phase, len(c.Phases))
	for i, p := range c.Phases {
		want[i] = startup.Phase(p)
	}
	if !slices.Equal(got, want) {
		errs = append(errs, fmt.Sprintf("trail %v, want %v", got, want))
	}
	switch c.Expect {
	case "failed":
		if x.Outcome != startup.OutcomeFailed || st.Diag == nil {
			errs = append(errs, fmt.Sprintf("outcome %s, want failed (%s in %s)", x.Outcome, c.Cause, c.FailedIn))
			break
		}
		d := st.Diag
		if d.Cause != c.Cause || string(d.Phase) != c.FailedIn {
			errs = append(errs, fmt.Sprintf("cause %s in %s, want %s in %s", d.Cause, d.Phase, c.Cause, c.FailedIn))
		}
		if c.Evidence != "" && (len(d.Evidence) == 0 || !strings.Contains(d.Evidence[0], c.Evidence)) {
			first := ""
			if len(d.Evidence) > 0 {
				first = d.Evidence[0]
			}
			errs = append(errs, fmt.Sprintf("root line %q, want one holding %q", first, c.Evidence))
		}
	case "served":
		if x.Outcome != startup.OutcomeServed {
			errs = append(errs, fmt.Sprintf("outcome %s, want served", x.Outcome))
		}
	case "running":
		if x.Outcome != startup.OutcomeUndecided {
			errs = append(errs, fmt.Sprintf("outcome %s, want undecided (the log ends mid-startup)", x.Outcome))
		}
	}
	return strings.Join(errs, "; "), c.Expect != "failed" && x.Outcome == startup.OutcomeFailed
}

// TestCorpus runs every real log of testdata/corpus through the phase
// engine as `bringup explain` does and checks the trail, the outcome, the
// cause, the phase it failed in and the root line against what an expert
// read in it. `go test -run Corpus -v` lists every log with its verdict
// and ends with the table by class.
func TestCorpus(t *testing.T) {
	logs := readCorpus(t)
	type tally struct{ right, all int }
	byClass := map[string]*tally{}
	right, falseFail := 0, 0
	for _, c := range logs {
		class := c.Class()
		if byClass[class] == nil {
			byClass[class] = &tally{}
		}
		byClass[class].all++
		x := explainCorpus(t, c)
		wrong, ff := verdict(c, x)
		if ff {
			falseFail++
		}
		if wrong == "" {
			right++
			byClass[class].right++
		}
		t.Run(c.Name, func(t *testing.T) {
			got := string(x.Outcome)
			if d := x.Startup.Diag; d != nil {
				got += fmt.Sprintf(" %s in %s: %s", d.Cause, d.Phase, d.Summary)
			}
			t.Logf("%s %s · trail %v · %s", c.Engine, c.Version, trail(x.Startup), got)
			if wrong != "" {
				t.Errorf("%s (%s)", wrong, c.Source)
			}
		})
	}
	classes := make([]string, 0, len(byClass))
	for k := range byClass {
		classes = append(classes, k)
	}
	sort.Strings(classes)
	var b strings.Builder
	fmt.Fprintf(&b, "corpus: %d of %d right (%.0f%%), %d false failures\n", right, len(logs), 100*float64(right)/float64(len(logs)), falseFail)
	for _, k := range classes {
		fmt.Fprintf(&b, "  %-28s %d/%d\n", k, byClass[k].right, byClass[k].all)
	}
	t.Log(b.String())
	if falseFail > 0 {
		t.Errorf("%d success logs diagnosed as failures", falseFail)
	}
}

// BenchmarkExplainLargestCorpusLog measures `bringup explain` end to end
// on the largest corpus log: reading the text (prefixes, times, the
// sanitiser) and folding it through the phase engine. One op is the whole
// log; lines/s is the figure the README reports.
func BenchmarkExplainLargestCorpusLog(b *testing.B) {
	logs := readCorpus(b)
	big := logs[0]
	for _, l := range logs {
		if len(l.Body) > len(big.Body) {
			big = l
		}
	}
	opts := startup.Options{Engine: "auto", Kernels: kernels.DefaultCatalog()}
	lines := 0
	b.ReportAllocs()
	b.SetBytes(int64(len(big.Body)))
	for b.Loop() {
		lg, err := logfile.Read(strings.NewReader(big.Body), big.Name, logfile.Options{Year: 2026})
		if err != nil {
			b.Fatal(err)
		}
		startup.Explain(lg.Events, opts)
		lines = len(lg.Events)
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	b.Logf("%s: %d lines, %d bytes", big.Name, lines, len(big.Body))
}
