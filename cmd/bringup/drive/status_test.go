package drive

import (
	"testing"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
)

// TestStatusOutcome: a host whose dial was refused, or whose connection
// failed for good, makes the look failed (1), not a timeout (2): no wait
// would have mended it. A host down for another reason is still on its
// way.
func TestStatusOutcome(t *testing.T) {
	serving := remote.HostState{Name: "a", Startup: startup.Startup{Phase: startup.Serving}}
	loading := remote.HostState{Name: "b", Startup: startup.Startup{Phase: startup.Weights}}
	failed := remote.HostState{Name: "c", Startup: startup.Startup{Phase: startup.Failed}}
	refused := remote.HostState{Name: "d", Conn: event.Conn{State: event.ConnDown, Err: "dial tcp 127.0.0.1:1: connect: connection refused"}}
	timedOut := remote.HostState{Name: "e", Conn: event.Conn{State: event.ConnDown, Err: "dial tcp 10.0.0.9:22: i/o timeout"}}
	authFailed := remote.HostState{Name: "f", Conn: event.Conn{State: event.ConnUnreachable, Err: "ssh: unable to authenticate"}}
	for _, tc := range []struct {
		name        string
		hosts       []remote.HostState
		interrupted bool
		code        int
		word        string
	}{
		{"all serving", []remote.HostState{serving}, false, cli.ExitOK, "serving"},
		{"one loading", []remote.HostState{serving, loading}, false, cli.ExitTimeout, "timeout"},
		{"one failed", []remote.HostState{serving, failed}, false, cli.ExitFailed, "failed"},
		{"refused", []remote.HostState{refused}, false, cli.ExitFailed, "failed"},
		{"refused beside a loading host", []remote.HostState{loading, refused}, false, cli.ExitFailed, "failed"},
		{"auth failed", []remote.HostState{serving, authFailed}, false, cli.ExitFailed, "failed"},
		{"dial timed out", []remote.HostState{timedOut}, false, cli.ExitTimeout, "timeout"},
		{"interrupted", []remote.HostState{refused}, true, cli.ExitInterrupted, "interrupted"},
	} {
		if code, word := StatusOutcome(tc.hosts, tc.interrupted); code != tc.code || word != tc.word {
			t.Errorf("%s: %d %s, want %d %s", tc.name, code, word, tc.code, tc.word)
		}
	}
}
