package startup

import (
	"strings"
	"testing"
	"time"
)

const (
	sgWeights = "[2025-01-24 09:39:20 TP0] Load weight begin. avail mem=78.50 GB"
	sgCapture = "[2025-01-24 09:39:31 TP0] Capture cuda graph begin. This can take up to several minutes."
	vlWeights = "(EngineCore_DP0 pid=441) INFO 08-05 09:09:28 [gpu_model_runner.py:1953] Starting to load model Qwen/Qwen3-8B..."
	vlLoaded  = "(EngineCore_DP0 pid=441) INFO 08-05 09:09:33 [gpu_model_runner.py:2007] Model loading took 15.2683 GiB and 4.780464 seconds"
	vlInit    = "(APIServer pid=1) INFO 08-05 09:09:20 [api_server.py:1805] vLLM API server version 0.10.1"
)

// TestFailureCatalogue runs each failure class of logformats.md §4 (and
// §1.3, §3.3) through a startup that then exits, and checks the cause and
// the phase it is put in.
func TestFailureCatalogue(t *testing.T) {
	oom := fixture(t, "oom.txt")[2]
	tests := []struct {
		name      string
		engine    string
		lines     []string // engine output, prefixes as printed
		systemd   []string // replaces the default exit lines
		cause     string
		phase     Phase
		firstLine string // expected Evidence[0]; "" = the last of lines
		// early: the lines hold one the engine prints only when it gives
		// up, so the startup fails before systemd says so.
		early bool
		// A line that only relays a failure (Scheduler hit an exception,
		// child failed, EngineCore failed to start) names no cause: alone,
		// the diagnosis says the error is unrecognised, quoting it.
	}{
		{name: "host sync item", engine: "sglang", lines: []string{sgCapture, "torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing"}, cause: "graph-capture-host-sync", phase: GraphCapture},
		{name: "host sync cpu copy", engine: "sglang", lines: append([]string{sgCapture}, fixture(t, "graph-capture-cpu.txt")[4]), cause: "graph-capture-host-sync", phase: GraphCapture},
		{name: "host sync rng", engine: "sglang", lines: []string{sgCapture, "RuntimeError: Cannot call CUDAGeneratorImpl::current_seed during CUDA graph capture. If you need this call to be captured, please file an issue. Current cudaStreamCaptureStatus: cudaStreamCaptureStatusActive"}, cause: "graph-capture-host-sync", phase: GraphCapture},
		{name: "unjoined work", engine: "sglang", lines: []string{sgCapture, "[2025-03-01 10:00:00 TP0] Capture cuda graph failed: CUDA error: capturing stream has unjoined work"}, cause: "graph-capture-unjoined-work", phase: GraphCapture},
		{name: "capture wrapper alone", engine: "sglang", lines: []string{sgCapture, "[2025-10-02 08:00:00 TP0] Capture cuda graph failed: "}, cause: "graph-capture-failed", phase: GraphCapture},
		{name: "poisoned capture points up", engine: "vllm", lines: []string{"(EngineCore_DP0 pid=441) Capturing CUDA graph shapes:  10%|█         | 2/20", "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)", "torch.AcceleratorError: CUDA error: operation failed due to a previous error during capture"}, cause: "nccl-error", phase: GraphCapture, firstLine: "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)"},
		{name: "oom in capture", engine: "sglang", lines: []string{sgCapture, oom}, cause: "graph-capture-oom", phase: GraphCapture},
		{name: "oom at weights", engine: "sglang", lines: []string{sgWeights, oom}, cause: "gpu-oom", phase: Weights},
		{name: "oom at weights vllm", engine: "vllm", lines: []string{vlWeights, "(EngineCore_DP0 pid=441) ERROR 08-05 09:09:31 [core.py:700] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 896.00 MiB. GPU 0 has a total capacity of 93.09 GiB of which 739.81 MiB is free."}, cause: "gpu-oom", phase: Weights},
		{name: "kv budget sglang", engine: "sglang", lines: []string{sgWeights, "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.88. Raise --mem-fraction-static above 0.912 (minimum viable = 1 - available/pre = 0.9120)."}, cause: "kv-budget", phase: KVCache},
		{name: "kv budget sglang old", engine: "sglang", lines: []string{sgWeights, "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."}, cause: "kv-budget", phase: KVCache},
		{name: "kv budget vllm blocks", engine: "vllm", lines: []string{vlLoaded, "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."}, cause: "kv-budget", phase: KVCache},
		{name: "kv budget vllm max len", engine: "vllm", lines: []string{vlLoaded, "ValueError: To serve at least one request with the model's max seq len (131072), 15.5 GiB KV cache is needed, which is larger than the available KV cache memory (13.15 GiB). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."}, cause: "kv-budget", phase: KVCache},
		{name: "gpu busy vllm", engine: "vllm", lines: []string{vlInit, "ValueError: Free memory on device (10.2/79.19 GiB) on startup is less than desired GPU memory utilization (0.9, 71.27 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."}, cause: "gpu-busy", phase: Init},
		{name: "gpu busy sglang", engine: "sglang", lines: []string{"[2025-01-24 09:39:10 TP0] Init torch distributed begin.", "ValueError: The memory capacity is unbalanced. Some GPUs may be occupied by other processes."}, cause: "gpu-busy", phase: Init},
		{name: "nccl error", engine: "sglang", lines: []string{"[2025-01-24 09:39:10 TP0] Init torch distributed begin.", "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"}, cause: "nccl-error", phase: Init},
		{name: "nccl remote", engine: "sglang", lines: []string{"[2025-01-24 09:39:10 TP3] Init torch distributed begin.", "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, remote process exited or there was a network error, NCCL version 2.21.5"}, cause: "nccl-error", phase: Init},
		{name: "nccl timeout", engine: "sglang", lines: []string{sgCapture, "[rank3]:[E1015 10:00:00.000 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9141, OpType=_ALLGATHER_BASE, NumelIn=19008, NumelOut=152064, Timeout(ms)=600000) ran for 600020 milliseconds before timing out."}, cause: "nccl-timeout", phase: GraphCapture},
		{name: "peer crashed", engine: "sglang", lines: []string{sgCapture, "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.100.120.1]:56223"}, cause: "peer-crashed", phase: GraphCapture},
		{name: "port in use uvicorn", engine: "sglang", lines: []string{"[2025-01-24 09:40:04] INFO:     Started server process [12345]", "[2025-01-24 09:40:05] ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): address already in use"}, cause: "port-in-use", phase: HTTP, early: true},
		{name: "port in use vllm", engine: "vllm", lines: []string{vlInit, "(APIServer pid=1) OSError: [Errno 98] Address already in use"}, cause: "port-in-use", phase: Init, early: true},
		{name: "internal port zmq", engine: "sglang", lines: []string{"zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:29236')"}, cause: "internal-port-in-use", phase: Starting},
		{name: "internal port tcpstore", engine: "sglang", lines: []string{"[W socket.cpp:464] [c10d] The server socket has failed to listen on any local network address. The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use)."}, cause: "internal-port-in-use", phase: Starting},
		{name: "model path", engine: "sglang", lines: []string{"huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or 'namespace/repo_name': '/models/qwen'. Use `repo_type` argument if needed."}, cause: "model-fetch", phase: Starting},
		{name: "model id", engine: "vllm", lines: []string{vlInit, "OSError: /models/x is not a local folder and is not a valid model identifier listed on 'https://huggingface.co/models'"}, cause: "model-fetch", phase: Init},
		{name: "hf rate limit under detokenizer", engine: "sglang", lines: []string{"[2026-03-01 10:00:00] DetokenizerManager hit an exception: Traceback (most recent call last):", "huggingface_hub.errors.HfHubHTTPError: 429 Client Error: Too Many Requests for url: https://huggingface.co/api/models/x (429 Too Many Requests)"}, cause: "model-fetch", phase: Starting, firstLine: "huggingface_hub.errors.HfHubHTTPError: 429 Client Error: Too Many Requests for url: https://huggingface.co/api/models/x (429 Too Many Requests)"},
		{name: "jit ld", engine: "vllm", lines: []string{vlLoaded, "/usr/bin/ld: cannot find -lcuda: No such file or directory", "(EngineCore_DP0 pid=441) ERROR 08-05 09:09:40 [core.py:700] EngineCore failed to start."}, cause: "jit-build", phase: KVCache, firstLine: "/usr/bin/ld: cannot find -lcuda: No such file or directory", early: true},
		{name: "jit ninja", engine: "sglang", lines: []string{sgWeights, "FileNotFoundError: [Errno 2] No such file or directory: 'ninja'"}, cause: "jit-build", phase: Weights},
		{name: "scheduler crash only", engine: "sglang", lines: []string{sgWeights, "[2025-01-24 09:39:30 TP0] Scheduler hit an exception: Traceback (most recent call last):"}, cause: "unrecognised", phase: Weights},
		{name: "scheduler died", engine: "sglang", lines: []string{sgWeights, "RuntimeError: Rank 0 scheduler died during initialization (exit code: -11). If exit code is -9 (SIGKILL), a common cause is the OS OOM killer."}, cause: "scheduler-died", phase: Weights, early: true},
		{name: "scheduler dead v0.4", engine: "sglang", lines: []string{sgWeights, "[2025-01-24 09:39:30] Rank 0 scheduler is dead. Please check if there are relevant logs."}, cause: "scheduler-died", phase: Weights, early: true},
		{name: "child failed old spelling", engine: "sglang", lines: []string{sgWeights, "[2025-01-24 09:39:30] Received sigquit from a child proces. It usually means the child failed."}, cause: "unrecognised", phase: Weights, early: true},
		{name: "detokenizer", engine: "sglang", lines: []string{"[2026-03-01 10:00:00] DetokenizerManager hit an exception: Traceback (most recent call last):"}, cause: "detokenizer", phase: Starting},
		{name: "warmup failed", engine: "sglang", lines: []string{`[2025-01-24 09:40:06] INFO:     127.0.0.1:50318 - "GET /get_model_info HTTP/1.1" 200 OK`, "[2025-01-24 09:42:06] Initialization failed. warmup error: Traceback (most recent call last):"}, cause: "warmup-failed", phase: Warmup, early: true},
		{name: "vllm wrapper only", engine: "vllm", lines: []string{vlLoaded, "(EngineCore_DP0 pid=441) ERROR 08-05 09:09:40 [core.py:700] EngineCore failed to start.", "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}"}, cause: "unrecognised", phase: KVCache, firstLine: "(EngineCore_DP0 pid=441) ERROR 08-05 09:09:40 [core.py:700] EngineCore failed to start.", early: true},
		{name: "vllm wrapper points up", engine: "vllm", lines: []string{vlLoaded, "(EngineCore_DP0 pid=441) ERROR 08-05 09:09:40 [core.py:700] EngineCore failed to start.", "(EngineCore_DP0 pid=441) ERROR 08-05 09:09:40 [core.py:700] ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.", "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"}, cause: "kv-budget", phase: KVCache, firstLine: "(EngineCore_DP0 pid=441) ERROR 08-05 09:09:40 [core.py:700] ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.", early: true},
		{name: "unknown exception", engine: "sglang", lines: []string{sgWeights, "ValueError: unsupported rope scaling type"}, cause: "unrecognised", phase: Weights},
		{name: "host oom kill", engine: "sglang", lines: []string{sgWeights}, systemd: []string{"sglang.service: A process of this unit has been killed by the OOM killer.", "sglang.service: Main process exited, code=killed, status=9/KILL", "sglang.service: Failed with result 'oom-kill'."}, cause: "host-oom-kill", phase: Weights, firstLine: "sglang.service: A process of this unit has been killed by the OOM killer."},
		{name: "start limit", engine: "sglang", systemd: []string{"sglang.service: Start request repeated too quickly.", "sglang.service: Failed with result 'start-limit-hit'.", "Failed to start sglang.service - SGLang server."}, cause: "start-limit-hit", phase: Starting, firstLine: "sglang.service: Start request repeated too quickly."},
		{name: "exit without log", engine: "sglang", lines: []string{sgWeights}, cause: "unit-failed", phase: Weights, firstLine: "sglang.service: Main process exited, code=exited, status=1/FAILURE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHost(t, Options{Engine: tt.engine})
			h.unit("activating", "start", "")
			h.lines(tt.lines...)
			if failed := len(h.kinds(ChangeFail)) != 0 || h.phase() == Failed; failed != tt.early {
				t.Fatalf("failed before the process exited: %v, want %v", failed, tt.early)
			}
			if tt.systemd != nil {
				h.systemd(tt.systemd...)
			} else {
				h.exitFailure()
			}
			st := h.tr.State()
			if st.Phase != Failed {
				t.Fatalf("phase = %s, want failed", st.Phase)
			}
			d := st.Diag
			if d == nil {
				t.Fatal("no diagnosis")
			}
			if d.Cause != tt.cause || d.Phase != tt.phase {
				t.Errorf("cause, phase = %s, %s; want %s, %s (evidence %q)", d.Cause, d.Phase, tt.cause, tt.phase, d.Evidence)
			}
			first := tt.firstLine
			if first == "" {
				first = tt.lines[len(tt.lines)-1]
			}
			if len(d.Evidence) == 0 || d.Evidence[0] != first {
				t.Errorf("evidence = %q, want it to start with %q", d.Evidence, first)
			}
			if d.Summary == "" || d.Hint == "" || d.KernelMode != "" {
				t.Errorf("summary %q, hint %q, kernel mode %q", d.Summary, d.Hint, d.KernelMode)
			}
			if n := len(h.kinds(ChangeFail)); n != 1 && !tt.early || n == 0 {
				t.Errorf("%d ChangeFail, want 1", n)
			}
		})
	}
}

