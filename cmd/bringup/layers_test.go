package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The layer rules of ARCHITECTURE.md, pinned. TestLayers reads the import
// graph of the module with `go list -deps -json ./...` (test files left
// out: a test may reach for a testbed) and checks each rule below. It sits
// in cmd/bringup because the binary is the one package that may import
// every layer, and the module root holds no package.

const module = "bringup"

// uiIOPackages are the bringup packages that talk to hosts: the UI sees
// the fleet through remote.Source and acts through Fleet.Do, so none of
// them may be among the bringup packages it pulls in.
var uiIOPackages = []string{
	"bringup/remote/sshx", "bringup/remote/deploy", "bringup/remote/dropin", "bringup/remote/systemd",
	"bringup/remote/journal", "bringup/remote/probe", "bringup/remote/live",
}

// remoteLibraries are the third-party packages that carry SSH and SFTP,
// each with its subpackages.
var remoteLibraries = []string{"github.com/pkg/sftp", "golang.org/x/crypto/ssh"}

// uiDirectBans are the standard packages neither the UI nor a bringup
// package it pulls in may import (those of third-party libraries, such as
// Bubble Tea's os/exec, are not ours to rule).
var uiDirectBans = []string{"net", "net/", "os/exec"}

// purePackages fold and compute; they get their inputs and clocks handed
// to them, so they import no IO, directly or through a bringup package.
var purePackages = []string{"bringup/remote/startup", "bringup/remote/rollout", "bringup/remote/history", "bringup/remote/sanitize", "bringup/remote/unitname"}

// ioImports are what a pure package may not reach. A prefix ending in "/"
// bans a tree.
var ioImports = []string{"os", "os/exec", "net", "net/", "io/fs", "path/filepath", "syscall"}

// goPackage is the part of `go list -json` the rules read.
type goPackage struct {
	ImportPath string
	Imports    []string
}

// matches reports whether path is one of pats: an exact path, or a
// prefix ending in "/".
func matches(path string, pats []string) bool {
	for _, p := range pats {
		if path == p || strings.HasSuffix(p, "/") && strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

func under(path, tree string) bool { return path == tree || strings.HasPrefix(path, tree+"/") }

func ours(path string) bool { return under(path, module) }

// importGraph runs go list from the module root and returns each bringup
// package's direct (non-test) imports.
func importGraph(t *testing.T) map[string][]string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to read the import graph: %v", err)
	}
	gomod, err := exec.Command(goBin, "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-deps", "-json", "./...")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps -json ./... in %s: %v\n%s", cmd.Dir, err, stderr.Bytes())
	}
	graph := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		if ours(p.ImportPath) {
			graph[p.ImportPath] = p.Imports
		}
	}
	if len(graph) < 10 || graph["bringup/ui"] == nil {
		t.Fatalf("go list found %d bringup packages, without bringup/ui: not the module root?", len(graph))
	}
	return graph
}

// reach walks the bringup packages root pulls in, root included, and
// calls visit for each one's direct imports with the chain that leads to
// it ("bringup/ui → bringup/remote").
func reach(graph map[string][]string, root string, visit func(pkg string, imports []string, chain string)) {
	from := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		pkg := queue[0]
		queue = queue[1:]
		chain := pkg
		for p := from[pkg]; p != ""; p = from[p] {
			chain = p + " → " + chain
		}
		visit(pkg, graph[pkg], chain)
		for _, imp := range graph[pkg] {
			if _, seen := from[imp]; !seen && ours(imp) {
				from[imp] = pkg
				queue = append(queue, imp)
			}
		}
	}
}

