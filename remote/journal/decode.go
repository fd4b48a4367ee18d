// Package journal follows one systemd unit's journal on a host through
// `journalctl -o export -f` (its export format, export.go; JSON, decoded
// here, is the fallback) and turns each entry into an event: the
// service's own output, systemd's lines about the unit (Starting, Started,
// Main process exited, …) and journald's "Suppressed N messages" notice for
// it. It remembers the last cursor, so that after a dropped connection the
// follow resumes exactly where it stopped, and it says so with a visible
// Gap marker whenever lines may be missing.
//
// The package decodes faithfully and never cleans text: a MESSAGE that
// journald stored as bytes (ESC, \r, invalid UTF-8) comes out as exactly
// those bytes. Making remote text harmless is remote/sanitize's job, done
// once where events enter the fleet.
package journal

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/bringup-dev/bringup/remote/unitname"
)

// DefaultMaxLine is the longest MESSAGE kept, in bytes. journald itself
// splits service output at LineMax= (48 KiB by default), so only native
// journal messages or a raised LineMax reach it.
const DefaultMaxLine = 64 << 10

// OversizeMessage replaces the MESSAGE of an entry whose JSON line was too
// long to read whole (see Reader); the entry is still delivered, marked
// Truncated.
const OversizeMessage = "[journal entry too long to show]"

// SuppressedID is the MESSAGE_ID of journald's "Suppressed N messages from
// UNIT" notice. journald logs it for itself (its own _SYSTEMD_UNIT) with
// OBJECT_SYSTEMD_UNIT naming the flooding unit and N_DROPPED the count; on
// systemd 252 `journalctl -u UNIT` matches it through OBJECT_SYSTEMD_UNIT.
const SuppressedID = "a596d6fe7bfa4994828e72309e95d61e"

// extraFields are the structured fields systemd attaches to its messages
// about a unit that Entry.Fields keeps; _LINE_BREAK says why journald split
// a stdout line (line-max, nul, eof, pid-change).
var extraFields = [...]string{"JOB_TYPE", "JOB_RESULT", "UNIT_RESULT", "EXIT_CODE", "EXIT_STATUS", "N_RESTARTS", "_LINE_BREAK"}

// OutputFields is the --output-fields list Follow asks journalctl for:
// only what Entry uses, because journalctl's formatting is the stream's
// bottleneck (TESTBED.md at the repository's root, §7, for JSON: half the bytes, twice the lines/s).
// __CURSOR, __REALTIME_TIMESTAMP, __MONOTONIC_TIMESTAMP and _BOOT_ID are
// always included by journalctl, in either format.
const OutputFields = "MESSAGE,PRIORITY,MESSAGE_ID,UNIT,_SYSTEMD_UNIT,_SYSTEMD_INVOCATION_ID,INVOCATION_ID,_PID," +
	"JOB_TYPE,JOB_RESULT,UNIT_RESULT,EXIT_CODE,EXIT_STATUS,N_RESTARTS,_LINE_BREAK,OBJECT_SYSTEMD_UNIT,N_DROPPED"

// Entry is one decoded journal entry. Identifiers that fail their syntax
// check (cursor, unit name, 128-bit ids) are left empty rather than
// carried on: they are remote text that the sanitiser does not see.
type Entry struct {
	Cursor       string    // __CURSOR, the resume point
	Realtime     time.Time // __REALTIME_TIMESTAMP (µs since the epoch, journald's receive time)
	BootID       string    // _BOOT_ID
	Unit         string    // _SYSTEMD_UNIT, or UNIT for systemd's lines about the unit (from init.scope)
	ObjectUnit   string    // OBJECT_SYSTEMD_UNIT: the unit a daemon's message is about (journald's suppression notice)
	InvocationID string    // _SYSTEMD_INVOCATION_ID, else INVOCATION_ID
	PID          int       // _PID
	Priority     int       // PRIORITY; 6 (info, journald's default) when absent
	MessageID    string    // MESSAGE_ID, lower-case hex
	// Message is MESSAGE exactly as stored: a string value as is, a byte
	// array as those bytes (possibly invalid UTF-8, possibly with ESC).
	// A repeated MESSAGE field is joined with "\n" so that no value is
	// hidden. It is cut at the size limit (Truncated).
	Message   string
	Truncated bool
	Dropped   int               // N_DROPPED of journald's suppression notice
	Fields    map[string]string // the extraFields present on the entry; nil when none
}