// seedStory is the demo's story: an SGLang unit whose kernel mode breaks
// CUDA graph capture with .item(). The traceback is the real text of
// testdata/graph-capture-item.txt, as SGLang prints it: the first line
// with its logger prefix, continuation lines bare.
func seedStory(t *testing.T, mode string, lateRoot bool) *host {
	t.Helper()
	return seedStoryEnv(t, []string{"PYTHONUNBUFFERED=1", "KDTREE_MODE=" + mode}, lateRoot)
}

// seedStoryEnv is seedStory with the unit's Environment as its states
// carry it (nil: a source that has not read it, the log store's).
func seedStoryEnv(t *testing.T, env []string, lateRoot bool) *host {
	t.Helper()
	h := newHost(t, Options{Engine: "auto"})
	h.env = env
	h.unit("activating", "start", "")
	h.systemd("Starting sglang.service - SGLang server...")
	h.unit("active", "running", "")
	h.lines("[2026-11-30 10:00:03] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=1)",
		"[2026-11-30 10:00:04 TP0] Init torch distributed begin.",
		"[2026-11-30 10:00:05 TP0] Init torch distributed ends. mem usage=0.00 GB",
		"[2026-11-30 10:00:06 TP0] Load weight begin. avail mem=78.50 GB",
		"Loading safetensors checkpoint shards:  20% Completed | 1/5 [00:01<00:04,  1.17s/it]",
		"Loading safetensors checkpoint shards:  60% Completed | 3/5 [00:03<00:02,  1.17s/it]",
		"Loading safetensors checkpoint shards: 100% Completed | 5/5 [00:05<00:00,  1.17s/it]",
		"[2026-11-30 10:00:12 TP0] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=63.10 GB, mem usage=15.40 GB.",
		"[2026-11-30 10:00:13 TP0] KV Cache is allocated. #tokens: 404273, K size: 22.57 GB, V size: 22.57 GB",
		"[2026-11-30 10:00:13 TP0] Memory pool end. avail mem=17.20 GB",
		"[2026-11-30 10:00:14 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=17.10 GB",
	)
	tb := fixture(t, "graph-capture-item.txt")[1:] // drop the repro's "torch 2.11.0+cu130"
	tb[0] = "[2026-11-30 10:00:00 TP0] " + tb[0]
	tail := []string{
		"[2026-11-30 10:00:16 TP0] Capture cuda graph failed: CUDA error: operation failed due to a previous error during capture",
		"[2026-11-30 10:00:16 TP0] Scheduler hit an exception: Traceback (most recent call last):",
		"[2026-11-30 10:00:16] Received sigquit from a child process. It usually means the child failed.",
	}
	if !lateRoot {
		h.lines(tb...)
		h.lines(tail...)
	}
	h.exitFailure()
	h.unit("failed", "failed", "exit-code")
	if lateRoot {
		// journald delivers the engine's lines after systemd's signal.
		h.lines(tb...)
		h.lines(tail...)
	}
	return h
}

