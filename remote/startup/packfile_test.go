package startup_test

import (
	"os"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/logfile"
	"github.com/bringup-dev/bringup/remote/startup"
	"github.com/bringup-dev/bringup/remote/startup/corpus"
)

// TestUserPackNamesARealError loads a user rule pack from YAML and runs a
// real corpus log (vLLM on Windows, vllm-project/vllm#9713) through it: the
// built-in packs call it unrecognised, the pack names it.
func TestUserPackNamesARealError(t *testing.T) {
	b, err := os.ReadFile("testdata/rules/windows-registry.yaml")
	if err != nil {
		t.Fatal(err)
	}
	packs, err := startup.ParsePacks("windows-registry.yaml", b)
	if err != nil {
		t.Fatal(err)
	}
	l, err := corpus.Read("testdata/corpus/vllm-9713-inspect-arch-subprocess-windows.log")
	if err != nil {
		t.Fatal(err)
	}
	lg, err := logfile.Read(strings.NewReader(l.Body), l.Name, logfile.Options{Year: 2026})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		packs []startup.RulePack
		cause string
	}{
		{nil, "unrecognised"},
		{startup.WithBuiltins(packs), "model-registry-subprocess"},
	} {
		x := startup.Explain(lg.Events, startup.Options{Engine: "auto", Kernels: kernels.DefaultCatalog(), Packs: tt.packs})
		if x.Outcome != startup.OutcomeFailed || x.Startup.Diag == nil || x.Startup.Diag.Cause != tt.cause {
			t.Errorf("with %d packs: %s %+v, want failed with %s", len(tt.packs), x.Outcome, x.Startup.Diag, tt.cause)
		}
	}
}

// TestParsePacksErrorsNameTheLine checks that a bad rule file is refused
// with its name and the line of the rule at fault.
func TestParsePacksErrorsNameTheLine(t *testing.T) {
	bad, err := os.ReadFile("testdata/rules/bad-pattern.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, data, want string
	}{
		{"bad-pattern.yaml", string(bad), "bad-pattern.yaml:10: pack mykernel: failures[1].pattern: error parsing regexp"},
		{"typo.yaml", "engine: x\nfailures:\n  - keywords: [abcd]\n    cuase: y\n", "typo.yaml:4: field cuase not found"},
		{"phase.yaml", "engine: x\nphases:\n  - keywords: [abcd]\n    phase: loading\n", `phase.yaml:3: pack x: phases[0].phase: "loading" is not a startup phase`},
		{"short.yaml", "engine: x\nfailures:\n  - keywords: [ab]\n    cause: y\n", `short.yaml:3: pack x: failures[0].keywords[0]: "ab" is shorter than 3 bytes`},
		{"yaml.yaml", "engine: [x\n", "yaml.yaml: yaml: line 1"},
		{"empty.yaml", "", "empty.yaml: "},
	} {
		_, err := startup.ParsePacks(tt.name, []byte(tt.data))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one holding %q", tt.name, err, tt.want)
		}
	}
}

// TestREADMEPackLoads keeps the README's example rule pack (a copy in
// testdata/rules/my-kernel.yaml) loadable.
func TestREADMEPackLoads(t *testing.T) {
	b, err := os.ReadFile("testdata/rules/my-kernel.yaml")
	if err != nil {
		t.Fatal(err)
	}
	packs, err := startup.ParsePacks("my-kernel.yaml", b)
	if err != nil || len(packs) != 1 || !packs[0].First || len(packs[0].Frames) != 1 {
		t.Fatalf("packs %+v, err %v", packs, err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), string(b)) {
		t.Error("README.md's example rule pack differs from testdata/rules/my-kernel.yaml")
	}
}

