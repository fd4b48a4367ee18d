package kernels

import (
	"bytes"
	"fmt"
	"io"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/coreos/go-systemd/v22/unit"
)

// PythonPathVar is the variable a kernel's directory is put on.
const PythonPathVar = "PYTHONPATH"

// dropInHeader opens every drop-in bringup writes, so that an operator who
// finds the file knows who owns it and how it is changed.
const dropInHeader = "Managed by bringup: kernel %s, mode %s. Set the mode with bringup; a hand edit is overwritten."

// DropInName is the file name of kernel's drop-in: 60-bringup-KERNEL.conf.
// 60 sorts after the usual vendor drop-ins (10-50) and before the 70-90
// range operators use to override, so an explicit override still wins.
func DropInName(kernel string) string { return "60-bringup-" + kernel + ".conf" }

// DropInDir is the drop-in directory of unit: under /etc/systemd/system,
// or /run/systemd/system when runtime (lost on reboot).
func DropInDir(unitName string, runtime bool) string {
	root := "/etc/systemd/system"
	if runtime {
		root = "/run/systemd/system"
	}
	return path.Join(root, unitName+".d")
}

// DropInPath is where kernel's drop-in for unit lives.
func DropInPath(unitName, kernel string, runtime bool) string {
	return path.Join(DropInDir(unitName, runtime), DropInName(kernel))
}

// CheckDropInNames reports whether unit and kernel can name a drop-in
// file: no path separators, no leading dot or dash, printable ASCII only.
// The IO side puts both in paths and shell words, so it refuses anything
// else rather than escaping it.
func CheckDropInNames(unitName, kernel string) error {
	for _, n := range []struct{ what, v string }{{"unit", unitName}, {"kernel", kernel}} {
		if n.v == "" || len(n.v) > 200 || n.v[0] == '.' || n.v[0] == '-' {
			return fmt.Errorf("%s name %q: want a plain file name", n.what, n.v)
		}
		for _, r := range n.v {
			switch {
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			case strings.ContainsRune("-_.@:", r):
			default:
				return fmt.Errorf("%s name %q: character %q not allowed", n.what, n.v, r)
			}
		}
	}
	return nil
}

// PrependPath puts dir first on the colon-separated list, removing other
// occurrences of dir and empty entries. It is idempotent
// (PrependPath(d, PrependPath(d, l)) == PrependPath(d, l)), so a list read
// back while bringup's own drop-in is in force yields the same result as
// the unit's own list would.
func PrependPath(dir, list string) string {
	out := []string{dir}
	for e := range strings.SplitSeq(list, ":") {
		if e != "" && e != dir {
			out = append(out, e)
		}
	}
	return strings.Join(out, ":")
}

// EnvValue returns the value of key in env (KEY=VALUE entries; the last
// assignment wins, as in systemd).
func EnvValue(env []string, key string) (string, bool) {
	val, found := "", false
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			val, found = v, true
		}
	}
	return val, found
}

// DropInEnv is what kernel k in mode asks of the unit's environment: the
// mode variable and, for modes other than off, PYTHONPATH with k's
// directory first and baseEnv's PYTHONPATH after it. baseEnv is the
// unit's Environment property as read (it may include bringup's own
// drop-in: PrependPath makes that harmless).
func DropInEnv(k Kernel, mode string, baseEnv []string) ([]string, error) {
	if err := k.Validate(); err != nil {
		return nil, err
	}
	if _, ok := k.Mode(mode); !ok {
		return nil, fmt.Errorf("kernel %s has no mode %q (modes: %s)", k.Name, mode, strings.Join(k.ModeNames(), ", "))
	}
	env := []string{k.EnvVar + "=" + mode}
	if mode != "off" && k.PythonPath != "" {
		base, _ := EnvValue(baseEnv, PythonPathVar)
		env = append(env, PythonPathVar+"="+PrependPath(k.PythonPath, base))
	}
	return env, nil
}

