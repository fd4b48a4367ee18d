package scalerig

import (
	"bytes"
	"encoding/binary"
	"strings"
)

// appendExport appends e in journald's export format, as
// systemd-journal-upload sends it (systemd's
// docs/JOURNAL_EXPORT_FORMATS.md): KEY=value lines, a value holding a
// newline or other control bytes as KEY, a newline, its length as 64-bit
// little-endian and the bytes; an empty line ends the entry.
func appendExport(b *bytes.Buffer, e Entry) {
	for _, f := range e.Fields {
		k, v := f[0], f[1]
		if !needsBinary(v) {
			b.WriteString(k)
			b.WriteByte('=')
			b.WriteString(v)
			b.WriteByte('\n')
			continue
		}
		b.WriteString(k)
		b.WriteByte('\n')
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(v)))
		b.Write(n[:])
		b.WriteString(v)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
}

// needsBinary says whether journald would export v in the binary form.
func needsBinary(v string) bool {
	return strings.IndexFunc(v, func(r rune) bool { return r < ' ' && r != '\t' }) >= 0
}
