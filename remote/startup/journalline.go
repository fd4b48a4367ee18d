package startup

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// JournalLine is what journalctl's own prefix says of a line pasted from
// its output: `Jan 28 10:40:03 gpu1 python3[123]: …` (short and
// short-precise, month names in any language: `авг 18 14:15:04 llm
// python3[28059]: …`) or `2025-01-28T10:40:03+0000 gpu1 python3[123]: …`
// (short-iso, short-iso-precise).
type JournalLine struct {
	// Time is the stamp; for the short formats it has no year (year 0)
	// and, when the month name is not English, January.
	Time time.Time
	// MonthKnown is false when a short stamp's month name was not
	// recognised.
	MonthKnown bool
	// ISO reports a short-iso stamp, which carries its year and zone.
	ISO   bool
	Host  string
	Ident string // SYSLOG_IDENTIFIER, e.g. python3, systemd
	PID   int
	// Len is the prefix's length: the message starts there.
	Len int
}

var englishMonths = [...]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// ParseJournalLine reads journalctl's prefix at the start of s.
func ParseJournalLine(s string) (JournalLine, bool) {
	var jl JournalLine
	var i int
	if len(s) > 20 && isDigit(s[0]) && s[4] == '-' && s[10] == 'T' {
		sp := strings.IndexByte(s, ' ')
		if sp < 0 {
			return jl, false
		}
		t, err := time.Parse("2006-01-02T15:04:05.999999999Z0700", s[:sp])
		if err != nil {
			if t, err = time.Parse(time.RFC3339Nano, s[:sp]); err != nil {
				return jl, false
			}
		}
		jl.Time, jl.ISO, jl.MonthKnown, i = t, true, true, sp+1
	} else {
		// <month> <day> <hh:mm:ss[.ffffff]>: the month is a word of
		// letters (and a dot) in the journal's locale.
		sp := strings.IndexByte(s, ' ')
		if sp <= 0 || sp > 16 {
			return jl, false
		}
		month := s[:sp]
		for _, r := range month {
			if !unicode.IsLetter(r) && r != '.' {
				return jl, false
			}
		}
		if utf8.RuneCountInString(month) > 6 {
			return jl, false
		}
		i = sp + 1
		for i < len(s) && s[i] == ' ' {
			i++
		}
		d0 := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		day, err := strconv.Atoi(s[d0:i])
		if err != nil || day < 1 || day > 31 || i >= len(s) || s[i] != ' ' {
			return jl, false
		}
		i++
		c0 := i
		for i < len(s) && (isDigit(s[i]) || s[i] == ':' || s[i] == '.') {
			i++
		}
		clock := s[c0:i]
		if len(clock) < 8 || clock[2] != ':' || clock[5] != ':' || i >= len(s) || s[i] != ' ' {
			return jl, false
		}
		t, err := time.Parse("15:04:05.999999", clock)
		if err != nil {
			return jl, false
		}
		mon := time.January
		for k, m := range englishMonths {
			if strings.EqualFold(strings.TrimSuffix(month, "."), m) {
				mon, jl.MonthKnown = time.Month(k+1), true
			}
		}
		jl.Time = time.Date(0, mon, day, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
		i++
	}
	// <host> <ident>[<pid>]:
	sp := strings.IndexByte(s[i:], ' ')
	if sp <= 0 {
		return jl, false
	}
	jl.Host = s[i : i+sp]
	i += sp + 1
	end := strings.Index(s[i:], ": ")
	colonEnd := end >= 0
	if !colonEnd && strings.HasSuffix(s, ":") {
		end = len(s) - i - 1 // an empty message
	}
	if end <= 0 || end > 64 || strings.IndexByte(s[i:i+end], ' ') >= 0 {
		return jl, false
	}
	head := s[i : i+end]
	jl.Ident = head
	if b := strings.IndexByte(head, '['); b > 0 && strings.HasSuffix(head, "]") {
		jl.Ident = head[:b]
		jl.PID, _ = strconv.Atoi(head[b+1 : len(head)-1])
	}
	jl.Len = min(len(s), i+end+2)
	return jl, true
}
