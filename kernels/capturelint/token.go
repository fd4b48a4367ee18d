package capturelint

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kind is the kind of a token, as Python's tokenize module names them.
type Kind uint8

// The token kinds. An f-string is one String token whose Inner holds the
// tokens of its replacement fields (Python 3.12 splits it into
// FSTRING_START/MIDDLE/END; one token with its fields is what a lint needs).
const (
	Name Kind = iota + 1
	Number
	String
	Op
	Comment
	Newline // the end of a logical line
	NL      // a line break that ends no statement: blank, comment-only, inside brackets
	Indent
	Dedent
	EndMarker
	ErrorToken
)

var kindNames = [...]string{Name: "NAME", Number: "NUMBER", String: "STRING", Op: "OP", Comment: "COMMENT",
	Newline: "NEWLINE", NL: "NL", Indent: "INDENT", Dedent: "DEDENT", EndMarker: "ENDMARKER", ErrorToken: "ERRORTOKEN"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Token is one token of Python source.
type Token struct {
	Kind Kind
	Text string
	Line int // 1-based
	Col  int // 0-based, in bytes
	Off  int // the byte offset of Text in the source
	// Inner holds, for an f-string (or t-string), the tokens of the
	// expressions in its replacement fields, in order: code that runs.
	Inner []Token
}

// SyntaxError is a place where the source breaks Python's lexical rules
// (an unterminated string, a dedent to no open level). The tokenizer
// records it and goes on.
type SyntaxError struct {
	Line, Col int
	Msg       string
}

func (e SyntaxError) Error() string { return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg) }

// maxNesting bounds f-strings within f-strings: deeper is reported, not
// followed, so no input can exhaust the stack.
const maxNesting = 64

// Tokenize splits src into tokens by Python's tokenize rules. It never
// fails: problems come back as SyntaxErrors beside the tokens, and the
// token list always ends with EndMarker.
func Tokenize(src string) ([]Token, []SyntaxError) {
	t := &tokenizer{src: src, end: len(src), lines: lineStarts(src), indents: []int{0}, atLineStart: true}
	t.run()
	return t.toks, t.errs
}

type tokenizer struct {
	src         string
	pos, end    int
	lines       []int // the offset each line starts at
	parens      int
	indents     []int
	atLineStart bool
	lineHasCode bool // a token other than a comment was emitted on this logical line
	inner       bool // a replacement field's expression: no NEWLINE, INDENT or DEDENT
	depth       int  // f-string nesting
	toks        []Token
	errs        []SyntaxError
}

// lineStarts lists the offsets lines start at; \n, \r\n and \r each end a line.
func lineStarts(s string) []int {
	out := []int{0}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\n':
			out = append(out, i+1)
		case '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				i++
			}
			out = append(out, i+1)
		}
	}
	return out
}

// where turns an offset into a 1-based line and 0-based column.
func (t *tokenizer) where(off int) (int, int) {
	i := sort.Search(len(t.lines), func(i int) bool { return t.lines[i] > off }) - 1
	return i + 1, off - t.lines[i]
}

func (t *tokenizer) emit(k Kind, start, end int, inner []Token) {
	line, col := t.where(start)
	t.toks = append(t.toks, Token{Kind: k, Text: t.src[start:end], Line: line, Col: col, Off: start, Inner: inner})
	if k != Comment && k != NL {
		t.lineHasCode = true
	}
}

func (t *tokenizer) fail(off int, format string, a ...any) {
	line, col := t.where(off)
	t.errs = append(t.errs, SyntaxError{Line: line, Col: col, Msg: fmt.Sprintf(format, a...)})
}

func (t *tokenizer) run() {
	for t.pos < t.end {
		if t.atLineStart && t.parens == 0 && !t.inner {
			if !t.indentation() {
				continue
			}
		}
		t.next()
	}
	if t.inner {
		return
	}
	if t.parens > 0 {
		t.fail(t.end, "end of file inside brackets")
	}
	if t.lineHasCode {
		t.emit(Newline, t.end, t.end, nil)
	}
	for len(t.indents) > 1 {
		t.indents = t.indents[:len(t.indents)-1]
		t.emit(Dedent, t.end, t.end, nil)
	}
	t.emit(EndMarker, t.end, t.end, nil)
}

// indentation measures the indentation of the line at t.pos and emits
// INDENT or DEDENTs. It returns false when the line is blank or holds
// only a comment (which it consumes): such lines do not indent.
func (t *tokenizer) indentation() bool {
	lineStart := t.pos
	col, p := 0, t.pos
	for ; p < t.end; p++ {
		switch t.src[p] {
		case ' ':
			col++
		case '\t':
			col = (col/8 + 1) * 8
		case '\f':
			col = 0
		default:
			goto measured
		}
	}
measured:
	t.pos = p
	if p >= t.end {
		return false
	}
	switch t.src[p] {
	case '#':
		t.comment()
		return false
	case '\n', '\r':
		t.newline()
		return false
	}
	t.atLineStart = false
	top := t.indents[len(t.indents)-1]
	switch {
	case col > top:
		t.indents = append(t.indents, col)
		t.emit(Indent, lineStart, p, nil)
	case col < top:
		for len(t.indents) > 1 && t.indents[len(t.indents)-1] > col {
			t.indents = t.indents[:len(t.indents)-1]
			t.emit(Dedent, p, p, nil)
		}
		if t.indents[len(t.indents)-1] != col {
			t.fail(p, "unindent does not match any outer indentation level")
			t.indents = append(t.indents, col)
		}
	}
	return true
}

