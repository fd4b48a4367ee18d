package capturelint

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var seedOptions = Options{EnvVar: "KDTREE_MODE", Modes: []string{"off", "validate", "on"}}

// readTree reads the .py files under dir, as bringup lint does.
func readTree(t *testing.T, dir string) []File {
	t.Helper()
	var files []File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".py") {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files = append(files, File{Path: filepath.ToSlash(rel), Src: string(b)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// short renders a finding as file:line rule [modes].
func short(f Finding) string {
	m := strings.Join(f.Modes, ",")
	if f.AllModes {
		m = "all"
	}
	return fmt.Sprintf("%s:%d %s %s [%s]", f.File, f.Line, f.Func, f.Rule, m)
}

func shorts(findings []Finding) string {
	var out []string
	for _, f := range findings {
		out = append(out, short(f))
	}
	return strings.Join(out, "\n")
}

// The seed kernel: validate's marshalling reads the tree depth with
// .max().item(); sitecustomize.py loads the package only when the mode is
// not off. The lint finds the validate-only syncs and says on is clean.
func TestLintSeedKernel(t *testing.T) {
	r := Lint(readTree(t, "testdata/seed"), seedOptions)
	want := strings.Join([]string{
		"kdtree_verify/marshal.py:13 pack item [validate]",
		"kdtree_verify/validate.py:11 check compare-on-host [validate]",
	}, "\n")
	if got := shorts(r.Findings); got != want {
		t.Fatalf("findings:\n%s\nwant:\n%s", got, want)
	}
	item := r.Findings[0]
	if item.Call != "offsets.max().item()" || item.Col != 31 || item.Confidence != High || item.Via != "under `if _VALIDATE:` (line 11)" {
		t.Errorf("the .item() finding: %+v", item)
	}
	if via := r.Findings[1].Via; !strings.Contains(via, "named at kdtree_verify/__init__.py:19") {
		t.Errorf("validate.py's reach is explained as %q", via)
	}
	for mode, n := range map[string]int{"off": 0, "on": 0, "validate": 2} {
		if got := len(r.Reached(mode, Low)); got != n {
			t.Errorf("mode %s is reached by %d findings, want %d", mode, got, n)
		}
	}
	if r.Files != 5 || len(r.FileErrors) != 0 {
		t.Errorf("files %d, syntax errors %v", r.Files, r.FileErrors)
	}
}

// Words in comments, strings, docstrings and f-string text never match;
// code in an f-string's replacement field does.
func TestLintCommentsAndStrings(t *testing.T) {
	src := `# x.item() torch.cuda.synchronize()
"""a.cpu() in a docstring"""
s = 'b.tolist()' + "c.numpy()" + r'\'d.item()' + b"e.item()"
t = '''
torch.nonzero(x)
'''
u = f"{{g.item()}} h.item() {n}"
v = f"{w.item()}"
`
	r := Lint([]File{{Path: "m.py", Src: src}}, Options{})
	if got, want := shorts(r.Findings), "m.py:8 <module> item [all]"; got != want {
		t.Errorf("findings:\n%s\nwant:\n%s", got, want)
	}
}

func TestLintCalls(t *testing.T) {
	tests := []struct {
		src  string
		want string // rule and confidence, "" for no finding
	}{
		{"x.item()", "item high"},
		{"x.sum(dim=0).tolist()", "tolist high"},
		{"x.detach().cpu().numpy()", "cpu high"},
		{"x.numpy()", "numpy high"},
		{`x.to("cpu")`, "to-cpu high"},
		{`x.to(device='cpu')`, "to-cpu high"},
		{`x.to(torch.device("cpu"))`, "to-cpu high"},
		{`x.to("cpu", non_blocking=True)`, "to-cpu low"},
		{`x.to("cuda")`, ""},
		{`x.to(dtype)`, ""},
		{"torch.cuda.synchronize()", "synchronize high"},
		{"stream.synchronize()", "synchronize high"},
		{"torch.cuda.current_stream().synchronize()", "synchronize high"},
		{"torch.nonzero(m)", "nonzero high"},
		{"m.nonzero(as_tuple=True)", "nonzero high"},
		{"np.nonzero(m)", ""},
		{"torch.where(m)", "nonzero high"},
		{"torch.where(m, a, b)", ""},
		{"torch.unique(x)", "unique high"},
		{"np.unique(x)", ""},
		{"x.masked_select(m)", "masked_select high"},
		{"x.repeat_interleave(r)", "repeat_interleave low"},
		{"x.repeat_interleave(r, output_size=n)", ""},
		{"torch.cuda.initial_seed()", "cuda-rng high"},
		{"torch.equal(a, b)", "compare-on-host high"},
		{"torch.testing.assert_close(a, b)", "compare-on-host high"},
		{"torch.empty(n.max())", "data-dependent-alloc low"},
		{"torch.empty(n)", ""},
		{"bool(m.any())", "host-read low"},
		{"int(x)", ""},
		{"arr.item()", "item high"},
		{"batch.seq_lens_cpu.max().item()", "item low"},
		{"scale.cpu().item()", "cpu high"},
		{"lens_np.numpy()", "numpy low"},
		{"np.array(a).item()", ""},
		{"d.items()", ""},
		{"def item(self): pass", ""},
		{"if (a == b).all(): pass", "host-read low"},
		{"while not m.any(): pass", "host-read low"},
		{"assert x.max() < 4, 'too big'", "host-read low"},
		{"if flag: pass", ""},
	}
	for _, tt := range tests {
		r := Lint([]File{{Path: "m.py", Src: tt.src + "\n"}}, Options{})
		var got []string
		for _, f := range r.Findings {
			got = append(got, fmt.Sprintf("%s %s", f.Rule, f.Confidence))
		}
		if strings.Join(got, "; ") != tt.want {
			t.Errorf("%s: got %q, want %q", tt.src, strings.Join(got, "; "), tt.want)
		}
	}
}

// Each shape of branch on the mode narrows the modes that reach a call;
// what the lint cannot read counts as every mode.
func TestLintModeShapes(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"environ.get ==", "import os\nif os.environ.get('KDTREE_MODE') == 'validate':\n    x.item()\n", "validate"},
		{"environ[] !=", "import os\nif os.environ['KDTREE_MODE'] != 'off':\n    x.item()\n", "validate,on"},
		{"getenv in tuple", "import os\nif os.getenv('KDTREE_MODE', 'off') in ('validate', 'on'):\n    x.item()\n", "validate,on"},
		{"not in", "import os\nif os.getenv('KDTREE_MODE') not in ['validate']:\n    x.item()\n", "off,on"},
		{"literal first", "import os\nif 'on' == os.getenv('KDTREE_MODE'):\n    x.item()\n", "on"},
		{"name from the variable, lowered", "import os\nMODE = os.environ.get('KDTREE_MODE', 'off').lower()\nif MODE == 'validate':\n    x.item()\n", "validate"},
		{"alias of an alias", "import os\nA = os.getenv('KDTREE_MODE')\nB = A\nif B == 'on':\n    x.item()\n", "on"},
		{"attribute of the name", "import os\nMODE = os.getenv('KDTREE_MODE')\nif cfg.MODE == 'on':\n    x.item()\n", "on"},
		{"else", "import os\nM = os.getenv('KDTREE_MODE')\nif M == 'validate':\n    pass\nelse:\n    x.item()\n", "off,on"},
		{"elif", "import os\nM = os.getenv('KDTREE_MODE')\nif M == 'off':\n    pass\nelif M == 'validate':\n    pass\nelse:\n    x.item()\n", "on"},
		{"flag", "import os\nCHECK = os.getenv('KDTREE_MODE') == 'validate'\nif not CHECK:\n    x.item()\n", "off,on"},
		{"and with the unknown", "import os\nif os.getenv('KDTREE_MODE') == 'validate' and debug:\n    x.item()\n", "validate"},
		{"or with the unknown", "import os\nif os.getenv('KDTREE_MODE') == 'validate' or debug:\n    x.item()\n", "all"},
		{"else of an inexact branch", "import os\nif os.getenv('KDTREE_MODE') == 'validate' and debug:\n    pass\nelse:\n    x.item()\n", "all"},
		{"one-line body", "import os\nif os.getenv('KDTREE_MODE') == 'on': x.item()\n", "on"},
		{"another variable", "import os\nif os.getenv('OTHER') == 'validate':\n    x.item()\n", "all"},
		{"unknown condition", "if mode == 'validate':\n    x.item()\n", "all"},
		{"nested branches", "import os\nM = os.getenv('KDTREE_MODE')\nif M != 'off':\n    if M != 'on':\n        x.item()\n", "validate"},
		{"function named under a branch", "import os\nM = os.getenv('KDTREE_MODE')\ndef f():\n    x.item()\nif M == 'validate':\n    f()\n", "validate"},
		{"function named from two branches", "import os\nM = os.getenv('KDTREE_MODE')\ndef f():\n    x.item()\nif M == 'validate':\n    f()\nelif M == 'on':\n    g = f\n", "validate,on"},
		{"function nobody names", "import os\nM = os.getenv('KDTREE_MODE')\ndef forward():\n    x.item()\n", "all"},
		{"mode table", "import os\nM = os.getenv('KDTREE_MODE')\ndef slow():\n    x.item()\ndef fast():\n    pass\nTABLE = {'validate': slow, 'on': fast}\nrun = TABLE[M]\n", "validate"},
		{"method under a branch in a class", "import os\nM = os.getenv('KDTREE_MODE')\nclass K:\n    def f(self):\n        if M == 'on':\n            x.item()\n", "on"},
		{"no mode reaches it", "import os\nif os.getenv('KDTREE_MODE') == 'bogus':\n    x.item()\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Lint([]File{{Path: "m.py", Src: tt.src}}, seedOptions)
			if len(r.Findings) != 1 {
				t.Fatalf("findings:\n%s", shorts(r.Findings))
			}
			f := r.Findings[0]
			got := strings.Join(f.Modes, ",")
			if f.AllModes {
				got = "all"
			}
			if got != tt.want {
				t.Errorf("modes %q, want %q (via %q)", got, tt.want, f.Via)
			}
		})
	}
}

