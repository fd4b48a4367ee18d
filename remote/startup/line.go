package startup

import (
	"strconv"
	"strings"
)

// splitLine separates a log line into the tag of the process that printed
// it and the text after every prefix. Real logs stack prefixes: a pasted
// journalctl line (`Jan 28 10:40:03 host python3[123]: `), a docker compose
// service (`sglang-1  | `), colour codes that lost their ESC in a paste
// (`[0;36m`), vLLM's process tag (`(EngineCore_DP0 pid=441) `) and logger
// prefix (`ERROR 08-05 09:09:40 [core.py:700] `), SGLang's
// (`[2025-01-24 09:39:20 TP3] `, `[23:17:01 TP7] `, `[gpu_id=0] `), and
// torch's (`[rank3]:[E1015 … ProcessGroupNCCL.cpp:616] `). The tag keeps
// apart the tracebacks of ranks whose lines interleave; the body is what a
// traceback parser and a summary read.
//
// It is hand-written rather than a regexp: it runs on every line of an
// open traceback.
func splitLine(msg string) (src, body string) {
	s := msg
	for range 8 {
		s = strings.TrimLeft(s, " ")
		n, tag := prefixLen(s)
		if n == 0 {
			break
		}
		if tag != "" {
			src = tag
		}
		s = s[n:]
	}
	return src, s
}

// EngineStamp returns the time stamp an engine's own logger put on msg,
// behind whatever prefixes a paste added (a compose column, a journalctl
// prefix, a vLLM process tag): "2025-01-24 09:39:20" (SGLang),
// "23:17:01" (SGLang 0.3), "08-05 09:09:26" (vLLM; SGLang's diffusion
// runtime), or "" when the line carries none. It walks the same prefixes
// splitLine does, so the two never disagree on where the engine's begins.
func EngineStamp(msg string) string {
	s := msg
	for range 8 {
		s = strings.TrimLeft(s, " ")
		if len(s) < 3 {
			return ""
		}
		if s[0] == '[' && isoBracket(s) == 0 {
			if n, tags := sglangPrefix(s); n > 0 {
				inner := s[1 : n-2]
				return strings.TrimSpace(strings.TrimSuffix(inner, tags))
			}
		}
		if n := vllmLogger(s); n > 0 {
			if _, r, ok := strings.Cut(s, " "); ok && len(r) >= 14 && r[2] == '-' {
				return r[:14]
			}
		}
		n, _ := prefixLen(s)
		if n == 0 {
			return ""
		}
		s = s[n:]
	}
	return ""
}

// prefixLen reports the length of one known prefix at the start of s and
// the process tag it names ("" when it names none), or 0.
func prefixLen(s string) (int, string) {
	if len(s) < 3 {
		if s == ">" || s == "> " {
			// A blank line of a quoted block.
			return len(s), ""
		}
		return 0, ""
	}
	switch c := s[0]; {
	case c == '>' && s[1] == ' ':
		// A markdown blockquote: a log pasted into an issue as "> " lines.
		return 2, ""
	case c == '\x1b' || c == '[' && len(s) > 2 && isDigit(s[1]):
		if n := sgrRemnant(s); n > 0 {
			return n, ""
		}
		if n := isoBracket(s); n > 0 {
			return n, ""
		}
		if c == '[' {
			return sglangPrefix(s)
		}
	case c == '[':
		if strings.HasPrefix(s, "[gpu_id=") {
			if i := strings.IndexByte(s, ']'); i > 0 {
				return i + 1, s[1:i]
			}
		}
		if strings.HasPrefix(s, "[rank") {
			// torch: [rank3]:[E1015 10:00:00.000 ProcessGroupNCCL.cpp:616] …
			i := strings.IndexByte(s, ']')
			if i < 0 {
				return 0, ""
			}
			tag := s[1:i]
			n := i + 1
			if strings.HasPrefix(s[n:], ":[") {
				if j := strings.IndexByte(s[n+2:], ']'); j >= 0 {
					n += 2 + j + 1
				}
			} else if strings.HasPrefix(s[n:], ":") {
				n++
			}
			return n, tag
		}
	case c == '(':
		// vLLM: (EngineCore_DP0 pid=441) or (RayWorkerWrapper pid=322, ip=10.0.3.32)
		i := strings.IndexByte(s, ')')
		if i > 0 && i < 80 && strings.Contains(s[:i], " pid=") {
			return i + 1, s[1:i]
		}
	case c >= 'A' && c <= 'Z':
		if n := vllmLogger(s); n > 0 {
			return n, ""
		}
	}
	if jl, ok := ParseJournalLine(s); ok {
		tag := jl.Ident
		if jl.PID != 0 {
			tag += "[" + strconv.Itoa(jl.PID) + "]"
		}
		return jl.Len, tag
	}
	if isDigit(s[0]) {
		return stampPrefix(s)
	}
	return composePrefix(s)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// sgrRemnant is the length of a colour code at the start of s, with or
// without its ESC (pastes lose it): `[0;36m`, `\x1b[1;36m`.
func sgrRemnant(s string) int {
	i := 0
	if s[0] == '\x1b' {
		i++
	}
	if i >= len(s) || s[i] != '[' {
		return 0
	}
	i++
	start := i
	for i < len(s) && (isDigit(s[i]) || s[i] == ';') {
		i++
	}
	if i == start || i >= len(s) || s[i] != 'm' || i-start > 8 {
		return 0
	}
	return i + 1
}

// sglangPrefix: [2025-01-24 09:39:20 DP0 TP3] , [23:17:01 TP7] ,
// [2025-08-08 03:34:38] , [08-05 10:00:00] (diffusion).
func sglangPrefix(s string) (int, string) {
	i := strings.IndexByte(s, ']')
	if i < 9 || i > 64 || i+1 >= len(s) || s[i+1] != ' ' {
		return 0, ""
	}
	inner := s[1:i]
	// The first field is a date or a time; the time is hh:mm:ss[.fff].
	date, rest, _ := strings.Cut(inner, " ")
	if strings.Count(date, ":") == 2 {
		rest = inner
	} else if !isDateish(date) {
		return 0, ""
	}
	tm, tags, _ := strings.Cut(rest, " ")
	if strings.Count(tm, ":") != 2 || !isDigit(tm[0]) {
		return 0, ""
	}
	return i + 2, tags
}

func isDateish(s string) bool {
	if len(s) < 5 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) && s[i] != '-' && s[i] != '/' {
			return false
		}
	}
	return true
}

