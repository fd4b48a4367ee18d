package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote/testkit/e2e"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// relay forwards TCP connections from listen (an address of this
// machine's end of a host's link) to target until the test ends: the
// test hosts reach only this machine, so a node meets its deployment's
// head through it.
func relay(t *testing.T, listen, target string) {
	t.Helper()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatalf("relay %s: %v", listen, err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed at cleanup
			}
			wg.Go(func() {
				defer c.Close()
				u, err := net.DialTimeout("tcp", target, 5*time.Second)
				if err != nil {
					return
				}
				defer u.Close()
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(u, c); done <- struct{}{} }()
				go func() { _, _ = io.Copy(c, u); done <- struct{}{} }()
				<-done // one side ended: end both, as the peer's death does
			})
		}
	})
}

// TestMultiNodeOnTestbed: two SGLang deployments of two nodes each on
// four test hosts (gpu1+gpu2 meet at gpu1, gpu3+gpu4 at gpu3), found from
// the units' command lines. Node 1 of the second, gpu4, fails in NCCL
// init; node 0, gpu3, loses it at the store.
//   - watch --json names each node's deployment, and its summary has
//     gpu3's deployment failed with node 1 (gpu4) blamed for nccl-error,
//     gpu1's serving;
//   - the console (tmux) shows the failed deployment's row: node 1 failed
//     first, node 0 peer lost;
//   - once gpu4 is fixed, `restart gpu3 gpu4` stops both, starts gpu3,
//     then gpu4, and the deployment serves.
func TestMultiNodeOnTestbed(t *testing.T) {
	e2e.Require(t, e2e.Command("tmux"))
	ports := [2]int{}
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	heads := [2]string{"gpu1", "gpu3"}
	// Each pair meets at its node 1's end of the link (known once the
	// hosts are up: the placeholder is replaced then), relayed to its
	// head: rank 0 only listens on the port, node 1 dials the address.
	const placeholder = "RENDEZVOUS"
	tb := testbed.StartWith(t, testbed.Options{Hosts: 4, Host: func(i int) testbed.HostOptions {
		pair := i / 2
		o := testbed.HostOptions{KernelMode: "on",
			Args: []string{"--nnodes", "2", "--node-rank", fmt.Sprint(i % 2), "--dist-init-addr", fmt.Sprintf("%s:%d", placeholder, ports[pair])},
			Env: map[string]string{"INFERSIM_INIT_SECONDS": "4", "INFERSIM_WEIGHTS_SECONDS": "4", "INFERSIM_CAPTURE_SECONDS": "2",
				"INFERSIM_PEER_WAIT_SECONDS": "2", "INFERSIM_RENDEZVOUS_SECONDS": "90"}}
		if i == 3 {
			o.Env["INFERSIM_FAIL"] = "crashloop" // NCCL init error at every start
		}
		return o
	}})
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	sh := func(host, cmd string) string {
		t.Helper()
		out, err := tb.Run(ctx, host, cmd)
		if err != nil {
			t.Fatalf("%s: %s: %v\n%s", host, cmd, err, out)
		}
		return strings.TrimSpace(out)
	}
	// Node 1 of each pair reaches its head through this machine.
	deps := [2]string{}
	for pair, head := range heads {
		h, err := tb.Host(head)
		if err != nil {
			t.Fatal(err)
		}
		node, err := tb.Host(fmt.Sprintf("gpu%d", 2*pair+2))
		if err != nil {
			t.Fatal(err)
		}
		deps[pair] = net.JoinHostPort(node.RootAddr, fmt.Sprint(ports[pair]))
		relay(t, deps[pair], net.JoinHostPort(h.Addr, fmt.Sprint(ports[pair])))
		for _, n := range []string{head, node.Name} {
			// The unit file is the testbed's (bind-mounted): a drop-in
			// gives the command line its address.
			sh(n, fmt.Sprintf("mkdir -p /etc/systemd/system/sglang.service.d && "+
				"{ echo '[Service]'; echo 'ExecStart='; grep '^ExecStart=' /etc/systemd/system/sglang.service | sed 's/%s/%s/'; } "+
				"> /etc/systemd/system/sglang.service.d/10-rendezvous.conf && systemctl daemon-reload", placeholder, node.RootAddr))
		}
	}
	cfg := filepath.Join(tb.Inventory(), "config.yaml")
	failedDep := deps[1]

	t.Run("watch", func(t *testing.T) {
		var out, errOut syncBuffer
		codeCh := make(chan int, 1)
		go func() {
			codeCh <- run(ctx, env{stdout: &out, stderr: &errOut, getenv: testEnv(nil, nil).getenv},
				[]string{"watch", "--json", "--timeout", "4m", "--config", cfg})
		}()
		deadline := time.Now().Add(30 * time.Second)
		for strings.Count(out.String(), `"kind":"unit"`) < 4 {
			if time.Now().After(deadline) {
				t.Fatalf("watch reported no unit states:\n%s%s", out.String(), errOut.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		for _, h := range []string{"gpu1", "gpu3", "gpu2", "gpu4"} {
			sh(h, "systemctl start sglang")
		}
		if code := <-codeCh; code != exitFailed {
			t.Fatalf("watch exit %d, want %d\n%s%s", code, exitFailed, out.String(), errOut.String())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		named := map[string]string{}
		for _, l := range lines {
			if err := output.ValidateLine([]byte(l)); err != nil {
				t.Errorf("%v: %s", err, l)
			}
			var ln output.Line
			if json.Unmarshal([]byte(l), &ln) == nil && ln.Host != "" && ln.Deployment != "" {
				named[ln.Host] = ln.Deployment
			}
		}
		if named["gpu3"] != failedDep || named["gpu4"] != failedDep || named["gpu1"] != deps[0] {
			t.Errorf("deployments named on host lines: %v", named)
		}
		var sum output.Line
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
			t.Fatal(err)
		}
		got := map[string]output.DeploymentOutcome{}
		for _, d := range sum.Deployments {
			got[d.Deployment] = d
		}
		f := got[failedDep]
		if f.Outcome != "failed" || f.Blamed != "gpu4" || f.BlamedRank == nil || *f.BlamedRank != 1 || f.Cause != "nccl-error" {
			t.Errorf("failed deployment %+v, want gpu4 (node 1) blamed for nccl-error\n%s", f, lines[len(lines)-1])
		}
		if s := got[deps[0]]; s.Outcome != "serving" {
			t.Errorf("the other deployment %+v, want serving", s)
		}
	})

	t.Run("console", func(t *testing.T) {
		bin := buildBringup(t)
		p := startTmux(t, 200, 40, fmt.Sprintf("sleep 1; exec env HOME=%s %s --config %s", t.TempDir(), bin, cfg))
		s := p.waitFor("the failed deployment's row", regexp.MustCompile(regexp.QuoteMeta(failedDep)+`.*failed · node 0 gpu3 peer lost · node 1 gpu4 failed first: nccl-error`), time.Minute)
		if !regexp.MustCompile(regexp.QuoteMeta(deps[0]) + ` .*serving`).MatchString(s) {
			t.Errorf("the other deployment's row does not serve:\n%s", s)
		}
	})

	t.Run("restart", func(t *testing.T) {
		sh("gpu4", "printf '[Service]\\nEnvironment=INFERSIM_FAIL=\\n' > /etc/systemd/system/sglang.service.d/20-fixed.conf && systemctl daemon-reload")
		var out, errOut syncBuffer
		code := run(ctx, env{stdout: &out, stderr: &errOut, getenv: testEnv(nil, nil).getenv},
			[]string{"restart", "--yes", "--timeout", "4m", "--config", cfg, "gpu3", "gpu4"})
		text := out.String()
		if code != 0 {
			t.Fatalf("restart exit %d:\n%s%s", code, text, errOut.String())
		}
		at := func(re string) int {
			loc := regexp.MustCompile(re).FindStringIndex(text)
			if loc == nil {
				t.Fatalf("no %q in:\n%s", re, text)
			}
			return loc[0]
		}
		if !(at(`gpu3 +stop: done`) < at(`gpu3 +restart: started`) && at(`gpu4 +stop: done`) < at(`gpu3 +restart: started`) &&
			at(`gpu3 +restart: done`) < at(`gpu4 +restart: started`)) {
			t.Errorf("want both stopped, then gpu3 started, then gpu4:\n%s", text)
		}
		at(`gpu3 +serving \(invocation`)
	})
	for _, h := range []string{"gpu1", "gpu2", "gpu3", "gpu4"} {
		sh(h, "systemctl stop sglang")
	}
}
