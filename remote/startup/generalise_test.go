package startup

import (
	"strings"
	"testing"
)

// TestGeneralisingRanking pins the ranking a person agrees with, on real
// lines: an error over a warning, hardware over the kernel it surfaced in,
// a message that lists possible causes reported as such, the crash a Ray
// worker died of over Ray's list. Each case names where its lines come
// from.
func TestGeneralisingRanking(t *testing.T) {
	// https://github.com/vllm-project/vllm/issues/31273 (corpus
	// vllm-31273-v013-h20-oom-first-shard.log).
	const oom = "(EngineCore_DP0 pid=556790) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 80.00 MiB. GPU 0 has a total capacity of 139.72 GiB of which 60.69 MiB is free. Process 691170 has 139.65 GiB memory in use. Of the allocated memory 139.21 GiB is allocated by PyTorch, and 12.81 MiB is reserved"
	// torchao/__init__.py logs `logger.warning(f"Skipping import of cpp
	// extensions: {e}")` (github.com/pytorch/ao); {e} here is the
	// ImportError text LocalAI's vLLM backend met
	// (https://github.com/mudler/LocalAI/pull/9950).
	const torchaoSkip = "Skipping import of cpp extensions: /backends/cuda13-nvidia-l4t-arm64-vllm/venv/lib/python3.12/site-packages/vllm/_C.abi3.so: undefined symbol: _ZN3c1013MessageLoggerC1EPKciib"
	// https://github.com/vllm-project/vllm/issues/5222 (its title).
	const ecc = "RuntimeError: CUDA error: uncorrectable ECC error encountered"
	// https://github.com/vllm-project/vllm/issues/56180 (corpus
	// vllm-56180-custom-allreduce-after-capture.log).
	const customAR = "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:164 'invalid argument'"
	// https://github.com/sgl-project/sglang/pull/14193.
	const illegal = "[rank1]:[E1209 02:28:15.281862353 ProcessGroupNCCL.cpp:2057] [PG ID 2 PG GUID 3 Rank 1] Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered"
	// Ray's two wordings: https://github.com/hkust-nlp/simpleRL-reason/issues/25
	// and https://github.com/verl-project/verl/issues/4921.
	const rayOld = "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file. There are some potential root causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force is called. (3) The worker is crashed unexpectedly due to SIGSEGV or other unexpected errors."
	const rayNew = "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file. Some common causes include: (1) the process was killed by the OOM killer due to high memory usage, (2) ray stop --force was called, or (3) the worker crashed unexpectedly due to SIGSEGV or another unexpected error."
	// https://github.com/vllm-project/vllm/issues/1091: Ray's list, then
	// the worker's own crash report.
	const sigbus = "(RayWorker pid=1450) *** SIGBUS received at time=1695144916 on cpu 2 ***"
	// https://github.com/sgl-project/sglang/issues/1693: the NCCL
	// watchdog aborts the process by throwing a c10::DistBackendError.
	const watchdogAbort = "terminate called after throwing an instance of 'c10::DistBackendError'"
	const watchdogWhat = "  what():  [PG 3 Rank 5] Process group watchdog thread terminated with exception: [Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9141, OpType=_ALLGATHER_BASE, NumelIn=19008, NumelOut=152064, Timeout(ms)=600000) ran for 600020 milliseconds before timing out."
	// https://github.com/vllm-project/vllm/issues/1846: Ray's driver
	// logs the worker's death at WARNING; the surviving rank then times
	// out on the process group's first collective.
	const rayWarn = "2023-11-30 10:19:23,769 WARNING worker.py:2074 -- A worker died or was killed while executing a task by an unexpected system error. To troubleshoot the problem, check the logs for the dead worker. Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file. There are some potential root causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force is called. (3) The worker is crashed unexpectedly due to SIGSEGV or other unexpected errors."
	const firstCollective = "(RayWorker pid=1080651) [E ProcessGroupNCCL.cpp:474] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800305 milliseconds before timing out."
	// https://github.com/vllm-project/vllm/issues/11617: EADDRINUSE
	// raised where vLLM picks a port for its distributed init method.
	openPort := []string{
		"Traceback (most recent call last):",
		`  File "/miniforge3/envs/vllm/lib/python3.10/site-packages/vllm/utils.py", line 572, in get_open_port`,
		`    s.bind(("", 0))`,
		"OSError: [Errno 98] Address already in use",
	}
	// https://github.com/sgl-project/sglang/issues/4116: argparse's usage
	// block; the error line (its title) after it names the flag.
	const usage = "usage: launch_server.py [-h] --model-path MODEL_PATH [--tokenizer-path TOKENIZER_PATH] [--host HOST] [--port PORT]"
	const unrecognised = "launch_server.py: error: unrecognized arguments: --enable-reasoning"
	tests := []struct {
		name   string
		engine string
		lines  []string
		cause  string
		phase  Phase
		first  string // Evidence[0]
		says   string // a substring of the summary
	}{
		{name: "ray's warning over the timeout it causes", engine: "vllm", lines: []string{rayWarn, firstCollective}, cause: "ray-worker-died", phase: Init, first: rayWarn},
		{name: "a first collective's timeout is init", engine: "vllm", lines: []string{firstCollective}, cause: "nccl-timeout", phase: Init, first: firstCollective},
		{name: "thousands of collectives in is serving", engine: "sglang", lines: []string{watchdogAbort, watchdogWhat}, cause: "nccl-timeout", phase: Serving, first: watchdogWhat},
		{name: "the port that failed decides", engine: "vllm", lines: openPort, cause: "internal-port-in-use", phase: Starting, first: openPort[3]},
		{name: "argparse's error over its usage block", engine: "sglang", lines: []string{usage, unrecognised}, cause: "bad-argument", phase: Starting, first: unrecognised},
		{name: "argparse's usage block alone", engine: "sglang", lines: []string{usage}, cause: "bad-argument", phase: Starting, first: usage},
		{name: "warning decoy before oom", engine: "vllm", lines: []string{torchaoSkip, vlWeights, oom}, cause: "gpu-oom", phase: Weights, first: oom},
		{name: "warning decoy alone still said", engine: "vllm", lines: []string{vlWeights, torchaoSkip}, cause: "import-error", phase: Weights, first: torchaoSkip},
		{name: "ecc in custom all-reduce", engine: "vllm", lines: []string{vlLoaded, customAR, ecc}, cause: "gpu-hardware", phase: KVCache, first: ecc, says: "hardware"},
		{name: "ecc after illegal access", engine: "sglang", lines: []string{sgCapture, illegal, ecc}, cause: "gpu-hardware", phase: GraphCapture, first: ecc},
		{name: "ray list old wording", engine: "vllm", lines: []string{vlWeights, rayOld}, cause: "ray-worker-died", phase: Weights, first: rayOld, says: "does not say which"},
		{name: "ray list new wording", engine: "vllm", lines: []string{vlWeights, rayNew}, cause: "ray-worker-died", phase: Weights, first: rayNew, says: "does not say which"},
		{name: "the watchdog's DistBackendError is a timeout", engine: "sglang", lines: []string{sgCapture, watchdogAbort, watchdogWhat}, cause: "nccl-timeout", phase: GraphCapture, first: watchdogWhat},
		{name: "ray list then the crash", engine: "vllm", lines: []string{vlWeights, rayOld, sigbus}, cause: "bus-error", phase: Weights, first: sigbus},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := failWith(t, tt.engine, tt.lines)
			if d.Cause != tt.cause || d.Phase != tt.phase {
				t.Errorf("cause, phase = %s, %s; want %s, %s (evidence %q)", d.Cause, d.Phase, tt.cause, tt.phase, d.Evidence)
			}
			if len(d.Evidence) == 0 || d.Evidence[0] != tt.first {
				t.Errorf("evidence = %q, want it to start with %q", d.Evidence, tt.first)
			}
			if !strings.Contains(d.Summary, tt.says) {
				t.Errorf("summary %q, want it to say %q", d.Summary, tt.says)
			}
			if d.Cause == "gpu-hardware" && strings.Contains(d.Hint, "custom-all-reduce") {
				t.Errorf("hint %q: a flag cannot fix a hardware fault", d.Hint)
			}
		})
	}
}

