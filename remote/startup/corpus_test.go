package startup_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"bringup/kernels"
	"bringup/remote/logfile"
	"bringup/remote/startup"
)

// corpusLog is one real log of testdata/corpus with what an expert says
// of it (FORMAT.md).
type corpusLog struct {
	name, source, engine, version string
	expect                        string // failed, served, running
	cause                         string
	failedIn                      startup.Phase
	phases                        []startup.Phase
	evidence                      string
	body                          string
	bodyLine                      int // the file line the log text starts at
}

// readCorpus reads every corpus log; a header that breaks FORMAT.md is an
// error naming file:line.
func readCorpus(t testing.TB) []corpusLog {
	t.Helper()
	files, err := filepath.Glob("testdata/corpus/*.log")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus logs: %v", err)
	}
	var out []corpusLog
	for _, f := range files {
		c, err := parseCorpusLog(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

func parseCorpusLog(path string) (corpusLog, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return corpusLog{}, err
	}
	c := corpusLog{name: strings.TrimSuffix(filepath.Base(path), ".log")}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(nil, 16<<20)
	n, off := 0, 0
	for sc.Scan() {
		n++
		line := sc.Text()
		off += len(line) + 1
		if line == "---" {
			c.body, c.bodyLine = string(b[min(off, len(b)):]), n+1
			break
		}
		k, v, ok := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		if !ok {
			return c, fmt.Errorf("%s:%d: header line is not \"key: value\"", path, n)
		}
		switch k {
		case "source":
			c.source = v
		case "engine":
			c.engine = v
		case "version":
			c.version = v
		case "expect":
			c.expect = v
		case "cause":
			c.cause = v
		case "failed-in":
			c.failedIn = startup.Phase(v)
		case "phases":
			for _, p := range strings.Fields(v) {
				c.phases = append(c.phases, startup.Phase(p))
			}
		case "evidence":
			c.evidence = v
		case "hardware", "cut", "note":
		default:
			return c, fmt.Errorf("%s:%d: unknown header %q", path, n, k)
		}
	}
	switch {
	case c.bodyLine == 0:
		return c, fmt.Errorf("%s: no \"---\" line ends the header", path)
	case !strings.HasPrefix(c.source, "https://github.com/"):
		return c, fmt.Errorf("%s: source %q is not a public GitHub URL", path, c.source)
	case c.version == "" || c.engine == "":
		return c, fmt.Errorf("%s: engine and version are required", path)
	case c.expect == "failed" && (c.cause == "" || c.failedIn == ""):
		return c, fmt.Errorf("%s: a failed log needs cause and failed-in", path)
	case c.expect != "failed" && c.expect != "served" && c.expect != "running":
		return c, fmt.Errorf("%s: expect %q is not failed, served or running", path, c.expect)
	}
	return c, nil
}

// explainCorpus runs one log the way `bringup explain` does.
func explainCorpus(t testing.TB, c corpusLog) startup.Explanation {
	t.Helper()
	lg, err := logfile.Read(strings.NewReader(c.body), c.name, logfile.Options{Host: "corpus", Year: 2026})
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
	if !slices.Equal(got, c.phases) {
		errs = append(errs, fmt.Sprintf("trail %v, want %v", got, c.phases))
	}
	switch c.expect {
	case "failed":
		if x.Outcome != startup.OutcomeFailed || st.Diag == nil {
			errs = append(errs, fmt.Sprintf("outcome %s, want failed (%s in %s)", x.Outcome, c.cause, c.failedIn))
			break
		}
		d := st.Diag
		if d.Cause != c.cause || d.Phase != c.failedIn {
			errs = append(errs, fmt.Sprintf("cause %s in %s, want %s in %s", d.Cause, d.Phase, c.cause, c.failedIn))
		}
		if c.evidence != "" && (len(d.Evidence) == 0 || !strings.Contains(d.Evidence[0], c.evidence)) {
			first := ""
			if len(d.Evidence) > 0 {
				first = d.Evidence[0]
			}
			errs = append(errs, fmt.Sprintf("root line %q, want one holding %q", first, c.evidence))
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
	return strings.Join(errs, "; "), c.expect != "failed" && x.Outcome == startup.OutcomeFailed
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
		class := c.expect
		if c.expect == "failed" {
			class = c.cause
		}
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
		t.Run(c.name, func(t *testing.T) {
			got := string(x.Outcome)
			if d := x.Startup.Diag; d != nil {
				got += fmt.Sprintf(" %s in %s: %s", d.Cause, d.Phase, d.Summary)
			}
			t.Logf("%s %s · trail %v · %s", c.engine, c.version, trail(x.Startup), got)
			if wrong != "" {
				t.Errorf("%s (%s)", wrong, c.source)
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
