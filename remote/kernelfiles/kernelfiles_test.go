package kernelfiles

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/kernels"
)

// fakeHost answers the commands Dirs and Fetch run.
type fakeHost struct {
	env   string
	site  map[string]bool              // dirs holding a sitecustomize.py
	trees map[string]map[string]string // dir → name → content
	ran   []string
}

func (f *fakeHost) Exec(_ context.Context, cmd string) ([]byte, []byte, int, error) {
	f.ran = append(f.ran, cmd)
	switch {
	case strings.HasPrefix(cmd, "systemctl show -p Environment --value "):
		return []byte(f.env + "\n"), nil, 0, nil
	case strings.HasPrefix(cmd, "for d in"):
		for _, w := range strings.Fields(strings.TrimPrefix(cmd, "for d in")) {
			if w == ";" || strings.HasPrefix(w, ";") {
				break
			}
			if d := strings.Trim(w, "';"); f.site[d] {
				return []byte(d + "\n"), nil, 0, nil
			}
		}
		return nil, nil, 0, nil
	case strings.HasPrefix(cmd, "cd "):
		d := strings.Trim(strings.Fields(cmd)[1], "'")
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		for name, body := range f.trees[d] {
			if err := tw.WriteHeader(&tar.Header{Name: "./" + name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
				return nil, nil, 0, err
			}
			if _, err := tw.Write([]byte(body)); err != nil {
				return nil, nil, 0, err
			}
		}
		if err := tw.Close(); err != nil {
			return nil, nil, 0, err
		}
		return b.Bytes(), nil, 0, nil
	}
	return nil, []byte("unexpected"), 1, nil
}

func TestPythonPath(t *testing.T) {
	for env, want := range map[string][]string{
		"KDTREE_MODE=on PYTHONPATH=/opt/kdtree/site":      {"/opt/kdtree/site"},
		"PYTHONPATH=/a:relative::/b PYTHONPATH=/c:/opt/x": {"/c", "/opt/x"},
		`"PYTHONPATH=/opt/site" OTHER=1`:                  {"/opt/site"},
		"KDTREE_MODE=on":                                  nil,
	} {
		if got := PythonPath(env); !slices.Equal(got, want) {
			t.Errorf("PythonPath(%q) = %q, want %q", env, got, want)
		}
	}
}

// TestDirsAndFetch: the directory with sitecustomize.py on the unit's
// PYTHONPATH and the kernel's remote_dir, laid out as sys.path sees them.
func TestDirsAndFetch(t *testing.T) {
	k := kernels.DefaultCatalog().Kernels[0]
	k.RemoteDir = "/opt/kdtree/releases/v3"
	h := &fakeHost{
		env:  "KDTREE_MODE=validate PYTHONPATH=/opt/other:/opt/kdtree/site",
		site: map[string]bool{"/opt/kdtree/site": true},
		trees: map[string]map[string]string{
			"/opt/kdtree/site":        {"sitecustomize.py": "import kdtree_verify\n", "../escape.py": "x", "notes.txt": "x"},
			"/opt/kdtree/releases/v3": {"kdtree_verify/__init__.py": "def forward(x):\n    return x.max().item()\n", "sitecustomize.py": "shadowed\n"},
		},
	}
	dirs, err := Dirs(context.Background(), h, "sglang.service", k)
	if err != nil || !slices.Equal(dirs, []string{"/opt/kdtree/site", "/opt/kdtree/releases/v3"}) {
		t.Fatalf("Dirs = %q, %v", dirs, err)
	}
	dst := t.TempDir()
	got, err := Fetch(context.Background(), h, dirs, dst)
	slices.Sort(got)
	if err != nil || !slices.Equal(got, []string{"/opt/kdtree/releases/v3/kdtree_verify/__init__.py", "/opt/kdtree/site/sitecustomize.py"}) {
		t.Fatalf("Fetch = %q, %v", got, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "sitecustomize.py")); string(b) != "import kdtree_verify\n" {
		t.Errorf("sitecustomize.py = %q: the first directory on the path must win", b)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dst), "escape.py")); err == nil {
		t.Error("a name with .. left the destination")
	}

	h.site = nil
	k.RemoteDir = ""
	if _, err := Dirs(context.Background(), h, "sglang.service", k); err == nil {
		t.Error("Dirs found something with no sitecustomize.py and no remote_dir")
	}
}
