package kernelfiles

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
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
		list, _, _ := strings.Cut(strings.TrimPrefix(cmd, "for d in"), "; do")
		for _, q := range quoted.FindAllStringSubmatch(list, -1) {
			if f.site[q[1]] {
				return []byte(q[1] + "\n"), nil, 0, nil
			}
		}
		return nil, nil, 0, nil
	case strings.HasPrefix(cmd, "cd "):
		d := quoted.FindStringSubmatch(cmd)[1]
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

// quoted is a word sshx.ShellQuote quoted (the paths here have no quote
// of their own).
var quoted = regexp.MustCompile(`'([^']*)'`)

// TestPythonPath: the unit's Environment entries come unquoted (D-Bus
// gives them so; UnitEnvironment undoes systemctl show's quoting); the
// value splits on ':' only, as Python's does, so a directory with a space
// is one entry.
func TestPythonPath(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want []string
	}{
		{[]string{"KDTREE_MODE=on", "PYTHONPATH=/opt/kdtree/site"}, []string{"/opt/kdtree/site"}},
		{[]string{"PYTHONPATH=/a:relative::/b", "PYTHONPATH=/c:/opt/x"}, []string{"/c", "/opt/x"}},
		{[]string{"PYTHONPATH=/opt/my kernels/site:/opt/x", "OTHER=a b"}, []string{"/opt/my kernels/site", "/opt/x"}},
		{[]string{"NOT_PYTHONPATH=/opt/site", "KDTREE_MODE=on"}, nil},
	} {
		if got := PythonPath(c.env); !slices.Equal(got, c.want) {
			t.Errorf("PythonPath(%q) = %q, want %q", c.env, got, c.want)
		}
	}
}

// TestUnitEnvironment: systemctl show quotes an entry with a space; it
// comes back whole, and its PYTHONPATH entry is one directory.
func TestUnitEnvironment(t *testing.T) {
	h := &fakeHost{env: `KDTREE_MODE=on "PYTHONPATH=/opt/my kernels/site:/opt/x"`}
	env, err := UnitEnvironment(context.Background(), h, "sglang.service")
	if err != nil || !slices.Equal(env, []string{"KDTREE_MODE=on", "PYTHONPATH=/opt/my kernels/site:/opt/x"}) {
		t.Fatalf("UnitEnvironment = %q, %v", env, err)
	}
	if got := PythonPath(env); !slices.Equal(got, []string{"/opt/my kernels/site", "/opt/x"}) {
		t.Errorf("PythonPath = %q", got)
	}
}

// TestDirsAndFetch: the directory with sitecustomize.py on the unit's
// PYTHONPATH and the kernel's remote_dir, laid out as sys.path sees them.
func TestDirsAndFetch(t *testing.T) {
	k := kernels.DefaultCatalog().Kernels[0]
	k.RemoteDir = "/opt/kdtree/releases/v3"
	h := &fakeHost{
		site: map[string]bool{"/opt/kdtree/site": true},
		trees: map[string]map[string]string{
			"/opt/kdtree/site":        {"sitecustomize.py": "import kdtree_verify\n", "../escape.py": "x", "notes.txt": "x"},
			"/opt/kdtree/releases/v3": {"kdtree_verify/__init__.py": "def forward(x):\n    return x.max().item()\n", "sitecustomize.py": "shadowed\n"},
		},
	}
	env := []string{"KDTREE_MODE=validate", "PYTHONPATH=/opt/other:/opt/kdtree/site"}
	dirs, err := Dirs(context.Background(), h, env, k)
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
	if _, err := Dirs(context.Background(), h, env, k); err == nil {
		t.Error("Dirs found something with no sitecustomize.py and no remote_dir")
	}
}

// TestDirsWithSpace: a PYTHONPATH directory with a space is looked for
// and read as one path.
func TestDirsWithSpace(t *testing.T) {
	k := kernels.DefaultCatalog().Kernels[0]
	k.RemoteDir = ""
	site := "/opt/my kernels/site"
	h := &fakeHost{
		site:  map[string]bool{site: true},
		trees: map[string]map[string]string{site: {"sitecustomize.py": "import kdtree_verify\n"}},
	}
	dirs, err := Dirs(context.Background(), h, []string{"PYTHONPATH=/opt/x:" + site}, k)
	if err != nil || !slices.Equal(dirs, []string{site}) {
		t.Fatalf("Dirs = %q, %v (ran %q)", dirs, err, h.ran)
	}
	got, err := Fetch(context.Background(), h, dirs, t.TempDir())
	if err != nil || !slices.Equal(got, []string{site + "/sitecustomize.py"}) {
		t.Fatalf("Fetch = %q, %v", got, err)
	}
}
