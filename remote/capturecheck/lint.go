package capturecheck

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/kernels/capturelint"
	"github.com/bringup-dev/bringup/remote"
)

// LintDeadline bounds reading one host's kernel files for the lint: a few
// commands and a small tar stream over a connection already open.
const LintDeadline = 20 * time.Second

// treeLint is one kernel tree linted: the tree a unit will load, read
// once for every mode the wants ask about.
type treeLint struct {
	where string // the local directory, or HOST:/dir,/dir
	res   capturelint.Result
	took  time.Duration // reading and linting it
	err   error         // the tree could not be read
}

// treeKey names a tree: the kernel's local one (host ""), or the one a
// host loads.
type treeKey struct{ host, kernel string }

// Lint lints, for each of wants, the kernel's Python the unit will load:
// the local tree redeploy sends (the catalog's local_dir, when it is a
// directory here), else the files the host loads, read over its
// connection by reader (the host's driver, when it can; with its
// Environment after the actions). Each tree is read and linted once, at
// the same time as the others; the evidence is per host, kernel and mode.
// A want with neither tree gives no lint evidence; a tree that could not
// be read gives evidence that counts neither way and says why.
func Lint(ctx context.Context, cat kernels.Catalog, wants []remote.CheckWant, reader func(host string) (remote.KernelReader, bool)) remote.SafetyEvidence {
	trees := map[treeKey]*treeLint{}
	var wg sync.WaitGroup
	keys := make([]treeKey, len(wants))
	for i, w := range wants {
		k, ok := cat.Kernel(w.Kernel)
		if !ok {
			continue
		}
		key, read := treeKey{kernel: k.Name}, func(context.Context, string) (string, error) { return k.LocalDir, nil }
		if !HasLocalTree(k) {
			r, ok := reader(w.Host)
			if !ok {
				continue
			}
			key.host = w.Host
			read = func(ctx context.Context, dst string) (string, error) { return r.ReadKernelFiles(ctx, k, w.Env, dst) }
		}
		keys[i] = key
		if trees[key] != nil {
			continue
		}
		t := &treeLint{}
		trees[key] = t
		wg.Add(1)
		go func() {
			defer wg.Done()
			*t = lintTree(ctx, k, key.host != "", read)
		}()
	}
	wg.Wait()
	out := remote.SafetyEvidence{}
	for i, w := range wants {
		t := trees[keys[i]]
		if t == nil {
			continue
		}
		hk := remote.HostKernel{Host: w.Host, Kernel: w.Kernel}
		out[hk] = append(out[hk], t.evidence(w.Mode))
	}
	return out
}

// HasLocalTree reports whether k's local tree (the catalog's local_dir,
// what redeploy sends) is a directory here: then the lint reads it rather
// than a host's files.
func HasLocalTree(k kernels.Kernel) bool {
	if k.LocalDir == "" {
		return false
	}
	st, err := os.Stat(k.LocalDir)
	return err == nil && st.IsDir()
}

// lintTree reads one tree (a host's into a temporary directory removed
// after) and lints it for k.
func lintTree(ctx context.Context, k kernels.Kernel, fetched bool, read func(ctx context.Context, dst string) (string, error)) treeLint {
	start := time.Now()
	dir := ""
	if fetched {
		tmp, err := os.MkdirTemp("", "bringup-lint-")
		if err != nil {
			return treeLint{err: err}
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	ctx, cancel := context.WithTimeout(ctx, LintDeadline)
	defer cancel()
	where, err := read(ctx, dir)
	if err != nil {
		return treeLint{where: where, err: err, took: time.Since(start)}
	}
	if dir == "" {
		dir = where
	}
	res, err := capturelint.LintTree(os.DirFS(dir), k)
	return treeLint{where: where, res: res, err: err, took: time.Since(start)}
}

// evidence is the tree's lint as evidence on mode: safe when no
// high-confidence finding reaches it, else the first one's file:line,
// call and function, and where the tree was read.
func (t treeLint) evidence(mode string) kernels.Evidence {
	if t.err != nil {
		return kernels.Evidence{Source: kernels.SourceLint, Skipped: true, Took: t.took, Detail: fmt.Sprintf("the lint could not run: %v", t.err)}
	}
	ev := t.res.Report.Evidence(mode)
	ev.Took = t.took
	if ev.Safe {
		ev.Detail = fmt.Sprintf("no host sync found in %d Python file(s) of %s", t.res.Report.Files, t.where)
	} else {
		ev.Detail += " (read from " + t.where + ")"
	}
	return ev
}
