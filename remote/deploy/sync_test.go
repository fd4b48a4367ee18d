package deploy

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels/bundle"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/testkit/e2e"
)

// newBuild makes a local kernel build like the demo's.
func newBuild(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "build")
	writeTree(t, dir, map[string]string{
		"sitecustomize.py":           "import os\nif os.environ.get('KDTREE_MODE', 'off') != 'off':\n    import kdtree_verify\n",
		"kdtree_verify/__init__.py":  "VERSION = '1'\n",
		"kdtree_verify/ops/tree.py":  "def build(): pass\n",
		"kdtree_verify/ops/query.py": "def query(): pass\n",
	})
	return dir
}

// syncLocal runs Sync of build into remote through conn and fails t on error.
func syncLocal(t *testing.T, conn *localConn, build, remote, records string) Result {
	t.Helper()
	res, err := Sync(t.Context(), conn, build, remote, Options{RecordDir: records})
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	return res
}

// newFixture gives a local "host", a build, and where on the host the
// build goes (base/opt/site) and the records are kept.
func newFixture(t *testing.T) (conn *localConn, build, base, remote, records string) {
	base = t.TempDir()
	return newLocalConn(t), newBuild(t), base, filepath.Join(base, "opt", "site"), filepath.Join(base, "records")
}

func TestSyncLocal(t *testing.T) {
	conn, build, base, remote, records := newFixture(t)
	localHash, err := bundle.DirHash(build)
	if err != nil {
		t.Fatal(err)
	}

	// First deploy: the directory does not exist; everything is sent.
	var progress []Progress
	res, err := Sync(t.Context(), conn, build, remote, Options{RecordDir: records, Progress: func(p Progress) { progress = append(progress, p) },
		Now: func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) }})
	if err != nil {
		t.Fatalf("first sync: %v", err)
	}
	if len(res.Uploaded) != 4 || res.Unchanged != 0 || res.Hash != localHash || res.Sudo {
		t.Fatalf("first sync: %+v", res)
	}
	if got, err := RemoteHash(t.Context(), conn, remote); err != nil || got != localHash {
		t.Fatalf("RemoteHash = %s, %v; want %s", got, err, localHash)
	}
	for i, p := range progress {
		if p.Total != res.Bytes || p.Done > p.Total || i > 0 && p.Done < progress[i-1].Done {
			t.Fatalf("progress %d: %+v (previous %+v), total bytes %d", i, p, progress[max(i-1, 0)], res.Bytes)
		}
	}
	if last := progress[len(progress)-1]; last.Done != res.Bytes {
		t.Fatalf("last progress %+v, want done %d", last, res.Bytes)
	}
	rec, err := ReadRecord(t.Context(), conn, records, remote)
	if err != nil || rec.Hash != localHash || rec.Files != 4 || rec.By != "tester" || !rec.At.Equal(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Fatalf("record: %+v, %v", rec, err)
	}
	if _, err := os.Stat(filepath.Join(base, "opt", ".site.bringup-stage")); !os.IsNotExist(err) {
		t.Fatalf("staging directory left behind: %v", err)
	}

	// Nothing changed: nothing is sent.
	if p, err := Check(t.Context(), conn, build, remote); err != nil || !p.InSync() || p.Unchanged != 4 {
		t.Fatalf("check after deploy: %+v, %v", p, err)
	}
	if res := syncLocal(t, conn, build, remote, records); len(res.Uploaded)+len(res.Deleted)+len(res.Chmodded) != 0 || res.Unchanged != 4 {
		t.Fatalf("no-op sync: %+v", res)
	}

	// The service's Python writes byte-code caches beside the build: the
	// host is still in sync, and a sync leaves them alone.
	writeTree(t, remote, map[string]string{"__pycache__/sitecustomize.cpython-312.pyc": "bytecode",
		"kdtree_verify/__pycache__/__init__.cpython-312.pyc": "bytecode", "kdtree_verify/ops/__pycache__/tree.cpython-312.pyc": "bytecode"})
	if p, err := Check(t.Context(), conn, build, remote); err != nil || !p.InSync() {
		t.Fatalf("check with __pycache__ on the host: %+v, %v", p, err)
	}
	if got, err := RemoteHash(t.Context(), conn, remote); err != nil || got != localHash {
		t.Fatalf("RemoteHash with __pycache__ = %s, %v; want %s", got, err, localHash)
	}

	// One file changed, one mode changed, one file and its directory
	// removed, one added, one stray file on the host.
	writeTree(t, build, map[string]string{"kdtree_verify/__init__.py": "VERSION = '2'\n", "kdtree_verify/new.py": "N = 1\n"})
	if err := os.Chmod(filepath.Join(build, "sitecustomize.py"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(build, "kdtree_verify", "ops")); err != nil {
		t.Fatal(err)
	}
	writeTree(t, remote, map[string]string{"stray.txt": "left by hand\n"})
	p, err := Check(t.Context(), conn, build, remote)
	if err != nil || p.InSync() {
		t.Fatalf("check after change: %+v, %v", p, err)
	}
	res = syncLocal(t, conn, build, remote, records)
	if !slices.Equal(res.Uploaded, []string{"kdtree_verify/__init__.py", "kdtree_verify/new.py"}) ||
		!slices.Equal(res.Chmodded, []string{"sitecustomize.py"}) ||
		!slices.Equal(res.Deleted, []string{"kdtree_verify/ops/query.py", "kdtree_verify/ops/tree.py", "stray.txt"}) {
		t.Fatalf("second sync: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(remote, "kdtree_verify", "ops")); !os.IsNotExist(err) {
		t.Fatalf("removed directory still there: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(remote, "sitecustomize.py")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode: %v, %v", fi, err)
	}
	newHash, _ := bundle.DirHash(build)
	if got, _ := bundle.DirHash(remote); got != newHash || newHash == localHash {
		t.Fatalf("remote hash %s, local %s (old %s)", got, newHash, localHash)
	}
}

// needRsync runs a test of the sudo path, which installs with this
// machine's rsync, wherever rsync is; without it the test is an
// end-to-end one (package e2e: skipped, or failed under BRINGUP_E2E=1).
func needRsync(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("rsync"); err != nil {
		e2e.Require(t, e2e.Command("rsync"))
	}
}

func TestSyncSudo(t *testing.T) {
	needRsync(t)
	build := newBuild(t)
	base := t.TempDir()
	remote := filepath.Join(base, "opt", "site")
	records := filepath.Join(base, "records")

	conn := newLocalConn(t)
	conn.uid = "1000"
	res := syncLocal(t, conn, build, remote, records)
	if !res.Sudo || len(res.Uploaded) != 4 {
		t.Fatalf("sudo sync: %+v", res)
	}
	if rec, err := ReadRecord(t.Context(), conn, records, remote); err != nil || rec.Hash != res.Hash {
		t.Fatalf("record: %+v, %v", rec, err)
	}
	if _, err := os.Stat(filepath.Join(base, "opt", ".site.bringup-stage")); !os.IsNotExist(err) {
		t.Fatalf("staging directory left behind: %v", err)
	}
	before, _ := bundle.DirHash(remote)

	writeTree(t, build, map[string]string{"sitecustomize.py": "# changed\n"})
	conn.sudo = "password"
	_, err := Sync(t.Context(), conn, build, remote, Options{RecordDir: records})
	if !errors.Is(err, ErrSudo) || !strings.Contains(err.Error(), "a password is required") || !strings.Contains(err.Error(), "NOPASSWD") {
		t.Fatalf("sync with password sudo: %v, want ErrSudo naming the fix", err)
	}
	t.Logf("error: %v", err)
	if after, _ := bundle.DirHash(remote); after != before {
		t.Fatal("failed sudo sync changed the target")
	}
}

// TestSyncInterrupted cuts the SFTP session half-way through a 5 MB file:
// the target keeps its old content, and the next Sync removes the stale
// staging file and completes.
func TestSyncInterrupted(t *testing.T) {
	conn, build, base, remote, records := newFixture(t)
	big := make([]byte, 5<<20)
	_, _ = rand.Read(big)
	writeTree(t, build, map[string]string{"kdtree_verify/blob.bin": string(big)})
	syncLocal(t, conn, build, remote, records)
	oldSum := sha256.Sum256(big)

	_, _ = rand.Read(big)
	newSum := sha256.Sum256(big)
	writeTree(t, build, map[string]string{"kdtree_verify/blob.bin": string(big), "sitecustomize.py": "# v2\n"})
	_, err := Sync(t.Context(), conn, build, remote, Options{RecordDir: records, Progress: func(p Progress) {
		if p.File == "kdtree_verify/blob.bin" && p.Done > p.Total/2 {
			conn.kill()
		}
	}})
	if err == nil {
		t.Fatal("sync survived a cut session")
	}
	t.Logf("cut: %v", err)
	got, err := os.ReadFile(filepath.Join(remote, "kdtree_verify", "blob.bin"))
	if err != nil || sha256.Sum256(got) != oldSum {
		t.Fatalf("target after cut: %v (new content? %v)", err, err == nil && sha256.Sum256(got) == newSum)
	}
	stale, _ := filepath.Glob(filepath.Join(base, "opt", ".site.bringup-stage", "*", "*"))
	if len(stale) == 0 {
		t.Fatal("no staging file left by the cut (test did not cut mid-upload)")
	}

	res := syncLocal(t, conn, build, remote, records)
	if len(res.Uploaded) != 2 {
		t.Fatalf("resync: %+v", res)
	}
	got, _ = os.ReadFile(filepath.Join(remote, "kdtree_verify", "blob.bin"))
	if sha256.Sum256(got) != newSum {
		t.Fatal("target not updated by the resync")
	}
	if _, err := os.Stat(filepath.Join(base, "opt", ".site.bringup-stage")); !os.IsNotExist(err) {
		t.Fatalf("stale staging files not removed: %v", err)
	}
}

func TestSyncRefuses(t *testing.T) {
	conn := newLocalConn(t)
	build := newBuild(t)
	for _, dir := range []string{"/", "/opt", "opt/site", "/opt/../site/x", "/opt/site/"} {
		if _, err := Sync(t.Context(), conn, build, dir, Options{}); err == nil || !strings.Contains(err.Error(), "remote dir") {
			t.Errorf("remote dir %q: %v, want refusal", dir, err)
		}
	}
	remote := filepath.Join(t.TempDir(), "opt", "site")
	empty := t.TempDir()
	if _, err := Sync(t.Context(), conn, empty, remote, Options{}); err == nil || !strings.Contains(err.Error(), "no files") {
		t.Errorf("empty build: %v", err)
	}
	if err := os.Symlink("sitecustomize.py", filepath.Join(build, "link.py")); err != nil {
		t.Fatal(err)
	}
	if _, err := Sync(t.Context(), conn, build, remote, Options{}); err == nil || !strings.Contains(err.Error(), "link.py") {
		t.Errorf("symlink in build: %v", err)
	}
	notDir := filepath.Join(t.TempDir(), "file")
	writeTree(t, filepath.Dir(notDir), map[string]string{"file": "x"})
	if _, err := Check(t.Context(), conn, newBuild(t), notDir); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("target is a file: %v", err)
	}
	if _, err := ReadRecord(t.Context(), conn, t.TempDir(), "/opt/site"); !errors.Is(err, ErrNoRecord) {
		t.Errorf("missing record: %v", err)
	}
}