// TestKernelModeReadAfterTheFailure: a source that reads the unit's
// Environment only once the run has failed (the log store's, over SSH on
// demand) gets the diagnosis naming the mode in a second ChangeFail.
func TestKernelModeReadAfterTheFailure(t *testing.T) {
	h := seedStoryEnv(t, nil, false)
	if d := h.tr.State().Diag; d == nil || d.Cause != "graph-capture-host-sync" || d.KernelMode != "" {
		t.Fatalf("before the Environment: %+v", d)
	}
	h.env = []string{"PYTHONUNBUFFERED=1", "KDTREE_MODE=validate"}
	var fail *Change
	for _, c := range h.unit("failed", "failed", "exit-code") {
		if c.Kind == ChangeFail {
			fail = &c
		}
	}
	if fail == nil || fail.Diag.KernelMode != "kdtree-verify=validate" || !strings.Contains(fail.Diag.Summary, "kdtree-verify=validate") {
		t.Fatalf("no ChangeFail naming the mode once the Environment came: %+v", fail)
	}
	if d := h.tr.State().Diag; d.Fix == nil || d.Fix.Mode != "on" {
		t.Errorf("fix %+v, want kdtree-verify to on", d.Fix)
	}
	for _, c := range h.unit("failed", "failed", "exit-code") {
		if c.Kind == ChangeFail {
			t.Errorf("the same state again reported the failure again: %+v", c.Diag)
		}
	}
}