// Imports carry modes from module to module: a module loaded only under a
// branch is reached only in that branch's modes, and its functions too.
func TestLintImports(t *testing.T) {
	files := []File{
		{Path: "sitecustomize.py", Src: "import os\nif os.environ.get('KDTREE_MODE', 'off') == 'validate':\n    import pkg.checks\n"},
		{Path: "pkg/__init__.py", Src: "x.tolist()\n"},
		{Path: "pkg/checks.py", Src: "from .deep import helper\ndef run():\n    y.item()\n"},
		{Path: "pkg/deep.py", Src: "def helper():\n    z.cpu()\n"},
		{Path: "pkg/orphan.py", Src: "w.numpy()\n"},
		{Path: "tool.py", Src: "v.item()\n"},
	}
	r := Lint(files, seedOptions)
	want := strings.Join([]string{
		"pkg/__init__.py:1 <module> tolist [validate]",
		"pkg/checks.py:3 run item [validate]",
		"pkg/deep.py:2 helper cpu [validate]",
		"pkg/orphan.py:1 <module> numpy [validate]",
		"tool.py:1 <module> item [all]",
	}, "\n")
	if got := shorts(r.Findings); got != want {
		t.Errorf("findings:\n%s\nwant:\n%s", got, want)
	}
}

func TestLintWithoutKernel(t *testing.T) {
	r := Lint(readTree(t, "testdata/seed"), Options{})
	if len(r.Findings) != 2 || !r.Findings[0].AllModes || r.Modes != nil {
		t.Errorf("without a kernel: %+v", r)
	}
}

// Methods of one name in two classes name each other (names are matched
// alone): neither is called dead for it.
func TestLintNameCycle(t *testing.T) {
	src := "class A:\n    def init(self):\n        self.b.init()\n        x.item()\nclass B:\n    def init(self):\n        self.a.init()\n"
	r := Lint([]File{{Path: "m.py", Src: src}}, seedOptions)
	if got := shorts(r.Findings); got != "m.py:4 A.init item [all]" {
		t.Errorf("findings: %s", got)
	}
}
