package journal

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"
)

// journalctl's export format (`-o export`, systemd's "Journal Export
// Format"; src/shared/logs-show.c output_export) is what Follow reads by
// default: journalctl writes it with plain fwrite calls, no per-value
// formatting, which makes it about twice as cheap to produce as JSON
// (TESTBED.md §7). An entry is:
//
//	__CURSOR=…\n __REALTIME_TIMESTAMP=…\n __MONOTONIC_TIMESTAMP=…\n _BOOT_ID=…\n
//
// (newer versions add __SEQNUM and __SEQNUM_ID), then one record per field
// value, then an empty line. A value that is printable UTF-8 without a
// newline is "NAME=value\n"; any other (control bytes, ESC, \r, \n,
// invalid UTF-8) is "NAME\n", its length as a little-endian uint64, the
// raw bytes and "\n". A repeated field is simply written twice. Export
// never truncates (journalctl sets no data threshold for it), so unlike
// JSON there is no null.

// maxExportValue bounds a binary value's length: journald stores no data
// object over DATA_SIZE_MAX (768 MiB), so a larger length means the
// stream is out of step, not a real value.
const maxExportValue = 768 << 20

// fieldKeep is how much of a value other than MESSAGE the reader keeps.
// Every field Entry uses is short (identifiers, numbers, a few words);
// the rest of a longer one is skipped unread. A longer identifier or
// number fails its check as it would whole.
const fieldKeep = 64 << 10

// EntryError is an entry that could not be decoded. The reader that
// returns it goes on with the next entry.
type EntryError struct {
	Size int   // bytes of the entry read, for the marker
	Err  error // what was wrong, naming the field
}

// Error says which entry was dropped and why.
func (e *EntryError) Error() string {
	return fmt.Sprintf("journal entry of %d bytes not decoded: %v", e.Size, e.Err)
}

// Unwrap returns the decoding error.
func (e *EntryError) Unwrap() error { return e.Err }

// errExport is wrapped by every export format error.
var errExport = errors.New("journal export")

// ExportReader decodes `journalctl -o export` output entry by entry into
// the same Entry that DecodeLimit makes of the entry's JSON line. It reads
// with bounded memory whatever the stream holds: a MESSAGE is kept up to
// the size limit and the rest of it skipped, other values up to 64 KiB.
// Buffers are reused from one entry to the next; a decoded entry costs two
// allocations (its cursor and its message) plus its Fields map when it
// has extra fields.
type ExportReader struct {
	br     *bufio.Reader
	maxMsg int
	msg    []byte // the entry's MESSAGE values joined, up to maxMsg+1 bytes
	val    []byte // a text value longer than the read buffer
	name   []byte // its field name
	resync bool   // after a framing error: skip to the next entry
	// midLine says the framing error left the reader inside a line, whose
	// rest is not the empty line that ends the entry.
	midLine bool
	n       int // bytes of the current entry read so far

	boot, unit, sysUnit, objUnit, inv, sysInv, msgID internSlot
}

// NewExportReader returns a reader of journalctl's export output on r,
// cutting a MESSAGE at maxMsg bytes (0 means DefaultMaxLine) as
// DecodeLimit does.
func NewExportReader(r io.Reader, maxMsg int) *ExportReader {
	return newExportReader(r, maxMsg, 64<<10)
}

// newExportReader reads through a buffer of size bytes (at least 128, so
// that a field name and its '=' always fit): what it decodes does not
// depend on size (FuzzDecodeExport checks it).
func newExportReader(r io.Reader, maxMsg, size int) *ExportReader {
	if maxMsg <= 0 {
		maxMsg = DefaultMaxLine
	}
	return &ExportReader{br: bufio.NewReaderSize(r, size), maxMsg: maxMsg}
}

