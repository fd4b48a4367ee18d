package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/config"
	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote/testkit/e2e"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// TestInitOnTestbed: bringup init over real hosts writes a config that
// names each host's inference unit and engine (a stopped SGLang unit, a
// running vLLM one, found as a login without sudo), keeps a host it could
// not reach with a note saying why, exits 1 for it, and refuses to
// overwrite the file without --force.
func TestInitOnTestbed(t *testing.T) {
	tb := testbed.StartWith(t, testbed.Options{Hosts: 2, Host: func(i int) testbed.HostOptions {
		if i == 1 {
			return testbed.HostOptions{Engine: testbed.EngineVLLM, Enable: true}
		}
		return testbed.HostOptions{}
	}})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "bringup", "config.yaml")
	args := []string{"init", "-F", tb.SSHConfig(), "-o", path, "--timeout", "5s", "gpu1-deploy", "gpu2-deploy", "deploy@127.0.0.1:1"}
	var out, errOut syncBuffer
	code := run(ctx, testEnv(&out, &errOut), args)
	t.Logf("exit %d\n%s", code, errOut.String())
	if code != exitFailed {
		t.Errorf("exit %d, want %d (one host not reached)", code, exitFailed)
	}
	for _, want := range []string{
		"gpu1-deploy: sglang.service (sglang, port 30000, inactive)\n",
		"gpu2-deploy: vllm.service (vllm, port 30000, active)\n",
		"deploy@127.0.0.1:1: not reached: ",
		"wrote " + path + " (3 hosts)\n",
	} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("the config init wrote does not load: %v", err)
	}
	if cfg.SSHConfig != tb.SSHConfig() {
		t.Errorf("ssh_config %q, want %q", cfg.SSHConfig, tb.SSHConfig())
	}
	got := map[string]string{}
	for _, h := range cfg.Hosts {
		got[h.Name] = h.Unit + " " + h.Engine
	}
	if got["gpu1-deploy"] != "sglang.service sglang" || got["gpu2-deploy"] != "vllm.service vllm" || got["deploy@127.0.0.1:1"] == "" {
		t.Errorf("hosts read back: %v", got)
	}

	errOut = syncBuffer{}
	if code := run(ctx, testEnv(&out, &errOut), args); code != exitUsage || !strings.Contains(errOut.String(), "exists: --force") {
		t.Errorf("second init: exit %d, %q; want a refusal to overwrite", code, errOut.String())
	}

	// --json: a found line per host in the order given, every line in the
	// v1 schema, the summary naming the file.
	out, errOut = syncBuffer{}, syncBuffer{}
	code = run(ctx, testEnv(&out, &errOut), append([]string{"init", "--json", "--force"}, args[1:]...))
	lines := initLines(t, out.String())
	if code != exitFailed || len(lines) != 4 {
		t.Fatalf("init --json: exit %d, %d lines, want %d and 4:\n%s%s", code, len(lines), exitFailed, out.String(), errOut.String())
	}
	if l := lines[0]; l["kind"] != "found" || l["host"] != "gpu1-deploy" || l["unit"] != "sglang.service" || l["engine"] != "sglang" || l["port"] != float64(30000) {
		t.Errorf("gpu1-deploy's line %v", l)
	}
	if l := lines[1]; l["host"] != "gpu2-deploy" || l["unit"] != "vllm.service" || l["state"] != "active" {
		t.Errorf("gpu2-deploy's line %v", l)
	}
	if l := lines[2]; l["host"] != "deploy@127.0.0.1:1" || !strings.Contains(fmt.Sprint(l["conn_error"]), "connection refused") {
		t.Errorf("the unreached host's line %v", l)
	}
	if l := lines[3]; l["kind"] != "summary" || l["outcome"] != "failed" || l["config"] != path {
		t.Errorf("summary %v", l)
	}
}

// initLines checks every line of init's --json against the v1 schema and
// decodes them.
func initLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, text := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if err := output.ValidateLine([]byte(text)); err != nil {
			t.Errorf("line %q: %v", text, err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(text), &m); err != nil {
			t.Fatalf("line %q: %v", text, err)
		}
		lines = append(lines, m)
	}
	return lines
}

// TestInitJSONUnreachable: init --json over hosts nothing answers on (loopback
// port 1) says for each why it was not reached, in the order given; the
// config is still written, with a note per host, and the exit is 1.
func TestInitJSONUnreachable(t *testing.T) {
	e2e.Require(t, e2e.Command("ssh")) // ssh -G resolves the names
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "config.yaml")
	var out, errOut syncBuffer
	code := run(ctx, testEnv(&out, &errOut), []string{"init", "--json", "--timeout", "4s", "-o", path, "deploy@127.0.0.2:1", "deploy@127.0.0.1:1"})
	lines := initLines(t, out.String())
	if code != exitFailed || len(lines) != 3 {
		t.Fatalf("exit %d, %d lines, want %d and 3:\n%s%s", code, len(lines), exitFailed, out.String(), errOut.String())
	}
	for i, h := range []string{"deploy@127.0.0.2:1", "deploy@127.0.0.1:1"} {
		if l := lines[i]; l["kind"] != "found" || l["host"] != h || !strings.Contains(fmt.Sprint(l["conn_error"]), "connection refused") {
			t.Errorf("line %d: %v, want %s not reached, with the dial error", i, l, h)
		}
	}
	s := lines[2]
	if s["kind"] != "summary" || s["command"] != "init" || s["outcome"] != "failed" || s["exit"] != float64(exitFailed) || s["config"] != path {
		t.Errorf("summary %v", s)
	}
}

// TestDoctorUnreachableHostsInOrder: doctor reports unreachable hosts
// with the reason, in the order given, and exits 1 for them (the fan-out
// itself is TestEachHostAtOnceInOrder). Three loopback addresses with
// nothing listening on port 1.
func TestDoctorUnreachableHostsInOrder(t *testing.T) {
	e2e.Require(t, e2e.Command("ssh")) // ssh -G resolves the names
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var out, errOut syncBuffer
	start := time.Now()
	code := run(ctx, testEnv(&out, &errOut), []string{"doctor", "--timeout", "4s", "-H", "deploy@127.0.0.3:1,deploy@127.0.0.1:1,deploy@127.0.0.2:1"})
	took := time.Since(start)
	t.Logf("exit %d in %v\n%s%s", code, took, out.String(), errOut.String())
	if code != exitFailed {
		t.Errorf("exit %d, want %d: unreachable hosts fail", code, exitFailed)
	}
	i3, i1, i2 := strings.Index(out.String(), "127.0.0.3"), strings.Index(out.String(), "127.0.0.1"), strings.Index(out.String(), "127.0.0.2")
	if i3 < 0 || i1 < i3 || i2 < i1 {
		t.Errorf("hosts not reported in the order given (%d %d %d)", i3, i1, i2)
	}
	if !strings.Contains(out.String(), "connection refused") {
		t.Errorf("no reason given for the unreachable hosts")
	}
}