func TestSeedStoryKernelModeBlamed(t *testing.T) {
	for _, late := range []bool{false, true} {
		h := seedStory(t, "validate", late)
		st := h.tr.State()
		d := st.Diag
		if st.Phase != Failed || d == nil {
			t.Fatalf("late=%v: phase %s, diag %v", late, st.Phase, d)
		}
		if d.Cause != "graph-capture-host-sync" || d.Phase != GraphCapture {
			t.Errorf("late=%v: cause %s in %s", late, d.Cause, d.Phase)
		}
		if !strings.HasSuffix(d.Evidence[0], "torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing") {
			t.Errorf("late=%v: evidence[0] = %q", late, d.Evidence[0])
		}
		if d.KernelMode != "kdtree-verify=validate" {
			t.Errorf("late=%v: kernel mode %q", late, d.KernelMode)
		}
		for _, want := range []string{"kdtree-verify", "on, off", "--disable-cuda-graph"} {
			if !strings.Contains(d.Hint, want) {
				t.Errorf("late=%v: hint %q lacks %q", late, d.Hint, want)
			}
		}
		if !strings.Contains(d.Summary, "kdtree-verify=validate") {
			t.Errorf("late=%v: summary %q", late, d.Summary)
		}
		wantEv := []string{
			"[2026-11-30 10:00:16 TP0] Capture cuda graph failed: CUDA error: operation failed due to a previous error during capture",
			"[2026-11-30 10:00:16 TP0] Scheduler hit an exception: Traceback (most recent call last):",
			"sglang.service: Main process exited, code=exited, status=1/FAILURE",
		}
		for _, w := range wantEv {
			if !strings.Contains(strings.Join(d.Evidence, "\n"), w) {
				t.Errorf("late=%v: evidence %q lacks %q", late, d.Evidence, w)
			}
		}
		if len(d.Evidence) > maxEvidence {
			t.Errorf("late=%v: %d evidence lines", late, len(d.Evidence))
		}
		if got := d.Evidence[len(d.Evidence)-1]; got != wantEv[2] {
			t.Errorf("late=%v: last evidence %q, want the exit line", late, got)
		}
		fails := h.kinds(ChangeFail)
		if len(fails) == 0 || fails[len(fails)-1].Diag.Cause != "graph-capture-host-sync" {
			t.Errorf("late=%v: ChangeFail %+v", late, fails)
		}
		if !late && len(fails) != 1 {
			t.Errorf("%d ChangeFail, want 1", len(fails))
		}
		if late && (len(fails) != 2 || fails[0].Diag.Cause != "unit-failed") {
			t.Errorf("late: want unit-failed, then the log's cause; got %+v", fails)
		}
	}
}

