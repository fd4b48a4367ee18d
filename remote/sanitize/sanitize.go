// Package sanitize makes remote text safe to show in a terminal. Journal
// messages, unit properties and error strings from a host are untrusted:
// they may hold escape sequences that move the cursor, retitle the window
// or rewrite the screen. Every remote string passes through Line once, at
// the point where it enters the fleet, before any rule or view sees it.
package sanitize

import (
	"strings"
	"unicode/utf8"
)

// DefaultMax is the longest line kept, in bytes. SGLang's server_args line
// runs to several KiB; anything past this is cut and marked.
const DefaultMax = 16 << 10

// TruncMark ends a line that was cut.
const TruncMark = " …[cut]"

// Line returns s as one line of harmless text, and whether it was cut:
//   - progress bars refresh with \r: only the text after the last \r is kept
//     (a trailing \r is ignored), because that is what a terminal would show;
//   - SGR colour sequences (ESC [ … m) are dropped, since colour carries no
//     meaning here and engines emit it when they think they own a TTY;
//   - every other control character (C0, DEL, C1, including ESC starting any
//     other sequence) becomes a visible Unicode control picture or ␛;
//   - invalid UTF-8 becomes U+FFFD; tabs become spaces; newlines become ⏎;
//   - the result is cut at limit bytes (on a rune boundary) and marked.
func Line(s string, limit int) (string, bool) {
	if limit <= 0 {
		limit = DefaultMax
	}
	s = strings.TrimRight(s, "\r\n")
	if i := strings.LastIndexByte(s, '\r'); i >= 0 {
		s = s[i+1:]
	}
	if isPlain(s) && len(s) <= limit {
		return s, false
	}
	var b strings.Builder
	b.Grow(min(len(s), limit) + len(TruncMark))
	cut := false
	for i := 0; i < len(s); {
		if b.Len() >= limit {
			cut = true
			break
		}
		c := s[i]
		if c == 0x1b {
			if n := sgrLen(s[i:]); n > 0 {
				i += n
				continue
			}
			b.WriteRune('␛')
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case r == '\t':
			b.WriteByte(' ')
		case r == '\n':
			b.WriteRune('⏎')
		case r < 0x20:
			b.WriteRune(0x2400 + r) // Unicode control pictures: ␀ … ␟
		case r == 0x7f:
			b.WriteRune('␡')
		case r >= 0x80 && r <= 0x9f:
			b.WriteRune('�')
		case r == 0x2028 || r == 0x2029 || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			// Line separators and bidi overrides can reorder what the
			// user reads; show them as the replacement character.
			b.WriteRune('�')
		default:
			b.WriteRune(r)
		}
	}
	out := b.String()
	if cut {
		// Trim to a rune boundary at or below limit before marking.
		for len(out) > limit {
			_, size := utf8.DecodeLastRuneInString(out)
			out = out[:len(out)-size]
		}
		out += TruncMark
	}
	return out, cut
}

// String sanitises a short remote string (a unit property, an error) with
// the default limit.
func String(s string) string {
	out, _ := Line(s, DefaultMax)
	return out
}

// Text sanitises text of several lines (an error listing problems, one
// a line): each line as Line does, the newlines between them kept.
func Text(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = String(l)
	}
	return strings.Join(lines, "\n")
}

// Error returns err with a message safe for a terminal (String of its
// message), for an error that may quote a host: an SSH server's disconnect
// message, a command's stderr. errors.Is and errors.As still see err; nil
// stays nil.
func Error(err error) error {
	if err == nil {
		return nil
	}
	return safeError{err}
}

type safeError struct{ err error }

func (e safeError) Error() string { return String(e.err.Error()) }
func (e safeError) Unwrap() error { return e.err }

// isPlain reports whether s is printable ASCII or well-formed UTF-8 without
// any character Line would change: the fast path for ordinary log lines.
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f {
			return false
		}
		if c >= 0x80 {
			return plainUTF8(s[i:])
		}
	}
	return true
}

func plainUTF8(s string) bool {
	for _, r := range s {
		switch {
		case r == utf8.RuneError, r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f,
			r == 0x2028, r == 0x2029, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return false
		}
	}
	return true
}

// sgrLen returns the length of an SGR sequence (ESC [ params m) at the start
// of s, or 0 if s does not start with one.
func sgrLen(s string) int {
	if len(s) < 3 || s[0] != 0x1b || s[1] != '[' {
		return 0
	}
	for i := 2; i < len(s) && i < 64; i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9' || c == ';' || c == ':':
		case c == 'm':
			return i + 1
		default:
			return 0
		}
	}
	return 0
}
