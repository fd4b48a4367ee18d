package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// servingInOff boots one test host whose engine serves in kdtree-verify=off
// and keeps decoding (eight background streams, a stats line every half
// second, so its journal gives a steady rate without a client), and
// watches it to serving. It returns the host's config, the state
// directory holding this test's history alone, a context for the test, and
// a bringup that runs with that history.
func servingInOff(t *testing.T) (cfg, state string, ctx context.Context, bringup func(ctx context.Context, args ...string) (int, string, string)) {
	t.Helper()
	tb := testbed.StartWith(t, testbed.Options{Hosts: 1, Host: func(int) testbed.HostOptions {
		return testbed.HostOptions{KernelMode: "off", Env: map[string]string{"INFERSIM_LOAD": "8", "INFERSIM_STATS_SECONDS": "0.5"}}
	}})
	cfg = filepath.Join(tb.Inventory(), "config.yaml")
	state = t.TempDir()
	bringup = func(ctx context.Context, args ...string) (int, string, string) {
		var out, errOut syncBuffer
		e := env{stdout: &out, stderr: &errOut, getenv: func(k string) string {
			switch k {
			case "HOME":
				return "/nonexistent"
			case "XDG_STATE_HOME":
				return state // the history of this test alone
			}
			return ""
		}}
		code := run(ctx, e, args)
		return code, out.String(), errOut.String()
	}
	var cancel context.CancelFunc
	ctx, cancel = context.WithTimeout(t.Context(), 5*time.Minute)
	t.Cleanup(cancel)
	if out, err := tb.Run(ctx, "gpu1", "systemctl start sglang"); err != nil {
		t.Fatalf("start: %v\n%s", err, out)
	}
	if code, out, errOut := bringup(ctx, "watch", "--json", "--timeout", "2m", "--config", cfg, "gpu1"); code != exitServing {
		t.Fatalf("watch: exit %d\n%s%s", code, out, errOut)
	}
	return cfg, state, ctx, bringup
}
