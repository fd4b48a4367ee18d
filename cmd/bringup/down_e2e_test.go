package main

import (
	"bufio"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote/testkit/e2e"
)

// TestDownHostSaysWhy: every command that reports a host down or unknown
// says why, with the dial error, in its text and in its JSON: status,
// watch, doctor, the changing commands, rollout, bench and init, over a
// host nothing listens on (loopback port 1). Each --json line is also
// held to the v1 schema.
func TestDownHostSaysWhy(t *testing.T) {
	e2e.Require(t, e2e.Command("ssh")) // ssh -G resolves the names
	const host = "deploy@127.0.0.1:1"
	for _, args := range [][]string{
		{"status", "-H", host},
		{"status", "--json", "-H", host},
		{"watch", "--timeout", "5s", "-H", host},
		{"watch", "--json", "--timeout", "5s", "-H", host},
		{"doctor", "--timeout", "4s", "-H", host},
		{"doctor", "--json", "--timeout", "4s", "-H", host},
		{"restart", "--all", "--yes", "--timeout", "5s", "-H", host},
		{"restart", "--all", "--yes", "--json", "--timeout", "5s", "-H", host},
		{"rollout", "--yes", "--settle", "5s", "-H", host},
		{"rollout", "--yes", "--json", "--settle", "5s", "-H", host},
		{"bench", "--timeout", "5s", "-H", host},
		{"bench", "--json", "--timeout", "5s", "-H", host},
		{"init", "--timeout", "4s", "-o", t.TempDir() + "/c.yaml", host},
		{"init", "--json", "--timeout", "4s", "-o", t.TempDir() + "/c.yaml", host},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			var out, errOut syncBuffer
			code := run(ctx, testEnv(&out, &errOut), args)
			if code == exitServing {
				t.Errorf("exit 0 over a host that is down")
			}
			all := out.String() + errOut.String()
			if !strings.Contains(all, "connection refused") {
				t.Errorf("no dial error in the output (exit %d):\n%s", code, all)
			}
			if !strings.Contains(strings.Join(args, " "), "--json") {
				return
			}
			sc := bufio.NewScanner(strings.NewReader(out.String()))
			sc.Buffer(nil, 1<<20)
			why := false
			for sc.Scan() {
				if err := output.ValidateLine(sc.Bytes()); err != nil {
					t.Errorf("%v\n%s", err, sc.Text())
				}
				why = why || strings.Contains(sc.Text(), "connection refused")
			}
			if !why {
				t.Errorf("no JSON line says why:\n%s", out.String())
			}
		})
	}
}
