package deploy

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/kernels/bundle"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// TestTestbed redeploys the kernel directory on real hosts: one testbed
// of two, gpu1 (deploy has NOPASSWD sudo) and gpu2 (deploy has no sudo).
// The subtests run in order and build on each other's state.
func TestTestbed(t *testing.T) {
	tb := testbed.Start(t, 2)
	build := filepath.Join(t.TempDir(), "site")
	writeTree(t, build, map[string]string{
		"sitecustomize.py":          "import os\nif os.environ.get('KDTREE_MODE', 'off') != 'off':\n    import kdtree_verify\n",
		"kdtree_verify/__init__.py": "VERSION = '1.0'\n",
		"kdtree_verify/ops.py":      "def verify(tree, ref):\n    return tree == ref\n",
	})
	w := &world{t: t, tb: tb, build: build}
	t.Run("FirstDeploy", w.firstDeploy)
	t.Run("ChangedFileDriftAndServiceHash", w.changedFile)
	t.Run("NonRootThroughSudo", w.nonRoot)
	t.Run("CutUpload", w.cutUpload)
	t.Run("ManyFilesFigures", w.manyFiles)
	t.Run("NonRootTwoThousandFiles", w.nonRootMany)
	t.Run("HostileNamesSymlinkFortyThousandRoot", func(t *testing.T) { w.hostile(t, "gpu1", "/opt/hostile-root") })
	t.Run("HostileNamesSymlinkFortyThousandSudo", func(t *testing.T) { w.hostile(t, "gpu1-deploy", "/opt/hostile-sudo") })
}

// world is the state the subtests share.
type world struct {
	t     *testing.T
	tb    *testbed.Testbed
	build string
}

const site = testbed.KernelPythonPath

// connect opens a managed SSH connection by ssh_config alias; the
// returned stop closes it and waits for its goroutine.
func (w *world) connect(t *testing.T, ctx context.Context, alias string) (*sshx.Conn, func()) {
	t.Helper()
	cfg, err := sshx.Resolve(ctx, alias, sshx.ResolveOptions{ConfigFile: w.tb.SSHConfig()})
	if err != nil {
		t.Fatalf("resolve %s: %v", alias, err)
	}
	c := sshx.NewConn(cfg, sshx.ConnOptions{})
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Run(rctx)
	}()
	stop := func() { cancel(); <-done }
	if _, err := c.Client(ctx); err != nil {
		stop()
		t.Fatalf("connect %s: %v", alias, err)
	}
	t.Cleanup(stop)
	return c, stop
}

func (w *world) run(t *testing.T, ctx context.Context, host, cmd string) string {
	t.Helper()
	out, err := w.tb.Run(ctx, host, cmd)
	if err != nil {
		t.Fatalf("%s: %s: %v", host, cmd, err)
	}
	return out
}