// RenderDropIn renders kernel k's drop-in for mode: a header comment and
// one [Service] Environment= line per assignment of DropInEnv.
func RenderDropIn(k Kernel, mode string, baseEnv []string) ([]byte, error) {
	env, err := DropInEnv(k, mode, baseEnv)
	if err != nil {
		return nil, err
	}
	return RenderEnv(fmt.Sprintf(dropInHeader, k.Name, mode), env)
}

// RenderEnv renders a [Service] section with one Environment= line per
// KEY=VALUE of env, preceded by header as comment lines. Values are
// written so that systemd reads them back byte for byte: each assignment
// double-quoted with \ and " escaped, % doubled (systemd expands
// specifiers in Environment=, after unquoting), and control characters
// other than newline and CR written as C escapes. Names must be POSIX
// variable names; values must be UTF-8 (systemd drops an invalid
// assignment with only a log line) without NUL, newline or CR.
func RenderEnv(header string, env []string) ([]byte, error) {
	if len(env) == 0 {
		return nil, fmt.Errorf("render drop-in: no assignments")
	}
	opts := make([]*unit.UnitOption, 0, len(env))
	for i, kv := range env {
		q, err := quoteAssignment(kv)
		if err != nil {
			return nil, fmt.Errorf("render drop-in: env[%d]: %w", i, err)
		}
		opts = append(opts, &unit.UnitOption{Section: "Service", Name: "Environment", Value: q})
	}
	var b bytes.Buffer
	for line := range strings.SplitSeq(header, "\n") {
		b.WriteString(strings.TrimRight("# "+line, " "))
		b.WriteByte('\n')
	}
	if _, err := io.Copy(&b, unit.Serialize(opts)); err != nil {
		return nil, fmt.Errorf("render drop-in: %w", err)
	}
	return b.Bytes(), nil
}

// MaxLine is the longest Environment= line RenderEnv writes, newline
// included: the line limit of go-systemd's unit parser, which reads the file back (systemd
// itself allows longer lines).
const MaxLine = 2048