func (t *tokenizer) comment() {
	start := t.pos
	for t.pos < t.end && t.src[t.pos] != '\n' && t.src[t.pos] != '\r' {
		t.pos++
	}
	t.emit(Comment, start, t.pos, nil)
}

// newline consumes a line break at t.pos and emits NEWLINE or NL.
func (t *tokenizer) newline() {
	start := t.pos
	if t.src[t.pos] == '\r' && t.pos+1 < t.end && t.src[t.pos+1] == '\n' {
		t.pos++
	}
	t.pos++
	if t.parens > 0 || t.inner || !t.lineHasCode {
		t.emit(NL, start, t.pos, nil)
	} else {
		t.emit(Newline, start, t.pos, nil)
		t.lineHasCode = false
	}
	if !t.inner && t.parens == 0 {
		t.atLineStart = true
	}
}

// ops are Python's operators and delimiters, longest first.
var ops = []string{
	"**=", "//=", ">>=", "<<=", "...", "!=", "->", ":=",
	"**", "//", ">>", "<<", "<=", ">=", "==", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@=",
	"(", ")", "[", "]", "{", "}", ":", ",", ";", ".", "+", "-", "*", "/", "%", "&", "|", "^", "~", "<", ">", "=", "@", "!",
}

func (t *tokenizer) next() {
	c := t.src[t.pos]
	switch {
	case c == ' ' || c == '\t' || c == '\f':
		t.pos++
	case c == '#':
		t.comment()
	case c == '\n' || c == '\r':
		t.newline()
	case c == '\\':
		p := t.pos + 1
		if p < t.end && t.src[p] == '\r' {
			p++
		}
		if p < t.end && t.src[p] == '\n' {
			p++
		}
		if p == t.pos+1 && !(p == t.end) {
			t.fail(t.pos, "unexpected character after line continuation")
			t.emit(ErrorToken, t.pos, t.pos+1, nil)
		}
		t.pos = p
	case c == '"' || c == '\'':
		t.str(t.pos, t.pos)
	case c >= '0' && c <= '9' || c == '.' && t.pos+1 < t.end && isDigit(t.src[t.pos+1]):
		t.number()
	case isIdentStart(t.src[t.pos:]):
		start := t.pos
		t.pos = identEnd(t.src, t.pos, t.end)
		if t.pos < t.end && (t.src[t.pos] == '"' || t.src[t.pos] == '\'') && isStringPrefix(t.src[start:t.pos]) {
			t.str(start, t.pos)
			return
		}
		t.emit(Name, start, t.pos, nil)
	default:
		for _, op := range ops {
			if strings.HasPrefix(t.src[t.pos:t.end], op) {
				switch op {
				case "(", "[", "{":
					t.parens++
				case ")", "]", "}":
					if t.parens > 0 {
						t.parens--
					}
				}
				t.emit(Op, t.pos, t.pos+len(op), nil)
				t.pos += len(op)
				return
			}
		}
		_, n := utf8.DecodeRuneInString(t.src[t.pos:t.end])
		t.fail(t.pos, "unexpected character %q", t.src[t.pos:t.pos+n])
		t.emit(ErrorToken, t.pos, t.pos+n, nil)
		t.pos += n
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number scans a numeric literal: 0x/0o/0b integers, decimals with a
// fraction and an exponent, an imaginary j, underscores between digits.
func (t *tokenizer) number() {
	start, p := t.pos, t.pos
	digits := func(ok func(byte) bool) {
		for p < t.end && (ok(t.src[p]) || t.src[p] == '_') {
			p++
		}
	}
	lower := strings.ToLower(t.src[p:min(p+2, t.end)])
	switch lower {
	case "0x":
		p += 2
		digits(func(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' })
	case "0o", "0b":
		p += 2
		digits(isDigit)
	default:
		digits(isDigit)
		if p < t.end && t.src[p] == '.' {
			p++
			digits(isDigit)
		}
		if p < t.end && (t.src[p] == 'e' || t.src[p] == 'E') {
			q := p + 1
			if q < t.end && (t.src[q] == '+' || t.src[q] == '-') {
				q++
			}
			if q < t.end && isDigit(t.src[q]) {
				p = q
				digits(isDigit)
			}
		}
		if p < t.end && (t.src[p] == 'j' || t.src[p] == 'J') {
			p++
		}
	}
	t.pos = p
	t.emit(Number, start, p, nil)
}

func isIdentStart(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return r == '_' || unicode.IsLetter(r)
}

func identEnd(s string, p, end int) int {
	for p < end {
		r, n := utf8.DecodeRuneInString(s[p:end])
		if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.In(r, unicode.Mn, unicode.Mc, unicode.Pc) {
			break
		}
		p += n
	}
	return p
}

// isStringPrefix reports whether p, in any case, is a prefix Python puts
// before a string: r, u, b, f, t (3.14's template strings) and the two-
// letter mixes.
func isStringPrefix(p string) bool {
	switch strings.ToLower(p) {
	case "r", "u", "b", "f", "t", "br", "rb", "fr", "rf", "tr", "rt":
		return true
	}
	return false
}

// str scans the string whose prefix starts at start and whose quote is at q.
func (t *tokenizer) str(start, q int) {
	end, inner := t.scanString(start, q)
	t.pos = end
	t.emit(String, start, end, inner)
}

// scanString returns the end of the string whose prefix starts at start
// and whose opening quote is at q, and the tokens of an f-string's
// replacement fields. An unterminated string is reported and ends at the
// line break (single-quoted) or the end of the source (triple-quoted).
func (t *tokenizer) scanString(start, q int) (int, []Token) {
	prefix := strings.ToLower(t.src[start:q])
	format := strings.ContainsAny(prefix, "ft")
	quote := t.src[q]
	triple := strings.HasPrefix(t.src[q:t.end], strings.Repeat(string(quote), 3))
	i := q + 1
	if triple {
		i = q + 3
	}
	var inner []Token
	for i < t.end {
		c := t.src[i]
		switch {
		case c == '\\' && format && i+1 < t.end && (t.src[i+1] == '{' || t.src[i+1] == '}'):
			i++ // a backslash does not escape a brace: \{{ is a backslash and a literal brace
		case c == '\\':
			i += 2
			if i-1 < t.end && t.src[i-1] == '\r' && i < t.end && t.src[i] == '\n' {
				i++
			}
		case format && c == '{':
			if i+1 < t.end && t.src[i+1] == '{' {
				i += 2
				continue
			}
			var toks []Token
			i, toks = t.field(i+1, quote, triple)
			inner = append(inner, toks...)
		case c == quote && !triple:
			return i + 1, inner
		case c == quote && strings.HasPrefix(t.src[i:t.end], strings.Repeat(string(quote), 3)):
			return i + 3, inner
		case (c == '\n' || c == '\r') && !triple:
			t.fail(start, "unterminated string")
			return i, inner
		default:
			i++
		}
	}
	if triple {
		t.fail(start, "unterminated triple-quoted string")
	} else {
		t.fail(start, "unterminated string")
	}
	return t.end, inner
}

// field scans an f-string's replacement field whose expression starts at
// i (just past the '{'), through its conversion and format spec (which may
// hold fields of its own), and returns the offset past its '}' with the
// tokens of the expressions. Strings inside the expression, even in the
// enclosing quote (Python 3.12), are scanned as strings.
func (t *tokenizer) field(i int, quote byte, triple bool) (int, []Token) {
	if t.depth >= maxNesting {
		t.fail(i, "f-strings nested too deep")
		return t.end, nil
	}
	start, depth := i, 0
	exprEnd := -1
	for i < t.end && exprEnd < 0 {
		c := t.src[i]
		switch {
		case c == '"' || c == '\'':
			t.depth++
			i, _ = t.scanString(i, i)
			t.depth--
		case isIdentStart(t.src[i:t.end]):
			p := identEnd(t.src, i, t.end)
			if p < t.end && (t.src[p] == '"' || t.src[p] == '\'') && isStringPrefix(t.src[i:p]) {
				t.depth++
				p, _ = t.scanString(i, p)
				t.depth--
			}
			i = p
		case c == '(' || c == '[' || c == '{':
			depth++
			i++
		case (c == ')' || c == ']' || c == '}') && depth > 0:
			depth--
			i++
		case depth == 0 && (c == '}' || c == ':' || c == '!' && !strings.HasPrefix(t.src[i:t.end], "!=")):
			exprEnd = i
		case (c == '\n' || c == '\r') && !triple && depth == 0:
			exprEnd = i
		default:
			_, n := utf8.DecodeRuneInString(t.src[i:t.end])
			i += n
		}
	}
	if exprEnd < 0 {
		exprEnd = t.end
	}
	sub := &tokenizer{src: t.src, pos: start, end: exprEnd, lines: t.lines, indents: []int{0}, inner: true, depth: t.depth + 1}
	sub.run()
	t.errs = append(t.errs, sub.errs...)
	toks := sub.toks
	// The conversion (!r) and format spec (:>10, which may hold fields).
	for i < t.end {
		c := t.src[i]
		switch {
		case c == '}':
			return i + 1, toks
		case c == '{':
			var more []Token
			t.depth++
			i, more = t.field(i+1, quote, triple)
			t.depth--
			toks = append(toks, more...)
		case c == quote || (c == '\n' || c == '\r') && !triple:
			t.fail(i, "f-string: expecting '}'")
			return i, toks
		default:
			i++
		}
	}
	return i, toks
}
