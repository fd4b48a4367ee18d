package unitname

import (
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	good := []string{"sglang.service", "vllm-tp8.service", "infer@gpu0.service", `sys-devices-x\x2dy.device`, "a:b_c.d.socket", "x.scope",
		strings.Repeat("a", 247) + ".service"}
	for _, n := range good {
		if err := Check(n); err != nil {
			t.Errorf("Check(%q) = %v, want nil", n, err)
		}
		if !Valid(n) {
			t.Errorf("Valid(%q) = false", n)
		}
	}
	bad := []struct{ name, why string }{
		{"", "empty"},
		{"sglang*.service", `'*' is a glob character`},
		{"sglang?.service", `'?' is a glob character`},
		{"sgl[ab].service", `'[' is a glob character`},
		{"sglang", "no type suffix"},
		{".service", "no type suffix"},
		{"sglang.servce", `"servce" is not a unit type`},
		{"-x.service", "starts with '-'"},
		{"a b.service", `character ' ' is not allowed`},
		{"a;reboot.service", `character ';' is not allowed`},
		{"a\nb.service", `character '\n' is not allowed`},
		{"a/b.service", `character '/' is not allowed`},
		{"a'b.service", `character '\'' is not allowed`},
		{"a\x1b[2J.service", `'[' is a glob character`},
		{"a\x1b.service", `character '\x1b' is not allowed`},
		{"@x.service", "nothing before '@'"},
		{"x@.service", "template"},
		{strings.Repeat("a", 248) + ".service", "256 bytes long"},
	}
	for _, b := range bad {
		err := Check(b.name)
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), b.why) {
			t.Errorf("Check(%q) = %v, want ErrInvalid saying %q", b.name, err, b.why)
		}
		if Valid(b.name) {
			t.Errorf("Valid(%q) = true", b.name)
		}
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{"sglang": "sglang.service", "sglang.service": "sglang.service", "app.socket": "app.socket", "w@1": "w@1.service"} {
		if got, err := Normalize(in); err != nil || got != want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"sglang*":       `invalid unit name "sglang*": '*' is a glob character`,
		"sglang.servce": `invalid unit name "sglang.servce": "servce" is not a unit type`,
		"a b":           `invalid unit name "a b": character ' ' is not allowed`,
		"":              `invalid unit name "": empty`,
	} {
		if _, err := Normalize(in); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Normalize(%q) = %v, want %s…", in, err, want)
		}
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{"sglang.service", "a*", "x@y.service", "\xff.service"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if Valid(s) != (Check(s) == nil) {
			t.Fatalf("Valid and Check disagree on %q", s)
		}
		if Valid(s) && strings.ContainsAny(s, "*?[ '\"$;|&/\x00\n") {
			t.Fatalf("%q passed but holds a glob or shell character", s)
		}
	})
}
