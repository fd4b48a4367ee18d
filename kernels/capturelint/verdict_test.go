package capturelint

import (
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/bringup-dev/bringup/kernels"
)

func TestCompareSeedKernel(t *testing.T) {
	files, skipped, err := ReadTree(os.DirFS("testdata/seed"))
	if err != nil || len(skipped) > 0 || len(files) != 5 {
		t.Fatalf("ReadTree: %d files, skipped %v, %v", len(files), skipped, err)
	}
	k, _ := kernels.DefaultCatalog().Kernel("kdtree-verify")
	vs := Compare(k, Lint(files, ForKernel(k)))
	var got []string
	for _, v := range vs {
		got = append(got, v.Mode+": "+v.Note)
	}
	want := []string{
		"off: clean: declared capture-safe, no host sync found",
		"validate: not capture-safe: declared so, and 2 host sync(s) reach it",
		"on: clean: declared capture-safe, no host sync found",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("verdicts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if vs[0].Unsafe() || !vs[1].Unsafe() || vs[2].Unsafe() {
		t.Errorf("Unsafe: %+v", vs)
	}
}

// The case that cost 630 s: the catalog declares a mode safe and its code
// syncs. And the other way: declared unsafe, nothing found.
func TestCompareDisagreements(t *testing.T) {
	k := kernels.Kernel{Name: "k", EnvVar: "K_MODE", Modes: []kernels.Mode{{Name: "on", CaptureSafe: true}, {Name: "debug"}}}
	r := Lint([]File{{Path: "k.py", Src: "import os\nif os.environ['K_MODE'] == 'on':\n    n = x.sum().item()\n"}}, ForKernel(k))
	vs := Compare(k, r)
	if vs[0].Agree || vs[0].Syncs != 1 || !strings.HasPrefix(vs[0].Note, "DISAGREE: declared capture-safe") || !vs[0].Unsafe() {
		t.Errorf("on: %+v", vs[0])
	}
	if vs[1].Agree || vs[1].Syncs != 0 || !strings.HasPrefix(vs[1].Note, "DISAGREE: declared not capture-safe") || !vs[1].Unsafe() {
		t.Errorf("debug: %+v", vs[1])
	}
}

func TestReadTree(t *testing.T) {
	fsys := fstest.MapFS{
		"a.py":                 {Data: []byte("x = 1\n")},
		"pkg/b.py":             {Data: []byte("y = 2\n")},
		"pkg/__pycache__/b.py": {Data: []byte("no")},
		".git/hooks/c.py":      {Data: []byte("no")},
		"pkg/data.bin":         {Data: []byte("no")},
		"big.py":               {Data: make([]byte, MaxFileSize+1)},
		"pkg/.hidden/d.py":     {Data: []byte("no")},
		"pkg/sub/__init__.py":  {Data: []byte("")},
	}
	files, skipped, err := ReadTree(fsys)
	var got []string
	for _, f := range files {
		got = append(got, f.Path)
	}
	if err != nil || strings.Join(got, " ") != "a.py pkg/b.py pkg/sub/__init__.py" || strings.Join(skipped, " ") != "big.py" {
		t.Errorf("ReadTree: %v, skipped %v, %v", got, skipped, err)
	}
}

// The runnable seed kernel the capture check ships (kernels/capturecheck)
// lints as the catalog declares it: validate syncs, on and off are clean.
func TestCompareCaptureCheckSeed(t *testing.T) {
	files, _, err := ReadTree(os.DirFS("../capturecheck/site"))
	if err != nil {
		t.Fatal(err)
	}
	k, _ := kernels.DefaultCatalog().Kernel("kdtree-verify")
	r := Lint(files, ForKernel(k))
	var got []string
	for _, f := range r.Findings {
		got = append(got, short(f))
	}
	want := "kdtree_verify/marshal.py:13 pack item [validate]\nkdtree_verify/validate.py:17 check compare-on-host [validate]"
	if strings.Join(got, "\n") != want {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}
	for _, v := range Compare(k, r) {
		if !v.Agree {
			t.Errorf("%s: %s", v.Mode, v.Note)
		}
	}
}

// The story issue 25 exists for, without a GPU: the catalog declares on
// capture-safe, on's marshalling syncs; the preflight refuses on, by the
// lint, before any restart.
func TestPreflightRefusesByLint(t *testing.T) {
	k, _ := kernels.DefaultCatalog().Kernel("kdtree-verify")
	files := []File{
		{Path: "sitecustomize.py", Src: "import os\nif os.environ.get('KDTREE_MODE', 'off') != 'off':\n    import kdtree_verify\n"},
		{Path: "kdtree_verify/__init__.py", Src: "def forward(q, idx):\n    n = idx.max().item()\n    return q[:n]\n"},
	}
	r := Lint(files, ForKernel(k))
	const exec = "python3 -m sglang.launch_server --model m"
	res := kernels.PreflightWith(k, "on", exec, "", []kernels.Evidence{r.Evidence("on")})
	if res.OK || res.RefusedByText() != "lint" || !strings.Contains(res.Reason, "kdtree_verify/__init__.py:2 idx.max().item() in forward") {
		t.Errorf("on: ok %v, refused by %q: %s", res.OK, res.RefusedByText(), res.Reason)
	}
	if ev := r.Evidence("off"); !ev.Safe {
		t.Errorf("off: %+v", ev)
	}
}
