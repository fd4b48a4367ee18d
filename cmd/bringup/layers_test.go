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

const module = "github.com/bringup-dev/bringup"

// uiIOPackages are the bringup packages that talk to hosts: the UI sees
// the fleet through remote.Source and acts through Fleet.Do, so none of
// them may be among the bringup packages it pulls in.
var uiIOPackages = []string{
	module + "/remote/sshx", module + "/remote/deploy", module + "/remote/dropin", module + "/remote/systemd",
	module + "/remote/journal", module + "/remote/probe", module + "/remote/live",
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
var purePackages = []string{module + "/remote/startup", module + "/remote/rollout", module + "/remote/history", module + "/remote/sanitize", module + "/remote/unitname", module + "/remote/benchstat", module + "/remote/deployment", module + "/remote/hostclock"}

// ioImports are what a pure package may not reach. A prefix ending in "/"
// bans a tree.
var ioImports = []string{"os", "os/exec", "net", "net/", "io/fs", "path/filepath", "syscall"}

// binary is the product: the package `go build ./cmd/bringup` links, with
// everything it pulls in.
const binary = module + "/cmd/bringup"

// testOnly is what the binary may not link, through any package, ours or
// a library's: the test kit (testbeds, the e2e gate, the fleet benchmark)
// and the standard testing tree. Tests reach for them; the product never.
var testOnly = []string{module + "/remote/testkit", module + "/remote/testkit/", "testing", "testing/"}

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

// importGraph runs go list from the module root and returns the direct
// (non-test) imports of each package the module's packages pull in:
// bringup's own, the libraries' and the standard library's.
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
		graph[p.ImportPath] = p.Imports
	}
	if len(graph) < 10 || graph[module+"/ui"] == nil {
		t.Fatalf("go list found %d packages, without bringup/ui: not the module root?", len(graph))
	}
	return graph
}

// reach walks the packages root pulls in that follow admits, root
// included, and calls visit for each one's direct imports with the chain
// that leads to it ("…/ui → …/remote").
func reach(graph map[string][]string, root string, follow func(pkg string) bool, visit func(pkg string, imports []string, chain string)) {
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
			if _, seen := from[imp]; !seen && follow(imp) {
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
	reach(graph, module+"/ui", ours, func(pkg string, imports []string, chain string) {
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
		reach(graph, root, ours, func(pkg string, imports []string, chain string) {
			for _, imp := range imports {
				if matches(imp, ioImports) {
					add(pkg, imp, chain, root+" is pure: it reaches no IO package, directly or through a bringup package")
				}
			}
		})
	}
	reach(graph, binary, func(string) bool { return true }, func(pkg string, imports []string, chain string) {
		for _, imp := range imports {
			if matches(imp, testOnly) {
				add(pkg, imp, chain, "the binary links neither the test kit (remote/testkit) nor testing, through any package")
			}
		}
	})
	var pkgs []string
	for pkg := range graph {
		if ours(pkg) {
			pkgs = append(pkgs, pkg)
		}
	}
	slices.Sort(pkgs)
	for _, pkg := range pkgs {
		lower := under(pkg, module+"/remote") || under(pkg, module+"/kernels")
		for _, imp := range graph[pkg] {
			switch {
			case lower && (under(imp, module+"/ui") || under(imp, module+"/cmd")):
				add(pkg, imp, pkg, "nothing under remote/ or kernels/ imports ui or cmd")
			case under(pkg, module+"/kernels") && under(imp, module+"/remote"):
				add(pkg, imp, pkg, "arrows run remote → kernels only: nothing under kernels/ imports remote/")
			}
		}
	}
	return out
}

func TestLayers(t *testing.T) {
	graph := importGraph(t)
	for _, root := range append([]string{module + "/ui", binary}, purePackages...) {
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
		module + "/ui":               {module + "/remote", "charm.land/bubbletea/v2", "net"},
		module + "/remote":           {module + "/remote/helper", module + "/kernels"},
		module + "/remote/helper":    {module + "/remote/sshx"},
		module + "/remote/sshx":      {"golang.org/x/crypto/ssh/agent", "os/exec"},
		module + "/remote/rollout":   {module + "/remote"},
		module + "/remote/startup":   {module + "/kernels"},
		module + "/remote/history":   {module + "/remote/history/x"},
		module + "/remote/history/x": {"io/fs"},
		module + "/remote/sanitize":  {"unicode/utf8"},
		module + "/kernels":          {"strings"},
		module + "/kernels/bad":      {module + "/remote/sshx", module + "/ui"},
		"charm.land/bubbletea/v2":    {"os/exec"},
		binary:                       {binary + "/wire", module + "/remote", "example.com/lib"},
		binary + "/wire":             {module + "/remote/testkit/testbed"},
		"example.com/lib":            {"example.com/lib/check"},
		"example.com/lib/check":      {"testing"},
		module + "/cmd/testbed":      {module + "/remote/testkit/fleetbench", "testing"},
	}
	got := strings.Join(layerViolations(graph), "\n")
	for _, want := range []string{
		module + "/ui imports net: neither the UI",
		module + "/remote/helper imports " + module + "/remote/sshx: the UI pulls in no package that talks to hosts (it acts through Fleet.Do) (reached as " + module + "/ui → " + module + "/remote → " + module + "/remote/helper)",
		module + "/remote/sshx imports golang.org/x/crypto/ssh/agent: the UI pulls in no SSH or SFTP library",
		module + "/remote/sshx imports os/exec: " + module + "/remote/rollout is pure",
		module + "/remote/history/x imports io/fs: " + module + "/remote/history is pure",
		module + "/kernels/bad imports " + module + "/remote/sshx: arrows run remote → kernels only",
		module + "/kernels/bad imports " + module + "/ui: nothing under remote/ or kernels/ imports ui or cmd",
		binary + "/wire imports " + module + "/remote/testkit/testbed: the binary links neither the test kit (remote/testkit) nor testing, through any package (reached as " + binary + " → " + binary + "/wire)",
		"example.com/lib/check imports testing: the binary links neither the test kit (remote/testkit) nor testing, through any package (reached as " + binary + " → example.com/lib → example.com/lib/check)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing violation %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "charm.land") || strings.Contains(got, module+"/remote/startup is pure") || strings.Contains(got, "sanitize is pure") || strings.Contains(got, module+"/cmd/testbed") {
		t.Errorf("a third-party package's imports (outside the binary's rule), a clean package or one the binary does not reach was reported:\n%s", got)
	}
}