// TestListingOfAwkwardNames runs the real listing script on names with
// spaces, newlines, quotes and a leading dash, and parses it back.
func TestListingOfAwkwardNames(t *testing.T) {
	conn := newLocalConn(t)
	dir := t.TempDir()
	files := map[string]string{"a b.py": "1", "new\nline": "2", "it's": "3", "-rf": "4", "d/é.txt": "5", "back\\slash": "6"}
	writeTree(t, dir, files)
	if err := os.Symlink("a b.py", filepath.Join(dir, "ln")); err != nil {
		t.Fatal(err)
	}
	rt, missing, err := listRemote(t.Context(), conn, dir)
	if err != nil || missing {
		t.Fatalf("list: %v (missing %v)", err, missing)
	}
	for rel, content := range files {
		sum := sha256.Sum256([]byte(content))
		if f := rt.files[rel]; f.Sum != hex.EncodeToString(sum[:]) || f.Size != int64(len(content)) || f.Mode != 0o644 {
			t.Errorf("%q: %+v", rel, f)
		}
	}
	if len(rt.files) != len(files) || !rt.dirs["d"] || !rt.other["ln"] {
		t.Errorf("listing: %+v", rt)
	}
	_, missing, err = listRemote(t.Context(), conn, filepath.Join(dir, "nope"))
	if err != nil || !missing {
		t.Errorf("missing dir: %v, %v", missing, err)
	}
}

