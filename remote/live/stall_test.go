package live

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/testkit/stallssh"
)

// TestStalledHostSaysSo: a host whose sshd accepts the login and then
// answers nothing was shown up, its unit "stopped", for as long as one
// watched. Its connection is never up; every state says the stall, the
// connecting ones between attempts too, and no unit state is made up.
func TestStalledHostSaysSo(t *testing.T) {
	srv := stallssh.Start(t)
	h := New(Options{Host: remote.Host{Name: "gpu1", Unit: "sglang.service"}, NoGPU: true, AnswerWithin: 300 * time.Millisecond,
		SSH: sshx.Config{Alias: "gpu1", HostName: "127.0.0.1", Port: srv.Port, User: "root",
			IdentityFiles: []string{srv.KeyFile}, IdentitiesOnly: true,
			UserKnownHostsFiles: []string{srv.KnownHosts}, StrictHostKeyChecking: "yes", Source: "test"},
		Dial: sshx.DialOptions{AgentSocket: "-"}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var mu sync.Mutex
	var evs []event.Event
	_ = h.Run(ctx, func(ev event.Event) bool {
		mu.Lock()
		defer mu.Unlock()
		evs = append(evs, ev)
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	const stall = "gpu1 accepted the login but did not answer a session for 0.3 s"
	downs, connectingWithCause := 0, 0
	for _, ev := range evs {
		switch {
		case ev.Kind == event.KindUnit:
			t.Errorf("a unit state from a host that answered nothing: %+v", ev.Unit)
		case ev.Kind != event.KindConn:
		case ev.Conn.State == event.ConnUp:
			t.Errorf("reported up at %s", ev.Time.Format(time.StampMilli))
		case ev.Conn.State == event.ConnDown && ev.Conn.Err == stall:
			downs++
		case ev.Conn.State == event.ConnConnecting && ev.Conn.Err == stall:
			connectingWithCause++
		case ev.Conn.State != event.ConnConnecting || ev.Conn.Err != "":
			t.Errorf("conn %s: %q", ev.Conn.State, ev.Conn.Err)
		}
	}
	if downs < 2 || connectingWithCause < 1 {
		var b strings.Builder
		for _, ev := range evs {
			if ev.Kind == event.KindConn {
				b.WriteString(string(ev.Conn.State) + " " + ev.Conn.Err + "\n")
			}
		}
		t.Errorf("%d downs and %d reconnects saying %q, want ≥ 2 and ≥ 1; states:\n%s", downs, connectingWithCause, stall, b.String())
	}
}
