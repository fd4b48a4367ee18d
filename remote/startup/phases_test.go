package startup

import (
	"testing"
)

// TestPhaseLines feeds each phase line, in the wordings of the versions in
// logformats.md §1.2 and §3.2, to a tracker whose unit is starting.
func TestPhaseLines(t *testing.T) {
	capBegin := "[2025-08-08 03:34:40 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=1.80 GB"
	tests := []struct {
		name   string
		engine string // "" = detect
		pre    []string
		line   string
		want   Phase
		prog   Progress
		ready  bool
	}{
		// SGLang.
		{name: "sglang server_args", line: "[2025-08-08 03:34:20] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tokenizer_path='Qwen/Qwen3-8B', tp_size=1)", want: Init},
		{name: "sglang server_args dict", engine: "sglang", line: "server_args={'model_path': 'Qwen/Qwen3-8B'}", want: Init},
		{name: "sglang main dist init", line: "[2026-09-11 23:46:30 TP0 EP0] Init torch distributed begin.", want: Init},
		{name: "sglang dist init ends", line: "[2025-05-13 23:28:26 DP6 TP6] Init torch distributed ends. mem usage=2.50 GB", want: Init},
		{name: "sglang v0.3 nccl", line: "[23:17:01 TP7] Init nccl begin.", want: Init},
		{name: "sglang weights begin", line: "[2025-01-24 09:39:20 TP0] Load weight begin. avail mem=78.50 GB", want: Weights},
		{name: "sglang v0.2 weights begin", line: "[gpu_id=0] Load weight begin. avail mem=78.50 GB", want: Weights},
		{name: "sglang shards", engine: "sglang", line: "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.17s/it]", want: Weights, prog: Progress{1, 2, "shards"}},
		{name: "sglang multithread shards", engine: "sglang", line: "Multi-thread loading shards: 100% Completed | 65/65 [05:15<00:00, 4.85s/it]", want: Weights, prog: Progress{65, 65, "shards"}},
		{name: "sglang main weights end", line: "[2026-09-11 23:52:00 TP0 EP0] Load weight end. elapsed=329.53 s, type=BailingMoeV3ForCausalLM, quant=fp8, fmt=e4m3, avail mem=29.67 GB, mem usage=80.31 GB.", want: KVCache},
		{name: "sglang v0.4.10 weights end", line: "[2025-08-08 03:34:38] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=13.91 GB, mem usage=1.25 GB.", want: KVCache},
		{name: "sglang v0.3 weights end", line: "[23:17:09 TP7] Load weight end. type=Phi3ForCausalLM, dtype=torch.bfloat16, avail mem=51.36 GB", want: KVCache},
		{name: "sglang v0.2 weights end", line: "[gpu_id=0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=63.12 GB", want: KVCache},
		{name: "sglang kv main", line: "[2026-09-11 23:52:01 TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1226984, KV size: 9.21 GB", want: KVCache},
		{name: "sglang kv v0.4.10", line: "[2025-08-08 03:34:39 TP0] KV Cache is allocated. #tokens: 104273, K size: 5.57 GB, V size: 5.57 GB", want: KVCache},
		{name: "sglang kv v0.4.1", line: "[2025-01-24 09:39:30 TP0] KV Cache is allocated. K size: 20.95 GB, V size: 20.95 GB.", want: KVCache},
		{name: "sglang mamba", engine: "sglang", line: "Mamba Cache is allocated. max_mamba_cache_size: 186, conv_state size: 0.10GB, ssm_state size: 4.38GB ", want: KVCache},
		{name: "sglang memory pool end", line: "[2025-08-08 03:34:39 TP0] Memory pool end. avail mem=9.20 GB", want: KVCache},
		{name: "sglang capture main", line: "[2026-09-11 23:52:02 TP0] Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, bs=[1, 2], avail mem=73.10 GB", want: GraphCapture},
		{name: "sglang capture v0.4.10", line: capBegin, want: GraphCapture},
		{name: "sglang capture v0.4.1", line: "[2025-01-24 09:39:31 TP0] Capture cuda graph begin. This can take up to several minutes.", want: GraphCapture},
		{name: "sglang capture v0.2", line: "[gpu_id=0] Capture cuda graph begin. This can take up to several minutes.", want: GraphCapture},
		{name: "sglang capture piecewise", engine: "sglang", line: "Capture piecewise CUDA graph begin. avail mem=24.90 GB", want: GraphCapture},
		{name: "sglang capture bs list", line: "[2025-08-08 03:34:40 TP0] Capture cuda graph bs [1, 2, 4, 8]", want: GraphCapture},
		{name: "sglang capture progress bs", engine: "sglang", line: "Capturing batches (bs=128 avail_mem=57.52 GB):   5%|▌         | 1/20 [00:00<00:03,  5.24it/s]", want: GraphCapture, prog: Progress{1, 20, "bs=128"}},
		{name: "sglang capture progress no bs", engine: "sglang", line: "Capturing batches (avail_mem=76.10 GB): 100%|██████████| 4/4 [00:01<00:00,  2.51it/s]", want: GraphCapture, prog: Progress{4, 4, "batches"}},
		{name: "sglang capture piecewise tokens", engine: "sglang", line: "Capturing num tokens (num_tokens=4 avail_mem=24.84 GB)", want: GraphCapture, prog: Progress{0, 0, "num_tokens=4"}},
		{name: "sglang v0.4.1 bare bar", engine: "sglang", pre: []string{capBegin}, line: "100%|██████████| 23/23 [00:06<00:00,  3.37it/s]", want: GraphCapture, prog: Progress{23, 23, "batches"}},
		{name: "sglang capture end main", pre: []string{capBegin}, line: "[2026-09-11 23:52:05 TP0] Capture target decode CUDA graph end. elapsed=2.58 s, mem usage=0.45 GB, avail mem=72.65 GB.", want: GraphCapture},
		{name: "sglang capture end v0.4.10", pre: []string{capBegin}, line: "[2025-08-08 03:34:58 TP0] Capture cuda graph end. Time elapsed: 18.28 s. mem usage=0.11 GB. avail mem=1.70 GB.", want: GraphCapture},
		{name: "sglang capture end, begin missed", line: "[2025-01-24 09:39:38 TP0] Capture cuda graph end. Time elapsed: 6.83 s", want: GraphCapture},
		{name: "sglang capacity", line: "[2025-08-08 03:34:57] max_total_num_tokens=104273, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4097, context_len=40960, available_gpu_mem=1.70 GB", want: HTTP},
		{name: "sglang v0.4.1 capacity", line: "[2025-01-24 09:39:40 TP0] max_total_num_tokens=219684, max_prefill_tokens=16384, max_running_requests=4097, context_len=16384", want: HTTP},
		{name: "sglang timings", engine: "sglang", line: "Engine startup timings (s): load_weight=12.02, kv_cache_allocation=0.02, scheduler_e2e=52.09, tokenizer_e2e=65.82", want: HTTP},
		{name: "sglang uvicorn started", line: "[2025-01-24 09:40:04] INFO:     Started server process [12345]", want: HTTP},
		{name: "sglang uvicorn running", line: "[2025-01-24 09:40:05] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)", want: HTTP},
		{name: "sglang app startup", engine: "sglang", line: "[2025-01-24 09:40:05] INFO:     Application startup complete.", want: HTTP},
		{name: "sglang warmup model info", line: `[2025-01-24 09:40:06] INFO:     127.0.0.1:50318 - "GET /get_model_info HTTP/1.1" 200 OK`, want: Warmup},
		{name: "sglang warmup 2026 model info", line: `[2026-09-11 23:53:06] INFO:     127.0.0.1:40112 - "GET /model_info HTTP/1.1" 200 OK`, want: Warmup},
		{name: "sglang warmup generate", line: `[2025-01-24 09:40:07] INFO:     127.0.0.1:50320 - "POST /generate HTTP/1.1" 200 OK`, want: Warmup},
		{name: "sglang health 503 is not warmup", engine: "sglang", line: `[2026-09-11 23:53:06] INFO:     127.0.0.1:40112 - "GET /health HTTP/1.1" 503 Service Unavailable`, want: Starting},
		{name: "sglang ready", line: "[2025-01-24 09:40:08] The server is fired up and ready to roll!", want: Warmup, ready: true},

		// vLLM.
		{name: "vllm version v0.10", line: "(APIServer pid=1) INFO 08-05 09:09:20 [api_server.py:1805] vLLM API server version 0.10.1", want: Init},
		{name: "vllm version v0.8", line: "INFO 02-18 08:50:10 api_server.py:912] vLLM API server version 0.8.1", want: Init},
		{name: "vllm non-default args", line: "(APIServer pid=1) INFO 08-05 09:09:20 [utils.py:326] non-default args: {'model': 'Qwen/Qwen3-8B'}", want: Init},
		{name: "vllm engine core wait", line: "(EngineCore_DP0 pid=441) INFO 08-05 09:09:26 [core.py:619] Waiting for init message from front-end.", want: Init},
		{name: "vllm v1 engine", line: "(EngineCore_DP0 pid=441) INFO 08-05 09:09:26 [core.py:71] Initializing a V1 LLM engine (v0.10.1rc2.dev397) with config: model='Qwen/Qwen3-8B'", want: Init},
		{name: "vllm v0 engine", line: "INFO 02-18 08:50:12 llm_engine.py:234] Initializing a V0 LLM engine (v0.7.3) with config: model='Qwen/Qwen2-7B'", want: Init},
		{name: "vllm load model", line: "(EngineCore_DP0 pid=441) INFO 08-05 09:09:28 [gpu_model_runner.py:1953] Starting to load model Qwen/Qwen3-8B...", want: Weights},
		{name: "vllm shards", engine: "vllm", line: "(EngineCore_DP0 pid=441) Loading safetensors checkpoint shards:  60% Completed | 3/5 [00:02<00:01,  1.10it/s]", want: Weights, prog: Progress{3, 5, "shards"}},
		{name: "vllm shards bare", engine: "vllm", line: "Loading safetensors checkpoint shards: 100% Completed | 5/5 [00:04<00:00,  1.20it/s]", want: Weights, prog: Progress{5, 5, "shards"}},
		{name: "vllm model loading v0.10", line: "(EngineCore_DP0 pid=441) INFO 08-05 09:09:33 [gpu_model_runner.py:2007] Model loading took 15.2683 GiB and 4.780464 seconds", want: KVCache},
		{name: "vllm model loading v0.11", line: "(EngineCore_DP0 pid=441) INFO 10-20 11:02:13 [gpu_model_runner.py:2602] Model loading took 15.2683 GiB memory and 5.101125 seconds", want: KVCache},
		{name: "vllm v0 weights", line: "INFO 02-18 08:50:20 model_runner.py:1115] Loading model weights took 14.9888 GB", want: KVCache},
		{name: "vllm kv memory", line: "(EngineCore_DP0 pid=441) INFO 08-05 09:09:50 [gpu_worker.py:276] Available KV cache memory: 33.31 GiB", want: KVCache},
		{name: "vllm kv size", line: "(EngineCore_DP0 pid=441) INFO 08-05 09:09:50 [kv_cache_utils.py:849] GPU KV cache size: 1,587,648 tokens", want: KVCache},
		{name: "vllm v0 blocks", line: "INFO 02-18 08:50:22 executor_base.py:110] # GPU blocks: 27153, # CPU blocks: 4681", want: KVCache},
		{name: "vllm capture v0.10", engine: "vllm", line: "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|██████████| 51/51 [00:01<00:00, 33.44it/s]", want: GraphCapture, prog: Progress{51, 51, "mixed prefill-decode, PIECEWISE"}},
		{name: "vllm capture v0.9", engine: "vllm", line: "Capturing CUDA graph shapes: 100%|██████████| 35/35 [00:12<00:00,  2.80it/s]", want: GraphCapture, prog: Progress{35, 35, "graphs"}},
		{name: "vllm capture done", line: "(EngineCore_DP0 pid=441) INFO 08-05 09:10:03 [gpu_model_runner.py:2708] Graph capturing finished in 12 secs, took 0.45 GiB", want: GraphCapture},
		{name: "vllm engine ready", line: "(EngineCore_DP0 pid=441) INFO 08-05 09:10:03 [core.py:214] init engine (profile, create kv cache, warmup model) took 46.21 seconds", want: HTTP},
		{name: "vllm v0.10 server", line: "(APIServer pid=1) INFO 08-05 09:10:05 [api_server.py:1880] Starting vLLM API server 0 on http://0.0.0.0:8000", want: HTTP},
		{name: "vllm v0.9 server", line: "INFO 08-05 09:09:26 [api_server.py:1090] Starting vLLM API server on http://0.0.0.0:5306", want: HTTP},
		{name: "vllm 2026 server", line: "(APIServer pid=1) INFO 03-02 12:00:05 [api_server.py:1990] Starting vLLM server on http://0.0.0.0:8000", want: HTTP},
		{name: "vllm uvicorn started", engine: "vllm", line: "(APIServer pid=1) INFO:     Started server process [1]", want: HTTP},
		{name: "vllm ready", engine: "vllm", line: "(APIServer pid=1) INFO:     Application startup complete.", want: Warmup, ready: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHost(t, Options{Engine: tt.engine})
			h.unit("activating", "start", "")
			h.lines(tt.pre...)
			h.lines(tt.line)
			st := h.tr.State()
			if st.Phase != tt.want {
				t.Errorf("phase = %s, want %s", st.Phase, tt.want)
			}
			if st.Progress != tt.prog {
				t.Errorf("progress = %+v, want %+v", st.Progress, tt.prog)
			}
			if st.ReadySeen != tt.ready {
				t.Errorf("ready = %v, want %v", st.ReadySeen, tt.ready)
			}
			if st.Diag != nil {
				t.Errorf("diagnosis %+v from a phase line", st.Diag)
			}
		})
	}
}