func TestParseListingRejects(t *testing.T) {
	h := strings.Repeat("ab", 32)
	for _, in := range []string{
		"f 644 1 a\x00",                         // no checksum section
		"f 644 1 ../a\x00--\x00",                // escapes
		"f 9999 1 a\x00--\x00",                  // bad mode
		"x 644 a\x00--\x00",                     // unknown kind
		"f 644 1 a\x00--\x00" + h + "  ./b\x00", // checksum for unlisted file
		"f 644 1 a\x00--\x00" + h + "  a\x00",   // no ./
	} {
		if _, err := parseListing([]byte(in)); err == nil {
			t.Errorf("parseListing(%q) accepted", in)
		}
	}
	rt, err := parseListing([]byte("f 644 1 a\x00f 600 2 gone\x00--\x00" + h + "  ./a\x00"))
	if err != nil || rt.files["a"].Sum != h || len(rt.files) != 1 {
		t.Errorf("file gone before its checksum: %+v, %v", rt, err)
	}
}

func FuzzParseListing(f *testing.F) {
	h := strings.Repeat("0f", 32)
	f.Add([]byte("d 755 d\x00f 644 3 d/a\x00o 777 ln\x00--\x00" + h + "  ./d/a\x00"))
	f.Add([]byte("--\x00"))
	f.Fuzz(func(t *testing.T, in []byte) {
		rt, err := parseListing(in)
		if err != nil {
			return
		}
		for rel, fl := range rt.files {
			if checkRel(rel) != nil || len(fl.Sum) != 64 || fl.Mode&^0o777 != 0 {
				t.Fatalf("accepted %q: %+v", rel, fl)
			}
		}
	})
}

