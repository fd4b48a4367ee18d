package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runLintArgs(t *testing.T, getenv func(string) string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	e := env{stdout: &out, stderr: &errOut, getenv: getenv}
	code := run(context.Background(), e, append([]string{"lint"}, args...))
	return code, out.String(), errOut.String()
}

func noEnv(string) string { return "" }

const seedTree = "../../kernels/capturelint/testdata/seed"

// On the seed-shaped kernel the lint finds validate's .item() in the
// marshalling at file:line, and says on (and off) are clean, agreeing
// with the catalog: exit 0.
func TestLintSeedTree(t *testing.T) {
	code, out, errOut := runLintArgs(t, noEnv, seedTree)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	for _, want := range []string{
		"kdtree_verify/marshal.py:13:31  pack  offsets.max().item()  [modes: validate, high]",
		"    reached: under `if _VALIDATE:` (line 11)",
		"  validate   not capture-safe: declared so, and 2 host sync(s) reach it",
		"  on         clean: declared capture-safe, no host sync found",
		"  off        clean: declared capture-safe, no host sync found",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runLintArgs(t, noEnv, "--json", seedTree)
	var got struct {
		V, Exit int
		Kind    string
		Report  struct {
			Findings []struct {
				File, Function, Rule string
				Line                 int
				Modes                []string
			}
		}
		Verdicts []struct {
			Mode  string
			Agree bool
			Syncs int
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 || got.V != 1 || got.Kind != "summary" {
		t.Fatalf("--json: exit %d, %v:\n%s", code, err, out)
	}
	f := got.Report.Findings[0]
	if f.File != "kdtree_verify/marshal.py" || f.Line != 13 || f.Function != "pack" || f.Rule != "item" || strings.Join(f.Modes, ",") != "validate" {
		t.Errorf("--json finding: %+v", f)
	}
	if v := got.Verdicts[2]; v.Mode != "on" || !v.Agree || v.Syncs != 0 {
		t.Errorf("--json verdict for on: %+v", v)
	}
}

// The 630-second case: the catalog declares on capture-safe, and on's code
// syncs. The lint shows the disagreement and exits 1.
func TestLintDisagreement(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sitecustomize.py", "import os\nif os.environ.get('KDTREE_MODE', 'off') != 'off':\n    import kdtree_verify\n")
	write("kdtree_verify/__init__.py", "def forward(x):\n    n = x.sum().item()  # on syncs too\n    return n\n")
	code, out, _ := runLintArgs(t, noEnv, "--kernel", "kdtree-verify", dir)
	if code != 1 || !strings.Contains(out, "  on         DISAGREE: declared capture-safe, but 1 host sync(s) reach it\n") ||
		!strings.Contains(out, "    reached: kdtree_verify/__init__.py is imported at sitecustomize.py:3 (modes validate, on)\n") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestLintUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--kernel", "nope", seedTree}, `bringup lint: --kernel "nope": not in the catalog`},
		{[]string{"a", "b"}, "bringup lint: one directory at a time (got 2)"},
		{[]string{"/does/not/exist"}, "bringup lint: /does/not/exist: read the kernel's tree:"},
	} {
		code, _, errOut := runLintArgs(t, noEnv, tt.args...)
		if code != exitUsage || !strings.HasPrefix(errOut, tt.want) {
			t.Errorf("lint %v: exit %d, stderr %q", tt.args, code, errOut)
		}
	}
}