// Suppressed reports whether e is journald's notice that it dropped lines
// of a unit under its rate limit, and how many.
func (e Entry) Suppressed() (n int, ok bool) {
	if e.MessageID != SuppressedID {
		return 0, false
	}
	if e.Dropped > 0 {
		return e.Dropped, true
	}
	// Older journald versions carry the count only in the text.
	var unit string
	if _, err := fmt.Sscanf(e.Message, "Suppressed %d messages from %s", &n, &unit); err == nil {
		return n, true
	}
	return 0, true
}

// Decode parses one line of `journalctl -o json` output with the default
// size limit. See DecodeLimit.
func Decode(line []byte) (Entry, error) {
	return DecodeLimit(line, DefaultMaxLine)
}

// DecodeLimit parses one line of `journalctl -o json` output. Field values
// follow journalctl's encoding: a string; an array of byte numbers (the
// value held control characters or invalid UTF-8); null (over 4096 bytes
// without --all: the message becomes a marker); an array of values (the
// field repeats). A MESSAGE longer than maxMsg bytes is cut on a UTF-8
// boundary where there is one, and marked Truncated. Unknown fields are
// skipped without being decoded.
func DecodeLimit(line []byte, maxMsg int) (Entry, error) {
	if maxMsg <= 0 {
		maxMsg = DefaultMaxLine
	}
	e := Entry{Priority: 6}
	var sysUnit, unit, sysInv, inv string
	err := eachField(line, func(key, raw []byte) error {
		switch string(key) {
		case "MESSAGE":
			v, null, err := value(raw, true)
			if err != nil {
				return fmt.Errorf("MESSAGE: %w", err)
			}
			if null {
				v = "[message over 4096 bytes not shown: journalctl ran without --all]"
				e.Truncated = true
			}
			e.Message, e.Truncated = cut(v, maxMsg, e.Truncated)
		case "__CURSOR":
			return str(raw, key, func(s string) { e.Cursor = s }, validCursor)
		case "__REALTIME_TIMESTAMP":
			return num(raw, key, func(n int) { e.Realtime = time.UnixMicro(int64(n)) })
		case "_BOOT_ID":
			return str(raw, key, func(s string) { e.BootID = s }, validID)
		case "_SYSTEMD_UNIT":
			return str(raw, key, func(s string) { sysUnit = s }, validUnit)
		case "UNIT":
			return str(raw, key, func(s string) { unit = s }, validUnit)
		case "OBJECT_SYSTEMD_UNIT":
			return str(raw, key, func(s string) { e.ObjectUnit = s }, validUnit)
		case "_SYSTEMD_INVOCATION_ID":
			return str(raw, key, func(s string) { sysInv = s }, validID)
		case "INVOCATION_ID":
			return str(raw, key, func(s string) { inv = s }, validID)
		case "MESSAGE_ID":
			return str(raw, key, func(s string) { e.MessageID = s }, validID)
		case "_PID":
			return num(raw, key, func(n int) { e.PID = n })
		case "PRIORITY":
			return num(raw, key, func(n int) { e.Priority = n })
		case "N_DROPPED":
			return num(raw, key, func(n int) { e.Dropped = n })
		default:
			for _, f := range extraFields {
				if string(key) == f {
					v, _, err := value(raw, false)
					if err != nil {
						return fmt.Errorf("%s: %w", f, err)
					}
					if e.Fields == nil {
						e.Fields = make(map[string]string, 4)
					}
					e.Fields[f] = v
				}
			}
		}
		return nil
	})
	if err != nil {
		return Entry{}, err
	}
	resolveUnit(&e, sysUnit, unit, sysInv, inv)
	return e, nil
}

// cmp returns the first non-empty string.
func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// str decodes a field as a string and stores it when it passes ok; a value
// that fails is dropped (the entry stays usable).
func str(raw, key []byte, set func(string), ok func(string) bool) error {
	v, _, err := value(raw, false)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	if ok(v) {
		set(v)
	}
	return nil
}