func (w *world) localHash(t *testing.T) string {
	t.Helper()
	h, err := bundle.DirHash(w.build)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// serviceHash restarts sglang on host and returns the content hash
// infersim logs for its PYTHONPATH directory in this run.
func (w *world) serviceHash(t *testing.T, ctx context.Context, host string) string {
	t.Helper()
	since := strings.TrimSpace(w.run(t, ctx, host, "date +%s.%N"))
	w.run(t, ctx, host, "systemctl restart sglang")
	for {
		out := w.run(t, ctx, host, "journalctl -u sglang --no-pager -o cat --since=@"+since)
		for _, line := range strings.Split(out, "\n") {
			if l, ok := remote.ParseLoadedKernel(line); ok && l.Dir == site && l.Kernel == "kdtree-verify" {
				return l.Hash
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: no kernel line after restart: %v\n%s", host, ctx.Err(), out)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (w *world) firstDeploy(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	conn, _ := w.connect(t, ctx, "gpu1")
	if _, err := DeployedHash(ctx, conn, site); !errors.Is(err, ErrNoRecord) {
		t.Fatalf("record before any deploy: %v", err)
	}
	start := time.Now()
	res, err := Sync(ctx, conn, w.build, site, Options{})
	if err != nil {
		t.Fatalf("first sync: %v", err)
	}
	t.Logf("first deploy: %d files, %d bytes in %v (deleted %v, fsynced %v)", len(res.Uploaded), res.Bytes, time.Since(start), res.Deleted, res.Fsynced)
	// The image's tree had sitecustomize.py and kdtree_verify.py.
	if len(res.Uploaded) != 3 || !slices.Equal(res.Deleted, []string{"kdtree_verify.py"}) || res.Sudo || !res.Fsynced {
		t.Fatalf("first sync: %+v", res)
	}
	local := w.localHash(t)
	if got, err := RemoteHash(ctx, conn, site); err != nil || got != local {
		t.Fatalf("RemoteHash = %s, %v; want %s", got, err, local)
	}
	if got, err := DeployedHash(ctx, conn, site); err != nil || got != local {
		t.Fatalf("DeployedHash = %s, %v; want %s", got, err, local)
	}
	if got := w.serviceHash(t, ctx, "gpu1"); got != local {
		t.Fatalf("infersim logs content sha256=%s, want the build's %s", got, local)
	}
	if out := w.run(t, ctx, "gpu1", "stat -c '%U %a' "+site+"/kdtree_verify/ops.py; ls -A /opt/kdtree"); out != "root 644\nsite\n" {
		t.Fatalf("owner/mode or leftovers: %q", out)
	}
}

func (w *world) changedFile(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	conn, _ := w.connect(t, ctx, "gpu1")
	gpu2, _ := w.connect(t, ctx, "gpu2")
	old := w.localHash(t)
	running := w.serviceHash(t, ctx, "gpu1")
	gpu2Hash, err := RemoteHash(ctx, gpu2, site)
	if err != nil {
		t.Fatal(err)
	}

	writeTree(t, w.build, map[string]string{"kdtree_verify/__init__.py": "VERSION = '1.1'\n"})
	local := w.localHash(t)
	before := kernels.CompareHashes(local, map[string]string{"gpu1": running, "gpu2": gpu2Hash})
	if before.Hosts["gpu1"] != kernels.DriftDiffers || before.Badge() != "drift 2/2" || before.Versions != 2 {
		t.Fatalf("drift before redeploy: %+v %q", before, before.Badge())
	}
	p, err := Check(ctx, conn, w.build, site)
	if err != nil || len(p.Upload) != 1 || p.Unchanged != 2 {
		t.Fatalf("check: %+v, %v", p, err)
	}

	start := time.Now()
	res, err := Sync(ctx, conn, w.build, site, Options{})
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	t.Logf("redeploy of one changed file: %v (%d bytes)", time.Since(start), res.Bytes)
	if !slices.Equal(res.Uploaded, []string{"kdtree_verify/__init__.py"}) || res.Unchanged != 2 || len(res.Deleted) != 0 || res.Hash != local || res.Hash == old {
		t.Fatalf("sync: %+v", res)
	}
	deployed, err := DeployedHash(ctx, conn, site)
	if err != nil || deployed != local {
		t.Fatalf("DeployedHash = %s, %v; want %s", deployed, err, local)
	}
	got := w.serviceHash(t, ctx, "gpu1")
	if got != local {
		t.Fatalf("infersim logs content sha256=%s after restart, want %s", got, local)
	}
	t.Logf("infersim on gpu1 after restart: content sha256=%s", got)
	after := kernels.CompareHashes(local, map[string]string{"gpu1": got})
	if after.Hosts["gpu1"] != kernels.DriftSame || after.Badge() != "" {
		t.Fatalf("drift after redeploy: %+v %q", after, after.Badge())
	}
	// gpu2 still has the image's tree: the fleet still drifts there.
	if fleet := kernels.CompareHashes(local, map[string]string{"gpu1": got, "gpu2": gpu2Hash}); fleet.Badge() != "drift 1/2" || !slices.Equal(fleet.Differing(), []string{"gpu2"}) {
		t.Fatalf("fleet drift: %+v %q", fleet, fleet.Badge())
	}
}

func (w *world) nonRoot(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	writeTree(t, w.build, map[string]string{"sitecustomize.py": "# v3\nimport os\n"})
	local := w.localHash(t)

	gpu1, _ := w.connect(t, ctx, "gpu1-deploy")
	start := time.Now()
	res, err := Sync(ctx, gpu1, w.build, site, Options{})
	if err != nil {
		t.Fatalf("sync as deploy with sudo: %v", err)
	}
	t.Logf("redeploy through sudo -n: %v", time.Since(start))
	if !res.Sudo || !slices.Equal(res.Uploaded, []string{"sitecustomize.py"}) || res.Record.By != "deploy" {
		t.Fatalf("sudo sync: %+v", res)
	}
	if out := w.run(t, ctx, "gpu1", "sha256sum "+site+"/sitecustomize.py; stat -c '%U %a' "+site+"/sitecustomize.py; ls -A /opt/kdtree ~deploy/.cache/bringup 2>&1; true"); !strings.Contains(out, "root 644\n") ||
		strings.Contains(out, "bringup-stage") || strings.Contains(out, "stage") {
		t.Fatalf("after sudo install: %q", out)
	}
	if got, err := RemoteHash(ctx, gpu1, site); err != nil || got != local {
		t.Fatalf("RemoteHash as deploy = %s, %v; want %s", got, err, local)
	}

	root2, _ := w.connect(t, ctx, "gpu2")
	before, err := RemoteHash(ctx, root2, site)
	if err != nil {
		t.Fatal(err)
	}
	gpu2, _ := w.connect(t, ctx, "gpu2-deploy")
	start = time.Now()
	_, err = Sync(ctx, gpu2, w.build, site, Options{})
	took := time.Since(start)
	t.Logf("gpu2 (no sudo) failed in %v: %v", took, err)
	if !errors.Is(err, ErrSudo) || !strings.Contains(err.Error(), "gpu2-deploy") || !strings.Contains(err.Error(), "passwordless sudo") {
		t.Fatalf("sync as deploy without sudo: %v, want ErrSudo naming the host and the fix", err)
	}
	if took > 5*time.Second {
		t.Fatalf("the sudo failure took %v, want under 5 s (a prompt would hang)", took)
	}
	if after, err := RemoteHash(ctx, root2, site); err != nil || after != before {
		t.Fatalf("gpu2's tree changed by a failed sync: %s → %s (%v)", before, after, err)
	}
}

// cutUpload drops the connection half-way through a 5 MB file: the
// target stays old, and the next Sync removes the staging file.
func (w *world) cutUpload(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	big := make([]byte, 5<<20)
	_, _ = rand.Read(big)
	writeTree(t, w.build, map[string]string{"kdtree_verify/blob.bin": string(big)})
	conn, _ := w.connect(t, ctx, "gpu1")
	start := time.Now()
	if _, err := Sync(ctx, conn, w.build, site, Options{}); err != nil {
		t.Fatalf("sync 5 MB: %v", err)
	}
	t.Logf("upload of 5 MB: %v", time.Since(start))
	oldSum := sha256.Sum256(big)

	_, _ = rand.Read(big)
	if err := os.WriteFile(filepath.Join(w.build, "kdtree_verify", "blob.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	newSum := sha256.Sum256(big)
	cut, stop := w.connect(t, ctx, "gpu1")
	_, err := Sync(ctx, cut, w.build, site, Options{Progress: func(p Progress) {
		if p.Done > p.Total/2 {
			stop()
		}
	}})
	if err == nil {
		t.Fatal("sync survived the cut")
	}
	t.Logf("cut: %v", err)
	sum := strings.Fields(w.run(t, ctx, "gpu1", "sha256sum "+site+"/kdtree_verify/blob.bin"))[0]
	if sum != hex.EncodeToString(oldSum[:]) {
		t.Fatalf("target after the cut: sha256 %s, want the old %x (new would be %x)", sum, oldSum, newSum)
	}
	if out := w.run(t, ctx, "gpu1", "find /opt/kdtree/.site.bringup-stage -type f | wc -l"); strings.TrimSpace(out) == "0" {
		t.Fatal("no staging file left by the cut: it did not happen mid-upload")
	}

	res, err := Sync(ctx, conn, w.build, site, Options{})
	if err != nil || !slices.Equal(res.Uploaded, []string{"kdtree_verify/blob.bin"}) {
		t.Fatalf("resync: %+v, %v", res, err)
	}
	out := w.run(t, ctx, "gpu1", "sha256sum "+site+"/kdtree_verify/blob.bin; ls -A /opt/kdtree")
	if !strings.HasPrefix(out, hex.EncodeToString(newSum[:])) || !strings.HasSuffix(out, "\nsite\n") {
		t.Fatalf("after resync: %q", out)
	}
}

// manyFiles logs how long a tree of 200 small files takes to deploy, to
// check, and to redeploy with one file changed (another directory, so the
// kernel's stays as it is).
func (w *world) manyFiles(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	build := manyBuild(t, 200, func(i int) (string, string) {
		return fmt.Sprintf("pkg%d/mod%03d.py", i%10, i), strings.Repeat(fmt.Sprintf("# %d\n", i), 1000)
	})
	conn, _ := w.connect(t, ctx, "gpu1")
	const dir = "/opt/many/site"
	start := time.Now()
	res, err := Sync(ctx, conn, build, dir, Options{})
	if err != nil || len(res.Uploaded) != 200 {
		t.Fatalf("sync 200 files: %d uploaded, %v", len(res.Uploaded), err)
	}
	t.Logf("first deploy of 200 files (%d KiB): %v", res.Bytes>>10, time.Since(start))
	start = time.Now()
	if p, err := Check(ctx, conn, build, dir); err != nil || !p.InSync() {
		t.Fatalf("check: %+v, %v", p, err)
	}
	t.Logf("check of 200 files: %v", time.Since(start))
	writeTree(t, build, map[string]string{"pkg3/mod123.py": "# changed\n"})
	start = time.Now()
	res, err = Sync(ctx, conn, build, dir, Options{})
	if err != nil || !slices.Equal(res.Uploaded, []string{"pkg3/mod123.py"}) {
		t.Fatalf("resync: %+v, %v", res, err)
	}
	t.Logf("redeploy of 1 of 200 files: %v", time.Since(start))
	start = time.Now()
	if _, err := RemoteHash(ctx, conn, dir); err != nil {
		t.Fatal(err)
	}
	t.Logf("RemoteHash of 200 files over SFTP: %v", time.Since(start))
}

// nonRootMany redeploys 2 000 files through sudo as deploy, then changes
// one and removes a directory of 50: the install steps never put the file
// list in an argument (a single argument is capped at 128 KiB, which an
// install script naming each file passed at about 230 files).
func (w *world) nonRootMany(t *testing.T) {
	build := manyBuild(t, 2000, func(i int) (string, string) {
		return fmt.Sprintf("kdtree_verify/ops%02d/a_module_with_a_long_descriptive_name_%04d.py", i%40, i), fmt.Sprintf("N = %d\n", i)
	})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	const dir = "/opt/many2k/site"
	conn, _ := w.connect(t, ctx, "gpu1-deploy")
	start := time.Now()
	res, err := Sync(ctx, conn, build, dir, Options{})
	if err != nil {
		t.Fatalf("sync of 2 000 files as deploy: %v", err)
	}
	t.Logf("first deploy of 2 000 files through sudo: %v", time.Since(start))
	if !res.Sudo || len(res.Uploaded) != 2000 || !res.Fsynced {
		t.Fatalf("sync: sudo %v, %d uploaded, fsynced %v", res.Sudo, len(res.Uploaded), res.Fsynced)
	}
	if err := os.RemoveAll(filepath.Join(build, "kdtree_verify", "ops13")); err != nil {
		t.Fatal(err)
	}
	writeTree(t, build, map[string]string{"kdtree_verify/ops07/a_module_with_a_long_descriptive_name_0007.py": "N = 'changed'\n"})
	start = time.Now()
	res, err = Sync(ctx, conn, build, dir, Options{})
	if err != nil || len(res.Uploaded) != 1 || len(res.Deleted) != 50 {
		t.Fatalf("resync: %d uploaded, %d deleted, %v", len(res.Uploaded), len(res.Deleted), err)
	}
	t.Logf("redeploy with 1 changed and 50 removed of 2 000: %v", time.Since(start))
	local, err := bundle.DirHash(build)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(w.run(t, ctx, "gpu1", "find "+dir+" -type f | wc -l; ls -A /opt/many2k; stat -c %U "+dir+"/kdtree_verify/ops07/a_module_with_a_long_descriptive_name_0007.py")); got != "1950\nsite\nroot" {
		t.Fatalf("on the host: %q", got)
	}
	if rec, err := ReadRecord(ctx, conn, "", dir); err != nil || rec.Hash != local || rec.By != "deploy" || rec.Files != 1950 {
		t.Fatalf("record %+v, %v; want hash %s", rec, err, local)
	}
}

// manyBuild writes a local build of n files, file i named and filled by
// file(i).
func manyBuild(t *testing.T, n int, file func(i int) (name, content string)) string {
	t.Helper()
	build := filepath.Join(t.TempDir(), "many")
	files := map[string]string{}
	for i := range n {
		name, content := file(i)
		files[name] = content
	}
	writeTree(t, build, files)
	return build
}

// hostile redeploys, as alias, a build whose names are patterns (sub/***,
// a[1].py, b?.py, c\d.py) beside unchanged siblings, with a symlink on
// the host where the build has a directory (pointing outside the remote
// directory), and 40 000 new files: nothing outside the directory is
// touched, nothing unchanged deleted, the check after it clean. It logs
// the time of the 40 000.
func (w *world) hostile(t *testing.T, alias, base string) {
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	dir := base + "/site"
	outside := base + "-outside"
	siblings := map[string]string{}
	for i := range 5 {
		siblings[fmt.Sprintf("sub/sibling%d.py", i)] = fmt.Sprintf("N = %d\n", i)
	}
	build := manyBuild(t, 5, func(i int) (string, string) { return fmt.Sprintf("sub/sibling%d.py", i), fmt.Sprintf("N = %d\n", i) })
	writeTree(t, build, map[string]string{"lib/.keep": ""})
	conn, _ := w.connect(t, ctx, alias)
	if _, err := Sync(ctx, conn, build, dir, Options{}); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	// The host's lib becomes a link to a directory outside the tree.
	w.run(t, ctx, "gpu1", "mkdir -p "+outside+" && echo mine > "+outside+"/keep.txt && rm -rf "+dir+"/lib && ln -s "+outside+" "+dir+"/lib")

	const many = 40000
	files := map[string]string{"sub/***": "stars\n", "sub/*": "star\n", "a[1].py": "A = 1\n", "b?.py": "B = 2\n", `c\d.py`: "C = 3\n", "lib/x.py": "X = 1\n"}
	for i := range many {
		files[fmt.Sprintf("bulk/d%02d/m%05d.py", i%50, i)] = fmt.Sprintf("I = %d\n", i)
	}
	writeTree(t, build, files)
	start := time.Now()
	res, err := Sync(ctx, conn, build, dir, Options{})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("sync of %d changed files with hostile names and a symlinked directory: %v", len(files), err)
	}
	t.Logf("%s: redeploy of %d new files (sudo %v): %v", alias, len(res.Uploaded), res.Sudo, took)
	// lib/.keep goes again: its directory on the host was the link.
	if len(res.Uploaded) != len(files)+1 || len(res.Deleted) != 0 || !slices.Equal(res.Replaced, []string{"lib"}) {
		t.Fatalf("sync: %d uploaded (want %d), deleted %q, replaced %q", len(res.Uploaded), len(files)+1, res.Deleted, res.Replaced)
	}
	if got := strings.TrimSpace(w.run(t, ctx, "gpu1", "ls -A "+outside+"; stat -c %F "+dir+"/lib; cat "+dir+"/sub/sibling3.py")); got != "keep.txt\ndirectory\nN = 3" {
		t.Fatalf("on the host: %q; want the link's target untouched, lib a directory, the siblings kept", got)
	}
	if p, err := Check(ctx, conn, build, dir); err != nil || !p.InSync() {
		t.Fatalf("check after sync: %d to upload, %d to delete, replace %q, %v", len(p.Upload), len(p.Delete), p.Replace, err)
	}
}
