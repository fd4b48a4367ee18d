package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMeshLost: two nodes meet; when rank 1 goes away, rank 0 hears of
// it.
func TestMeshLost(t *testing.T) {
	t.Parallel() // real time on loopback ports of their own
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ctx := context.Background()
	var m0 *mesh
	var err0 error
	done := make(chan struct{})
	go func() {
		defer close(done)
		m0, err0 = joinMesh(ctx, 0, 2, addr, 5*time.Second)
	}()
	m1, err := joinMesh(ctx, 1, 2, addr, 5*time.Second)
	<-done
	if err != nil || err0 != nil {
		t.Fatalf("join: rank 1 %v, rank 0 %v", err, err0)
	}
	defer m0.close()
	m1.close()
	select {
	case <-m0.lost:
	case <-time.After(5 * time.Second):
		t.Fatal("rank 0 did not hear of rank 1's end")
	}
}

// TestMeshNobodyCame: rank 0 alone gives up after the wait.
func TestMeshNobodyCame(t *testing.T) {
	t.Parallel() // real time on loopback ports of their own
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	if _, err := joinMesh(context.Background(), 0, 2, addr, 300*time.Millisecond); !errors.Is(err, errRendezvous) {
		t.Fatalf("error %v, want %v", err, errRendezvous)
	}
}

// TestMultiNodeServe: two nodes of one deployment, played in this
// process. Node 1 dies in NCCL init (crashloop); node 0, which met it,
// loses it and fails its peer wait later with c10d's store timeout, the
// real lines of sglang issue 7478; both exit 1.
func TestMultiNodeServe(t *testing.T) {
	t.Parallel() // real time on loopback ports of their own
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	run := func(rank int, env map[string]string) (int, string) {
		return serveNode(t, addr, rank, env, 20*time.Second)
	}
	var wg sync.WaitGroup
	var code0, code1 int
	var log0, log1 string
	wg.Go(func() { code0, log0 = run(0, map[string]string{}) })
	wg.Go(func() { code1, log1 = run(1, map[string]string{"INFERSIM_FAIL": "crashloop"}) })
	wg.Wait()
	if code1 != 1 || !strings.Contains(log1, "RuntimeError: NCCL error: unhandled system error") {
		t.Errorf("node 1: exit %d, log\n%s", code1, log1)
	}
	if code0 != 1 || !strings.Contains(log0, "[c10d] waitForInput: socket SocketImpl(fd=100, addr=[127.0.0.1]:43500, remote=[127.0.0.1]:") ||
		!strings.Contains(log0, "timed out after 500ms") {
		t.Errorf("node 0: exit %d, log\n%s", code0, log0)
	}
	if !strings.Contains(log0, "dist_init_addr='"+addr+"', nnodes=2, node_rank=0") {
		t.Errorf("node 0's server_args do not name the deployment:\n%s", log0)
	}
	if strings.Contains(log0, "Load weight begin") {
		t.Errorf("node 0 went past init without its peer:\n%s", log0)
	}
}

// serveNode plays node rank of a two-node deployment meeting at addr in
// this process, with short phases (env adds to them), for at most life,
// and returns its exit status and output.
func serveNode(t *testing.T, addr string, rank int, env map[string]string, life time.Duration) (int, string) {
	env["INFERSIM_STATE_DIR"] = t.TempDir()
	for k, v := range map[string]string{"INFERSIM_BOOT_SECONDS": "0.1", "INFERSIM_INIT_SECONDS": "0.4", "INFERSIM_WEIGHTS_SECONDS": "0.5",
		"INFERSIM_KV_SECONDS": "0.1", "INFERSIM_CAPTURE_SECONDS": "0.2", "INFERSIM_HTTP_SECONDS": "0.1", "INFERSIM_WARMUP_SECONDS": "0.2",
		"INFERSIM_SHARDS": "2", "INFERSIM_PEER_WAIT_SECONDS": "0.5", "INFERSIM_RENDEZVOUS_SECONDS": "5"} {
		if _, set := env[k]; !set {
			env[k] = v
		}
	}
	cfg, err := parseConfig([]string{"--model-path", "/models/demo", "--port", fmt.Sprint(freePort(t)), "--host", "127.0.0.1", "--tp", "2",
		"--nnodes", "2", "--node-rank", fmt.Sprint(rank), "--dist-init-addr", addr}, func(k string) string { return env[k] })
	if err != nil {
		t.Error(err)
		return -1, ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), life)
	defer cancel()
	var out, errOut bytes.Buffer
	code := serve(ctx, cfg, &out, &errOut)
	return code, out.String() + errOut.String()
}

// TestMultiNodeServesThenLosesAPeer: both nodes serve; node 1 is
// stopped, and node 0, past init, dies of the NCCL watchdog.
func TestMultiNodeServesThenLosesAPeer(t *testing.T) {
	t.Parallel() // real time on loopback ports of their own
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	var wg sync.WaitGroup
	var code0, code1 int
	var log0, log1 string
	wg.Go(func() { code0, log0 = serveNode(t, addr, 0, map[string]string{}, 20*time.Second) })
	wg.Go(func() { code1, log1 = serveNode(t, addr, 1, map[string]string{}, 4*time.Second) })
	wg.Wait()
	if code1 != 0 || !strings.Contains(log1, "The server is fired up and ready to roll!") {
		t.Errorf("node 1: exit %d, log\n%s", code1, log1)
	}
	if code0 != 1 || !strings.Contains(log0, "The server is fired up and ready to roll!") ||
		!strings.Contains(log0, "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9141, OpType=_ALLGATHER_BASE") {
		t.Errorf("node 0: exit %d, log\n%s", code0, log0)
	}
}
