package kernels

import (
	"slices"
	"strings"
	"testing"
)

func TestDropInPath(t *testing.T) {
	if got, want := DropInPath("sglang.service", "kdtree-verify", false), "/etc/systemd/system/sglang.service.d/60-bringup-kdtree-verify.conf"; got != want {
		t.Errorf("DropInPath = %q, want %q", got, want)
	}
	if got, want := DropInPath("sglang.service", "kdtree-verify", true), "/run/systemd/system/sglang.service.d/60-bringup-kdtree-verify.conf"; got != want {
		t.Errorf("DropInPath runtime = %q, want %q", got, want)
	}
	for _, bad := range [][2]string{{"", "k"}, {"u.service", "../x"}, {"u.service", "a b"}, {"-u", "k"}, {"u.service", ".k"}, {"u/v", "k"}, {"u.service", "k'"}} {
		if err := CheckDropInNames(bad[0], bad[1]); err == nil {
			t.Errorf("CheckDropInNames(%q, %q) = nil, want an error", bad[0], bad[1])
		}
	}
	if err := CheckDropInNames("sglang@0.service", "kdtree-verify"); err != nil {
		t.Errorf("CheckDropInNames: %v", err)
	}
}

func TestPrependPath(t *testing.T) {
	tests := []struct{ dir, list, want string }{
		{"/k", "", "/k"},
		{"/k", "/a", "/k:/a"},
		{"/k", "/k", "/k"},
		{"/k", "/a:/k:/b", "/k:/a:/b"},
		{"/k", "/a::/b:", "/k:/a:/b"},
	}
	for _, tt := range tests {
		got := PrependPath(tt.dir, tt.list)
		if got != tt.want {
			t.Errorf("PrependPath(%q, %q) = %q, want %q", tt.dir, tt.list, got, tt.want)
		}
		if again := PrependPath(tt.dir, got); again != got {
			t.Errorf("PrependPath not idempotent on %q: %q", got, again)
		}
	}
}

func TestRenderDropIn(t *testing.T) {
	k := DefaultCatalog().Kernels[0]
	tests := []struct {
		name, mode string
		base       []string
		want       []string // the assignments it must set, in order
		line       string   // a line the file must contain
	}{
		{"on prepends to the unit's path", "on", []string{"KDTREE_MODE=validate", "PYTHONPATH=/srv/lib:/opt/kdtree/site"},
			[]string{"KDTREE_MODE=on", "PYTHONPATH=/opt/kdtree/site:/srv/lib"}, `Environment="PYTHONPATH=/opt/kdtree/site:/srv/lib"`},
		{"validate with no PYTHONPATH", "validate", nil, []string{"KDTREE_MODE=validate", "PYTHONPATH=/opt/kdtree/site"}, `Environment="KDTREE_MODE=validate"`},
		{"on is idempotent over our own path", "on", []string{"PYTHONPATH=/opt/kdtree/site"}, []string{"KDTREE_MODE=on", "PYTHONPATH=/opt/kdtree/site"}, "[Service]"},
		{"off leaves PYTHONPATH alone", "off", []string{"PYTHONPATH=/opt/kdtree/site:/x"}, []string{"KDTREE_MODE=off"}, "# Managed by bringup: kernel kdtree-verify, mode off. Set the mode with bringup; a hand edit is overwritten."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := RenderDropIn(k, tt.mode, tt.base)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(strings.Split(string(b), "\n"), tt.line) {
				t.Errorf("drop-in has no line %q:\n%s", tt.line, b)
			}
			env, err := ParseEnv(b)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(env, tt.want) {
				t.Errorf("drop-in sets %q, want %q:\n%s", env, tt.want, b)
			}
			mode, _, setsPath, err := ParseDropIn(k, b)
			if err != nil || mode != tt.mode || setsPath != (tt.mode != "off") {
				t.Errorf("ParseDropIn = %q, setsPath %v, %v", mode, setsPath, err)
			}
		})
	}
	if _, err := RenderDropIn(k, "turbo", nil); err == nil || !strings.Contains(err.Error(), "no mode") {
		t.Errorf("unknown mode: err = %v", err)
	}
}

