package logs

import (
	"fmt"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/remote/journal"
	"github.com/bringup-dev/bringup/remote/sshx"
)

// DefaultLines is how many lines a unit that never started shows, when
// neither -n nor --since says.
const DefaultLines = journal.DefaultTail

// Query is the one-shot journalctl command for unit (a checked unit
// name), in export format: the lines since since (when not zero), the
// last n of them (when n > 0); with neither, the current run's, from the
// main process's start (2 s before it, for systemd's own "Starting"), or
// the last DefaultLines when the unit never started.
func Query(unit string, n int, since time.Time) string {
	u := sshx.ShellQuote(unit)
	read := "exec journalctl -q -u " + u + " -o export --no-pager --output-fields=" + journal.OutputFields
	var args []string
	if !since.IsZero() {
		us := since.UnixMicro()
		args = append(args, fmt.Sprintf("--since=@%d.%06d", us/1e6, us%1e6))
	}
	if n > 0 {
		args = append(args, fmt.Sprintf("-n %d", n))
	}
	if len(args) > 0 {
		return read + " " + strings.Join(args, " ")
	}
	return fmt.Sprintf("s=$(systemctl show -p ExecMainStartTimestamp --timestamp=unix --value %s 2>/dev/null); s=${s#@}; "+
		"case \"$s\" in ''|0|*[!0-9]*) %s -n %d ;; *) %s --since=@$((s - 2)) ;; esac", u, read, DefaultLines, read)
}

// StateQuery prints the unit's ActiveState and SubState, one a line.
func StateQuery(unit string) string {
	return "systemctl show -p ActiveState -p SubState --value " + sshx.ShellQuote(unit)
}

// ParseSince reads --since: a duration back from now (10m, 2h30m) or a
// time (RFC 3339, or "2006-01-02 15:04[:05]" in loc).
func ParseSince(s string, now time.Time, loc *time.Location) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("--since %s: a duration back from now is positive (10m, 2h)", s)
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{time.DateTime, "2006-01-02 15:04", "2006-01-02T15:04:05", time.DateOnly} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %q: want a duration (10m, 2h) or a time (2026-01-02 15:04:05, RFC 3339)", s)
}