// num decodes a decimal field; journalctl writes numbers as strings.
func num(raw, key []byte, set func(int)) error {
	v, _, err := value(raw, false)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	if v == "" {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("%s: not a number: %q", key, trimQuote(v))
	}
	set(n)
	return nil
}

// trimQuote shortens a value quoted in an error.
func trimQuote(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// cut shortens s to at most limit bytes, backing up to a rune start when the
// cut would split a multi-byte UTF-8 sequence. It looks at no byte past
// s[limit].
func cut[T ~string | ~[]byte](s T, limit int, already bool) (T, bool) {
	if len(s) <= limit {
		return s, already
	}
	i := limit
	for k := 0; k < utf8.UTFMax && i > 0 && !utf8.RuneStart(s[i]); k++ {
		i--
	}
	if i == 0 || !utf8.RuneStart(s[i]) {
		i = limit
	}
	return s[:i], true
}

// validCursor accepts what systemd prints as a cursor
// (s=…;i=…;b=…;m=…;t=…;x=…): it is later put on a command line.
func validCursor(s string) bool {
	if s == "" || len(s) > 512 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '=' || c == ';' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// validID accepts a 128-bit id as journald writes it: 32 hex digits.
func validID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// validUnit accepts what systemd accepts as a unit name (remote/unitname):
// a field that is not one is left out of the entry.
func validUnit(s string) bool { return unitname.Valid(s) }

// errSyntax is wrapped by every JSON syntax error.
var errSyntax = errors.New("journal json")

func syntaxErr(b []byte, i int, what string) error {
	return fmt.Errorf("%w: %s at byte %d of %d", errSyntax, what, i, len(b))
}

// eachField calls fn with every key and raw value of the JSON object in b.
// It checks the syntax of what it skips only as far as needed to find
// where each value ends; values are decoded by value.
func eachField(b []byte, fn func(key, raw []byte) error) error {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return syntaxErr(b, i, "want an object")
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return trailing(b, i+1)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return syntaxErr(b, i, "want a field name")
		}
		end, err := skipString(b, i)
		if err != nil {
			return err
		}
		key := b[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			k, err := unquote(b[i:end])
			if err != nil {
				return err
			}
			key = []byte(k)
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return syntaxErr(b, i, "want ':'")
		}
		i = skipSpace(b, i+1)
		vend, err := skipValue(b, i, 0)
		if err != nil {
			return err
		}
		if err := fn(key, b[i:vend]); err != nil {
			return err
		}
		i = skipSpace(b, vend)
		if i >= len(b) {
			return syntaxErr(b, i, "unterminated object")
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return trailing(b, i+1)
		default:
			return syntaxErr(b, i, "want ',' or '}'")
		}
	}
}

func trailing(b []byte, i int) error {
	if i = skipSpace(b, i); i != len(b) {
		return syntaxErr(b, i, "data after the object")
	}
	return nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// maxDepth bounds array nesting; journalctl nests at most two deep (a
// repeated field of byte arrays).
const maxDepth = 8

// skipValue returns the end of the JSON value starting at b[i].
func skipValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return i, syntaxErr(b, i, "want a value")
	}
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i)
	case c == '[' || c == '{':
		if depth >= maxDepth {
			return i, syntaxErr(b, i, "nested too deep")
		}
		if c == '{' {
			// Objects never appear as journal field values.
			return i, syntaxErr(b, i, "object as a field value")
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		for {
			end, err := skipValue(b, i, depth+1)
			if err != nil {
				return end, err
			}
			i = skipSpace(b, end)
			if i >= len(b) {
				return i, syntaxErr(b, i, "unterminated array")
			}
			if b[i] == ']' {
				return i + 1, nil
			}
			if b[i] != ',' {
				return i, syntaxErr(b, i, "want ',' or ']'")
			}
			i = skipSpace(b, i+1)
		}
	case c == '-' || c >= '0' && c <= '9':
		j := i + 1
		for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j] == '+' || b[j] == '-') {
			j++
		}
		return j, nil
	case bytes.HasPrefix(b[i:], []byte("null")):
		return i + 4, nil
	case bytes.HasPrefix(b[i:], []byte("true")):
		return i + 4, nil
	case bytes.HasPrefix(b[i:], []byte("false")):
		return i + 5, nil
	}
	return i, syntaxErr(b, i, "want a value")
}

