// Command infersim is the stand-in inference server of the test hosts: it
// plays the startup of SGLang or, with INFERSIM_ENGINE=vllm (or --engine
// vllm), of vLLM: the engine's real log lines at the real times, with its
// prefixes and streams; its HTTP endpoints on its port; the kernel mode
// from its environment, and in a mode that is not capture-safe with CUDA
// graphs enabled, the death at graph capture with the real CUDA error
// texts as the engine reports them. Both engines play one shared timeline
// (remote/sim/sglang): they differ only in their texts.
//
// Run as `nvidia-smi` (a symlink or copy whose basename is nvidia-smi) it
// is the companion nvidia-smi stand-in instead, reporting eight H200s whose
// memory follows the running infersim.
//
// Run as `infersim capture-check --mode MODE` it is the stand-in of the
// kernel's capture check instead: it prints what the reference check
// printed on a real GPU (a failed capture for INFERSIM_UNSAFE_MODES).
//
// Usage:
//
//	infersim --model-path /models/demo --port 30000 --tp 8 [--disable-cuda-graph]
//	INFERSIM_ENGINE=vllm infersim serve /models/demo --port 30000 --tensor-parallel-size 8 [--enforce-eager]
//
// SGLang writes its log to stderr and binds its port only when the model
// is loaded, answering /health 503 until its warmup is done. vLLM logs to
// stdout (progress bars and tracebacks to stderr), binds its port (8000 by
// default) before it builds the engine and listens only once it is ready.
//
// Environment (durations in seconds, fractions allowed):
//
//	INFERSIM_BOOT_SECONDS, INFERSIM_INIT_SECONDS, INFERSIM_WEIGHTS_SECONDS,
//	INFERSIM_KV_SECONDS, INFERSIM_CAPTURE_SECONDS, INFERSIM_HTTP_SECONDS,
//	INFERSIM_WARMUP_SECONDS, INFERSIM_NCCL_TIMEOUT_SECONDS  phase lengths
//	INFERSIM_SHARDS        weight shards (default 8)
//	INFERSIM_FAIL          oom | port | nccl | hang | crashloop
//	INFERSIM_PEER_WAIT_SECONDS   multi-node (--nnodes N --node-rank R --dist-init-addr HOST:PORT, SGLang):
//	                       how long a node waits on a peer that died before it fails (default 2)
//	INFERSIM_RENDEZVOUS_SECONDS  how long the nodes wait for each other at init (default 60)
//	INFERSIM_ENGINE        sglang (default) or vllm; --engine overrides it
//	INFERSIM_KERNEL_ENV    the kernel's mode variable (default KDTREE_MODE; --kernel-env)
//	INFERSIM_KERNEL_NAME   the kernel's name in the log (default kdtree-verify)
//	INFERSIM_UNSAFE_MODES  comma-separated modes that are not capture-safe (default validate)
//	INFERSIM_STATE_DIR     where the GPU state for nvidia-smi goes (default /run/infersim)
//	INFERSIM_DECODE_TPS    decode tokens/s at a full batch per kernel mode (default off=480,on=1920)
//	INFERSIM_LOAD          background streams decoded once serving (default 0: idle without clients)
//	INFERSIM_CHECK_SECONDS how long capture-check takes (default 1)
//	INFERSIM_STATS_SECONDS how often the stats line is printed while decoding (SGLang 2, vLLM 10)
//	PYTHONPATH             its first entry is the kernel directory whose content hash is logged
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

// run dispatches on the program name and returns the exit status.
func run(args []string, stdout, stderr *os.File) int {
	if filepath.Base(args[0]) == "nvidia-smi" {
		return nvidiaSMI(args[1:], os.Getenv, stdout, stderr)
	}
	if len(args) > 1 && args[1] == "capture-check" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		return captureCheck(ctx, args[2:], os.Getenv, stdout, stderr)
	}
	cfg, err := parseConfig(args[1:], os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "infersim: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return serve(ctx, cfg, stdout, stderr)
}