// exportEntry is the state of one entry being decoded.
type exportEntry struct {
	e                          Entry
	sysUnit, unit, sysInv, inv string
	seen                       uint32 // fields already set, by kind: a repeat keeps the first value
	msgs                       int    // MESSAGE values joined so far
	msgOver                    bool   // part of the MESSAGE was skipped
	err                        error  // the first bad value; the entry is read to its end regardless
}

// errFieldValue marks a value that fails to decode (a number that is
// not one): the entry's framing is intact, so the reader stays in step.
var errFieldValue = fmt.Errorf("%w: bad value", errExport)

// Next returns the next entry. At the end of the stream it returns
// io.EOF, or io.ErrUnexpectedEOF when the stream stopped inside an entry
// (a dropped connection: the entry comes again after the resume). An
// entry it cannot decode is an *EntryError, after which Next goes on with
// the next entry (after a framing error, from the next empty line). Any
// other error is the underlying reader's.
func (r *ExportReader) Next() (Entry, error) {
	e, err := r.next()
	if err != nil && errors.Is(err, errExport) {
		return Entry{}, &EntryError{Size: r.n, Err: err}
	}
	return e, err
}

func (r *ExportReader) next() (Entry, error) {
	if r.resync {
		if err := r.skipEntry(); err != nil {
			return Entry{}, err
		}
		r.resync = false
	}
	r.n = 0
	r.msg = r.msg[:0]
	d := exportEntry{e: Entry{Priority: 6}}
	fields := 0
	for {
		line, err := r.br.ReadSlice('\n')
		r.n += len(line)
		switch {
		case err == nil && len(line) == 1:
			if fields == 0 {
				continue // a stray empty line: no entry
			}
			return r.finish(&d)
		case err == nil || errors.Is(err, bufio.ErrBufferFull):
			fields++
			ferr := r.field(&d, line, err != nil)
			switch {
			case ferr == nil:
			case errors.Is(ferr, errFieldValue):
				if d.err == nil {
					d.err = ferr
				}
			case errors.Is(ferr, errExport):
				r.resync = true
				return Entry{}, ferr
			default:
				return Entry{}, ferr
			}
		case errors.Is(err, io.EOF):
			// A cut stream, unless what it was cut in is no field record
			// at all (found as soon as its start is read, whatever the
			// buffer's size).
			if ferr := checkStart(line, r.n-len(line)); ferr != nil {
				r.resync = true
				return Entry{}, ferr
			}
			if fields > 0 || len(line) > 0 {
				return Entry{}, io.ErrUnexpectedEOF
			}
			return Entry{}, io.EOF
		default:
			return Entry{}, err
		}
	}
}

// checkStart checks the start of a field record cut off by the end of the
// stream as field would check it whole.
func checkStart(line []byte, at int) error {
	eq := bytes.IndexByte(line, '=')
	if eq < 0 {
		if len(line) > maxName+1 {
			return fmt.Errorf("%w: field name of over %d bytes at byte %d of the entry", errExport, maxName, at)
		}
		return nil
	}
	return checkName(line[:eq], at)
}

// skipEntry discards what is left of an entry the reader lost step in, up
// to the empty line that ends it, or to the end of the stream.
func (r *ExportReader) skipEntry() error {
	cont := r.midLine // inside a line: its end is no empty line
	r.midLine = false
	for {
		line, err := r.br.ReadSlice('\n')
		switch {
		case err == nil && len(line) == 1 && !cont:
			return nil
		case err == nil:
			cont = false
		case errors.Is(err, bufio.ErrBufferFull):
			cont = true
		case errors.Is(err, io.EOF):
			// The entry was reported already: its end is the stream's.
			return io.EOF
		default:
			return err
		}
	}
}