// CheckAssignment reports why kv cannot be written as an Environment=
// assignment, or nil.
func CheckAssignment(kv string) error {
	name, val, ok := strings.Cut(kv, "=")
	if !ok {
		return fmt.Errorf("%q: want KEY=VALUE", kv)
	}
	if !validEnvName(name) {
		return fmt.Errorf("variable name %q: want letters, digits and _, not starting with a digit", name)
	}
	if !utf8.ValidString(val) {
		return fmt.Errorf("%s: value is not valid UTF-8", name)
	}
	if i := strings.IndexAny(val, "\x00\n\r"); i >= 0 {
		return fmt.Errorf("%s: value has %q at byte %d (NUL, newline and CR are refused)", name, val[i], i)
	}
	return nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// quoteAssignment writes kv as one double-quoted word of a unit file.
func quoteAssignment(kv string) (string, error) {
	if err := CheckAssignment(kv); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(kv); i++ {
		switch c := kv[i]; {
		case c == '\\' || c == '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '%':
			b.WriteString("%%")
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	if n := len("Environment=") + b.Len() + len("\n"); n > MaxLine {
		name, _, _ := strings.Cut(kv, "=")
		return "", fmt.Errorf("%s: the Environment= line would be %d bytes, too long (max %d)", name, n, MaxLine)
	}
	return b.String(), nil
}

// ParseEnv reads the Environment= assignments of a drop-in's [Service]
// section the way systemd does for the subset RenderEnv writes and the
// common hand-written forms: words split on blanks, single and double
// quotes, C escapes, %% for %. An empty Environment= resets the list; a
// later assignment to a name replaces the earlier one in place. Other %
// specifiers are refused: bringup cannot expand them faithfully.
func ParseEnv(content []byte) ([]string, error) {
	opts, err := unit.DeserializeOptions(bytes.NewReader(content))
	if err != nil {
		return nil, fmt.Errorf("parse drop-in: %w", err)
	}
	var env []string
	for i, o := range opts {
		if o.Section != "Service" || o.Name != "Environment" {
			continue
		}
		// A line ending in a backslash continues on the next one, the
		// backslash and newline standing for a space; go-systemd keeps both.
		words, err := splitUnitWords(strings.ReplaceAll(o.Value, "\\\n", " "))
		if err != nil {
			return nil, fmt.Errorf("parse drop-in: option %d (Environment=%s): %w", i+1, o.Value, err)
		}
		if len(words) == 0 {
			env = nil
			continue
		}
		for _, w := range words {
			if err := CheckAssignment(w); err != nil {
				return nil, fmt.Errorf("parse drop-in: option %d: %w", i+1, err)
			}
			env = setEnv(env, w)
		}
	}
	return env, nil
}

// setEnv replaces kv's name in env, or appends it.
func setEnv(env []string, kv string) []string {
	name, _, _ := strings.Cut(kv, "=")
	for i, e := range env {
		if n, _, _ := strings.Cut(e, "="); n == name {
			env[i] = kv
			return env
		}
	}
	return append(env, kv)
}

// splitUnitWords splits a unit-file value into words (systemd's
// extract_first_word with EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE), then
// expands %% in each word.
func splitUnitWords(v string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case quote == 0 && (c == ' ' || c == '\t'):
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
			continue
		case c == '\\':
			n, err := unescapeAt(v, i+1, &w)
			if err != nil {
				return nil, err
			}
			i += n
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
		case c == quote:
			quote = 0
		default:
			w.WriteByte(c)
		}
		inWord = true
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	if inWord {
		words = append(words, w.String())
	}
	for i, word := range words {
		s, err := expandPercent(word)
		if err != nil {
			return nil, err
		}
		words[i] = s
	}
	return words, nil
}

// unescapeAt decodes the C escape whose letter is at v[i], writes it to w
// and returns how many bytes it used.
func unescapeAt(v string, i int, w *strings.Builder) (int, error) {
	if i >= len(v) {
		return 0, fmt.Errorf("dangling backslash")
	}
	if c, ok := simpleEscape(v[i]); ok {
		w.WriteByte(c)
		return 1, nil
	}
	if v[i] == 'x' && i+2 < len(v) && isHex(v[i+1]) && isHex(v[i+2]) {
		b := hexVal(v[i+1])<<4 | hexVal(v[i+2])
		if b == 0 {
			return 0, fmt.Errorf(`\x00 (NUL) in a value`)
		}
		w.WriteByte(b)
		return 3, nil
	}
	return 0, fmt.Errorf("unsupported escape \\%c", v[i])
}

// simpleEscape is the byte a one-letter C escape stands for.
func simpleEscape(c byte) (byte, bool) {
	switch c {
	case 'a':
		return '\a', true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	case 'v':
		return '\v', true
	case 's':
		return ' ', true
	case '\\', '"', '\'':
		return c, true
	}
	return 0, false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// expandPercent turns %% into %; any other specifier is an error.
func expandPercent(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '%' {
			b.WriteByte('%')
			i++
			continue
		}
		if i+1 < len(s) {
			return "", fmt.Errorf("specifier %%%c is not supported", s[i+1])
		}
		return "", fmt.Errorf("lone %% at the end of %q", s)
	}
	return b.String(), nil
}

// ParseDropIn reads the mode a drop-in of kernel k sets (its mode
// variable; "" when it sets none) and the PYTHONPATH it sets (ok false
// when it sets none).
func ParseDropIn(k Kernel, content []byte) (mode, pythonPath string, setsPath bool, err error) {
	env, err := ParseEnv(content)
	if err != nil {
		return "", "", false, fmt.Errorf("kernel %s: %w", k.Name, err)
	}
	mode, _ = EnvValue(env, k.EnvVar)
	pythonPath, setsPath = EnvValue(env, PythonPathVar)
	return mode, pythonPath, setsPath, nil
}
