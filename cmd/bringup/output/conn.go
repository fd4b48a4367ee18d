package output

import (
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
)

// ConnWhy is why h is not reached, when it is not: its connection's last
// error ("dial tcp …: connection refused"), "" while it is up or no error
// is known. Every command that reports a host down or unknown says it.
// The error is the fleet's, sanitised where it entered.
func ConnWhy(h remote.HostState) string {
	if h.Conn.State == event.ConnUp {
		return ""
	}
	return h.Conn.Err
}