// TestAliasBetweenPacks: an anchor set in one pack of a list serves an
// alias in another. YAML defines an anchor to hold from where it is set
// to the end of its document, and the list is one document, so this is
// valid YAML; each pack decoded on its own once refused it ("unknown
// anchor"). A pack that is an alias of another loads too.
func TestAliasBetweenPacks(t *testing.T) {
	text := `- engine: sglang
  failures:
    - keywords: ["kdtree-verify: mismatch"]
      cause: kdtree-validation
      summary: &why the kernel's own validation found a mismatch
      hint: &fix run with kdtree-verify=off to confirm
- engine: vllm
  failures:
    - keywords: ["kdtree-verify: mismatch"]
      cause: kdtree-validation
      summary: *why
      hint: *fix
- &generic {engine: "", phases: [{keywords: ["kdtree-verify loaded"], phase: init}]}
- *generic
`
	packs, err := startup.ParsePacks("alias.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(packs) != 4 {
		t.Fatalf("%d packs, want 4", len(packs))
	}
	if f := packs[1].Failures[0]; packs[1].Engine != "vllm" || f.Summary != "the kernel's own validation found a mismatch" || f.Hint != "run with kdtree-verify=off to confirm" {
		t.Errorf("second pack %+v", packs[1])
	}
	if len(packs[3].Phases) != 1 || packs[3].Phases[0].Phase != startup.Init {
		t.Errorf("fourth pack %+v, want the third's phases", packs[3])
	}
}

// TestRuleFileAnchorsAndDocuments: where YAML does not let an alias
// through, the error says why and where — an alias before (or without)
// its anchor, an anchor in another document of the file — and a second
// document is refused rather than left unread (its packs never loaded,
// silently). An empty trailing document is nothing to refuse; an alias
// bomb stays refused by yaml's own bound.
func TestRuleFileAnchorsAndDocuments(t *testing.T) {
	pack := "engine: sglang\nfailures:\n  - keywords: [\"kdtree-verify: mismatch\"]\n    cause: c\n    summary: %s\n    hint: h\n"
	for _, tt := range []struct {
		name, data, want string
	}{
		{"before.yaml", strings.Replace(pack, "%s", "*why", 1), "before.yaml:5: alias *why: no anchor &why before it in this YAML document"},
		{"other-doc.yaml", "- engine: x\n  failures: &f []\n---\n- engine: y\n  failures: *f\n", "other-doc.yaml:3: a second YAML document: a rule file is one document"},
		{"second.yaml", strings.Replace(pack, "%s", "s", 1) + "---\n" + strings.Replace(pack, "%s", "t", 1), "second.yaml:7: a second YAML document"},
		{"trailing.yaml", strings.Replace(pack, "%s", "s", 1) + "---\n", ""},
		{"bomb.yaml", "engine: x\nphases:\n  - keywords: &a [lol1,lol1,lol1,lol1,lol1,lol1,lol1,lol1,lol1]\n    phase: init\n" +
			"  - keywords: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n    phase: init\n  - keywords: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n    phase: init\n" +
			"  - keywords: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n    phase: init\n  - keywords: [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n    phase: init\n", "bomb.yaml:"},
	} {
		packs, err := startup.ParsePacks(tt.name, []byte(tt.data))
		switch {
		case tt.want == "" && (err != nil || len(packs) != 1):
			t.Errorf("%s: %d packs, error %v; want one pack", tt.name, len(packs), err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want one holding %q", tt.name, err, tt.want)
		}
	}
}

// TestUserPackRaisedIn: a user rule limited to the frame that raised
// (raised_in) takes a KeyError raised there and leaves one raised in a
// model's load_weights to the built-in checkpoint-mismatch.
func TestUserPackRaisedIn(t *testing.T) {
	b, err := os.ReadFile("testdata/rules/my-kernel.yaml")
	if err != nil {
		t.Fatal(err)
	}
	packs, err := startup.ParsePacks("my-kernel.yaml", b)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ fn, cause string }{
		{"kdtree_load", "kdtree-table-mismatch"},
		{"load_weights", "checkpoint-mismatch"},
	} {
		log := "[2026-11-30 10:00:06 TP0] Load weight begin. avail mem=78.50 GB\n" +
			"Traceback (most recent call last):\n" +
			`  File "/opt/kdtree/loader.py", line 12, in ` + tt.fn + "\n" +
			"    table = tables[name]\n" +
			"KeyError: 'layers.0.kdtree'\n"
		lg, err := logfile.Read(strings.NewReader(log), tt.fn, logfile.Options{Year: 2026})
		if err != nil {
			t.Fatal(err)
		}
		x := startup.Explain(lg.Events, startup.Options{Engine: "auto", Kernels: kernels.DefaultCatalog(), Packs: startup.WithBuiltins(packs)})
		if d := x.Startup.Diag; x.Outcome != startup.OutcomeFailed || d == nil || d.Cause != tt.cause {
			t.Errorf("raised in %s: %s %+v, want failed with %s", tt.fn, x.Outcome, d, tt.cause)
		}
	}
}
