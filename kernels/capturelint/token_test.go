package capturelint

import (
	"fmt"
	"strings"
	"testing"
)

// brief renders tokens as KIND:text, leaving out line breaks, INDENT and
// DEDENT unless keep says otherwise.
func brief(toks []Token, keep bool) string {
	var out []string
	for _, t := range toks {
		switch t.Kind {
		case Newline, NL, EndMarker:
			if !keep {
				continue
			}
			out = append(out, t.Kind.String())
		case Indent, Dedent:
			if keep {
				out = append(out, t.Kind.String())
			}
		default:
			out = append(out, fmt.Sprintf("%s:%s", t.Kind, t.Text))
		}
	}
	return strings.Join(out, " ")
}

func TestTokenize(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"call", "x.item()\n", "NAME:x OP:. NAME:item OP:( OP:)"},
		{"comment", "a = 1  # b.item()\n", "NAME:a OP:= NUMBER:1 COMMENT:# b.item()"},
		{"single quotes", `s = 'a.item()' + "b\"c"`, `NAME:s OP:= STRING:'a.item()' OP:+ STRING:"b\"c"`},
		{"prefixes", `rb'\d' BR"x" u'y' F'z' Rb'w'`, `STRING:rb'\d' STRING:BR"x" STRING:u'y' STRING:F'z' STRING:Rb'w'`},
		{"raw keeps an escaped quote", `r'a\'b' + x`, `STRING:r'a\'b' OP:+ NAME:x`},
		{"triple across lines", "s = '''a\nb.item()\n'''\nx", "NAME:s OP:= STRING:'''a\nb.item()\n''' NAME:x"},
		{"triple double", `"""one "" two"""`, `STRING:"""one "" two"""`},
		{"f-string field", `f"{a.item()}!"`, `STRING:f"{a.item()}!"`},
		{"name prefix is no prefix", "rx'a'", "NAME:rx STRING:'a'"},
		{"operators", "a //= b ** c -> d := e != f ...", "NAME:a OP://= NAME:b OP:** NAME:c OP:-> NAME:d OP::= NAME:e OP:!= NAME:f OP:..."},
		{"numbers", "1_000 0x1F 1.5e-3j .5 1e5.real 0b1", "NUMBER:1_000 NUMBER:0x1F NUMBER:1.5e-3j NUMBER:.5 NUMBER:1e5 OP:. NAME:real NUMBER:0b1"},
		{"unicode name", "größe = 1", "NAME:größe OP:= NUMBER:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			toks, errs := Tokenize(tt.src)
			if len(errs) > 0 {
				t.Errorf("errors: %v", errs)
			}
			if got := brief(toks, false); got != tt.want {
				t.Errorf("Tokenize(%q)\n got %s\nwant %s", tt.src, got, tt.want)
			}
		})
	}
}

func TestTokenizeLayout(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"blocks", "if a:\n    b\nc\n", "NAME:if NAME:a OP:: NEWLINE INDENT NAME:b NEWLINE DEDENT NAME:c NEWLINE ENDMARKER"},
		{"blank and comment lines do not indent", "if a:\n\n        # x\n    b\n", "NAME:if NAME:a OP:: NEWLINE NL COMMENT:# x NL INDENT NAME:b NEWLINE DEDENT ENDMARKER"},
		{"brackets join lines", "f(a,\n  b)\nc", "NAME:f OP:( NAME:a OP:, NL NAME:b OP:) NEWLINE NAME:c NEWLINE ENDMARKER"},
		{"backslash joins lines", "a = b \\\n    + c\n", "NAME:a OP:= NAME:b OP:+ NAME:c NEWLINE ENDMARKER"},
		{"no final newline", "if a:\n  b", "NAME:if NAME:a OP:: NEWLINE INDENT NAME:b NEWLINE DEDENT ENDMARKER"},
		{"nested dedents", "def f():\n  if a:\n    b\nc\n", "NAME:def NAME:f OP:( OP:) OP:: NEWLINE INDENT NAME:if NAME:a OP:: NEWLINE INDENT NAME:b NEWLINE DEDENT DEDENT NAME:c NEWLINE ENDMARKER"},
		{"tabs", "if a:\n\tb\n        c\n", "NAME:if NAME:a OP:: NEWLINE INDENT NAME:b NEWLINE NAME:c NEWLINE DEDENT ENDMARKER"},
		{"crlf", "a\r\nb\r\n", "NAME:a NEWLINE NAME:b NEWLINE ENDMARKER"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			toks, errs := Tokenize(tt.src)
			if len(errs) > 0 {
				t.Errorf("errors: %v", errs)
			}
			if got := brief(toks, true); got != tt.want {
				t.Errorf("Tokenize(%q)\n got %s\nwant %s", tt.src, got, tt.want)
			}
		})
	}
}

