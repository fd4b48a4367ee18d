package capturelint

import "strings"

// modeSet is a set of the kernel's modes, bit i for Options.Modes[i].
type modeSet uint64

// maxModes is the most modes a kernel may have for the lint to resolve
// them; past it, every finding counts as every mode.
const maxModes = 64

// cond is what a condition says about the mode: the modes under which it
// may be true. exact is false when part of it could not be read, so that
// set over-approximates (and its negation says nothing).
type cond struct {
	set   modeSet
	exact bool
}

// modeEval reads conditions about one kernel's mode.
type modeEval struct {
	envVar string
	modes  []string
	all    modeSet
	// vars are the names that hold the mode (MODE = os.environ.get(...));
	// flags are the names that hold a condition on it (VALIDATE = MODE == "validate").
	vars  map[string]bool
	flags map[string]cond
}

func newModeEval(envVar string, modes []string) *modeEval {
	e := &modeEval{envVar: envVar, modes: modes, vars: map[string]bool{}, flags: map[string]cond{}}
	if envVar != "" && len(modes) > 0 && len(modes) <= maxModes {
		e.all = modeSet(1)<<len(modes) - 1
		if len(modes) == maxModes {
			e.all = ^modeSet(0)
		}
	}
	return e
}

// resolves reports whether conditions can be read at all: a kernel, its
// variable and its modes were given.
func (e *modeEval) resolves() bool { return e.all != 0 }

func (e *modeEval) unknown() cond { return cond{set: e.all} }

func (e *modeEval) bit(name string) modeSet {
	for i, m := range e.modes {
		if m == name {
			return 1 << i
		}
	}
	return 0
}

func (e *modeEval) names(s modeSet) []string {
	var out []string
	for i, m := range e.modes {
		if s&(1<<i) != 0 {
			out = append(out, m)
		}
	}
	return out
}

func and(a, b cond) cond { return cond{set: a.set & b.set, exact: a.exact && b.exact} }
func or(a, b cond) cond  { return cond{set: a.set | b.set, exact: a.exact && b.exact} }

func (e *modeEval) not(a cond) cond {
	if !a.exact {
		return e.unknown()
	}
	return cond{set: e.all &^ a.set, exact: true}
}

// eval reads a condition: and/or/not, brackets, comparisons of the mode
// (==, !=, in, not in, is) with string literals or tuples of them, flag
// names. Anything else is unknown: every mode, inexact.
func (e *modeEval) eval(toks []Token) cond {
	if !e.resolves() || len(toks) == 0 {
		return e.unknown()
	}
	if parts := splitTop(toks, func(t Token) bool { return isName(t, "or") }); len(parts) > 1 {
		c := e.eval(parts[0])
		for _, p := range parts[1:] {
			c = or(c, e.eval(p))
		}
		return c
	}
	if parts := splitTop(toks, func(t Token) bool { return isName(t, "and") }); len(parts) > 1 {
		c := e.eval(parts[0])
		for _, p := range parts[1:] {
			c = and(c, e.eval(p))
		}
		return c
	}
	if isName(toks[0], "not") {
		return e.not(e.eval(toks[1:]))
	}
	if isOp(toks[0], "(") && closer(toks, 0) == len(toks)-1 {
		return e.eval(toks[1 : len(toks)-1])
	}
	return e.compare(toks)
}

// compare reads one comparison, or a lone flag name.
func (e *modeEval) compare(toks []Token) cond {
	depth := 0
	for i, t := range toks {
		if t.Kind == Op {
			switch t.Text {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				depth--
			}
		}
		if depth != 0 || i == 0 {
			continue
		}
		var negate bool
		var rhs []Token
		switch {
		case isOp(t, "=="):
			rhs = toks[i+1:]
		case isOp(t, "!="):
			negate, rhs = true, toks[i+1:]
		case isName(t, "is") && i+1 < len(toks) && isName(toks[i+1], "not"):
			negate, rhs = true, toks[i+2:]
		case isName(t, "is"):
			rhs = toks[i+1:]
		case isName(t, "not") && i+1 < len(toks) && isName(toks[i+1], "in"):
			negate, rhs = true, toks[i+2:]
		case isName(t, "in"):
			rhs = toks[i+1:]
		default:
			continue
		}
		lhs := toks[:i]
		var lits modeSet
		var ok bool
		switch {
		case e.isMode(lhs):
			lits, ok = e.literals(rhs, !isName(t, "in") && !isName(t, "not"))
		case e.isMode(rhs) && (isOp(t, "==") || isOp(t, "!=") || isName(t, "is")):
			lits, ok = e.literals(lhs, true)
		}
		if !ok {
			return e.unknown()
		}
		c := cond{set: lits, exact: true}
		if negate {
			return e.not(c)
		}
		return c
	}
	if len(toks) == 1 && toks[0].Kind == Name {
		if c, ok := e.flags[toks[0].Text]; ok {
			return c
		}
	}
	if len(toks) == 3 && isOp(toks[1], ".") && toks[2].Kind == Name { // config.VALIDATE
		if c, ok := e.flags[toks[2].Text]; ok {
			return c
		}
	}
	return e.unknown()
}