// field reads one field record whose first line (or its first buffer
// full, when partial) is line.
func (r *ExportReader) field(d *exportEntry, line []byte, partial bool) error {
	at := r.n - len(line)
	eq := bytes.IndexByte(line, '=')
	if eq < 0 {
		if partial { // the read buffer is far longer than a name
			r.midLine = true
			return fmt.Errorf("%w: field name of over %d bytes at byte %d of the entry", errExport, maxName, at)
		}
		return r.binary(d, line[:len(line)-1], at)
	}
	name, val := line[:eq], line[eq+1:]
	if err := checkName(name, at); err != nil {
		r.midLine = partial
		return err
	}
	k := kindOf(name)
	if !partial {
		return r.set(d, k, name, val[:len(val)-1], false)
	}
	// A text value longer than the read buffer: keep what the field
	// keeps, skip the rest of the line. name and val point into the read
	// buffer, which the next read reuses.
	r.name = append(r.name[:0], name...)
	if k == kMessage {
		r.startMsg(d)
	}
	keep := r.keep(k)
	r.val = append(r.val[:0], val[:min(len(val), keep)]...)
	over := len(val) > keep
	for {
		chunk, err := r.br.ReadSlice('\n')
		r.n += len(chunk)
		if err == nil {
			chunk = chunk[:len(chunk)-1]
		}
		room := keep - len(r.val)
		r.val = append(r.val, chunk[:min(len(chunk), room)]...)
		over = over || len(chunk) > room
		switch {
		case err == nil:
			if k == kMessage {
				r.msg = append(r.msg, r.val...)
				d.msgOver = d.msgOver || over
				return nil
			}
			return r.set(d, k, r.name, r.val, over)
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return io.ErrUnexpectedEOF
		default:
			return err
		}
	}
}

// binary reads the length and bytes of a binary value of the field name,
// whose record started at byte at of the entry.
func (r *ExportReader) binary(d *exportEntry, name []byte, at int) error {
	if err := checkName(name, at); err != nil {
		return err
	}
	k := kindOf(name)
	r.name = append(r.name[:0], name...) // name points into the read buffer
	var size [8]byte
	if _, err := io.ReadFull(r.br, size[:]); err != nil {
		return eofInEntry(err)
	}
	r.n += 8
	n := binary.LittleEndian.Uint64(size[:])
	if n > maxExportValue {
		return fmt.Errorf("%w: field %s: binary value of %d bytes (journald stores at most %d) at byte %d of the entry", errExport, r.name, n, maxExportValue, at)
	}
	var serr error
	if k == kMessage {
		r.startMsg(d)
	}
	kept := int(min(n, uint64(r.keep(k))))
	switch {
	case k == kMessage:
		// Straight into the message buffer: it may be longer than the
		// read buffer.
		r.msg = slices.Grow(r.msg, kept)
		at := len(r.msg)
		r.msg = r.msg[:at+kept]
		if _, err := io.ReadFull(r.br, r.msg[at:]); err != nil {
			return eofInEntry(err)
		}
		d.msgOver = d.msgOver || n > uint64(kept)
	case kept > 0 && kept <= r.br.Size():
		// Decode in place, then move on.
		v, err := r.br.Peek(kept)
		if err != nil {
			return eofInEntry(err)
		}
		serr = r.set(d, k, r.name, v, n > uint64(kept))
		_, _ = r.br.Discard(kept) // peeked: cannot fail
	case kept > 0:
		r.val = slices.Grow(r.val[:0], kept)[:kept]
		if _, err := io.ReadFull(r.br, r.val); err != nil {
			return eofInEntry(err)
		}
		serr = r.set(d, k, r.name, r.val, n > uint64(kept))
	}
	if rest := n - uint64(kept); rest > 0 {
		if _, err := r.br.Discard(int(rest)); err != nil {
			return eofInEntry(err)
		}
	}
	r.n += int(n)
	c, err := r.br.ReadByte()
	if err != nil {
		return eofInEntry(err)
	}
	r.n++
	if c != '\n' {
		return fmt.Errorf("%w: field %s: binary value of %d bytes not followed by a newline at byte %d of the entry", errExport, r.name, n, at)
	}
	return serr
}