func TestTokenizeFString(t *testing.T) {
	tests := []struct {
		name, src, inner string
	}{
		{"field", `f"a {x.item()} b"`, "NAME:x OP:. NAME:item OP:( OP:)"},
		{"doubled braces are text", `f"{{x.item()}}"`, ""},
		{"conversion and spec", `f"{t.max()!r:>{w}}"`, "NAME:t OP:. NAME:max OP:( OP:) NAME:w"},
		{"same quote inside (3.12)", `f"{d["k"].item()}"`, `NAME:d OP:[ STRING:"k" OP:] OP:. NAME:item OP:( OP:)`},
		{"nested f-string", `f"{f'{y.cpu()}'}"`, `STRING:f'{y.cpu()}'`},
		{"dict in a field", `f"{ {'a': 1}['a'] }"`, `OP:{ STRING:'a' OP:: NUMBER:1 OP:} OP:[ STRING:'a' OP:]`},
		{"not-equal is no conversion", `f"{a != b}"`, "NAME:a OP:!= NAME:b"},
		{"raw backslash before brace", `rf'\{{x}}'`, ""},
		{"triple with a line break", "f'''{\nx.tolist()\n}'''", "NAME:x OP:. NAME:tolist OP:( OP:)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			toks, errs := Tokenize(tt.src)
			if len(errs) > 0 {
				t.Errorf("errors: %v", errs)
			}
			if len(toks) != 3 || toks[0].Kind != String || toks[0].Text != tt.src {
				t.Fatalf("Tokenize(%q) = %s, want one string", tt.src, brief(toks, true))
			}
			if got := brief(toks[0].Inner, false); got != tt.inner {
				t.Errorf("fields of %q\n got %s\nwant %s", tt.src, got, tt.inner)
			}
		})
	}
}

func TestTokenizePositions(t *testing.T) {
	toks, _ := Tokenize("x = '''a\nb'''\n  # c\ny.item()\n")
	var item Token
	for _, tk := range toks {
		if tk.Text == "item" {
			item = tk
		}
	}
	if item.Line != 4 || item.Col != 2 || item.Off != len("x = '''a\nb'''\n  # c\ny.") {
		t.Errorf("item at %d:%d (offset %d), want 4:2", item.Line, item.Col, item.Off)
	}
}

func TestTokenizeErrors(t *testing.T) {
	tests := []struct{ name, src, msg string }{
		{"unterminated string", "s = 'abc\nx", "unterminated string"},
		{"unterminated triple", `s = """abc`, "unterminated triple-quoted string"},
		{"bad dedent", "if a:\n    b\n  c\n", "unindent does not match any outer indentation level"},
		{"open bracket", "f(a,\n", "end of file inside brackets"},
		{"stray character", "a $ b", `unexpected character "$"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			toks, errs := Tokenize(tt.src)
			if len(errs) == 0 || errs[0].Msg != tt.msg {
				t.Errorf("Tokenize(%q) errors %v, want %q", tt.src, errs, tt.msg)
			}
			if toks[len(toks)-1].Kind != EndMarker {
				t.Errorf("Tokenize(%q) does not end with ENDMARKER: %s", tt.src, brief(toks, true))
			}
		})
	}
}

// FuzzTokenize: any input tokenizes without a panic, ends with
// ENDMARKER, and every token's text is the source at its offset; and
// the lint of it does not panic.
func FuzzTokenize(f *testing.F) {
	for _, s := range []string{"x.item()\n", "f'{a!r:{b}}'", "if a:\n\tb\n  c", `rb'\'`, "'''", `f"{f"{f"{x}"}"}"`, "a\\\r\nb", "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		toks, _ := Tokenize(src)
		if len(toks) == 0 || toks[len(toks)-1].Kind != EndMarker {
			t.Fatalf("no ENDMARKER")
		}
		var check func([]Token)
		check = func(ts []Token) {
			for _, tk := range ts {
				if tk.Off < 0 || tk.Off+len(tk.Text) > len(src) || src[tk.Off:tk.Off+len(tk.Text)] != tk.Text {
					t.Fatalf("token %v is not the source at its offset", tk)
				}
				check(tk.Inner)
			}
		}
		check(toks)
		// The parser on top must not panic either.
		Lint([]File{{Path: "f.py", Src: src}}, Options{EnvVar: "KDTREE_MODE", Modes: []string{"off", "validate", "on"}})
	})
}
