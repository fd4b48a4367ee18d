package capturelint

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// File is one Python source file: its slash path relative to the kernel's
// root (which names its module: kdtree_verify/ops.py is kdtree_verify.ops)
// and its contents.
type File struct {
	Path string
	Src  string
}

// Options name the kernel whose modes the lint resolves. With EnvVar or
// Modes empty, every finding counts as every mode.
type Options struct {
	EnvVar string   // the variable that selects the mode, e.g. KDTREE_MODE
	Modes  []string // the kernel's modes, e.g. off, validate, on
}

// Finding is one capture-illegal call.
type Finding struct {
	File       string     `json:"file"`
	Line       int        `json:"line"`
	Col        int        `json:"col"`
	Func       string     `json:"function"` // Class.method, or <module>
	Rule       string     `json:"rule"`
	Call       string     `json:"call"` // the call's source text
	Reason     string     `json:"reason"`
	Confidence Confidence `json:"confidence"`
	// Modes are the modes that reach the call; AllModes is true when
	// they could not be narrowed (or no kernel was named).
	Modes    []string `json:"modes"`
	AllModes bool     `json:"all_modes"`
	// Via says what narrowed Modes: the branch or the references.
	Via string `json:"via,omitempty"`
}

// Report is the lint of one tree.
type Report struct {
	Files    int           `json:"files"`
	Modes    []string      `json:"modes,omitempty"`
	Findings []Finding     `json:"findings"`
	Errors   []SyntaxError `json:"-"`
	// FileErrors are the syntax errors, with their files.
	FileErrors []FileError `json:"syntax_errors,omitempty"`
}

// FileError is a syntax error in one file.
type FileError struct {
	File string `json:"file"`
	SyntaxError
}

// Reached lists the findings of confidence c or higher that reach mode.
func (r Report) Reached(mode string, c Confidence) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if (c == Low || f.Confidence == High) && (f.AllModes || slices.Contains(f.Modes, mode)) {
			out = append(out, f)
		}
	}
	return out
}

// unit is a module or a function: the modes that reach it are worked out
// from where it is imported or named.
type unit struct {
	module bool
	name   string // the module's dotted name, or the function's own name
	qual   string // for display: Class.method
	file   int
	parent int  // the enclosing unit; -1 for a module
	site   cond // the branch the def sits under, within parent
	refs   []ref
	modes  modeSet
	why    string
}

// ref is a place that imports a module or names a function.
type ref struct {
	unit int // the unit the reference sits in
	cond cond
	file int
	line int
	note string // what narrowed it, for Via
}

// pending is a finding before its modes are known.
type pending struct {
	hit
	file, unit int
	cond       cond
	via        string
}

type linter struct {
	files    []File
	eval     *modeEval
	units    []unit
	modIndex map[string]int   // module name → unit
	names    map[string][]ref // every name occurrence → where
	pend     []pending
	report   Report
}

// Lint lints the files of one kernel tree.
func Lint(files []File, opts Options) Report {
	l := &linter{files: files, eval: newModeEval(opts.EnvVar, opts.Modes), modIndex: map[string]int{}, names: map[string][]ref{}}
	l.report.Files = len(files)
	if l.eval.resolves() {
		l.report.Modes = opts.Modes
	}
	parsed := make([][]stmt, len(files))
	for i, f := range files {
		toks, errs := Tokenize(f.Src)
		for _, e := range errs {
			l.report.FileErrors = append(l.report.FileErrors, FileError{File: f.Path, SyntaxError: e})
		}
		parsed[i] = logicalLines(toks)
		l.modIndex[moduleName(f.Path)] = len(l.units)
		l.units = append(l.units, unit{module: true, name: moduleName(f.Path), qual: "<module>", file: i, parent: -1})
	}
	// Names that hold the mode, and flags on it, may be assigned in one
	// file and read in another; three rounds follow aliases of aliases.
	for range 3 {
		for _, ss := range parsed {
			for _, s := range ss {
				for _, part := range splitTop(s.toks, func(t Token) bool { return isOp(t, ";") }) {
					l.eval.learn(part)
				}
			}
		}
	}
	for i, ss := range parsed {
		l.walk(i, ss)
	}
	l.resolveFunctionRefs()
	l.solve()
	l.finish()
	return l.report
}

// moduleName is the dotted module a file path names.
func moduleName(p string) string {
	p = strings.TrimSuffix(p, ".py")
	p = strings.TrimSuffix(p, "/__init__")
	return strings.ReplaceAll(strings.Trim(p, "/"), "/", ".")
}