// TestRayListIsNoSystemdOOMKill: Ray's list says "killed by the OOM
// killer"; only systemd's own line is the unit's OOM kill.
func TestRayListIsNoSystemdOOMKill(t *testing.T) {
	// https://github.com/verl-project/verl/issues/4921.
	const rayNew = "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file. Some common causes include: (1) the process was killed by the OOM killer due to high memory usage, (2) ray stop --force was called, or (3) the worker crashed unexpectedly due to SIGSEGV or another unexpected error."
	if d := failWith(t, "vllm", []string{vlWeights, rayNew}); d.Cause == "host-oom-kill" {
		t.Errorf("cause %s: Ray's list read as systemd's OOM kill", d.Cause)
	}
}

// TestStableTokenRules runs the rules anchored on the stack's own
// vocabulary (exception classes, error names, flags) on real lines.
func TestStableTokenRules(t *testing.T) {
	tests := []struct {
		name   string
		engine string
		lines  []string
		cause  string
		phase  Phase
		first  string // Evidence[0]; "" = the last of lines
	}{
		// https://github.com/groundlight/r1_vlm/issues/59: multiprocessing's
		// message, on the lines after `raise RuntimeError('''`.
		{name: "spawn without main guard", engine: "vllm", lines: []string{
			"RuntimeError: ",
			"        An attempt has been made to start a new process before the",
			"        current process has finished its bootstrapping phase.",
			"",
			"        This probably means that you are not using fork to start your",
			// The child dies re-importing the parent's script, whatever the
			// parent was doing: no phase is placed where the log shows none.
		}, cause: "spawn-main-guard", phase: Starting, first: "        An attempt has been made to start a new process before the"},
		// https://github.com/QwenLM/Qwen3-VL/issues/264.
		{name: "safetensors incomplete", engine: "vllm", lines: []string{
			`File "/workspace/vllm/vllm-venv/lib/python3.10/site-packages/vllm/model_executor/model_loader/weight_utils.py", line 406, in safetensors_weights_iterator`,
			`    with safe_open(st_file, framework="pt") as f:`,
			"safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer",
		}, cause: "checkpoint-corrupt", phase: Weights},
		// https://github.com/vllm-project/vllm/issues/13899.
		{name: "safetensors header", engine: "vllm", lines: []string{vlWeights, "ERROR 02-26 05:28:06 engine.py:400] Error while deserializing header: InvalidHeaderDeserialization"}, cause: "checkpoint-corrupt", phase: Weights},
		// https://github.com/vllm-project/vllm/issues/11931 (its title).
		{name: "device-side assert", engine: "vllm", lines: []string{vlLoaded, "RuntimeError: CUDA error: device-side assert triggered"}, cause: "device-assert", phase: KVCache},
		// https://github.com/sgl-project/sglang/pull/23181: SGLang's KV
		// budget error reworded; the flag stays.
		{name: "kv budget reworded", engine: "sglang", lines: []string{sgWeights, "Possible fixes: increase --mem-fraction-static, reduce --chunked-prefill-size, or reduce --max-running-requests."}, cause: "kv-budget", phase: KVCache},
		// https://github.com/vllm-project/vllm/issues/1091.
		{name: "sigbus", engine: "vllm", lines: []string{vlWeights, "(RayWorker pid=1450) Fatal Python error: Bus error"}, cause: "bus-error", phase: Weights},
		// https://github.com/ostris/ai-toolkit/issues/470.
		{name: "ecc by cudaError name", engine: "sglang", lines: []string{sgWeights, "CUDA error: uncorrectable ECC error encountered Search for `cudaErrorECCUncorrectable' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information. CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect. For debugging consider passing CUDA_LAUNCH_BLOCKING=1 Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."}, cause: "gpu-hardware", phase: Weights},
		// https://github.com/sgl-project/sglang/pull/14193.
		{name: "illegal address by cudaError name", engine: "sglang", lines: []string{sgCapture, "Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information."}, cause: "illegal-memory-access", phase: GraphCapture},
		// https://github.com/sgl-project/sglang/pull/577: a KeyError raised
		// in the model's load_weights is a checkpoint the model does not fit.
		{name: "keyerror in load_weights", engine: "sglang", lines: []string{
			"Initialization failed. router_init_state: Traceback (most recent call last):",
			`  File "/root/.local/lib/python3.10/site-packages/sglang/srt/managers/router/model_runner.py", line 326, in load_model`,
			"    model.load_weights(",
			`  File "/root/.local/lib/python3.10/site-packages/sglang/srt/models/gemma.py", line 327, in load_weights`,
			"    param = params_dict[name]",
			"KeyError: 'lm_head.weight'",
		}, cause: "checkpoint-mismatch", phase: Weights},
		// vLLM's linear layers check a tensor's shape as they load it.
		{name: "bare assert in weight_loader", engine: "vllm", lines: []string{
			vlWeights,
			`  File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/layers/linear.py", line 1099, in weight_loader`,
			"    assert param_data.shape == loaded_weight.shape",
			"AssertionError",
		}, cause: "checkpoint-mismatch", phase: Weights},
		// https://github.com/sgl-project/sglang/issues/271: CUDA's own
		// report of a kernel's assert, before any traceback.
		{name: "device assert report", engine: "sglang", lines: []string{sgWeights,
			"../aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [0,0,0], thread: [4,0,0] Assertion `-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` failed.",
		}, cause: "device-assert", phase: Weights},
		// https://github.com/vllm-project/vllm/issues/1284: the GPU is
		// refused outright; the dtype line before it is a consequence.
		{name: "compute capability over dtype", engine: "vllm", lines: []string{
			"Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla P100-PCIE-16GB GPU has compute capability 6.0.",
			"RuntimeError: GPUs with compute capability below 7.0 are not supported.",
		}, cause: "cuda-setup", phase: Init},
		// https://github.com/nagadit/DeepFaceLab_Linux/issues/89.
		{name: "ecc by driver name", engine: "vllm", lines: []string{vlInit, "F tensorflow/stream_executor/lib/statusor.cc:34] Attempting to fetch value instead of handling error Internal: failed initializing StreamExecutor for CUDA device ordinal 0: Internal: failed call to cuDevicePrimaryCtxRetain: CUDA_ERROR_ECC_UNCORRECTABLE: uncorrectable ECC error encountered"}, cause: "gpu-hardware", phase: Init},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := failWith(t, tt.engine, tt.lines)
			if d.Cause != tt.cause || d.Phase != tt.phase {
				t.Errorf("cause, phase = %s, %s; want %s, %s (evidence %q)", d.Cause, d.Phase, tt.cause, tt.phase, d.Evidence)
			}
			first := tt.first
			if first == "" {
				first = tt.lines[len(tt.lines)-1]
			}
			if len(d.Evidence) == 0 || d.Evidence[0] != first {
				t.Errorf("evidence = %q, want it to start with %q", d.Evidence, first)
			}
			if d.Summary == "" || d.Hint == "" {
				t.Errorf("summary %q, hint %q", d.Summary, d.Hint)
			}
		})
	}
}