// skipString returns the end (past the closing quote) of the JSON string
// starting at b[i].
func skipString(b []byte, i int) (int, error) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '"':
			return j + 1, nil
		case '\\':
			j++
		}
	}
	return len(b), syntaxErr(b, i, "unterminated string")
}

// value decodes one field value (see DecodeLimit). join says how a
// repeated field reads: joined with "\n" (MESSAGE, so nothing is hidden)
// or its first value (identifiers, where one is as good as any).
func value(raw []byte, join bool) (v string, null bool, err error) {
	switch {
	case len(raw) == 0:
		return "", false, syntaxErr(raw, 0, "empty value")
	case raw[0] == '"':
		s, err := unquote(raw)
		return s, false, err
	case string(raw) == "null":
		return "", true, nil
	case raw[0] == '[':
		return array(raw, join)
	}
	return "", false, syntaxErr(raw, 0, "want a string, an array or null")
}

// array decodes an array value: bytes when its elements are numbers, else
// a repeated field.
func array(raw []byte, join bool) (string, bool, error) {
	i := skipSpace(raw, 1)
	if i < len(raw) && (raw[i] >= '0' && raw[i] <= '9') {
		return byteArray(raw)
	}
	var (
		out   []byte
		n     int
		first = true
	)
	for i < len(raw) && raw[i] != ']' {
		end, err := skipValue(raw, i, 1)
		if err != nil {
			return "", false, err
		}
		v, null, err := value(raw[i:end], join)
		if err != nil {
			return "", false, err
		}
		if !null {
			if first || join {
				if !first {
					out = append(out, '\n')
				}
				out = append(out, v...)
				first = false
			}
		}
		n++
		i = skipSpace(raw, end)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return string(out), n > 0 && first, nil
}

// byteArray decodes [116, 104, 105, 115] into the bytes it lists.
func byteArray(raw []byte) (string, bool, error) {
	out := make([]byte, 0, len(raw)/3)
	i := 1
	for {
		i = skipSpace(raw, i)
		if i >= len(raw) {
			return "", false, syntaxErr(raw, i, "unterminated byte array")
		}
		if raw[i] == ']' {
			return string(out), false, nil
		}
		n, j := 0, i
		for j < len(raw) && raw[j] >= '0' && raw[j] <= '9' && j-i < 4 {
			n = n*10 + int(raw[j]-'0')
			j++
		}
		if j == i || n > 255 {
			return "", false, syntaxErr(raw, i, "want a byte (0-255)")
		}
		out = append(out, byte(n))
		i = skipSpace(raw, j)
		if i < len(raw) && raw[i] == ',' {
			i++
		} else if i >= len(raw) || raw[i] != ']' {
			return "", false, syntaxErr(raw, i, "want ',' or ']' in a byte array")
		}
	}
}

// unquote decodes a JSON string token, quotes included. The common case
// (no escapes) is a plain copy.
func unquote(tok []byte) (string, error) {
	if len(tok) < 2 || tok[0] != '"' || tok[len(tok)-1] != '"' {
		return "", syntaxErr(tok, 0, "want a string")
	}
	s := tok[1 : len(tok)-1]
	if bytes.IndexByte(s, '\\') < 0 {
		return string(s), nil
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i >= len(s) {
			return "", syntaxErr(tok, i, "bad escape")
		}
		switch s[i] {
		case '"', '\\', '/':
			out = append(out, s[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(s[i+1:])
			if !ok {
				return "", syntaxErr(tok, i, "bad \\u escape")
			}
			i += 4
			if r < 0xd800 || r > 0xdfff {
				out = utf8.AppendRune(out, r)
				continue
			}
			// A surrogate: pair it with a following \uDC00-\uDFFF.
			if r < 0xdc00 && i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
				if r2, ok := hex4(s[i+3:]); ok && r2 >= 0xdc00 && r2 <= 0xdfff {
					out = utf8.AppendRune(out, (r-0xd800)<<10+(r2-0xdc00)+0x10000)
					i += 6
					continue
				}
			}
			out = utf8.AppendRune(out, utf8.RuneError)
		default:
			return "", syntaxErr(tok, i, "bad escape")
		}
	}
	return string(out), nil
}

func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