// frame is an open block while walking a file.
type frame struct {
	depth int // the indentation of its header
	cond  cond
	unit  int    // the function a def opens; -1 otherwise
	class string // the class a class opens
	text  string // the header, for Via
	line  int
}

// walk reads one file's statements in order, keeping the open blocks.
func (l *linter) walk(file int, ss []stmt) {
	mod := l.modIndex[moduleName(l.files[file].Path)]
	var stack []frame
	chains := map[int][]cond{} // per depth: the conditions of the if/elif chain so far
	for _, s := range ss {
		for len(stack) > 0 && stack[len(stack)-1].depth >= s.depth {
			stack = stack[:len(stack)-1]
		}
		for d := range chains {
			if d > s.depth {
				delete(chains, d)
			}
		}
		l.statement(file, mod, s.depth, s.toks, &stack, chains)
	}
}

// context is the unit a statement sits in, the branch it is under within
// that unit, the class it is in, and what narrowed the branch.
func (l *linter) context(mod int, stack []frame) (int, cond, string, string) {
	u, c := mod, cond{set: l.eval.all, exact: true}
	var class, via string
	for _, f := range stack {
		switch {
		case f.unit >= 0:
			u, c, via = f.unit, cond{set: l.eval.all, exact: true}, ""
		case f.class != "":
			class = f.class
		default:
			c = and(c, f.cond)
			if f.cond.set != l.eval.all {
				via = fmt.Sprintf("under `%s` (line %d)", f.text, f.line)
			}
		}
	}
	return u, c, class, via
}

func (l *linter) statement(file, mod, depth int, toks []Token, stack *[]frame, chains map[int][]cond) {
	src := l.files[file].Src
	u, c, class, via := l.context(mod, *stack)
	kw, head, body, compound := header(toks)
	if !compound {
		for _, part := range splitTop(toks, func(t Token) bool { return isOp(t, ";") }) {
			l.simple(file, u, c, via, part)
		}
		delete(chains, depth)
		return
	}
	f := frame{depth: depth, unit: -1, cond: l.eval.unknown(), text: text(src, toks[:len(toks)-len(body)]), line: toks[0].Line}
	f.cond.exact = true
	scan := head
	switch kw {
	case "if":
		f.cond = l.eval.eval(head)
		chains[depth] = []cond{f.cond}
		l.addHits(file, u, c, via, truthTests(src, head))
	case "elif", "else":
		prior, ok := chains[depth]
		if !ok {
			f.cond = l.eval.unknown()
			break
		}
		f.cond = cond{set: l.eval.all, exact: true}
		for _, p := range prior {
			f.cond = and(f.cond, l.eval.not(p))
		}
		if kw == "elif" {
			this := l.eval.eval(head)
			f.cond = and(f.cond, this)
			chains[depth] = append(prior, this)
			l.addHits(file, u, c, via, truthTests(src, head))
		} else {
			delete(chains, depth)
		}
	case "while":
		f.cond = l.eval.eval(head)
		l.addHits(file, u, c, via, truthTests(src, head))
	case "def":
		if len(head) == 0 || head[0].Kind != Name {
			break
		}
		qual := head[0].Text
		if class != "" {
			qual = class + "." + qual
		}
		f.unit = len(l.units)
		l.units = append(l.units, unit{name: head[0].Text, qual: qual, file: file, parent: u, site: c})
		if via != "" {
			l.units[f.unit].why = "defined " + via
		}
		scan = head[1:]
	case "class":
		if len(head) > 0 && head[0].Kind == Name {
			f.class = head[0].Text
			scan = head[1:]
		}
	}
	if kw != "elif" && kw != "else" && kw != "if" {
		delete(chains, depth)
	}
	l.simple(file, u, c, via, scan)
	*stack = append(*stack, f)
	if len(body) > 0 {
		inner, ic, _, ivia := l.context(mod, *stack)
		for _, part := range splitTop(body, func(t Token) bool { return isOp(t, ";") }) {
			l.simple(file, inner, ic, ivia, part)
		}
	}
}