// TestPlanSudo checks what a sudo Sync lists for rsync: removed
// directories by their topmost one, except one holding a foreign entry,
// which stays while its removed files and byte-code cache go; and every
// listed path's parent in the staging tree.
func TestPlanSudo(t *testing.T) {
	plan := Plan{
		Upload:    []Change{{Path: "a/new.py", Size: 3}, {Path: "b.py", Size: 4}},
		Chmod:     []Change{{Path: "c.py", Size: 5}},
		Delete:    []string{"gone/x.py", "gone/sub/y.py", "keep/z.py", "top.py", "a/old.py"},
		RemoveDir: []string{"gone/sub", "gone", "keep"},
		Foreign:   []string{"keep/link"},
	}
	sp := planSudo(plan)
	if want := []applyPath{{path: "a/new.py"}, {path: "a/old.py"}, {path: "b.py"}, {path: "c.py"}, {path: "gone", tree: true}, {path: "keep/__pycache__", tree: true}, {path: "keep/z.py"}, {path: "top.py"}}; !slices.Equal(sp.apply, want) {
		t.Errorf("apply %+v, want %+v", sp.apply, want)
	}
	if want := []string{"a", "keep"}; !slices.Equal(sp.dirs, want) {
		t.Errorf("staging dirs %q, want %q", sp.dirs, want)
	}
	if sp.bytes != 12 || len(sp.stage) != 3 {
		t.Errorf("staged %d files, %d bytes", len(sp.stage), sp.bytes)
	}
	rules := strings.Split(strings.TrimSuffix(string(applyRules(sp)), "\x00"), "\x00")
	want := []string{"/a/", "/keep/", "/a/new.py", "/a/old.py", "/b.py", "/c.py", "/gone/***", "/keep/__pycache__/***", "/keep/z.py", "/top.py", "- *"}
	if !slices.Equal(rules, want) {
		t.Errorf("rules %q, want %q", rules, want)
	}
	for _, c := range []struct{ name, suffix, want string }{
		{"a b.py", "", "a b.py"},
		{`back\slash`, "", `back\slash`},
		{`back\slash`, "/***", `back\\slash/***`},
		{"st*r?[x]\\y", "", `st\*r\?\[x]\\y`},
		{"***", "", `\*\*\*`},
		{"d", "/", "d/"},
	} {
		if got := rsyncPattern(c.name, c.suffix); got != c.want {
			t.Errorf("rsyncPattern(%q, %q) = %q, want %q", c.name, c.suffix, got, c.want)
		}
	}
}

