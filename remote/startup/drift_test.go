package startup

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// driftTable is one engine's drift table (testdata/drift/<engine>.yaml):
// per release, the startup strings that release's own source prints, with
// the file and line they come from.
type driftTable struct {
	Engine   string `yaml:"engine"`
	Releases []struct {
		Release string        `yaml:"release"`
		Ref     string        `yaml:"ref"`
		Strings []driftString `yaml:"strings"`
	} `yaml:"releases"`
}

// driftString is one string: the literal as the source has it (Source)
// and the message the engine prints from it (Line).
type driftString struct {
	Phase  Phase  `yaml:"phase"`
	File   string `yaml:"file"`
	Source string `yaml:"source"`
	Line   string `yaml:"line"`
}

func loadDriftTables(t *testing.T) []driftTable {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "drift", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no drift tables in testdata/drift (%v)", err)
	}
	var tables []driftTable
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var tb driftTable
		if err := yaml.Unmarshal(b, &tb); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if tb.Engine == "" || len(tb.Releases) == 0 {
			t.Fatalf("%s: no engine or no releases", p)
		}
		tables = append(tables, tb)
	}
	return tables
}

// placeholder is a printf verb or an f-string field in a source literal.
var placeholder = regexp.MustCompile(`%[-#+ 0-9.]*[sdfr]|\{[^{}]*\}`)

// sourcePattern turns a source literal into a pattern its printed line
// must contain: the literal text kept, each placeholder any text.
func sourcePattern(src string) *regexp.Regexp {
	var b strings.Builder
	last := 0
	for _, m := range placeholder.FindAllStringIndex(src, -1) {
		b.WriteString(regexp.QuoteMeta(src[last:m[0]]))
		b.WriteString(`.*?`)
		last = m[1]
	}
	b.WriteString(regexp.QuoteMeta(strings.TrimRight(src[last:], " ")))
	return regexp.MustCompile(b.String())
}

// driftPrefix is the logger prefix each engine writes before a message;
// progress bars (tqdm) are printed bare.
func driftPrefix(engine, line string) string {
	if strings.Contains(line, "%|") {
		return ""
	}
	switch engine {
	case "sglang":
		return "[2026-09-11 23:46:30 TP0] "
	case "vllm":
		return "INFO 09-11 23:46:30 [drift.py:1] "
	}
	return ""
}

// TestDriftTables runs every release's startup strings through the phase
// engine. Each string is fed as a line of its engine after the release's
// strings of the earlier phases, so it must move the startup into its own
// phase: a rule that stops matching a release's wording fails here, naming
// the release, the phase and the source line.
func TestDriftTables(t *testing.T) {
	for _, tb := range loadDriftTables(t) {
		for _, rel := range tb.Releases {
			t.Run(tb.Engine+"/"+rel.Release, func(t *testing.T) {
				if len(rel.Strings) == 0 {
					t.Fatalf("%s %s (%s): no strings", tb.Engine, rel.Release, rel.Ref)
				}
				for i, s := range rel.Strings {
					if s.Phase.Rank() < 0 || s.File == "" || s.Source == "" {
						t.Fatalf("%s %s string %d: phase %q, file %q, source %q: each string needs a startup phase, a file and a source", tb.Engine, rel.Release, i, s.Phase, s.File, s.Source)
					}
					if !sourcePattern(s.Source).MatchString(s.Line) {
						t.Errorf("%s %s, phase %s: line %q is not what %s (%s) prints: %q", tb.Engine, rel.Release, s.Phase, s.Line, s.File, rel.Ref, s.Source)
					}
					h := newHost(t, Options{Engine: tb.Engine})
					h.unit("activating", "start", "")
					for _, e := range rel.Strings[:i] {
						if e.Phase.Rank() < s.Phase.Rank() {
							h.lines(driftPrefix(tb.Engine, e.Line) + e.Line)
						}
					}
					h.lines(driftPrefix(tb.Engine, s.Line) + s.Line)
					st := h.tr.State()
					if st.Phase != s.Phase {
						t.Errorf("%s %s (%s), phase %s: %q (%s) puts the startup in %s", tb.Engine, rel.Release, rel.Ref, s.Phase, s.Line, s.File, st.Phase)
					}
					if st.Diag != nil {
						t.Errorf("%s %s, phase %s: %q diagnosed %s", tb.Engine, rel.Release, s.Phase, s.Line, st.Diag.Cause)
					}
				}
			})
		}
	}
}

// TestDriftTablesCoverEveryLine keeps the tables honest about coverage:
// every release line listed in the README has at least one release.
func TestDriftTablesCoverEveryLine(t *testing.T) {
	want := map[string][]string{
		"sglang": {"0.2.", "0.3.", "0.4.", "0.5."},
		"vllm":   {"0.2.", "0.3.", "0.4.", "0.5.", "0.6.", "0.7.", "0.9.", "main-"},
	}
	for _, tb := range loadDriftTables(t) {
		for _, line := range want[tb.Engine] {
			found := false
			for _, rel := range tb.Releases {
				found = found || strings.HasPrefix(rel.Release, line)
			}
			if !found {
				t.Errorf("%s: no release of the %s line in the drift table", tb.Engine, line)
			}
		}
	}
}