// simple reads one simple statement (or a header's expressions): its
// capture-illegal calls, its imports and the names it mentions.
func (l *linter) simple(file, u int, c cond, via string, toks []Token) {
	if len(toks) == 0 {
		return
	}
	src := l.files[file].Src
	l.addHits(file, u, c, via, calls(src, toks))
	if isName(toks[0], "assert") {
		l.addHits(file, u, c, via, truthTests(src, splitTop(toks[1:], func(t Token) bool { return isOp(t, ",") })[0]))
	}
	if isName(toks[0], "import") || isName(toks[0], "from") {
		l.imports(file, u, c, toks)
	}
	l.mentions(file, u, c, toks)
}

func (l *linter) addHits(file, u int, c cond, via string, hs []hit) {
	for _, h := range hs {
		l.pend = append(l.pend, pending{hit: h, file: file, unit: u, cond: c, via: via})
	}
}

// imports records the modules an import statement loads, each with its
// parent packages.
func (l *linter) imports(file, u int, c cond, toks []Token) {
	here := moduleName(l.files[file].Path)
	pkg := here
	if !strings.HasSuffix(l.files[file].Path, "__init__.py") {
		pkg = parentModule(here)
	}
	var targets []string
	dotted := func(ts []Token) string {
		var b strings.Builder
		for _, t := range ts {
			if t.Kind != Name && !isOp(t, ".") && !isOp(t, "...") {
				break
			}
			b.WriteString(t.Text)
		}
		return b.String()
	}
	if isName(toks[0], "import") {
		for _, part := range splitTop(toks[1:], func(t Token) bool { return isOp(t, ",") }) {
			targets = append(targets, dotted(part))
		}
	} else {
		i := slices.IndexFunc(toks, func(t Token) bool { return isName(t, "import") })
		if i < 0 {
			return
		}
		from := dotted(toks[1:i])
		level := len(from) - len(strings.TrimLeft(from, "."))
		base := strings.TrimLeft(from, ".")
		if level > 0 {
			p := pkg
			for range level - 1 {
				p = parentModule(p)
			}
			base = strings.Trim(p+"."+base, ".")
		}
		targets = append(targets, base)
		for _, part := range splitTop(toks[i+1:], func(t Token) bool { return isOp(t, ",") || isOp(t, "(") || isOp(t, ")") }) {
			if len(part) > 0 && part[0].Kind == Name {
				targets = append(targets, strings.Trim(base+"."+part[0].Text, "."))
			}
		}
	}
	for _, t := range targets {
		for m := t; m != ""; m = parentModule(m) {
			if mu, ok := l.modIndex[m]; ok && mu != u {
				l.units[mu].refs = append(l.units[mu].refs, ref{unit: u, cond: c, file: file, line: toks[0].Line})
			}
		}
	}
}

func parentModule(m string) string {
	if i := strings.LastIndexByte(m, '.'); i >= 0 {
		return m[:i]
	}
	return ""
}

// mentions records every name the statement mentions (a function may be
// called or passed by it), narrowing a name that is a value in a dict
// keyed by modes to those modes: {"validate": check, "on": run}.
func (l *linter) mentions(file, u int, c cond, toks []Token) {
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.Kind == String && len(t.Inner) > 0:
			l.mentions(file, u, c, t.Inner)
		case isOp(t, "{"):
			end := closer(toks, i)
			if end >= len(toks) {
				continue
			}
			entries := splitTop(toks[i+1:end], func(t Token) bool { return isOp(t, ",") })
			table := len(entries) > 0
			for _, e := range entries {
				if len(e) == 0 {
					continue
				}
				k, ok := unquote(e[0])
				if !ok || len(e) < 3 || !isOp(e[1], ":") || l.eval.bit(k) == 0 {
					table = false
				}
			}
			if !table {
				continue
			}
			for _, e := range entries {
				if len(e) == 0 {
					continue
				}
				k, _ := unquote(e[0])
				kc := and(c, cond{set: l.eval.bit(k), exact: true})
				l.mentionsNoted(file, u, kc, e[2:], fmt.Sprintf("the mode table's %q entry", k))
			}
			i = end
		case t.Kind == Name && !keywords[t.Text]:
			l.names[t.Text] = append(l.names[t.Text], ref{unit: u, cond: c, file: file, line: t.Line})
		}
	}
}

func (l *linter) mentionsNoted(file, u int, c cond, toks []Token, note string) {
	before := map[string]int{}
	for n, rs := range l.names {
		before[n] = len(rs)
	}
	l.mentions(file, u, c, toks)
	for n, rs := range l.names {
		for i := before[n]; i < len(rs); i++ {
			if rs[i].note == "" {
				rs[i].note = note
			}
		}
	}
}