// TestPhaseGenericSummary: an error no rule knows is "<phase> failed" with
// the phase's hint where the phase is known, "unrecognised error" where it
// is not; the cause id stays unrecognised.
func TestPhaseGenericSummary(t *testing.T) {
	// The corpus's sglang-5095-gcp-reversed-keyerror-input-scale-fresh.log
	// (https://github.com/sgl-project/sglang/issues/5095).
	const keyErr = "KeyError: 'model.layers.55.mlp.gate_up_proj.input_scale'"
	tests := []struct {
		name  string
		lines []string
		phase Phase
		says  []string
	}{
		{name: "weights", lines: []string{sgWeights, keyErr}, phase: Weights, says: []string{"weights failed", keyErr}},
		{name: "unknown phase", lines: []string{keyErr}, phase: Starting, says: []string{"unrecognised error: " + keyErr}},
		// A KeyError raised anywhere but weight loading is no checkpoint
		// mismatch (transformers too old to know the model type).
		{name: "keyerror outside weight loading", lines: []string{
			"Traceback (most recent call last):",
			`  File "/usr/local/lib/python3.10/dist-packages/transformers/models/auto/configuration_auto.py", line 710, in __getitem__`,
			"    raise KeyError(key)",
			"KeyError: 'qwen2_vl'",
		}, phase: Starting, says: []string{"unrecognised error: KeyError: 'qwen2_vl'"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := failWith(t, "sglang", tt.lines)
			if d.Cause != CauseUnrecognised || d.Phase != tt.phase {
				t.Errorf("cause, phase = %s, %s; want %s, %s", d.Cause, d.Phase, CauseUnrecognised, tt.phase)
			}
			for _, s := range tt.says {
				if !strings.Contains(d.Summary, s) {
					t.Errorf("summary %q, want it to say %q", d.Summary, s)
				}
			}
			if h := phaseHints[tt.phase]; h != "" && !strings.HasPrefix(d.Hint, h) {
				t.Errorf("hint %q, want the %s hint first", d.Hint, tt.phase)
			}
		})
	}
}