// eofInEntry turns an end of stream inside a field into ErrUnexpectedEOF.
func eofInEntry(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// maxName is the longest field name journald accepts.
const maxName = 64

// checkName accepts what journald accepts as a field name, closely enough
// to notice a stream out of step: 1 to 64 upper-case letters, digits and
// underscores.
func checkName(name []byte, at int) error {
	if len(name) == 0 || len(name) > maxName {
		return fmt.Errorf("%w: field name of %d bytes at byte %d of the entry", errExport, len(name), at)
	}
	for _, c := range name {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return fmt.Errorf("%w: field name %q at byte %d of the entry", errExport, trimQuote(string(name)), at)
		}
	}
	return nil
}

// fieldKind is a field Entry uses; each has a bit in exportEntry.seen.
type fieldKind uint8

const (
	kOther fieldKind = iota
	kMessage
	kCursor
	kRealtime
	kBoot
	kSysUnit
	kUnit
	kObjUnit
	kSysInv
	kInv
	kMsgID
	kPID
	kPriority
	kDropped
	kExtra // extraFields[i] is kExtra+i
)

func kindOf(name []byte) fieldKind {
	switch string(name) {
	case "MESSAGE":
		return kMessage
	case "__CURSOR":
		return kCursor
	case "__REALTIME_TIMESTAMP":
		return kRealtime
	case "_BOOT_ID":
		return kBoot
	case "_SYSTEMD_UNIT":
		return kSysUnit
	case "UNIT":
		return kUnit
	case "OBJECT_SYSTEMD_UNIT":
		return kObjUnit
	case "_SYSTEMD_INVOCATION_ID":
		return kSysInv
	case "INVOCATION_ID":
		return kInv
	case "MESSAGE_ID":
		return kMsgID
	case "_PID":
		return kPID
	case "PRIORITY":
		return kPriority
	case "N_DROPPED":
		return kDropped
	}
	for i, f := range extraFields {
		if string(name) == f {
			return kExtra + fieldKind(i)
		}
	}
	return kOther
}

// keep is how many bytes of a value of kind k the reader holds on to. For
// MESSAGE it is what is left of the limit plus one byte, so that cut sees
// where the value would be cut (startMsg has put the separator in).
func (r *ExportReader) keep(k fieldKind) int {
	switch k {
	case kOther:
		return 0
	case kMessage:
		return max(r.maxMsg+1-len(r.msg), 0)
	default: // identifiers, numbers and the extra fields
		return fieldKeep
	}
}

// startMsg begins another MESSAGE value: a repeated MESSAGE is joined
// with "\n", as DecodeLimit joins the values of its JSON array.
func (r *ExportReader) startMsg(d *exportEntry) {
	d.msgs++
	if d.msgs > 1 {
		if len(r.msg) > r.maxMsg {
			d.msgOver = true
		} else {
			r.msg = append(r.msg, '\n')
		}
	}
}

