// Package unitname holds systemd's rules for unit names, once, for every
// place that takes one: the config and -u, the journal follower and the
// unit-state watch. A name that passes names exactly one unit: globs are
// refused, because journalctl -u and systemctl would read them as a
// pattern and mix other units' lines and states into one host's view.
package unitname

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid is wrapped by every refusal: callers tell a bad name (which
// no retry mends) from a failure of the host with errors.Is.
var ErrInvalid = errors.New("invalid unit name")

// maxLen is systemd's UNIT_NAME_MAX less its terminating NUL.
const maxLen = 255

// typeSuffixes are the unit types systemd knows (unit_type_from_string).
func typeSuffixes() []string {
	return []string{"service", "socket", "target", "device", "mount", "automount", "swap", "timer", "path", "slice", "scope"}
}

// knownType reports whether t is one of systemd's unit types.
func knownType(t string) bool {
	for _, s := range typeSuffixes() {
		if t == s {
			return true
		}
	}
	return false
}

// nameChar reports whether c may appear in a unit name before its type
// suffix: systemd's VALID_CHARS_WITH_AT (ASCII letters, digits, ":-_.\@").
func nameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(":-_.\\@", c) >= 0
}

// Check reports why name is not the full name of one unit that can run,
// or nil: systemd's unit_name_is_valid for a plain unit or a template
// instance (a bare template, "x@.service", never runs), with a known type
// suffix. It also refuses a leading '-', which a remote command line would
// take for an option. Every error wraps ErrInvalid and quotes the name.
func Check(name string) error {
	if why := problem(name); why != "" {
		return fmt.Errorf("%w %q: %s", ErrInvalid, name, why)
	}
	return nil
}

// Valid is Check(name) == nil, without building an error: for decoders
// that test every journal entry's unit fields.
func Valid(name string) bool { return problem(name) == "" }

// problem is why name is not a unit name, or "".
func problem(name string) string {
	switch {
	case name == "":
		return "empty"
	case len(name) > maxLen:
		return fmt.Sprintf("%d bytes long, systemd allows %d", len(name), maxLen)
	case name[0] == '-':
		return "starts with '-'"
	}
	if i := strings.IndexAny(name, "*?["); i >= 0 {
		return fmt.Sprintf("%q is a glob character; name one unit exactly (a pattern would mix other units' logs and states in)", name[i])
	}
	dot := strings.LastIndexByte(name, '.')
	if dot <= 0 {
		return "no type suffix (.service, .socket, …)"
	}
	if t := name[dot+1:]; !knownType(t) {
		return fmt.Sprintf("%q is not a unit type (want one of %s)", t, strings.Join(typeSuffixes(), ", "))
	}
	at := -1
	for i := 0; i < dot; i++ {
		c := name[i]
		if !nameChar(c) {
			return fmt.Sprintf("character %q is not allowed (systemd allows ASCII letters, digits and \":-_.\\@\")", rune(c))
		}
		if c == '@' && at < 0 {
			at = i
		}
	}
	switch at {
	case 0:
		return "nothing before '@'"
	case dot - 1:
		return "a template (nothing between '@' and the type) names no running unit"
	}
	return ""
}

// Normalize completes a name the way systemctl and journalctl -u do, by
// adding ".service" when it has no '.' at all ("sglang" →
// "sglang.service"), then checks it. A name with an unknown suffix is
// refused rather than completed: "sglang.servce" is more likely a typo
// than a unit called "sglang.servce.service".
func Normalize(name string) (string, error) {
	full := name
	if name != "" && !strings.ContainsRune(name, '.') {
		full += ".service"
	}
	if why := problem(full); why != "" {
		return "", fmt.Errorf("%w %q: %s", ErrInvalid, name, why)
	}
	return full, nil
}
