package systemd

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/sshx"
)

// showCommand is the `systemctl show` that the polling path runs.
// --timestamp=us+utc (systemd ≥ 248) gives timestamps that parse without
// knowing the host's time zone.
func showCommand(unit string) string {
	return "systemctl show --timestamp=us+utc -p " + strings.Join(showProps, ",") + " -- " + sshx.ShellQuote(unit)
}

// showTimeLayout is a --timestamp=us+utc timestamp: "Mon 2026-11-30 10:00:00.123456 UTC".
const showTimeLayout = "Mon 2006-01-02 15:04:05.000000 MST"

// parseShow decodes `systemctl show` output (KEY=VALUE lines) for unit.
func parseShow(name string, out []byte) (snapshot, error) {
	u := event.Unit{Name: name, Path: PathSystemctl}
	var s snapshot
	seen := 0
	var errs []error
	for line := range strings.Lines(string(out)) {
		line = strings.TrimRight(line, "\r\n")
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		seen++
		var err error
		switch k {
		case "Id":
			if v != name {
				err = fmt.Errorf("unit %q, want %q", v, name)
			}
		case "LoadState":
			u.LoadState = v
		case "ActiveState":
			u.ActiveState = v
		case "SubState":
			u.SubState = v
		case "Result":
			u.Result = v
		case "NRestarts":
			u.NRestarts, err = showInt(v)
		case "MainPID":
			u.MainPID, err = showInt(v)
		case "InvocationID":
			u.InvocationID = v
		case "StateChangeTimestamp":
			s.stateChange, err = showTime(v)
		case "ExecMainStartTimestamp":
			u.ExecMainStart, err = showTime(v)
		case "Environment":
			u.Environment, err = splitQuoted(v)
		case "DropInPaths":
			u.DropInPaths, err = splitQuoted(v)
		case "NeedDaemonReload":
			u.NeedDaemonReload = v == "yes"
		case "ExecStart":
			u.ExecStart = showArgv(v)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
		}
	}
	if seen == 0 {
		errs = append(errs, errors.New("no properties in output"))
	}
	if err := errors.Join(errs...); err != nil {
		return snapshot{}, fmt.Errorf("systemctl show %s: %w", name, err)
	}
	s.unit = u
	return s, nil
}

func showInt(v string) (int, error) {
	if v == "" || v == "[not set]" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("not a count: %q", v)
	}
	return n, nil
}

// showTime parses a --timestamp=us+utc timestamp; empty or n/a is zero.
func showTime(v string) (time.Time, error) {
	if v == "" || v == "n/a" {
		return time.Time{}, nil
	}
	t, err := time.Parse(showTimeLayout, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("timestamp %q: %w", v, err)
	}
	return t.UTC(), nil
}

// showArgv picks the argv of the first entry of an ExecStart= property:
// "{ path=/bin/x ; argv[]=/bin/x --a 1 ; ignore_errors=no ; … }".
func showArgv(v string) string {
	_, rest, ok := strings.Cut(v, "argv[]=")
	if !ok {
		return ""
	}
	argv, _, _ := strings.Cut(rest, " ; ")
	return argv
}

// SplitList is the words of a string-list property as `systemctl show
// --value` prints it (Environment=): each KEY=VALUE unquoted, a value
// with spaces whole.
func SplitList(v string) ([]string, error) { return splitQuoted(strings.TrimRight(v, "\n")) }

// splitQuoted splits systemctl's rendering of a string list: words
// separated by spaces, a word with spaces or quotes in double quotes with
// C escapes ("SP=a b", "BS=x\\y").
func splitQuoted(v string) ([]string, error) {
	var out []string
	var w strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case quoted && c == '\\':
			if i+1 >= len(v) {
				return nil, fmt.Errorf("dangling backslash in %q", v)
			}
			i++
			w.WriteByte(unescape(v[i]))
		case quoted && c == '"':
			quoted = false
		case quoted:
			w.WriteByte(c)
		case c == '"':
			quoted, inWord = true, true
		case c == ' ':
			if inWord {
				out = append(out, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated quote in %q", v)
	}
	if inWord {
		out = append(out, w.String())
	}
	return out, nil
}

// unescape maps the letter of a C escape to its byte.
func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 't':
		return '\t'
	case 'r':
		return '\r'
	case 'a':
		return '\a'
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'v':
		return '\v'
	}
	return c
}