// TestSudoStepsAreTheTable runs a sudo Sync and checks that every command
// it hands to sudo is one of sshx's deploy commands for the directory, so
// that the sudoers rule doctor prints allows all of them, and that no
// command line grows with the number of files.
func TestSudoStepsAreTheTable(t *testing.T) {
	needRsync(t)
	build := filepath.Join(t.TempDir(), "build")
	files := map[string]string{}
	for i := range 300 {
		files[fmt.Sprintf("pkg%d/a-rather-long-module-name-%04d.py", i%7, i)] = fmt.Sprint(i)
	}
	writeTree(t, build, files)
	base := t.TempDir()
	remote := filepath.Join(base, "opt", "site")
	records := filepath.Join(base, "records")
	conn := &recordingConn{localConn: newLocalConn(t)}
	conn.uid = "1000"
	if res := syncLocal(t, conn.localConn, build, remote, records); len(res.Uploaded) != 300 {
		t.Fatalf("first sync: %+v", res)
	}
	res, err := Sync(t.Context(), conn, build, remote, Options{RecordDir: records})
	if err != nil || !res.Sudo {
		t.Fatalf("sync: %+v, %v", res, err)
	}
	if err := os.RemoveAll(filepath.Join(build, "pkg3")); err != nil {
		t.Fatal(err)
	}
	writeTree(t, build, map[string]string{"pkg1/a-rather-long-module-name-0001.py": "changed"})
	if _, err := Sync(t.Context(), conn, build, remote, Options{RecordDir: records}); err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{}
	for _, c := range (sshx.Scope{KernelDirs: []string{remote}, RecordDir: records}).Commands() {
		allowed[c.Line(true)] = true
	}
	sudoed := 0
	for _, cmd := range conn.cmds {
		if len(cmd) > 4096 {
			t.Errorf("a command line of %d bytes: %.200q…", len(cmd), cmd)
		}
		for _, part := range strings.Split(cmd, " && ") {
			if !strings.HasPrefix(part, "sudo -n -- ") {
				continue
			}
			sudoed++
			if !allowed[part] {
				t.Errorf("sudo step outside the table: %q", part)
			}
		}
	}
	if sudoed < 7 {
		t.Errorf("%d sudo steps seen, want at least 7: %q", sudoed, conn.cmds)
	}
}

// recordingConn is a localConn that keeps every command line it runs.
type recordingConn struct {
	*localConn
	mu   sync.Mutex
	cmds []string
}

func (r *recordingConn) Exec(ctx context.Context, cmd string) ([]byte, []byte, int, error) {
	return r.ExecInput(ctx, cmd, nil)
}

func (r *recordingConn) ExecInput(ctx context.Context, cmd string, stdin io.Reader) ([]byte, []byte, int, error) {
	r.mu.Lock()
	r.cmds = append(r.cmds, cmd)
	r.mu.Unlock()
	return r.localConn.ExecInput(ctx, cmd, stdin)
}

func TestForEach(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	if err := forEach(50, 4, func(i int) error {
		mu.Lock()
		seen[i]++
		mu.Unlock()
		return nil
	}); err != nil || len(seen) != 50 {
		t.Fatalf("forEach: %v, %d seen", err, len(seen))
	}
	for i, n := range seen {
		if n != 1 {
			t.Fatalf("item %d ran %d times", i, n)
		}
	}
	var ran atomic.Int32
	boom := errors.New("boom")
	err := forEach(1000, 3, func(i int) error {
		ran.Add(1)
		if i == 5 {
			return boom
		}
		// Yield, so the worker that failed gets to record its error
		// before the others run through the list: how many run after an
		// error is up to the scheduler, so the bound below is loose.
		runtime.Gosched()
		return nil
	})
	if !errors.Is(err, boom) || ran.Load() >= 500 {
		t.Fatalf("forEach after an error: %v, %d ran", err, ran.Load())
	}
	if err := forEach(0, 4, func(int) error { return boom }); err != nil {
		t.Fatalf("forEach of nothing: %v", err)
	}
}