// resolveFunctionRefs gives each function the places its name is
// mentioned, other than inside itself. Names are matched alone (self.f,
// mod.f and f all name every f): an over-approximation.
func (l *linter) resolveFunctionRefs() {
	for i := range l.units {
		un := &l.units[i]
		if un.module {
			continue
		}
		for _, r := range l.names[un.name] {
			if !l.inside(r.unit, i) {
				un.refs = append(un.refs, r)
			}
		}
	}
}

// inside reports whether unit u is f or nested in it.
func (l *linter) inside(u, f int) bool {
	for ; u >= 0; u = l.units[u].parent {
		if u == f {
			return true
		}
	}
	return false
}

// solve works out the modes that reach each unit, to a fixed point. A
// module nobody in the tree imports is an entry (sitecustomize.py, a file
// the engine loads) unless a package of the tree holds it; a function no
// one names is called from outside (a forward, a hook). It starts from
// every mode and narrows, so units that only name each other (methods of
// one name in two classes) keep every mode: the greatest fixed point,
// which over-approximates reach, never the least, which would call them
// dead.
func (l *linter) solve() {
	all := l.eval.all
	for i := range l.units {
		l.units[i].modes = all
	}
	for range len(l.units) + 2 {
		changed := false
		for i := range l.units {
			un := &l.units[i]
			var m modeSet
			switch {
			case un.module && len(un.refs) == 0:
				m = all
				if p, ok := l.enclosingPackage(un.name); ok {
					m = l.units[p].modes
				}
			case un.module:
				m = l.refModes(un.refs)
			default:
				m = l.units[un.parent].modes & un.site.set
				if len(un.refs) > 0 {
					m &= l.refModes(un.refs)
				}
			}
			if m != un.modes {
				un.modes, changed = m, true
			}
		}
		if !changed {
			break
		}
	}
	for i := range l.units {
		un := &l.units[i]
		if un.modes == all || un.why != "" {
			continue
		}
		var notes []string
		for _, r := range un.refs {
			if m := l.units[r.unit].modes & r.cond.set; m != 0 && len(notes) < 2 {
				what := "named"
				if un.module {
					what = "imported"
				}
				n := fmt.Sprintf("%s at %s:%d", what, l.files[r.file].Path, r.line)
				if r.note != "" {
					n += " in " + r.note
				}
				notes = append(notes, n+" (modes "+strings.Join(l.eval.names(m), ", ")+")")
			}
		}
		un.why = strings.Join(notes, "; ")
	}
}

func (l *linter) enclosingPackage(name string) (int, bool) {
	for p := parentModule(name); p != ""; p = parentModule(p) {
		if i, ok := l.modIndex[p]; ok {
			return i, true
		}
	}
	return 0, false
}

func (l *linter) refModes(rs []ref) modeSet {
	var m modeSet
	for _, r := range rs {
		m |= l.units[r.unit].modes & r.cond.set
	}
	return m
}

// finish turns the pending hits into findings, sorted by file and line.
func (l *linter) finish() {
	seen := map[[4]any]bool{}
	for _, p := range l.pend {
		key := [4]any{p.file, p.at.Line, p.at.Col, p.rule}
		if seen[key] {
			continue
		}
		seen[key] = true
		un := l.units[p.unit]
		m := un.modes & p.cond.set
		f := Finding{File: l.files[p.file].Path, Line: p.at.Line, Col: p.at.Col + 1, Func: un.qual, Rule: p.rule,
			Call: p.call, Reason: p.reason, Confidence: p.conf}
		switch {
		case !l.eval.resolves() || m == l.eval.all:
			f.AllModes = true
			f.Modes = l.eval.names(l.eval.all)
		default:
			f.Modes = l.eval.names(m)
			f.Via = p.via
			if f.Via == "" {
				f.Via = l.unitWhy(p.unit)
			}
		}
		if f.Modes == nil {
			f.Modes = []string{}
		}
		l.report.Findings = append(l.report.Findings, f)
	}
	sort.SliceStable(l.report.Findings, func(i, j int) bool {
		a, b := l.report.Findings[i], l.report.Findings[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}

// unitWhy is the first reason found for u's modes, walking out through
// its enclosing units.
func (l *linter) unitWhy(u int) string {
	for ; u >= 0; u = l.units[u].parent {
		if w := l.units[u].why; w != "" {
			if l.units[u].module {
				return l.files[l.units[u].file].Path + " is " + w
			}
			return l.units[u].qual + " is " + w
		}
	}
	return ""
}