// literals reads a string literal (single) or a tuple, list or set of
// them as modes; a string that is no mode adds nothing.
func (e *modeEval) literals(toks []Token, single bool) (modeSet, bool) {
	if single {
		if len(toks) != 1 {
			return 0, false
		}
		v, ok := unquote(toks[0])
		return e.bit(v), ok
	}
	if len(toks) < 2 || !(isOp(toks[0], "(") || isOp(toks[0], "[") || isOp(toks[0], "{")) || closer(toks, 0) != len(toks)-1 {
		return 0, false
	}
	var s modeSet
	for _, item := range splitTop(toks[1:len(toks)-1], func(t Token) bool { return isOp(t, ",") }) {
		if len(item) == 0 {
			continue
		}
		if len(item) != 1 {
			return 0, false
		}
		v, ok := unquote(item[0])
		if !ok {
			return 0, false
		}
		s |= e.bit(v)
	}
	return s, true
}

// normalisers may follow a read of the mode without changing which mode it is.
var normalisers = map[string]bool{"lower": true, "strip": true, "casefold": true, "upper": true}

// isMode reports whether toks read the mode: the kernel's variable from
// the environment, or a name that holds it, maybe lower-cased.
func (e *modeEval) isMode(toks []Token) bool {
	for len(toks) >= 4 && isOp(toks[len(toks)-1], ")") && isOp(toks[len(toks)-2], "(") &&
		toks[len(toks)-3].Kind == Name && normalisers[toks[len(toks)-3].Text] && isOp(toks[len(toks)-4], ".") {
		toks = toks[:len(toks)-4]
	}
	if len(toks) == 0 {
		return false
	}
	if isOp(toks[0], "(") && closer(toks, 0) == len(toks)-1 && len(toks) > 2 {
		return e.isMode(toks[1 : len(toks)-1])
	}
	if e.isEnvRead(toks) {
		return true
	}
	last := toks[len(toks)-1]
	if last.Kind != Name || !e.vars[last.Text] {
		return false
	}
	// NAME, or a.b.NAME: a dotted path of names.
	for i := len(toks) - 2; i >= 0; i -= 2 {
		if !isOp(toks[i], ".") || i == 0 || toks[i-1].Kind != Name {
			return false
		}
	}
	return true
}

// isEnvRead reports whether toks read the kernel's variable: os.environ.get
// ("VAR"[, default]), os.environ["VAR"], os.getenv("VAR"[, default]), with
// or without the os. prefix.
func (e *modeEval) isEnvRead(toks []Token) bool {
	var names []string
	i := 0
	for i < len(toks) && toks[i].Kind == Name {
		names = append(names, toks[i].Text)
		i++
		if i < len(toks) && isOp(toks[i], ".") {
			i++
			continue
		}
		break
	}
	if i >= len(toks) || !(isOp(toks[i], "(") || isOp(toks[i], "[")) || closer(toks, i) != len(toks)-1 {
		return false
	}
	path := strings.Join(names, ".")
	path = strings.TrimPrefix(path, "os.")
	switch {
	case path == "environ.get" && isOp(toks[i], "("), path == "getenv" && isOp(toks[i], "("), path == "environ" && isOp(toks[i], "["):
	default:
		return false
	}
	args := splitTop(toks[i+1:len(toks)-1], func(t Token) bool { return isOp(t, ",") })
	if len(args[0]) != 1 {
		return false
	}
	v, ok := unquote(args[0][0])
	return ok && v == e.envVar
}

// learn reads one assignment for names that hold the mode or a condition
// on it, and reports whether it learnt something new.
func (e *modeEval) learn(toks []Token) bool {
	if !e.resolves() {
		return false
	}
	parts := splitTop(toks, func(t Token) bool { return isOp(t, "=") })
	if len(parts) != 2 || len(parts[0]) == 0 || len(parts[1]) == 0 {
		return false
	}
	target, value := parts[0], parts[1]
	if c := headerColon(target); c > 0 { // an annotation: MODE: str = ...
		target = target[:c]
	}
	last := target[len(target)-1]
	if last.Kind != Name || len(target) > 1 && !isOp(target[len(target)-2], ".") {
		return false
	}
	name := last.Text
	if e.isMode(value) {
		if e.vars[name] {
			return false
		}
		e.vars[name] = true
		return true
	}
	if c := e.eval(value); c.exact {
		if old, ok := e.flags[name]; ok && old == c {
			return false
		}
		e.flags[name] = c
		return true
	}
	return false
}
