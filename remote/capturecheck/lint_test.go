package capturecheck

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
)

// seedDir is the lint's seed-shaped kernel tree: validate's marshalling
// calls .item(); on has no sync.
func seedDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs(filepath.Join("..", "..", "kernels", "capturelint", "testdata", "seed"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// believedSafe is the demo's catalog as the kernel's author believed it:
// validate declared capture-safe, so only the lint or a check can refuse.
func believedSafe(localDir string) kernels.Catalog {
	cat := kernels.DefaultCatalog()
	cat.Kernels[0].Modes[1].CaptureSafe = true
	cat.Kernels[0].LocalDir = localDir
	return cat
}

// copyReader is a host's driver that "reads" its kernel files from a
// local tree, or fails with err; it counts its reads.
type copyReader struct {
	src   string
	err   error
	reads atomic.Int32
}

func (c *copyReader) ReadKernelFiles(_ context.Context, k kernels.Kernel, env []string, dst string) (string, error) {
	c.reads.Add(1)
	if c.err != nil {
		return "", c.err
	}
	if !slices.Contains(env, "PYTHONPATH=/opt/kdtree/site") {
		return "", errors.New("not the unit's environment")
	}
	return "gpu:/opt/kdtree/site", os.CopyFS(dst, os.DirFS(c.src))
}

func wantsFor(hosts []string, mode string) []remote.CheckWant {
	var out []remote.CheckWant
	for _, h := range hosts {
		out = append(out, remote.CheckWant{Host: h, Kernel: "kdtree-verify", Mode: mode, Env: []string{"PYTHONPATH=/opt/kdtree/site", "KDTREE_MODE=" + mode}})
	}
	return out
}

// TestLintLocalTree: with the catalog's local_dir (what redeploy sends)
// the lint reads it, once for every host, and its finding refuses the
// mode declared safe: refused by lint, with file:line and the function.
func TestLintLocalTree(t *testing.T) {
	cat := believedSafe(seedDir(t))
	noHost := func(string) (remote.KernelReader, bool) { return nil, false }
	start := time.Now()
	ev := Lint(context.Background(), cat, wantsFor([]string{"gpu1", "gpu2"}, "validate"), noHost)
	took := time.Since(start)
	t.Logf("lint of the local seed tree for 2 hosts: %s", took)
	for _, h := range []string{"gpu1", "gpu2"} {
		got := ev[remote.HostKernel{Host: h, Kernel: "kdtree-verify"}]
		if len(got) != 1 || got[0].Source != kernels.SourceLint || got[0].Safe || got[0].Skipped ||
			!strings.HasPrefix(got[0].Detail, "kdtree_verify/marshal.py:13 offsets.max().item() in pack") || !strings.Contains(got[0].Detail, "(read from "+seedDir(t)+")") {
			t.Errorf("%s: lint evidence on validate = %+v", h, got)
		}
	}
	if took > 2*time.Second {
		t.Errorf("the lint of a local tree took %s: it is meant to take milliseconds", took)
	}

	hosts := []remote.HostState{{Name: "gpu1", UnitState: event.Unit{ExecStart: "/usr/local/bin/infersim --port 30000", Environment: []string{"KDTREE_MODE=validate"}}}}
	refused := remote.PreflightAllWith(hosts, cat, []remote.Action{{Kind: remote.ActRestart}}, ev)
	if len(refused) != 1 || !slices.Equal(refused[0].RefusedBy, []kernels.SafetySource{kernels.SourceLint}) ||
		!strings.Contains(refused[0].Reason, "declared capture-safe, but the lint says not: kdtree_verify/marshal.py:13 offsets.max().item() in pack") {
		t.Fatalf("preflight with the lint's evidence: %+v", refused)
	}

	ev = Lint(context.Background(), cat, wantsFor([]string{"gpu1"}, "on"), noHost)
	if got := ev[remote.HostKernel{Host: "gpu1", Kernel: "kdtree-verify"}]; len(got) != 1 || !got[0].Safe || !strings.HasPrefix(got[0].Detail, "no host sync found in 5 Python file(s) of ") {
		t.Errorf("lint evidence on on = %+v", got)
	}
}

// TestLintHostFiles: without a local tree the lint reads what each host
// loads through its driver (one read per host and kernel); a read that
// fails counts neither way and says why; a host that cannot read gives
// no lint evidence.
func TestLintHostFiles(t *testing.T) {
	cat := believedSafe("")
	good := &copyReader{src: seedDir(t)}
	bad := &copyReader{err: errors.New("gpu2: look for sitecustomize.py on PYTHONPATH: exit 1: permission denied")}
	readers := map[string]remote.KernelReader{"gpu1": good, "gpu2": bad}
	wants := append(wantsFor([]string{"gpu1", "gpu2", "gpu3"}, "validate"), wantsFor([]string{"gpu1"}, "validate")...)
	ev := Lint(context.Background(), cat, wants, func(h string) (remote.KernelReader, bool) {
		r, ok := readers[h]
		return r, ok
	})
	if n := good.reads.Load(); n != 1 {
		t.Errorf("gpu1's files read %d times, want once", n)
	}
	g1 := ev[remote.HostKernel{Host: "gpu1", Kernel: "kdtree-verify"}]
	if len(g1) != 2 || g1[0].Safe || !strings.Contains(g1[0].Detail, "marshal.py:13") || !strings.HasSuffix(g1[0].Detail, "(read from gpu:/opt/kdtree/site)") {
		t.Errorf("gpu1: %+v", g1)
	}
	g2 := ev[remote.HostKernel{Host: "gpu2", Kernel: "kdtree-verify"}]
	if len(g2) != 1 || !g2[0].Skipped || g2[0].Source != kernels.SourceLint || !strings.Contains(g2[0].Detail, "the lint could not run: gpu2: look for sitecustomize.py") {
		t.Errorf("gpu2: %+v", g2)
	}
	if g3, ok := ev[remote.HostKernel{Host: "gpu3", Kernel: "kdtree-verify"}]; ok {
		t.Errorf("gpu3 (no reader) has lint evidence: %+v", g3)
	}
	// A local_dir that is not here: the host's files, not a failure.
	cat = believedSafe(filepath.Join(t.TempDir(), "gone"))
	ev = Lint(context.Background(), cat, wantsFor([]string{"gpu1"}, "on"), func(string) (remote.KernelReader, bool) { return good, true })
	if got := ev[remote.HostKernel{Host: "gpu1", Kernel: "kdtree-verify"}]; len(got) != 1 || !got[0].Safe || !strings.HasSuffix(got[0].Detail, "of gpu:/opt/kdtree/site") {
		t.Errorf("local_dir missing: %+v", got)
	}
}
