package systemd

import (
	"context"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/testkit/tbssh"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// TestDiscoverOnTestbed finds the inference unit of a real host as
// `bringup init` does, as a login without sudo: a stopped SGLang unit
// that was never started (its unit file is not loaded until asked) and a
// running vLLM one, each with its engine and port, and none of the
// host's other services.
func TestDiscoverOnTestbed(t *testing.T) {
	tb := testbed.StartWith(t, testbed.Options{Hosts: 2, Host: func(i int) testbed.HostOptions {
		if i == 1 {
			return testbed.HostOptions{Engine: testbed.EngineVLLM, Enable: true}
		}
		return testbed.HostOptions{}
	}})
	for _, tc := range []struct {
		alias string
		want  InferenceUnit
	}{
		{"gpu1-deploy", InferenceUnit{Name: testbed.UnitName, Engine: kernels.EngineSGLang, ActiveState: "inactive", Port: testbed.ServicePort}},
		{"gpu2-deploy", InferenceUnit{Name: testbed.VLLMUnitName, Engine: kernels.EngineVLLM, ActiveState: "active", Port: testbed.ServicePort}},
	} {
		conn := tbssh.Connect(t, tb, tc.alias)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		out, _, code, err := conn.Exec(ctx, DiscoverCommand)
		t.Logf("%s: %s exit %d, %v; %d bytes", tc.alias, "DiscoverCommand", code, err, len(out))
		found, err := Discover(ctx, conn, tc.alias)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", tc.alias, err)
		}
		if len(found) != 1 {
			t.Fatalf("%s: found %+v, want one unit", tc.alias, found)
		}
		got := found[0]
		got.ExecStart = ""
		if got != tc.want {
			t.Errorf("%s: found %+v, want %+v", tc.alias, got, tc.want)
		}
		if found[0].ExecStart == "" {
			t.Errorf("%s: no ExecStart", tc.alias)
		}
	}
}