// TestEngineDetection checks the engine is named from the first lines.
func TestEngineDetection(t *testing.T) {
	tests := []struct {
		line, want string
	}{
		{"[2025-01-24 09:39:20 TP0] Load weight begin. avail mem=78.50 GB", "sglang"},
		{"[23:17:01 TP7] Init nccl begin.", "sglang"},
		{"[gpu_id=0] Load weight begin. avail mem=78.50 GB", "sglang"},
		{"server_args=ServerArgs(model_path='x')", "sglang"},
		{"(APIServer pid=1) INFO 08-05 09:09:20 [api_server.py:1805] vLLM API server version 0.10.1", "vllm"},
		{"INFO 02-18 08:50:10 api_server.py:912] vLLM API server version 0.8.1", "vllm"},
		{"INFO 02-18 08:50:10 config.py:542] This model supports multiple tasks", "vllm"},
		{"hello world", ""},
	}
	for _, tt := range tests {
		h := newHost(t, Options{Engine: "auto"})
		h.lines(tt.line)
		if got := h.tr.State().Engine; got != tt.want {
			t.Errorf("%q: engine = %q, want %q", tt.line, got, tt.want)
		}
	}
}

// TestPhasesOnlyMoveForward checks that a late line of an earlier phase
// (another rank, a draft model) does not move the startup back.
func TestPhasesOnlyMoveForward(t *testing.T) {
	h := newHost(t, Options{Engine: "sglang"})
	h.unit("activating", "start", "")
	h.lines("[2025-01-24 09:39:31 TP0] Capture cuda graph begin. This can take up to several minutes.",
		"[2025-01-24 09:39:20 TP1] Load weight begin. avail mem=78.50 GB",
		"[2025-01-24 09:39:20 TP1] Load weight end. type=X, avail mem=51.36 GB")
	if got := h.phase(); got != GraphCapture {
		t.Fatalf("phase = %s, want graph-capture", got)
	}
	if n := len(h.tr.State().Spans); n != 2 {
		t.Errorf("spans = %d, want 2 (starting, graph-capture)", n)
	}
}