// set decodes one value of field k the way DecodeLimit decodes its JSON:
// MESSAGE values are joined; other fields keep their first value;
// identifiers that fail their check are left out. over says the value
// was longer than what was kept.
func (r *ExportReader) set(d *exportEntry, k fieldKind, name, v []byte, over bool) error {
	switch k {
	case kOther:
		return nil
	case kMessage:
		r.startMsg(d)
		room := r.keep(kMessage)
		r.msg = append(r.msg, v[:min(len(v), room)]...)
		d.msgOver = d.msgOver || over || len(v) > room
		return nil
	default: // one value each, below
	}
	bit := uint32(1) << k
	if d.seen&bit != 0 {
		return nil // a repeated field: the first value counts, as in JSON
	}
	d.seen |= bit
	e := &d.e
	switch k {
	case kCursor:
		if c := string(v); !over && validCursor(c) {
			e.Cursor = c
		}
	case kRealtime:
		return number(name, v, over, func(n int) { e.Realtime = time.UnixMicro(int64(n)) })
	case kBoot:
		e.BootID = r.boot.get(v, over, validID)
	case kSysUnit:
		d.sysUnit = r.sysUnit.get(v, over, validUnit)
	case kUnit:
		d.unit = r.unit.get(v, over, validUnit)
	case kObjUnit:
		e.ObjectUnit = r.objUnit.get(v, over, validUnit)
	case kSysInv:
		d.sysInv = r.sysInv.get(v, over, validID)
	case kInv:
		d.inv = r.inv.get(v, over, validID)
	case kMsgID:
		e.MessageID = r.msgID.get(v, over, validID)
	case kPID:
		return number(name, v, over, func(n int) { e.PID = n })
	case kPriority:
		return number(name, v, over, func(n int) { e.Priority = n })
	case kDropped:
		return number(name, v, over, func(n int) { e.Dropped = n })
	default:
		if e.Fields == nil {
			e.Fields = make(map[string]string, 4)
		}
		e.Fields[extraFields[k-kExtra]] = string(v)
	}
	return nil
}

// internSlot keeps the last string a field had, so that a value repeated
// from one entry to the next (boot, unit, invocation ids) costs no
// allocation, and whether it passed its check.
type internSlot struct {
	s   string
	ok  bool
	set bool
}

// get returns v as a string when valid accepts it, else "". A value cut
// short (over) is never valid: every identifier is far shorter.
func (c *internSlot) get(v []byte, over bool, valid func(string) bool) string {
	if over {
		return ""
	}
	if !c.set || string(v) != c.s {
		c.s, c.ok, c.set = string(v), false, true
		c.ok = valid(c.s)
	}
	if !c.ok {
		return ""
	}
	return c.s
}

// number decodes a decimal value as DecodeLimit's num does: an empty
// value leaves the field unset, anything else must be a number.
func number(name, v []byte, over bool, set func(int)) error {
	if len(v) == 0 && !over {
		return nil
	}
	n, ok := atoi(v)
	if !ok || over {
		return fmt.Errorf("%w: %s: not a number: %q", errFieldValue, name, trimQuote(string(v)))
	}
	set(n)
	return nil
}

// atoi is strconv.Atoi on bytes, without the string copy for the short
// numbers journal fields hold.
func atoi(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 18 {
		n, err := strconv.Atoi(string(b)) // long: strconv checks the range
		return n, err == nil
	}
	s := b
	if b[0] == '-' || b[0] == '+' {
		s = b[1:]
	}
	if len(s) == 0 {
		return 0, false
	}
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if b[0] == '-' {
		n = -n
	}
	return n, true
}

// finish completes an entry whose empty line has been read.
func (r *ExportReader) finish(d *exportEntry) (Entry, error) {
	if d.err != nil {
		return Entry{}, d.err
	}
	if d.msgs > 0 {
		// r.msg holds at most one byte past the limit, which is all cut
		// looks at to find a rune start: the cut is the one the whole
		// value would get.
		msg, cutShort := cut(r.msg, r.maxMsg, false)
		d.e.Message, d.e.Truncated = string(msg), cutShort
	}
	resolveUnit(&d.e, d.sysUnit, d.unit, d.sysInv, d.inv)
	return d.e, nil
}

// resolveUnit sets an entry's unit and invocation from the trusted
// _SYSTEMD_* fields and the UNIT/INVOCATION_ID ones: systemd's own lines
// about a unit come from PID 1 in init.scope and name the unit in UNIT; a
// service's own UNIT field does not override the trusted _SYSTEMD_UNIT.
func resolveUnit(e *Entry, sysUnit, unit, sysInv, inv string) {
	if sysUnit == "init.scope" && unit != "" {
		sysUnit = ""
	}
	e.Unit = cmp(sysUnit, unit)
	e.InvocationID = cmp(sysInv, inv)
}
