package explainlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/bringup-dev/bringup/remote/startup"
)

// maxLine is logfile's longest line: a journalctl -o json entry with a
// 48 KiB message as byte arrays runs to a few hundred KiB.
const maxLine = 4 << 20

// part is one host's lines of a log.
type part struct {
	host string // "" while no line has named one
	w    *io.PipeWriter
	dead bool // its reader stopped
}

// split reads a log that may hold several hosts' journals (journalctl
// over a merged journal, short or json, names each line's host) and
// writes every line to whole and each host's lines, in order, to the
// writer open returns for it. A line that names no host (a traceback's
// continuation, journalctl's markers, -o cat) belongs to the host of the
// line before; the leading ones to the first host named. interleaved
// says a host's lines came back after another's: a journal merged by
// time, whose parts are the hosts' logs. Without, the log is one unit's
// (a paste of its runs, whichever host each ran on): whole is its log.
// The writers are closed at the end, with the read's error if there was
// one.
func split(in io.Reader, name string, whole *io.PipeWriter, open func() *io.PipeWriter) (parts []*part, interleaved bool, err error) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var cur *part
	byHost := map[string]*part{}
	for sc.Scan() {
		line := sc.Bytes()
		host := hostOf(line)
		switch {
		case cur == nil:
			cur = &part{host: host, w: open()}
			parts = append(parts, cur)
		case host == "" || host == cur.host:
		case cur.host == "" && len(parts) == 1:
			cur.host = host
		case byHost[host] != nil:
			cur, interleaved = byHost[host], true
		default:
			cur = &part{host: host, w: open()}
			parts = append(parts, cur)
		}
		if cur.host != "" {
			byHost[cur.host] = cur
		}
		line = append(line, '\n')
		if _, werr := whole.Write(line); werr != nil {
			break // the whole's reader stopped on an error, which it reports
		}
		if cur.dead {
			continue
		}
		if _, werr := cur.w.Write(line); werr != nil {
			// The part's reader stopped on an error of its own, which it
			// reports if its part is wanted: the whole goes on.
			cur.dead = true
		}
	}
	if serr := sc.Err(); serr != nil {
		if errors.Is(serr, bufio.ErrTooLong) {
			err = fmt.Errorf("%s: a line is longer than %d MiB", name, maxLine>>20)
		} else {
			err = fmt.Errorf("%s: %w", name, serr)
		}
	}
	whole.CloseWithError(err) // nil: io.EOF
	for _, p := range parts {
		p.w.CloseWithError(err)
	}
	return parts, interleaved, err
}

// hostOf is the host a journalctl line names: _HOSTNAME of a json
// entry, the host field of a short one; "" for any other line.
func hostOf(line []byte) string {
	if len(line) > 0 && line[0] == '{' {
		if !bytes.Contains(line, []byte(`"_HOSTNAME"`)) {
			return ""
		}
		var e struct {
			Host json.RawMessage `json:"_HOSTNAME"`
		}
		var host string
		if json.Unmarshal(line, &e) != nil || json.Unmarshal(e.Host, &host) != nil {
			return ""
		}
		return host
	}
	if jl, ok := startup.ParseJournalLine(string(line)); ok {
		return jl.Host
	}
	return ""
}
