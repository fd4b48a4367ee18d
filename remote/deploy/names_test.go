package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/kernels/bundle"
)

// privilegePaths are the two ways Sync writes: root over SFTP, and a
// non-root login through sudo, tar and rsync.
var privilegePaths = []struct {
	name string
	uid  string
	sudo bool
}{
	{"root", "0", false},
	{"sudo", "1000", true},
}

// hostileNames are file names that mean something to a pattern language
// (rsync's, a shell's glob): Sync must treat each as a name.
var hostileNames = []string{"sub/***", "sub/*", "a[1].py", "b?.py", `c\d.py`, `dir*/e.py`, `back\slash/f.py`}

// TestSyncTreatsNamesAsData changes files whose names are patterns beside
// unchanged siblings, then removes them: nothing unchanged is deleted, and
// the host ends equal to the build each time. A changed "sub/***" once
// became the rsync rule "/sub/***" and deleted sub's five siblings.
func TestSyncTreatsNamesAsData(t *testing.T) {
	for _, pp := range privilegePaths {
		t.Run(pp.name, func(t *testing.T) {
			if pp.sudo {
				needRsync(t)
			}
			conn, build, _, remote, records := newFixture(t)
			conn.uid = pp.uid
			siblings := map[string]string{}
			for i := range 5 {
				siblings[fmt.Sprintf("sub/sibling%d.py", i)] = fmt.Sprintf("N = %d\n", i)
			}
			writeTree(t, build, siblings)
			syncLocal(t, conn, build, remote, records)

			hostile := map[string]string{}
			for _, n := range hostileNames {
				hostile[n] = "# " + n + "\n"
			}
			writeTree(t, build, hostile)
			res := syncLocal(t, conn, build, remote, records)
			if want := slices.Sorted(slices.Values(hostileNames)); !slices.Equal(slices.Sorted(slices.Values(res.Uploaded)), want) || len(res.Deleted) != 0 {
				t.Fatalf("uploaded %q, deleted %q; want %q uploaded and nothing deleted", res.Uploaded, res.Deleted, want)
			}
			assertSiblings(t, remote, siblings)
			assertEqualTrees(t, build, remote)

			// Removed again: only they go, the siblings stay.
			for _, n := range hostileNames {
				if err := os.Remove(filepath.Join(build, filepath.FromSlash(n))); err != nil {
					t.Fatal(err)
				}
			}
			for _, d := range []string{"dir*", `back\slash`} {
				if err := os.Remove(filepath.Join(build, d)); err != nil {
					t.Fatal(err)
				}
			}
			res = syncLocal(t, conn, build, remote, records)
			if len(res.Deleted) != len(hostileNames) {
				t.Fatalf("deleted %q, want the %d hostile names", res.Deleted, len(hostileNames))
			}
			assertSiblings(t, remote, siblings)
			assertEqualTrees(t, build, remote)
		})
	}
}

// TestSyncReplacesSymlinkedDirectory puts a symlink on the host where the
// build has a directory, pointing outside the remote directory: Sync
// replaces the link with the build's directory, says so, and writes
// nothing where the link pointed. Over SFTP the files once landed in the
// link's target and stayed there.
func TestSyncReplacesSymlinkedDirectory(t *testing.T) {
	for _, pp := range privilegePaths {
		t.Run(pp.name, func(t *testing.T) {
			if pp.sudo {
				needRsync(t)
			}
			conn, build, base, remote, records := newFixture(t)
			conn.uid = pp.uid
			syncLocal(t, conn, build, remote, records)

			elsewhere := filepath.Join(base, "elsewhere")
			writeTree(t, elsewhere, map[string]string{"keep.txt": "not the build's\n"})
			if err := os.Symlink(elsewhere, filepath.Join(remote, "sub")); err != nil {
				t.Fatal(err)
			}
			writeTree(t, build, map[string]string{"sub/new.py": "N = 1\n", "sub/deeper/more.py": "M = 2\n"})
			p, err := Check(t.Context(), conn, build, remote)
			if err != nil || !slices.Equal(p.Replace, []string{"sub"}) || p.InSync() {
				t.Fatalf("check: replace %q, in sync %v, %v; want sub replaced", p.Replace, p.InSync(), err)
			}
			res := syncLocal(t, conn, build, remote, records)
			if !slices.Equal(res.Replaced, []string{"sub"}) {
				t.Errorf("replaced %q, want [sub]", res.Replaced)
			}
			entries, err := os.ReadDir(elsewhere)
			if err != nil || len(entries) != 1 || entries[0].Name() != "keep.txt" {
				t.Fatalf("the link's target holds %v (%v), want keep.txt alone", entries, err)
			}
			if fi, err := os.Lstat(filepath.Join(remote, "sub")); err != nil || !fi.IsDir() {
				t.Fatalf("sub on the host: %v, %v; want a directory", fi, err)
			}
			assertEqualTrees(t, build, remote)
		})
	}
}

// TestCheckStagedArgvDoesNotGrow runs a root Sync of 3 000 new files and
// of 30: no command line is longer for the larger one. One argument per
// staged file failed with "argument list too long" past about 20 000.
func TestCheckStagedArgvDoesNotGrow(t *testing.T) {
	longest := func(n int) int {
		build := filepath.Join(t.TempDir(), "build")
		files := map[string]string{}
		for i := range n {
			files[fmt.Sprintf("pkg%d/module_%05d.py", i%7, i)] = fmt.Sprint(i)
		}
		writeTree(t, build, files)
		base := t.TempDir()
		conn := &recordingConn{localConn: newLocalConn(t)}
		res, err := Sync(t.Context(), conn, build, filepath.Join(base, "opt", "site"), Options{RecordDir: filepath.Join(base, "records")})
		if err != nil || len(res.Uploaded) != n {
			t.Fatalf("sync of %d files: %d uploaded, %v", n, len(res.Uploaded), err)
		}
		most := 0
		for _, c := range conn.cmds {
			most = max(most, len(c))
		}
		return most
	}
	small, large := longest(30), longest(3000)
	if large > small {
		t.Fatalf("longest command line %d bytes for 3 000 files, %d for 30: it grows with the change", large, small)
	}
}

func assertSiblings(t *testing.T, remote string, siblings map[string]string) {
	t.Helper()
	for rel, want := range siblings {
		got, err := os.ReadFile(filepath.Join(remote, filepath.FromSlash(rel)))
		if err != nil || string(got) != want {
			t.Errorf("unchanged %s on the host: %q, %v; want %q", rel, got, err, want)
		}
	}
}

// assertEqualTrees checks that the host's directory holds exactly the
// build's files, by content hash and by listing (names a hash could
// mask as a pattern are compared one by one).
func assertEqualTrees(t *testing.T, build, remote string) {
	t.Helper()
	lt, err := bundle.Walk(os.DirFS(build))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := bundle.Walk(os.DirFS(remote))
	if err != nil {
		t.Fatal(err)
	}
	names := func(tr bundle.Tree) []string {
		var out []string
		for _, f := range tr.Files {
			if !strings.Contains(f.Path, bundle.PyCache) {
				out = append(out, f.Path+" "+f.Sum)
			}
		}
		return slices.Sorted(slices.Values(out))
	}
	if l, r := names(lt), names(rt); !slices.Equal(l, r) {
		t.Fatalf("host differs from the build:\n build %q\n host  %q", l, r)
	}
}
