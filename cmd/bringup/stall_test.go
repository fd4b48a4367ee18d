package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/testkit/e2e"
	"github.com/bringup-dev/bringup/remote/testkit/stallssh"
)

// TestStalledHostInWatchStatusDoctor: against a host that accepts the
// login and then answers no channel (an SSH server on loopback), watch
// printed nothing and summed up "stopped" with no conn_error, status
// showed `up … stopped`, doctor said only "new session: EOF" at its 20 s.
// Each now says the stall within its own deadline, and none shows the
// host up or stopped.
//
// It waits out the real 10 s session deadline and resolves the host with
// OpenSSH's `ssh -G`: an end-to-end test, kept out of the unit tier's
// minute.
func TestStalledHostInWatchStatusDoctor(t *testing.T) {
	e2e.Require(t, e2e.Command("ssh"))
	const stall = "gpu1 accepted the login but did not answer a session for 10 s"
	type host struct {
		Host, Outcome, Phase, Conn string
		ConnErr                    string `json:"conn_error"`
		Check, Status, Detail      string
	}
	type line struct {
		Kind    string `json:"kind"`
		Outcome string `json:"outcome"`
		host
		Hosts []host `json:"hosts"`
	}
	for _, tt := range []struct {
		name   string
		args   []string
		within time.Duration
		check  func(t *testing.T, lines []line)
	}{
		{"watch", []string{"watch", "--json", "--timeout", "13s"}, 25 * time.Second, func(t *testing.T, lines []line) {
			last := lines[len(lines)-1]
			if last.Kind != "summary" || len(last.Hosts) != 1 || last.Hosts[0].ConnErr != stall || last.Hosts[0].Phase == "stopped" {
				t.Errorf("summary %+v, want gpu1 with conn_error %q, not stopped", last, stall)
			}
		}},
		{"status", []string{"status", "--json"}, 25 * time.Second, func(t *testing.T, lines []line) {
			st := lines[0]
			if st.Kind != "status" || st.Conn == "up" || st.Phase == "stopped" || st.ConnErr != stall {
				t.Errorf("status %+v, want not up, not stopped, conn_error %q", st, stall)
			}
		}},
		{"doctor", []string{"doctor", "--json"}, 19 * time.Second, func(t *testing.T, lines []line) {
			for _, l := range lines {
				if l.Kind == "check" && l.Check == "session" && l.Status == "fail" && l.Detail == stall {
					return
				}
			}
			t.Errorf("no failed session check saying %q in %+v", stall, lines)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := stallssh.Start(t)
			args := append(tt.args, "-H", "gpu1", "-F", srv.SSHConfig(t, "gpu1"), "-u", "sglang.service")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var out, errOut syncBuffer
			start := time.Now()
			run(ctx, testEnv(&out, &errOut), args)
			if took := time.Since(start); took > tt.within {
				t.Errorf("took %s, want at most %s", took, tt.within)
			}
			var lines []line
			for _, s := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				var l line
				if err := json.Unmarshal([]byte(s), &l); err != nil {
					t.Fatalf("%q: %v (stderr %q)", s, err, errOut.String())
				}
				lines = append(lines, l)
			}
			tt.check(t, lines)
		})
	}
}
