package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/testkit/e2e"
)

// TestGoInstallFromCleanGOPATH: `go install ./cmd/bringup` works with an
// empty GOPATH and module cache (every dependency fetched from the module
// proxy, as on a fresh machine), and the binary it installs runs. The
// toolchain is the one running this test (its GOROOT, GOTOOLCHAIN=local),
// so that the empty module cache does not also have to fetch a toolchain.
func TestGoInstallFromCleanGOPATH(t *testing.T) {
	e2e.Require(t, e2e.Command("go"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	goroot, err := exec.CommandContext(ctx, "go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	goBin := filepath.Join(strings.TrimSpace(string(goroot)), "bin", "go")
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	gopath := t.TempDir()
	env := append(os.Environ(),
		"GOPATH="+gopath,
		"GOMODCACHE="+filepath.Join(gopath, "pkg", "mod"),
		"GOBIN=",              // the default, GOPATH/bin
		"GOFLAGS=-modcacherw", // so that the temporary directory can be removed
		"GOTOOLCHAIN=local",
		"CGO_ENABLED=0",
	)
	install := exec.CommandContext(ctx, goBin, "install", "./cmd/bringup")
	install.Dir, install.Env = repo, env
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install ./cmd/bringup with an empty GOPATH: %v\n%s", err, out)
	}
	bin := filepath.Join(gopath, "bin", "bringup")
	out, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "bringup ") {
		t.Fatalf("%s --version: %v, %q; want \"bringup …\"", bin, err, out)
	}
	mods, err := os.ReadDir(filepath.Join(gopath, "pkg", "mod", "cache", "download"))
	if err != nil || len(mods) == 0 {
		t.Fatalf("the empty module cache holds nothing after the install (%v): not a clean install", err)
	}
	t.Logf("installed %s: %s", bin, strings.TrimSpace(string(out)))
}