// TestIsDecoy: the stack's own warning words make a decoy; a raised
// exception never is one.
func TestIsDecoy(t *testing.T) {
	tests := []struct {
		line string
		want bool
	}{
		// https://github.com/sgl-project/sglang/issues/5389.
		{"[2025-04-15 12:43:15 TP0] Ignore import error when loading sglang.srt.models.qwen2_5_vl. No module named 'transformers.models.qwen2_5_vl'", true},
		// https://github.com/sgl-project/sglang/issues/1321.
		{"WARNING 09-04 04:55:04 _core_ext.py:180] Failed to import from vllm._core_C with ImportError('/opt/conda/lib/python3.10/site-packages/vllm/_core_C.abi3.so: undefined symbol: _ZN5torch6detail10class_baseC2ERKSsS3_SsRKSt9type_infoS6_')", true},
		// https://github.com/Comfy-Org/ComfyUI/issues/10371.
		{"Skipping import of cpp extensions due to incompatible torch version 2.8.0+cu129 for torchao version 0.14.0         Please see GitHub issue #2919 for more info", true},
		// https://github.com/vllm-project/vllm/issues/5222.
		{"RuntimeError: CUDA error: uncorrectable ECC error encountered", false},
		// https://github.com/vllm-project/vllm/issues/31273.
		{"(EngineCore_DP0 pid=556790) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 80.00 MiB. GPU 0 has a total capacity of 139.72 GiB of which 60.69 MiB is free.", false},
	}
	for _, tt := range tests {
		if got := isDecoy(tt.line); got != tt.want {
			t.Errorf("isDecoy(%q) = %v, want %v", tt.line, got, tt.want)
		}
	}
}

// failWith feeds lines to a started unit that then exits failed, and
// returns the diagnosis.
func failWith(t *testing.T, engine string, lines []string) *Diagnosis {
	t.Helper()
	h := newHost(t, Options{Engine: engine})
	h.unit("activating", "start", "")
	h.lines(lines...)
	h.exitFailure()
	st := h.tr.State()
	if st.Phase != Failed || st.Diag == nil {
		t.Fatalf("phase %s, diagnosis %v; want failed with one", st.Phase, st.Diag)
	}
	return st.Diag
}
