package journal

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"time"
)

// tailKeep is how much of the end of an oversize line Reader keeps: enough
// for the fields journalctl writes after a huge MESSAGE (the cursor among
// them).
const tailKeep = 4 << 10

// Reader splits journalctl's output into lines without ever failing on a
// long one (bufio.Scanner stops the stream with "token too long" at 64 KiB,
// and a 48 KiB byte-array MESSAGE is ~200 KB of JSON). A line longer than
// the limit is not kept whole: Reader keeps its first limit bytes and its
// last 4 KiB, discards the middle, and reports it as oversize.
type Reader struct {
	br    *bufio.Reader
	limit int
	line  []byte
	tail  []byte
}

// NewReader returns a Reader of r that keeps lines up to limit bytes whole.
func NewReader(r io.Reader, limit int) *Reader {
	if limit < 4096 {
		limit = 4096
	}
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), limit: limit}
}

// lineLimit is the JSON line length Follow keeps whole for a message limit
// of maxMsg bytes: a byte-array MESSAGE takes up to four bytes of JSON per
// byte ("255,"), plus room for the other fields.
func lineLimit(maxMsg int) int { return 4*maxMsg + 64<<10 }

// Next returns the next line without its newline, valid until the next
// call. For an oversize line, line is its head and tail its last bytes.
// The stream ends with io.EOF after a newline, or io.ErrUnexpectedEOF
// with the unterminated rest: a stream cut off mid-line (a dropped
// connection), whose last entry will come again after the resume.
func (r *Reader) Next() (line, tail []byte, oversize bool, err error) {
	r.line, r.tail = r.line[:0], r.tail[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		switch {
		case len(r.line)+len(chunk) <= r.limit && !oversize:
			r.line = append(r.line, chunk...)
		default:
			if !oversize {
				keep := r.limit - len(r.line)
				r.line = append(r.line, chunk[:keep]...)
				chunk = chunk[keep:]
				oversize = true
			}
			r.tail = append(r.tail, chunk...)
			if len(r.tail) > tailKeep {
				r.tail = append(r.tail[:0], r.tail[len(r.tail)-tailKeep:]...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == nil:
			if oversize {
				return r.line, bytes.TrimSuffix(r.tail, []byte("\n")), true, nil
			}
			return bytes.TrimSuffix(r.line, []byte("\n")), nil, false, nil
		case errors.Is(err, io.EOF) && (len(r.line) > 0 || oversize):
			return r.line, r.tail, oversize, io.ErrUnexpectedEOF
		default:
			return nil, nil, false, err
		}
	}
}

// DecodeOversize makes an entry of a line too long to read whole, from its
// head and tail: the cursor, timestamp and identity fields are found by
// name (a quoted `"NAME":"` can only be a field name in valid JSON, never
// inside a string value, where every quote is escaped), and the message is
// replaced by OversizeMessage.
func DecodeOversize(head, tail []byte) Entry {
	e := Entry{Priority: 6, Message: OversizeMessage, Truncated: true}
	find := func(name string, ok func(string) bool) string {
		for _, b := range [][]byte{head, tail} {
			if v, found := plainField(b, name); found && ok(v) {
				return v
			}
		}
		return ""
	}
	e.Cursor = find("__CURSOR", validCursor)
	if us, err := strconv.ParseInt(find("__REALTIME_TIMESTAMP", isDigits), 10, 64); err == nil {
		e.Realtime = time.UnixMicro(us)
	}
	e.BootID = find("_BOOT_ID", validID)
	e.Unit = cmp(find("_SYSTEMD_UNIT", validUnit), find("UNIT", validUnit))
	e.InvocationID = cmp(find("_SYSTEMD_INVOCATION_ID", validID), find("INVOCATION_ID", validID))
	e.MessageID = find("MESSAGE_ID", validID)
	if pid, err := strconv.Atoi(find("_PID", isDigits)); err == nil {
		e.PID = pid
	}
	return e
}

// plainField finds "name":"value" in b where value has no escapes.
func plainField(b []byte, name string) (string, bool) {
	pat := `"` + name + `":"`
	for off := 0; ; {
		i := bytes.Index(b[off:], []byte(pat))
		if i < 0 {
			return "", false
		}
		i += off
		off = i + 1
		if i > 0 && b[i-1] == '\\' {
			continue
		}
		v := b[i+len(pat):]
		end := bytes.IndexByte(v, '"')
		if end < 0 {
			return "", false
		}
		return string(v[:end]), true
	}
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