func TestSeedStorySafeModeNotBlamed(t *testing.T) {
	h := seedStory(t, "on", false)
	d := h.tr.State().Diag
	if d == nil || d.Cause != "graph-capture-host-sync" {
		t.Fatalf("diag %+v", d)
	}
	if d.KernelMode != "" || strings.Contains(d.Hint, "kdtree") || strings.Contains(d.Summary, "kdtree") {
		t.Errorf("blames the kernel mode under a safe mode: %+v", d)
	}
}

// TestSeedStoryTimings checks every span starts and ends at the host time
// of the event that opened and closed it.
func TestSeedStoryTimings(t *testing.T) {
	h := seedStory(t, "validate", false)
	st := h.tr.State()
	at := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	// Events: 1 unit activating, 2 Starting…, 3 unit active, 4 server_args,
	// 5-6 dist init, 7 weights, 8-10 shards, 11 weights end, 12-13 KV,
	// 14 capture begin, then 27 traceback lines and 3 wrappers (15-44):
	// the last, "Received sigquit from a child process", is printed only
	// when SGLang gives up, so the startup fails there, before systemd's
	// 45 Main process exited.
	want := []Span{
		{Phase: Starting, Start: at(1), End: at(4)},
		{Phase: Init, Start: at(4), End: at(7)},
		{Phase: Weights, Start: at(7), End: at(11)},
		{Phase: KVCache, Start: at(11), End: at(14)},
		{Phase: GraphCapture, Start: at(14), End: at(44)},
	}
	if len(st.Spans) != len(want) {
		t.Fatalf("spans %+v", st.Spans)
	}
	for i, s := range st.Spans {
		if s != want[i] {
			t.Errorf("span %d = %+v, want %+v", i, s, want[i])
		}
	}
	if st.Diag.Time != at(15+4) {
		t.Errorf("diagnosis time %v, want %v (the root line)", st.Diag.Time, at(19))
	}
	if st.PhaseSince != at(44) || st.StartedAt != at(1) {
		t.Errorf("phase since %v, started %v", st.PhaseSince, st.StartedAt)
	}
}

// TestProgressReported checks shard progress reaches the state and the
// phase changes carry it.
func TestProgressReported(t *testing.T) {
	h := newHost(t, Options{Engine: "sglang"})
	h.unit("activating", "start", "")
	h.lines(sgWeights, "Loading safetensors checkpoint shards:  60% Completed | 3/5 [00:03<00:02,  1.17s/it]")
	if p := h.tr.State().Progress; p != (Progress{3, 5, "shards"}) || p.Fraction() != 0.6 {
		t.Errorf("progress %+v", p)
	}
	h.lines(sgCapture, "Capturing batches (bs=64 avail_mem=57.52 GB):  50%|█████     | 2/4 [00:00<00:00,  5.24it/s]")
	if p := h.tr.State().Progress; p != (Progress{2, 4, "bs=64"}) {
		t.Errorf("capture progress %+v", p)
	}
}