func TestRenderEnvQuoting(t *testing.T) {
	tests := []struct{ kv, line string }{
		{"A=plain", `Environment="A=plain"`},
		{"A=two words", `Environment="A=two words"`},
		{`A=say "hi"`, `Environment="A=say \"hi\""`},
		{`A=C:\dir`, `Environment="A=C:\\dir"`},
		{"A=50%", `Environment="A=50%%"`},
		{"A=$HOME ${X}", `Environment="A=$HOME ${X}"`},
		{"A=tab\there", `Environment="A=tab\there"`},
		{"A=esc\x1b[0m", `Environment="A=esc\x1b[0m"`},
		{"A=héllo ✓", `Environment="A=héllo ✓"`},
		{"A=", `Environment="A="`},
	}
	for _, tt := range tests {
		b, err := RenderEnv("t", []string{tt.kv})
		if err != nil {
			t.Fatalf("%q: %v", tt.kv, err)
		}
		if !slices.Contains(strings.Split(string(b), "\n"), tt.line) {
			t.Errorf("%q: no line %s in\n%s", tt.kv, tt.line, b)
		}
		env, err := ParseEnv(b)
		if err != nil || len(env) != 1 || env[0] != tt.kv {
			t.Errorf("%q: read back %q, %v", tt.kv, env, err)
		}
	}
	for _, bad := range []string{"A=" + strings.Repeat("x", MaxLine), "A=x\ny", "A=x\x00", "A=x\r", "1A=x", "A B=x", "=x", "noequals", "A=\xff"} {
		if _, err := RenderEnv("t", []string{bad}); err == nil {
			t.Errorf("RenderEnv(%q) = nil error, want a refusal", bad)
		}
	}
	if _, err := RenderEnv("t", nil); err == nil {
		t.Error("RenderEnv(nil) = nil error")
	}
}

func TestParseEnvHandWritten(t *testing.T) {
	in := "[Unit]\nDescription=x\n[Service]\nEnvironment=A=1 'B=two words' \"C=\\x41\\s%%\"\nEnvironment=A=3\nEnvironment=\nEnvironment=D=4 \\\n E=5\n"
	env, err := ParseEnv([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"D=4", "E=5"}; !slices.Equal(env, want) {
		t.Errorf("ParseEnv = %q, want %q", env, want)
	}
	env, err = ParseEnv([]byte("[Service]\nEnvironment=A=1 'B=two words' \"C=\\x41\\s%%\"\nEnvironment=A=3\n"))
	if want := []string{"A=3", "B=two words", "C=A %"}; err != nil || !slices.Equal(env, want) {
		t.Errorf("ParseEnv = %q, %v, want %q", env, err, want)
	}
	for _, bad := range []string{"[Service]\nEnvironment=A=%n\n", "[Service]\nEnvironment=\"A=1\n", "[Service]\nEnvironment=A=\\q\n", "[Service]\nEnvironment=A=\\x00\n"} {
		if _, err := ParseEnv([]byte(bad)); err == nil {
			t.Errorf("ParseEnv(%q) = nil error", bad)
		}
	}
}

// FuzzRenderEnv: whatever RenderEnv accepts, ParseEnv reads back exactly;
// whatever it refuses has a reason CheckAssignment gives.
func FuzzRenderEnv(f *testing.F) {
	for _, s := range []string{"plain", "two words", `q"uo'te`, `back\slash`, "50%", "$HOME", "tab\t", "ü✓", "a\nb", "nul\x00", "\x7f\x01", `\x41`, "%%n"} {
		f.Add("V", s)
	}
	f.Fuzz(func(t *testing.T, name, val string) {
		kv := name + "=" + val
		b, err := RenderEnv("fuzz", []string{kv})
		if err != nil {
			if CheckAssignment(kv) == nil && !strings.Contains(err.Error(), "too long") {
				t.Fatalf("RenderEnv(%q) refused with %v but CheckAssignment accepts it", kv, err)
			}
			return
		}
		env, err := ParseEnv(b)
		if err != nil {
			t.Fatalf("ParseEnv of RenderEnv(%q): %v\n%s", kv, err, b)
		}
		if len(env) != 1 || env[0] != kv {
			t.Fatalf("round trip of %q gave %q\n%s", kv, env, b)
		}
	})
}

// FuzzParseEnv: ParseEnv never panics on hostile files, and what it
// accepts RenderEnv writes back to the same assignments.
func FuzzParseEnv(f *testing.F) {
	f.Add([]byte("[Service]\nEnvironment=A=1 'B=two' \"C=\\x41%%\"\n"))
	f.Add([]byte("[Service]\nEnvironment=\nEnvironment=D=4 \\\n E=5\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		env, err := ParseEnv(b)
		if err != nil || len(env) == 0 {
			return
		}
		out, err := RenderEnv("fuzz", env)
		if err != nil {
			if strings.Contains(err.Error(), "too long") {
				return
			}
			t.Fatalf("ParseEnv accepted %q but RenderEnv refuses it: %v", env, err)
		}
		again, err := ParseEnv(out)
		if err != nil || !slices.Equal(again, env) {
			t.Fatalf("re-render of %q read back as %q, %v", env, again, err)
		}
	})
}
