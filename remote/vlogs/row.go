// Package vlogs is a fleet source backed by VictoriaLogs: the hosts'
// journals arrive there through journald's own systemd-journal-upload, and
// one live-tail stream for the unit across all hosts replaces one SSH
// connection and one journalctl per host. Each row becomes the journal
// event the SSH follower emits (journal.ToEvent), split per host by
// _HOSTNAME; the unit's state comes from PID 1's own messages about it in
// the same stream (UNIT=, MESSAGE_ID, JOB_RESULT, UNIT_RESULT,
// N_RESTARTS), marked with Path "journal". Actions are not carried by the
// store: a host's Do goes to the SSH driver it was given, if any; a
// Companion (live.OnDemand) also brings over SSH, opened on demand, what
// only the host knows: probes and GPU samples while its view is open, and
// the unit's Environment (kernel modes) when the view opens or a run
// fails, merged into the state from the journal.
package vlogs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/bringup-dev/bringup/remote/journal"
)

// Row is one log entry as VictoriaLogs returns it from /select/logsql/query
// or /select/logsql/tail: a JSON object a line whose values are all
// strings, the message in _msg, the time in _time (RFC 3339, nanoseconds),
// and every journald field under its own name.
type Row struct {
	Hostname string        // _HOSTNAME, as the host's journal recorded it
	Time     time.Time     // _time: journald's __REALTIME_TIMESTAMP
	Key      string        // the entry's identity, for the seen-set
	Entry    journal.Entry // decoded by the journal package's own rules
}

// ParseRow decodes one line of a query or tail response. The fields are
// handed, renamed to journalctl's (_msg to MESSAGE, _time to
// __REALTIME_TIMESTAMP in microseconds), to journal.DecodeLimit, so that a
// store row is checked and decoded exactly as a journalctl -o json line
// is: the same syntax checks on cursors, unit names and ids, the same
// message limit.
func ParseRow(line []byte, maxMsg int) (Row, error) {
	var m map[string]string
	if err := json.Unmarshal(line, &m); err != nil {
		return Row{}, fmt.Errorf("log store row: %w", err)
	}
	ts, ok := m["_time"]
	if !ok {
		return Row{}, fmt.Errorf("log store row: no _time")
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return Row{}, fmt.Errorf("log store row: _time: %w", err)
	}
	r := Row{Hostname: m["_HOSTNAME"], Time: t}
	// The identity: journald's cursor when the store keeps it
	// (-journald.includeEntryMetadata), else what tells two entries of
	// one stream apart.
	if c := m["__CURSOR"]; c != "" {
		r.Key = c
	} else {
		h := sha256.New()
		for _, k := range []string{"_stream_id", "_time", "_PID", "_msg", "__SEQNUM"} {
			h.Write([]byte(m[k]))
			h.Write([]byte{0})
		}
		r.Key = hex.EncodeToString(h.Sum(nil)[:16])
	}
	j := make(map[string]string, len(m))
	for k, v := range m {
		switch k {
		case "_msg":
			j["MESSAGE"] = v
		case "_time", "_stream", "_stream_id", "__REALTIME_TIMESTAMP":
		default:
			j[k] = v
		}
	}
	j["__REALTIME_TIMESTAMP"] = strconv.FormatInt(t.UnixMicro(), 10)
	b, err := json.Marshal(j)
	if err != nil {
		return Row{}, fmt.Errorf("log store row: %w", err)
	}
	if r.Entry, err = journal.DecodeLimit(b, maxMsg); err != nil {
		return Row{}, fmt.Errorf("log store row: %w", err)
	}
	return r, nil
}