// layerViolations checks every rule and returns one line per broken one,
// naming the importing package, the imported one and the rule.
func layerViolations(graph map[string][]string) []string {
	var out []string
	add := func(importer, imported, chain, rule string) {
		v := importer + " imports " + imported + ": " + rule
		if chain != importer {
			v += " (reached as " + chain + ")"
		}
		out = append(out, v)
	}
	reach(graph, "bringup/ui", func(pkg string, imports []string, chain string) {
		for _, imp := range imports {
			switch {
			case slices.Contains(uiIOPackages, imp):
				add(pkg, imp, chain, "the UI pulls in no package that talks to hosts (it acts through Fleet.Do)")
			case slices.ContainsFunc(remoteLibraries, func(lib string) bool { return under(imp, lib) }):
				add(pkg, imp, chain, "the UI pulls in no SSH or SFTP library")
			case matches(imp, uiDirectBans):
				add(pkg, imp, chain, "neither the UI nor a bringup package it pulls in imports net or os/exec")
			}
		}
	})
	for _, root := range purePackages {
		reach(graph, root, func(pkg string, imports []string, chain string) {
			for _, imp := range imports {
				if matches(imp, ioImports) {
					add(pkg, imp, chain, root+" is pure: it reaches no IO package, directly or through a bringup package")
				}
			}
		})
	}
	var pkgs []string
	for pkg := range graph {
		pkgs = append(pkgs, pkg)
	}
	slices.Sort(pkgs)
	for _, pkg := range pkgs {
		lower := under(pkg, "bringup/remote") || under(pkg, "bringup/kernels")
		for _, imp := range graph[pkg] {
			switch {
			case lower && (under(imp, "bringup/ui") || under(imp, "bringup/cmd")):
				add(pkg, imp, pkg, "nothing under remote/ or kernels/ imports ui or cmd")
			case under(pkg, "bringup/kernels") && under(imp, "bringup/remote"):
				add(pkg, imp, pkg, "arrows run remote → kernels only: nothing under kernels/ imports remote/")
			}
		}
	}
	return out
}

func TestLayers(t *testing.T) {
	graph := importGraph(t)
	for _, root := range append([]string{"bringup/ui"}, purePackages...) {
		if graph[root] == nil {
			t.Errorf("%s is not in the module: the rules about it check nothing", root)
		}
	}
	for _, v := range layerViolations(graph) {
		t.Error(v)
	}
}

// TestLayerRulesBite runs the checks on a small graph with one arrow of
// each kind added back, so that a rule that stopped matching (a renamed
// package, a typo in a list) shows here rather than passing in silence.
func TestLayerRulesBite(t *testing.T) {
	graph := map[string][]string{
		"bringup/ui":               {"bringup/remote", "charm.land/bubbletea/v2", "net"},
		"bringup/remote":           {"bringup/remote/helper", "bringup/kernels"},
		"bringup/remote/helper":    {"bringup/remote/sshx"},
		"bringup/remote/sshx":      {"golang.org/x/crypto/ssh/agent", "os/exec"},
		"bringup/remote/rollout":   {"bringup/remote"},
		"bringup/remote/startup":   {"bringup/kernels"},
		"bringup/remote/history":   {"bringup/remote/history/x"},
		"bringup/remote/history/x": {"io/fs"},
		"bringup/remote/sanitize":  {"unicode/utf8"},
		"bringup/kernels":          {"strings"},
		"bringup/kernels/bad":      {"bringup/remote/sshx", "bringup/ui"},
		"charm.land/bubbletea/v2":  {"os/exec"},
	}
	got := strings.Join(layerViolations(graph), "\n")
	for _, want := range []string{
		"bringup/ui imports net: neither the UI",
		"bringup/remote/helper imports bringup/remote/sshx: the UI pulls in no package that talks to hosts (it acts through Fleet.Do) (reached as bringup/ui → bringup/remote → bringup/remote/helper)",
		"bringup/remote/sshx imports golang.org/x/crypto/ssh/agent: the UI pulls in no SSH or SFTP library",
		"bringup/remote/sshx imports os/exec: bringup/remote/rollout is pure",
		"bringup/remote/history/x imports io/fs: bringup/remote/history is pure",
		"bringup/kernels/bad imports bringup/remote/sshx: arrows run remote → kernels only",
		"bringup/kernels/bad imports bringup/ui: nothing under remote/ or kernels/ imports ui or cmd",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing violation %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "charm.land") || strings.Contains(got, "bringup/remote/startup is pure") || strings.Contains(got, "sanitize is pure") {
		t.Errorf("a third-party package's imports or a clean package was reported:\n%s", got)
	}
}