var logLevels = []string{"INFO ", "WARNING ", "ERROR ", "DEBUG ", "CRITICAL ", "WARN "}

// vllmLogger: `ERROR 08-05 09:09:40 [core.py:700] ` (V1) or
// `INFO 02-18 08:50:25 llm_engine.py:429] ` (V0).
func vllmLogger(s string) int {
	lv := ""
	for _, l := range logLevels {
		if strings.HasPrefix(s, l) {
			lv = l
			break
		}
	}
	if lv == "" {
		return 0
	}
	r := s[len(lv):]
	// A log service's `ERROR 2025-04-07T19:13:52.317869663Z ` (the level,
	// then an RFC 3339 stamp).
	if len(r) > 20 && isDigit(r[0]) && r[4] == '-' && r[10] == 'T' {
		if sp := strings.IndexByte(r, ' '); sp > 0 {
			return len(lv) + sp + 1
		}
	}
	// mm-dd hh:mm:ss[.fff]
	if len(r) < 15 || !isDigit(r[0]) || r[2] != '-' || r[5] != ' ' || r[8] != ':' {
		return 0
	}
	i := strings.Index(r, "] ")
	if i < 0 || i > 80 {
		return 0
	}
	return len(lv) + i + 2
}

// stampPrefix: a collector's or wrapper's own time stamp before the line,
// `2025-02-06 07:14:10 `, `2024-09-05T00:38:34Z `, and Python logging's
// default `2025-04-25 10:11:34,978 - __main__ - INFO - ` (olmOCR and
// other launchers re-log the server's lines through it).
func stampPrefix(s string) (int, string) {
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') || s[13] != ':' || s[16] != ':' {
		return 0, ""
	}
	i := 19
	for i < len(s) && (isDigit(s[i]) || s[i] == '.' || s[i] == ',' || s[i] == 'Z' || s[i] == '+' || s[i] == ':') {
		i++
	}
	if i >= len(s) || s[i] != ' ' {
		return 0, ""
	}
	i++
	// Python logging: " - name - LEVEL - ".
	if strings.HasPrefix(s[i:], "- ") {
		rest := s[i+2:]
		if a := strings.Index(rest, " - "); a > 0 && a < 64 {
			if b := strings.Index(rest[a+3:], " - "); b > 0 && b < 10 {
				return i + 2 + a + 3 + b + 3, ""
			}
		}
	}
	return i, ""
}

// isoBracket is the length of a CI console's own RFC 3339 stamp in
// brackets at the start of s, `[2025-11-06T02:10:00.702Z] ` (Jenkins'
// timestamper), or 0. It is the collector's, not the engine's: the engine's
// stamp, if any, follows it.
func isoBracket(s string) int {
	if len(s) < 22 || s[0] != '[' || s[5] != '-' || s[8] != '-' || s[11] != 'T' || !isDigit(s[1]) || !isDigit(s[12]) {
		return 0
	}
	i := strings.IndexByte(s, ']')
	if i < 20 || i > 40 || i+1 >= len(s) || s[i+1] != ' ' {
		return 0
	}
	return i + 2
}

// composePrefix: `sglang-1  | ` (docker compose's service column).
func composePrefix(s string) (int, string) {
	i := 0
	for i < len(s) && i < 64 {
		c := s[i]
		if c == ' ' {
			break
		}
		if !(c == '-' || c == '_' || c == '.' || isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return 0, ""
		}
		i++
	}
	name := s[:i]
	j := i
	for j < len(s) && s[j] == ' ' {
		j++
	}
	if i == 0 || j == i || j+1 >= len(s) || s[j] != '|' || (j+1 < len(s) && s[j+1] != ' ') {
		return 0, ""
	}
	return j + 2, name
}
