package capturelint

import "strings"

// stmt is one logical line: its indentation depth (open INDENTs) and its
// tokens, without comments, line breaks and indentation tokens.
type stmt struct {
	depth int
	toks  []Token
}

// logicalLines groups tokens into logical lines.
func logicalLines(toks []Token) []stmt {
	var out []stmt
	depth := 0
	var cur []Token
	for _, t := range toks {
		switch t.Kind {
		case Indent:
			depth++
		case Dedent:
			depth--
		case Comment, NL:
		case Newline, EndMarker:
			if len(cur) > 0 {
				out = append(out, stmt{depth: depth, toks: cur})
				cur = nil
			}
		default:
			cur = append(cur, t)
		}
	}
	return out
}

func isOp(t Token, s string) bool   { return t.Kind == Op && t.Text == s }
func isName(t Token, s string) bool { return t.Kind == Name && t.Text == s }

// closer returns the index of the bracket that closes the one at i, or
// len(toks) when it is not closed.
func closer(toks []Token, i int) int {
	depth := 0
	for j := i; j < len(toks); j++ {
		if toks[j].Kind != Op {
			continue
		}
		switch toks[j].Text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return len(toks)
}

// opener returns the index of the bracket that opens the one closing at
// i, or -1.
func opener(toks []Token, i int) int {
	depth := 0
	for j := i; j >= 0; j-- {
		if toks[j].Kind != Op {
			continue
		}
		switch toks[j].Text {
		case ")", "]", "}":
			depth++
		case "(", "[", "{":
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// splitTop splits toks at each top-level (outside brackets) token for
// which sep is true, dropping the separators.
func splitTop(toks []Token, sep func(Token) bool) [][]Token {
	var out [][]Token
	depth, start := 0, 0
	for i, t := range toks {
		if t.Kind == Op {
			switch t.Text {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				depth--
			}
		}
		if depth == 0 && sep(t) {
			out = append(out, toks[start:i])
			start = i + 1
		}
	}
	return append(out, toks[start:])
}

// headerColon returns the index of the colon that ends a compound
// statement's header, or -1: the first top-level colon that is not a
// lambda's.
func headerColon(toks []Token) int {
	depth, lambdas := 0, 0
	for i, t := range toks {
		switch {
		case t.Kind == Op && (t.Text == "(" || t.Text == "[" || t.Text == "{"):
			depth++
		case t.Kind == Op && (t.Text == ")" || t.Text == "]" || t.Text == "}"):
			depth--
		case depth == 0 && isName(t, "lambda"):
			lambdas++
		case depth == 0 && isOp(t, ":"):
			if lambdas > 0 {
				lambdas--
				continue
			}
			return i
		}
	}
	return -1
}

// compoundKeywords open a block.
var compoundKeywords = map[string]bool{"if": true, "elif": true, "else": true, "while": true, "for": true,
	"with": true, "try": true, "except": true, "finally": true, "def": true, "class": true, "match": true, "case": true}

// header splits a compound statement into its keyword, the tokens of its
// header (after the keyword, before the colon) and those of a body on the
// same line; ok is false for a simple statement.
func header(toks []Token) (kw string, head, body []Token, ok bool) {
	t := toks
	if len(t) > 1 && isName(t[0], "async") {
		t = t[1:]
	}
	if len(t) == 0 || t[0].Kind != Name || !compoundKeywords[t[0].Text] {
		return "", nil, nil, false
	}
	kw = t[0].Text
	if kw == "match" || kw == "case" {
		// Soft keywords: `match = 3` and `match(x)` are plain code.
		if len(t) < 2 || t[1].Kind == Op && t[1].Text != "(" && t[1].Text != "[" && t[1].Text != "-" {
			return "", nil, nil, false
		}
	}
	c := headerColon(t)
	if c < 0 {
		return "", nil, nil, false
	}
	return kw, t[1:c], t[c+1:], true
}

// text is the source the tokens span, on one line.
func text(src string, toks []Token) string {
	if len(toks) == 0 {
		return ""
	}
	last := toks[len(toks)-1]
	s := src[toks[0].Off : last.Off+len(last.Text)]
	if !strings.ContainsAny(s, "\n\r\t\\") {
		return s
	}
	s = strings.ReplaceAll(s, "\\\n", " ")
	return strings.Join(strings.Fields(s), " ")
}

// unquote returns the value of a plain string literal (no escapes, no
// f-string), and whether it is one.
func unquote(t Token) (string, bool) {
	if t.Kind != String {
		return "", false
	}
	s := t.Text
	i := strings.IndexAny(s, `"'`)
	if i < 0 || strings.ContainsAny(strings.ToLower(s[:i]), "fbt") {
		return "", false
	}
	q := s[i:]
	for _, d := range []string{`"""`, `'''`, `"`, `'`} {
		if len(q) >= 2*len(d) && strings.HasPrefix(q, d) && strings.HasSuffix(q, d) {
			v := q[len(d) : len(q)-len(d)]
			if strings.Contains(v, `\`) {
				return "", false
			}
			return v, true
		}
	}
	return "", false
}
