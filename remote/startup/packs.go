package startup

import "sync"

// Hints shared by rules of both engines, so that the two packs say the same
// thing about the same failure.
const (
	hintGraphOff  = "confirm with --disable-cuda-graph (SGLang) / --enforce-eager (vLLM), then retry without --enable-torch-compile and report the op"
	hintWrapper   = "a secondary error: the root cause is the first error above it in the log"
	hintModelPath = "check the model path exists and is readable by the service user; set HF_TOKEN for gated repos, HF_HUB_OFFLINE=1 when the weights are local"
)

// What an invalid command line says.
const (
	badArgumentSummary = "the engine's command line is invalid"
	badArgumentHint    = "fix the flag in the unit's ExecStart (systemctl cat <unit>); the engine's --help lists what this version accepts"
)

// What a taken internal port says.
const (
	internalPortSummary = "an internal port (ZMQ, torch TCPStore, the distributed init method) is already in use"
	internalPortHint    = "orphaned processes of a previous run hold it: stop the whole cgroup; or pick another --nccl-port / --dist-init-addr port"
)

// What a collective's timeout says: the rank that times out is a victim.
const (
	ncclTimeoutSummary = "a collective operation timed out"
	ncclTimeoutHint    = "one rank is dead or stuck: find the first rank that logged an error; the others only time out"
)

// What an engine's refusal of a model, quantization or dtype says.
const (
	modelUnsupportedSummary = "the engine does not support this model, quantization or dtype on this GPU"
	modelUnsupportedHint    = "pick a supported architecture/quantization or a dtype the GPU has (e.g. --dtype float16 on pre-Ampere GPUs), or upgrade the engine"
)

// What CUDA setup failures say, device or kernel image alike.
const (
	cudaSetupSummary = "CUDA (or HIP) cannot use the GPU: no device, a driver too old, or a build not made for this GPU"
	cudaSetupHint    = "check nvidia-smi (rocm-smi) in the unit's environment, CUDA_VISIBLE_DEVICES, that the driver matches the CUDA/ROCm build, and that the wheels were built for this GPU's architecture"
)

// BuiltinPacks returns the rule packs for SGLang and vLLM. The strings come
// from the engines' sources and real logs (research notes, logformats.md
// §1.2, §1.3, §3.2, §3.3, §4, §7), older wordings included, because
// releases keep rewording them.
func BuiltinPacks() []RulePack {
	return []RulePack{sglangPack(), vllmPack()}
}

// WithBuiltins returns the packs a tracker runs with user packs added: the
// user packs marked First, the built-in packs, then the other user packs.
// Where two rules match a line the earlier wins.
func WithBuiltins(user []RulePack) []RulePack {
	var first, rest []RulePack
	for _, p := range user {
		if p.First {
			first = append(first, p)
		} else {
			rest = append(rest, p)
		}
	}
	return append(append(first, BuiltinPacks()...), rest...)
}

// builtinCompiled compiles the built-in packs once for all trackers; they
// are tested, so an error here is a bug.
var builtinCompiled = sync.OnceValue(func() []*CompiledPack {
	c, err := CompilePacks(BuiltinPacks())
	if err != nil {
		panic("startup: built-in rule packs: " + err.Error())
	}
	return c
})

// shardRule matches the weight-shard bar both engines print (its format
// ends in "\n", so every refresh is its own journal line).
var shardRule = PhaseRule{
	Keywords: []string{"checkpoint shards", "Multi-thread loading shards"},
	Pattern:  `(?:Loading (?:safetensors|pt) checkpoint shards|Multi-thread loading shards):\s+\d+% Completed \| (?P<done>\d+)/(?P<total>\d+)`,
	Phase:    Weights,
	Label:    "shards",
}

// firstCollectiveRule reads torch's watchdog report of a process group's
// first collective (WorkNCCL's SeqNum counts a group's collectives from
// 1): both engines make their groups, and run the first collective on
// them (vLLM's one-element warm-up all-reduce, SGLang's memory check),
// while they set up distributed state, so a timeout of SeqNum=1 says the
// start-up was in init when it hung, whenever it is printed.
var firstCollectiveRule = PhaseRule{Keywords: []string{"WorkNCCL(SeqNum=1,"}, Phase: Init}

// SGLang's stats labels, shared by its decode and prefill lines
// (scheduler_metrics_mixin.py; scheduler.py before 0.4.6): "#running-req:
// 8", "#queue-req: 0", "token usage: 0.12" ("full token usage" with a
// hybrid pool), "cuda graph: True" (npu/cpu graph on those devices).
var (
	sglRunning = []string{"#running-req: "}
	sglQueued  = []string{"#queue-req: "}
	sglUsage   = []string{"token usage: "}
	sglGraph   = []string{"cuda graph: ", "npu graph: ", "cpu graph: "}
)

func sglangMetrics() []MetricRule {
	return []MetricRule{
		{
			// "Decode batch. #running-req: 8, #token: 62531, token usage:
			// 0.12, gen throughput (token/s): 186.64, #queue-req: 0" (0.1 →
			// 0.4.x, with "[gpu_id=0] " before 0.3), "Decode batch,
			// #running-req: 32, …, cuda graph: True, gen throughput
			// (token/s): 1635.11, #queue-req: 0" (0.5 on).
			Keywords: []string{"Decode batch"},
			GenTPS:   []string{"gen throughput (token/s): "},
			Running:  sglRunning, Queued: sglQueued, KVUsage: sglUsage, Graph: sglGraph,
		},
		{
			// "Prefill batch. #new-seq: 1, #new-token: 7, …" (no rate before
			// 0.4.x), "Prefill batch, #new-seq: 1, …, cuda graph: True,
			// input throughput (token/s): 559.53". A prefill's graph flag is
			// not the decode's: left out.
			Keywords:  []string{"Prefill batch"},
			PromptTPS: []string{"input throughput (token/s): "},
			Running:   sglRunning, Queued: sglQueued, KVUsage: sglUsage,
		},
	}
}

// vllmMetrics reads vLLM's periodic stats line: V0's metrics.py "Avg prompt
// throughput: 0.0 tokens/s, Avg generation throughput: 44.9 tokens/s,
// Running: 2 reqs, Swapped: 0 reqs, Pending: 3 reqs, GPU KV cache usage:
// 82.1%, CPU KV cache usage: 0.0%" and V1's loggers.py "Engine 000: Avg
// prompt throughput: …, Running: 1 reqs, Waiting: 0 reqs, [Preemptions: N,]
// GPU KV cache usage: 17.5%, Prefix cache hit rate: …".
func vllmMetrics() []MetricRule {
	return []MetricRule{{
		Keywords:  []string{"Avg generation throughput"},
		GenTPS:    []string{"Avg generation throughput: "},
		PromptTPS: []string{"Avg prompt throughput: "},
		Running:   []string{"Running: "},
		Queued:    []string{"Waiting: ", "Pending: "},
		KVPercent: []string{"GPU KV cache usage: "},
	}}
}

func sglangPack() RulePack {
	return RulePack{
		Engine:  "sglang",
		Metrics: sglangMetrics(),
		Detect:  []string{"server_args=", "[gpu_id=", "sglang/srt", "sglang::", "The server is fired up"},
		// The logger prefix: [date time TAGS], [time TAGS] (v0.3).
		DetectPattern: `\[(?:\d{4}-\d{2}-\d{2} )?\d{2}:\d{2}:\d{2}(?: (?:DP|PP|TP|EP|ATTN_CP|MOE_DP)\d+)*\] `,
		Phases: []PhaseRule{
			{Keywords: []string{"server_args="}, Phase: Init},
			{Keywords: []string{"Init torch distributed", "Init nccl begin", "Initializing distributed environment", "ncclCommInitRank", "NCCL INFO Bootstrap", "[Gloo] Rank"}, Phase: Init},
			firstCollectiveRule,
			{Keywords: []string{"Load weight begin", "load weight begin"}, Phase: Weights},
			shardRule,
			// SGLang's diffusion runtime (sglang serve).
			{Keywords: []string{"Loading model from", "Loading pipeline modules", "Loading required modules"}, Pattern: `Loading (?:model from \d+ safetensors file|pipeline modules|required modules)`, Phase: Weights},
			// Weights end when the load ends; the KV pool is sized right after.
			{Keywords: []string{"Load weight end"}, Phase: KVCache, Ends: Weights},
			{Keywords: []string{"host memory for hierarchical KV cache", "KV Cache is allocated", "Mamba Cache is allocated", "Memory pool end", "Memory profiling:", "SWAKVPool mem usage"}, Phase: KVCache},
			{
				Keywords: []string{"Capture "},
				Pattern:  `Capture (?:\w+ )*(?:cuda|CUDA|npu|cpu) graph (?:begin|bs \[)`,
				Phase:    GraphCapture,
			},
			{
				Keywords: []string{"Capturing batches", "Capturing num tokens"},
				Pattern:  `Capturing (?:batches|num tokens) \((?P<label>(?:bs|num_tokens)=\d+)?[^)]*\)(?::\s+\d+%\|[^|]*\|\s*(?P<done>\d+)/(?P<total>\d+))?`,
				Phase:    GraphCapture,
				Label:    "batches",
			},
			// ≤v0.4.1 printed the capture bar bare; only count it in capture.
			{
				Keywords: []string{"it/s]", "s/it]"},
				Pattern:  `^\s*\d+%\|[^|]*\|\s*(?P<done>\d+)/(?P<total>\d+) \[`,
				InPhases: []Phase{GraphCapture},
				Label:    "batches",
			},
			{Keywords: []string{"graph end.", "graph end. "}, Pattern: `Capture .*graph end\.`, Phase: GraphCapture},
			{Keywords: []string{"Capture cuda graph end", "Capture CUDA graph end"}, Phase: GraphCapture},
			{Keywords: []string{"cuda graph addresses"}, Phase: GraphCapture},
			{Keywords: []string{"max_total_num_tokens=", "Engine startup timings", "Uvicorn running on", "Started server process", "Waiting for application startup", "Application startup complete"}, Phase: HTTP},
			{
				// The server's own warmup request; on NPU builds it is a chat
				// completion. Before serving, a 200 on these is the warmup.
				Keywords: []string{"model_info HTTP", "POST /generate HTTP", "POST /encode HTTP", "POST /v1/chat/completions HTTP"},
				Pattern:  `"(?:GET /(?:get_)?model_info|POST /(?:generate|encode|v1/chat/completions)) HTTP/1\.[01]" 200`,
				Phase:    Warmup,
			},
			{Keywords: []string{"Endpoint '/get_model_info' is deprecated", "disaggregation warmup", "disaggregation mode warmup"}, Phase: Warmup},
			// The warmups --warmups names (warmup.py's execute_warmups,
			// e.g. compile-deep-gemm), run as the server starts.
			{Keywords: []string{"Running warmup "}, Pattern: `Running warmup [\w-]+\s*$`, Phase: Warmup},
			{Keywords: []string{"The server is fired up and ready to roll"}, Phase: Warmup, Ready: true},
		},
		Frames: commonFrames(),
		Failures: append(commonSpecificFailures(), append([]FailureRule{
			{
				Keywords: []string{"Initialization failed. warmup error"},
				Cause:    "warmup-failed", Phase: Warmup, Fatal: true,
				Summary: "the server came up but its warmup request failed",
				Hint:    "read the warmup traceback; the first generate failed (often a kernel or memory error at the first real batch)",
			},
			{
				Keywords: []string{"could finish the model loading, but there are other ranks"},
				Cause:    "load-straggler", Phase: Weights, Wrapper: true,
				Summary: "another tensor-parallel rank did not finish loading the weights",
				Hint:    "look for the first error of the slow rank (often OOM) or a slow node",
			},
			{
				Keywords: []string{"Scheduler hit an exception", "Initialization failed. Please see the error messages above", "TpModelWorkerClient hit an exception", "DataParallelController hit an exception", "Exception in run_tp_server", "Exception in ModelTpServer",
					// ≤0.2: the launcher reports its children's states.
					"Initialization failed. router_init_state", "Initialization failed. detoken_init_state"},
				Cause: "scheduler-crash", Wrapper: true, Relay: true,
				Summary: "an SGLang scheduler process raised an exception",
				Hint:    "the real error is in the traceback after 'Scheduler hit an exception:', on the rank that printed it",
			},
			{
				Keywords: []string{"scheduler died during initialization", "scheduler is dead"},
				Cause:    "scheduler-died", Wrapper: true, Fatal: true,
				Summary: "an SGLang scheduler process died without a Python traceback",
				Hint:    "exit code -9 is SIGKILL (often the host OOM killer: dmesg -T | grep -i oom), -11 a segfault (coredumpctl)",
			},
			{
				Keywords: []string{"Received sigquit from a child proces", "Child process unexpectedly failed with"},
				Cause:    "child-failed", Wrapper: true, Fatal: true, Relay: true,
				Summary: "an SGLang child process failed and the server shut down",
				Hint:    hintWrapper,
			},
			{
				Keywords: []string{"DetokenizerManager hit an exception", "couldn't get a response from detokenizer"},
				Cause:    "detokenizer", Wrapper: true,
				Summary: "the SGLang detokenizer process died or stopped answering",
				Hint:    "at start-up the tokenizer failed to load (check the traceback, HF rate limits); at run time a scheduler or collective hang",
			},
			{
				Keywords: []string{"Watchdog timeout (self.watchdog_timeout"},
				Cause:    "scheduler-watchdog", Wrapper: true,
				Summary: "a forward pass hung past the scheduler watchdog",
				Hint:    "a rank is stuck (collective hang, custom all-reduce); collect py-spy dump, try --disable-custom-all-reduce",
			},
		}, commonWrapperFailures()...)...),
	}
}

func vllmPack() RulePack {
	return RulePack{
		Engine:  "vllm",
		Metrics: vllmMetrics(),
		Detect:  []string{"vLLM API server version", "(EngineCore", "(APIServer pid=", "(VllmWorker", "LLM engine (v", "Starting vLLM"},
		// The logger prefix: LEVEL mm-dd hh:mm:ss.
		DetectPattern: `(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d{2}-\d{2} \d{2}:\d{2}:\d{2} `,
		Phases: []PhaseRule{
			// vLLM ≥ 0.2x prints its version in a banner of block glyphs.
			{Keywords: []string{"█  version", "▀  version", "▄  version"}, Pattern: `[█▀▄]\s+version \d+\.\d+`, Phase: Init},
			{Keywords: []string{"vLLM API server version", "non-default args:", "Resolved architecture:", "Waiting for init message from front-end", "distributed_init_method=", "ncclCommInitRank", "NCCL INFO Bootstrap", "vLLM is using nccl", "[Gloo] Rank", "in world size", "compilation_config=", "Connecting to existing Ray cluster"}, Phase: Init},
			{Keywords: []string{"LLM engine (v", "Initializing an LLM engine", "Initializing a V1 LLM engine", "Initializing a V0 LLM engine"}, Phase: Init},
			firstCollectiveRule,
			{Keywords: []string{"Starting to load model", "Pre-loading model weights on", "Init model | hbm"}, Phase: Weights},
			shardRule,
			{Keywords: []string{"Loading weights took"}, Phase: Weights},
			// Weights end when loading is reported; profiling, compile and
			// KV sizing follow.
			{Keywords: []string{"Model loading took", "Loading model weights took"}, Phase: KVCache, Ends: Weights},
			{Keywords: []string{"Available KV cache memory", "KV cache size:", "# GPU blocks:", "# cuda blocks:", "Maximum concurrency for", "torch.compile takes", "Dynamo bytecode transform", "Compiling a graph for dynamic shape", "Directly load the compiled graph", "Initial profiling/warmup run took", "Memory profiling takes"}, Phase: KVCache},
			{
				Keywords: []string{"Capturing CUDA graph"},
				Pattern:  `Capturing CUDA graph(?:s \((?P<label>[^)]*)\)| shapes)(?::\s+\d+%\|[^|]*\|\s*(?P<done>\d+)/(?P<total>\d+))?`,
				Phase:    GraphCapture,
				Label:    "graphs",
			},
			{Keywords: []string{"Capturing cudagraphs for decoding", "Capturing the model for CUDA graphs", "Graph capturing finished", "CUDA graph pool memory"}, Phase: GraphCapture},
			{Keywords: []string{"init engine (profile, create kv cache, warmup model) took", "Core engine process", "Starting vLLM API server", "Starting vLLM server", "Supported_tasks", "Supported tasks", "Available routes are", "Started server process", "Waiting for application startup"}, Phase: HTTP},
			{Keywords: []string{"Route: /"}, Pattern: `Route: /\S*, Methods:`, Phase: HTTP},
			{Keywords: []string{"Application startup complete"}, Phase: Warmup, Ready: true},
		},
		Frames: commonFrames(),
		// vLLM compiles the model (torch.compile) in one step only, after
		// the weights, as it profiles memory: kv-cache by FORMAT.md.
		Failures: append(append([]FailureRule{inductorRule(KVCache)}, commonSpecificFailures()...), append([]FailureRule{
			{
				Keywords: []string{"EngineCore failed to start", "WorkerProc failed to start", "Engine core initialization failed", "Engine process failed to start"},
				Cause:    "vllm-engine-failed", Wrapper: true, Fatal: true, Relay: true,
				Summary: "the vLLM engine core failed to start",
				Hint:    "never the cause itself: the first ERROR … [core.py] / WorkerProc line above it is",
			},
			{
				Keywords: []string{"WorkerProc hit an exception", "EngineCore hit an exception", "Exception in worker", "Worker failed with error", "AsyncLLM output_handler failed", "EngineCore encountered a fatal error", "EngineDeadError", "died unexpectedly"},
				Cause:    "vllm-engine-failed", Wrapper: true, Relay: true,
				Summary: "a vLLM worker process raised an exception",
				Hint:    "the worker's traceback names the cause",
			},
		}, commonWrapperFailures()...)...),
	}
}

// commonSpecificFailures are the root-cause rules both engines share, most
// specific first: the first rule that matches a line classifies it.
func commonSpecificFailures() []FailureRule {
	oom := []string{"out of memory", "OutOfMemoryError", "cudaErrorMemoryAllocation"}
	// The error, not advice about it ("If you are running out of memory,
	// consider …" is printed by healthy startups).
	oomPattern := `(?:CUDA|HIP|NPU|XPU|MUSA|cuda|hip|npu|xpu)(?: driver)?(?: error)?:? out of memory|OutOfMemoryError|out of memory occurred|out of memory\. Tried to allocate|cudaErrorMemoryAllocation`
	return []FailureRule{
		{
			// GPU hardware: CUDA's cudaErrorECCUncorrectable ("uncorrectable
			// ECC error encountered"), the driver's Xid reports, a GPU that
			// left the PCIe bus. Whatever kernel it surfaced in (a custom
			// all-reduce, an NCCL call), no software change fixes it.
			Keywords: []string{"uncorrectable ECC error", "cudaErrorECCUncorrectable", "CUDA_ERROR_ECC_UNCORRECTABLE", "hipErrorECCNotCorrectable", "fallen off the bus", "NVRM: Xid", "cudaErrorNvlinkUncorrectable", "uncorrectable NVLink error", "GPU is lost"},
			Cause:    "gpu-hardware", Hardware: true,
			Summary: "a GPU hardware fault (uncorrectable ECC error, Xid, GPU fallen off the bus): software fails because of it",
			Hint:    "not fixable by flags: check nvidia-smi -q -d ECC,PAGE_RETIREMENT and dmesg -T | grep -i xid; drain the host, reset the GPU (nvidia-smi -r) or reboot; if it recurs, replace the GPU",
		},
		{
			// Ray lists what can have killed a worker and does not know
			// which: "(1) … killed by the OOM killer … (2) ray stop --force
			// … (3) … SIGSEGV". Anchored on the command it names, so the
			// list is not read as one of its items.
			// A wrapper: where the log names the crash (SIGBUS, a
			// traceback), that line is the cause.
			// Ray's exit type of a worker that died of a signal or a
			// lost connection (WorkerExitType SYSTEM_ERROR) says no more.
			Keywords: []string{"ray stop --force", "Worker exit type: SYSTEM_ERROR"},
			Cause:    "ray-worker-died", Wrapper: true,
			// The ranks that live on wait for the dead one at their next
			// collective and time out: a consequence, though Ray reports
			// the death at its WARNING level (its driver survives it).
			Outranks: []string{"nccl-timeout"},
			Summary:  "a Ray worker died: OOM-killed, stopped or crashed — the log does not say which",
			Hint:     "look at dmesg -T | grep -i oom on the worker's node and at the Ray logs of the dead worker (/tmp/ray/session_latest/logs: raylet.out, the worker's .err); Ray names the worker's pid and node",
		},
		{
			// multiprocessing under spawn re-imports the main module; a
			// launcher that starts the engine at import time then starts
			// it again in every child (spawn.py's _check_not_importing_main).
			// Its first lines, and the advice after them (an excerpt may
			// start there). It strikes in whatever the parent was doing
			// when it started the child: no usual phase.
			Keywords: []string{"its bootstrapping phase", "to start a new process before the", "not using fork to start your"},
			Cause:    "spawn-main-guard",
			Summary:  "a process was started while the main module was still being imported under multiprocessing spawn: the launch script has no __main__ guard",
			Hint:     "put the script's start-up code under if __name__ == '__main__': (or launch the engine's own CLI), or let it fork (VLLM_WORKER_MULTIPROC_METHOD=fork)",
		},
		{
			// A kernel's assert (an index out of range: token ids past the
			// vocabulary, a bad expert id): cudaErrorAssert.
			// The kernel's own report comes first: CUDA's device
			// __assert_fail prints "block: [0,0,0], thread: [4,0,0]
			// Assertion `…` failed."
			Keywords: []string{"device-side assert triggered", "cudaErrorAssert", "hipErrorAssert", "thread: ["},
			Pattern:  `device-side assert triggered|cudaErrorAssert|hipErrorAssert|block: \[\d+,\d+,\d+\], thread: \[\d+,\d+,\d+\] Assertion`,
			Cause:    "device-assert",
			Summary:  "a GPU kernel's assertion failed (device-side assert triggered)",
			Hint:     "usually an index out of range (token ids past the vocabulary, a tokenizer that does not match the model): rerun with CUDA_LAUNCH_BLOCKING=1 to find the kernel; check the model's config against its tokenizer",
		},
		{
			Keywords: []string{"operation not permitted when stream is capturing", "cudaErrorStreamCaptureUnsupported", "during CUDA graph capture"},
			Cause:    "graph-capture-host-sync", Phase: GraphCapture,
			Summary: "graph capture failed: an op synchronised with the host (.item(), .cpu(), RNG seed) while the stream was capturing",
			Hint:    "find the op in the traceback; " + hintGraphOff,
		},
		{
			Keywords: []string{"capturing stream has unjoined work"},
			Cause:    "graph-capture-unjoined-work", Phase: GraphCapture,
			Summary: "graph capture failed: a side stream's work was not joined into the capture",
			Hint:    "a side stream is not graph-safe (e.g. DeepEP normal mode): use its low-latency mode or " + hintGraphOff,
		},
		{
			Keywords: oom, Pattern: oomPattern, InPhases: []Phase{GraphCapture},
			Cause: "graph-capture-oom", Phase: GraphCapture,
			Summary: "CUDA ran out of memory while capturing CUDA graphs",
			Hint:    "lower --mem-fraction-static by 0.03-0.05 or --cuda-graph-max-bs (SGLang); lower gpu_memory_utilization or max_num_seqs (vLLM)",
		},
		{
			Keywords: []string{"an illegal memory access was encountered", "Memory access fault by GPU", "illegal instruction was encountered", "misaligned address", "cudaErrorIllegalAddress", "hipErrorIllegalAddress", "unspecified launch failure", "cudaErrorLaunchFailure"},
			Cause:    "illegal-memory-access",
			Summary:  "a GPU kernel faulted (illegal memory access)",
			Hint:     "a kernel bug or a kernel/GPU mismatch, not a memory shortage: rerun with CUDA_LAUNCH_BLOCKING=1 to find the kernel; try another attention backend, drop --enable-torch-compile, or --disable-cuda-graph / --enforce-eager",
		},
		{
			Keywords: []string{"custom_all_reduce.cuh", "custom_all_reduce.py"},
			Pattern:  `custom_all_reduce\.cuh:\d+ '|Failed: Cuda error .*custom_all_reduce`,
			// It fails wherever the kernel first runs or its IPC buffers
			// are opened (distributed init, the profiling run, capture,
			// serving): no usual phase.
			Cause:   "custom-allreduce",
			Summary: "the custom all-reduce kernel failed (CUDA IPC between the GPUs)",
			Hint:    "peer-to-peer access between the GPUs does not work here: start with --disable-custom-all-reduce; check nvidia-smi topo -m and NCCL_P2P_DISABLE",
		},
		{
			Keywords: []string{"Segmentation fault", "Caught signal 11", "SIGSEGV", "Fatal Python error: Aborted", "core dumped"},
			Cause:    "segfault", Native: true,
			Summary: "a native crash (segmentation fault) with no Python error",
			Hint:    "a crash in a native library (kernel, NCCL, driver): coredumpctl info; rerun with CUDA_LAUNCH_BLOCKING=1 and compare library versions (torch, sgl-kernel/flashinfer, driver)",
		},
		{
			Keywords: []string{"Loaded weights leave no GPU memory for the KV cache", "Not enough memory. Please try to increase --mem-fraction-static", "No available memory for the cache blocks", "larger than the available KV cache memory", "larger than the maximum number of tokens that can be stored in KV cache", "reserved for KV Cache is -", "cuda blocks: 0,", "GPU blocks: 0,",
				// The flag, not the sentence: SGLang printed "Not enought
				// memory. Please try to increase --mem-fraction-static." too.
				"increase --mem-fraction-static", "Not enough memory to allocate KV cache"},
			Cause: "kv-budget", Phase: KVCache,
			Summary: "the weights leave too little GPU memory for the KV cache",
			Hint:    "SGLang: raise --mem-fraction-static above the printed minimum; vLLM: raise gpu_memory_utilization or lower max_model_len",
		},
		{
			Keywords: oom, Pattern: oomPattern,
			Cause:   "gpu-oom",
			Summary: "CUDA ran out of GPU memory",
			Hint:    "the GPU is occupied or the model does not fit: check nvidia-smi for stale processes; add tensor parallelism or quantize",
		},
		{
			// safetensors (SafetensorError, its Rust enum's HeaderTooLarge,
			// MetadataIncompleteBuffer, InvalidHeaderDeserialization) and
			// torch.load's zip reader: a file cut short or not a checkpoint.
			Keywords: []string{"SafetensorError", "HeaderTooLarge", "MetadataIncompleteBuffer", "incomplete metadata", "InvalidHeaderDeserialization", "Error while deserializing header", "failed finding central directory", "PytorchStreamReader failed"},
			Cause:    "checkpoint-corrupt", Usual: Weights,
			Summary: "a checkpoint file is truncated or not a valid safetensors/torch file",
			Hint:    "an interrupted download or a Git LFS pointer in place of the weights: check the file sizes against the repo, re-download (huggingface-cli download --force-download), and run git lfs pull where the model was cloned",
		},
		{
			// SIGBUS: a page of a memory-mapped file or of shared memory
			// could not be read (a checkpoint that shrank or sits on a
			// failing network filesystem, a full /dev/shm).
			Keywords: []string{"Bus error", "SIGBUS"},
			Cause:    "bus-error", Native: true,
			Summary: "the process died of SIGBUS: a memory-mapped file or shared memory became unreadable",
			Hint:    "while loading weights: the checkpoint changed under the process or sits on a flaky network filesystem (copy it to local disk); otherwise /dev/shm is too small (docker --shm-size or --ipc=host)",
		},
		{
			Keywords: []string{"No CUDA GPUs are available", "CUDA driver version is insufficient", "invalid device ordinal", "Found no NVIDIA driver", "NVIDIA driver on your system is too old", "CUDA driver initialization failed", "cudaErrorNoDevice", "hipErrorNoDevice", "CUDA unknown error", "has no GPU available", "No GPU available",
				// cudaErrorSystemNotReady (fabric manager not running on
				// NVSwitch systems), cudaErrorDevicesUnavailable (exclusive
				// compute mode).
				"system not yet initialized", "cudaErrorSystemNotReady", "busy or unavailable", "cudaErrorDevicesUnavailable", "cudaErrorInsufficientDriver",
				// vLLM ≤0.2's device check: "GPUs with compute capability
				// below 7.0 are not supported."
				"compute capability below"},
			Cause: "cuda-setup", Usual: Init,
			// A GPU the stack cannot use makes what the engine then says
			// of the model's dtype on it a consequence.
			Outranks: []string{"model-unsupported"},
			Summary:  cudaSetupSummary,
			Hint:     cudaSetupHint,
		},
		{
			// A kernel not built for this GPU's architecture, or PTX newer
			// than the driver: found at the first launch of that kernel,
			// which can be in any phase (weights post-processing, profiling,
			// capture), so no usual phase.
			// torch's own check of the GPU against the architectures it
			// was built for ("… with CUDA capability sm_120 is not
			// compatible with the current PyTorch installation") says the
			// same before the first kernel.
			Keywords: []string{"is not compatible with the current PyTorch installation", "no kernel image is available for execution", "invalid device function", "cudaErrorNoKernelImageForDevice", "hipErrorNoBinaryForGpu", "cudaErrorInvalidDeviceFunction", "unsupported toolchain", "cudaErrorUnsupportedPtxVersion"},
			Cause:    "cuda-setup",
			Outranks: []string{"model-unsupported"},
			Summary:  cudaSetupSummary,
			Hint:     cudaSetupHint,
		},
		{
			// vLLM's dtype check of the device (Worker.init_device →
			// _check_if_gpu_supports_dtype) runs only as a worker
			// initialises its GPU: that phase is where it strikes.
			Keywords: []string{"Bfloat16 is only supported on GPUs with compute capability"},
			Cause:    "model-unsupported", Usual: Init,
			Summary: modelUnsupportedSummary,
			Hint:    modelUnsupportedHint,
		},
		{
			// An architecture, quantization or GPU the engine refuses: the
			// check runs where the engine happens to look (the API server's
			// config before anything starts in vLLM ≥0.4, the model loader
			// in older vLLM, a layer's kernel lookup in SGLang), so the
			// error alone places it in no phase.
			Keywords: []string{"are not supported for now", "is not supported for now", "not supported on the current", "No supported CUDA architectures found", "requires compute capability", "is not supported by the current GPU", "is not supported. Supported architectures", "Cannot find model module", "Unsupported model", "not supported by vLLM", "is not aligned with the quantized weight shape"},
			Cause:    "model-unsupported",
			Summary:  modelUnsupportedSummary,
			Hint:     modelUnsupportedHint,
		},
		{
			// The attention backend is picked as the model's layers are
			// built, while its weights are created.
			Keywords: []string{"No valid attention backend found", "No valid attention backend"},
			Cause:    "model-unsupported", Usual: Weights,
			Summary: "no attention backend supports this model on this GPU",
			Hint:    "the model's attention (e.g. sparse MLA) has no kernel for this GPU's compute capability: pick another --attention-backend, or a GPU the model supports",
		},
		{
			Keywords: []string{"exceeds the total number of available GPUs", "is larger than the number of available GPUs", "World size", "Not enough GPUs", "Cannot provide a placement group requiring"},
			Pattern:  `exceeds the total number of available GPUs|is larger than the number of available GPUs|World size \(\d+\) is larger than|Not enough GPUs|Cannot provide a placement group requiring`,
			Cause:    "not-enough-gpus", Usual: Init,
			Summary: "fewer GPUs are available than tensor × pipeline parallelism asks for",
			Hint:    "lower --tp/--pp, or make the GPUs visible (CUDA_VISIBLE_DEVICES, Ray cluster resources, other processes holding them)",
		},
		{
			// A quantization method's kernels are looked up as the model's
			// layers are built, while its weights are created.
			Keywords: []string{"quantization requires"},
			Pattern:  `quantization requires .*(?:install|operators)`,
			Cause:    "import-error", Usual: Weights,
			Summary: "a broken install: the quantization method needs a package that is not installed",
			Hint:    "install the package the error names in the unit's environment (the same python/venv ExecStart runs), or use another quantization",
		},
		{
			// NCCL's library is loaded when the first communicator is made.
			Keywords: []string{"Failed to load NCCL library", "libnccl.so"},
			Pattern:  `Failed to load NCCL library|libnccl\.so[.\d]*: cannot`,
			Cause:    "import-error", Usual: Init,
			Summary: "a broken install: the NCCL library cannot be loaded",
			Hint:    "install the NCCL the torch build expects (pip nvidia-nccl-cu12) or point VLLM_NCCL_SO_PATH / LD_LIBRARY_PATH at it",
		},
		{
			Keywords: []string{"ModuleNotFoundError", "ImportError", "undefined symbol", "cannot open shared object file", "not in lib", "requires some operators from", "install "},
			Pattern:  `ModuleNotFoundError: |ImportError: |undefined symbol: |cannot open shared object file|not in lib[\w.]+\.so|requires some operators from \w+|[Pp]lease (?:pip )?install (?:the )?[\w.-]+ (?:first|to use|before)`,
			// Optional plugins and extensions that fail to load are
			// reported and survived.
			Unless:  []string{"NCCL INFO", "WARNING", "Failed to import from vllm._C"},
			Cause:   "import-error",
			Summary: "a broken install: a Python module or shared library cannot be loaded",
			Hint:    "the unit's environment differs from the one the engine was installed in: check ExecStart's python/venv, LD_LIBRARY_PATH, and matching torch / CUDA / engine wheel versions",
		},
		{
			Keywords: []string{"error: unrecognized arguments", "error: argument ", "error: the following arguments are required"},
			Cause:    "bad-argument",
			Summary:  badArgumentSummary,
			Hint:     badArgumentHint,
		},
		{
			// argparse prints its usage block ("usage: PROG [-h] …") to
			// stderr when it rejects the command line, then the error
			// line; an excerpt cut inside the block has only the block.
			// A wrapper: the error line, where the log has it, says which
			// argument. Keyed on "[-h]", not "usage: ", which SGLang's
			// stats lines carry ("token usage: 0.12").
			Keywords: []string{"[-h]"},
			Pattern:  `(?:^|[\s>])usage: \S+ \[-h\]`,
			Cause:    "bad-argument", Wrapper: true,
			Summary: badArgumentSummary,
			Hint:    badArgumentHint,
		},
		{
			Keywords: []string{"Cannot allocate memory", "[Errno 12]", "std::bad_alloc", "MemoryError"},
			Pattern:  `Cannot allocate memory|\[Errno 12\]|std::bad_alloc|(?:^|[\s:])MemoryError\b`,
			Cause:    "host-memory",
			Summary:  "the host ran out of memory (RAM, or a locked or shared memory limit)",
			Hint:     "free host RAM or add swap; for many processes check ulimits (memlock, nproc), /dev/shm size and cgroup MemoryMax of the unit",
		},
		{
			Keywords: []string{"is less than desired GPU memory utilization", "memory capacity is unbalanced"},
			Cause:    "gpu-busy", Usual: Init,
			Summary: "another process holds GPU memory at start-up",
			Hint:    "find it with nvidia-smi and stop it, or lower --gpu-memory-utilization / --mem-fraction-static",
		},
		{
			// NCCL's own report of a connection it could not make while
			// bootstrapping a communicator (misc/socket.cc, bootstrap.cc):
			// "NCCL WARN socketPollConnect: Connect to 10.0.0.4<56849>
			// returned 113(No route to host)", "NCCL WARN Net : Connect to
			// … failed : Connection refused", "NCCL WARN Bootstrap : no
			// socket interface found". The Python error that follows
			// only relays it.
			Keywords: []string{"NCCL WARN"},
			Pattern:  `NCCL WARN .*(?:[Cc]onnect to .*(?:returned|failed)|[Bb]ootstrap|No route to host|Connection refused|Connection timed out|no socket interface)`,
			Cause:    "nccl-error", Usual: Init,
			Summary: "NCCL could not connect the ranks while setting up a communicator",
			Hint:    "a node cannot reach another on NCCL's interface: set NCCL_SOCKET_IFNAME (and GLOO_SOCKET_IFNAME) to the interface the nodes share, check the firewall between them, and NCCL_DEBUG=INFO for the interfaces NCCL picked",
		},
		{
			Keywords: []string{"NCCL error", "ncclRemoteError", "ncclSystemError", "ncclInternalError", "unhandled system error", "ncclUnhandledCudaError", "ncclInvalidUsage"},
			Cause:    "nccl-error", Usual: Init,
			Summary: "NCCL failed to set up the collective communication",
			Hint:    "set NCCL_DEBUG=INFO; check NCCL_SOCKET_IFNAME / IB, the size of /dev/shm, P2P (NCCL_P2P_DISABLE=1)",
		},
		{
			// Triton's bundled ptxas, or nvcc, refusing the GPU or failing.
			Keywords: []string{"ptxas", "nvcc fatal"},
			Pattern:  `ptxas\S*'?,? .*returned non-zero|ptxas fatal|ptxas error|nvcc fatal`,
			Cause:    "jit-build",
			Summary:  "a JIT kernel build (Triton, ninja, gcc) failed",
			Hint:     "the JIT toolchain (ptxas, nvcc) does not support this GPU or is missing: upgrade Triton / the CUDA toolkit to one that knows the GPU, or set TRITON_PTXAS_PATH to a newer ptxas",
		},
		{
			Keywords: []string{"connectFullMesh failed", "DistNetworkError", "DistStoreError", "Socket Timeout", "timed out after", "failed to connect to", "Connection refused"},
			Pattern:  `connectFullMesh failed|DistNetworkError|DistStoreError|Socket Timeout|\[c10d\].*timed out after \d+ ?ms|client socket has failed to connect to .*(?:refused|timed out)|gloo.*Connection refused`,
			Cause:    "dist-init-failed", Usual: Init,
			Summary: "torch.distributed could not connect the ranks (rendezvous, TCPStore, gloo)",
			Hint:    "check --dist-init-addr / MASTER_ADDR:PORT is reachable from every node (firewall, IPv6 vs IPv4, hostname resolution), that all nodes started, and GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME",
		},
		{
			// torch's exception class for a backend (NCCL) failure, as
			// Python raises it ("DistBackendError: …"); a rendezvous that
			// timed out says so and is taken above. The watchdog's own
			// abort is a DistBackendError too ("terminate called after
			// throwing an instance of 'c10::DistBackendError'", then its
			// what()): that is a collective's timeout, not a broken NCCL.
			Keywords: []string{"DistBackendError"},
			Pattern:  `DistBackendError:`,
			Unless:   []string{"Watchdog caught collective operation timeout", "watchdog thread terminated"},
			Cause:    "nccl-error", Usual: Init,
			Summary: "torch.distributed's NCCL backend failed",
			Hint:    "set NCCL_DEBUG=INFO and read the first rank's error; check NCCL_SOCKET_IFNAME / IB, the size of /dev/shm, P2P (NCCL_P2P_DISABLE=1)",
		},
		{
			// torch's TCPStore says it of its own port ("has failed to
			// listen on any local network address", "The server socket
			// has failed to bind to [::]:29500 (errno: 98 - Address
			// already in use)"), and ZMQ of its sockets.
			Keywords: []string{"ZMQError: Address already in use", "has failed to listen on any local network address", "server socket has failed to bind"},
			Cause:    "internal-port-in-use",
			Summary:  internalPortSummary,
			Hint:     internalPortHint,
		},
		{
			// The port that failed decides: EADDRINUSE raised by the code
			// that picks or binds an internal port (vLLM's get_open_port
			// for its distributed init method, torch's store, the
			// engines' ZMQ sockets) is not the API port.
			Keywords: []string{"Address already in use", "address already in use"},
			RaisedIn: []string{"get_open_port", "_get_open_port", "get_distributed_init_method", "_create_c10d_store", "make_zmq_socket", "get_zmq_socket"},
			Cause:    "internal-port-in-use",
			Summary:  internalPortSummary,
			Hint:     internalPortHint,
		},
		{
			Keywords: []string{"Address already in use", "address already in use", "error while attempting to bind on address"},
			Cause:    "port-in-use", Latest: HTTP, Fatal: true,
			Summary: "the HTTP port is already in use",
			Hint:    "another server or a leftover of the previous run holds the port: find it with ss -ltnp and free it before restarting (SGLang binds only after loading the model, so it finds out ten minutes in)",
		},
		{
			Keywords: []string{"HFValidationError", "RepositoryNotFoundError", "GatedRepoError", "is not a local folder and is not a valid model identifier", "couldn't connect to 'https://huggingface.co'", "401 Client Error", "403 Client Error", "429 Too Many Requests", "EntryNotFoundError", "Cannot access gated repo", "access a gated repo", "urllib3.exceptions.", "requests.exceptions.ConnectionError", "MaxRetryError",
				// vLLM finds no config when the download was refused (a
				// gated repo without a token).
				"No supported config format found",
				// huggingface_hub's RepositoryNotFoundError text, and
				// vLLM's own word for a model it can neither fetch nor
				// find on disk.
				"Repository Not Found for url", "Invalid repository ID or local directory"},
			Cause:   "model-fetch",
			Summary: "the model could not be found or downloaded",
			Hint:    hintModelPath,
		},
		inductorRule(""),
		{
			// A JIT compiler's own failure: the failing nvcc/hipcc command
			// a build (FlashInfer's, torch's cpp_extension) logs as an
			// error, NVRTC/HIPRTC's compile status, HIP's code generator
			// refusing to guess the GPU architecture.
			Keywords: []string{"bin/nvcc ", "bin/hipcc ", "NVRTC_ERROR_COMPILATION", "HIPRTC_ERROR_COMPILATION", "provide architecture for which code is to be generated"},
			Pattern:  `(?:ERROR|FAILED: ).*bin/(?:nvcc|hipcc) -|NVRTC_ERROR_COMPILATION|HIPRTC_ERROR_COMPILATION|provide architecture for which code is to be generated`,
			Cause:    "jit-build",
			Summary:  "a JIT kernel build (nvcc, hipcc, NVRTC) failed",
			Hint:     "the JIT toolchain is missing or misconfigured for this GPU: check CUDA_HOME / ROCM_PATH (a stray ':' or a wrong toolkit), that nvcc/hipcc on the unit's PATH knows this GPU's architecture (TORCH_CUDA_ARCH_LIST, PYTORCH_ROCM_ARCH), and clear the kernel cache (~/.cache/flashinfer) before retrying",
		},
		{
			Keywords: []string{"cannot find -lcuda", "CalledProcessError: Command '['/usr/bin/gcc'", "No such file or directory: 'ninja'", "CompilationError", "ld returned 1 exit status", "Ninja build failed", "Command '['ninja'", "Error building extension", "ninja: build stopped", "fatal error: Python.h", "compilation terminated.",
				"Ninja is required to load C++ extensions"},
			Cause:   "jit-build",
			Summary: "a JIT kernel build (Triton, ninja, gcc) failed",
			Hint:    "libcuda.so symlink missing, or gcc/ninja not on the unit's PATH: set Environment=PATH=… in the unit (systemd's PATH is minimal)",
		},
	}
}

// inductorRule reads torch.compile's failure to compile the model
// (torch._inductor.exc.InductorError, torch ≥2.6; BackendCompilerFailed
// for backend='inductor' before): a JIT build of the model's graph. usual
// is the phase the engine compiles in, where it compiles in one only.
// An out-of-memory error carried in it is the OOM's.
func inductorRule(usual Phase) FailureRule {
	return FailureRule{
		Keywords: []string{"InductorError", "BackendCompilerFailed"},
		Pattern:  `InductorError: |BackendCompilerFailed: backend='inductor'`,
		Unless:   []string{"out of memory", "OutOfMemoryError"},
		Cause:    "jit-build", Usual: usual,
		Summary: "torch.compile (inductor) failed to compile the model",
		Hint:    "start without torch.compile to confirm (vLLM: --enforce-eager or -O0; SGLang: drop --enable-torch-compile), clear the compile cache (~/.cache/vllm/torch_compile_cache, /tmp/torchinductor_$USER), and check torch/Triton versions against the engine's",
	}
}

// commonWrapperFailures are the rules both engines share that yield to the
// engine's own: the reading of an exception by the frame that raised it
// (an engine's own message raised there says more), the secondary rules,
// and the catch-all exception rule last.
func commonWrapperFailures() []FailureRule {
	return []FailureRule{
		{
			// Python's built-ins raised by the code that maps checkpoint
			// tensors onto the model's parameters: `params_dict[name]` with
			// a name the model lacks (KeyError), a shape or a name the
			// loader refuses (ValueError, AssertionError).
			Keywords: []string{"KeyError", "ValueError", "AssertionError"},
			Pattern:  `(?:^|[\s\]>|:])(?:KeyError|ValueError|AssertionError)(?::|$)`,
			RaisedIn: []string{"load_weights", "_load_weights", "load_model", "weight_loader", "weight_loader_v2", "default_weight_loader", "_load_module", "_load_param", "load_weights_and_postprocess"},
			Cause:    "checkpoint-mismatch", Phase: Weights,
			Summary: "the checkpoint does not match the model: a tensor the model has no parameter for, or one of the wrong shape",
			Hint:    "the checkpoint was made for another model class, engine version or quantization (a draft/EAGLE head, a fine-tune with renamed tensors, a quantizer's extra scales): check the model's config.json architectures and quantization_config against what this engine version supports, or upgrade the engine",
		},
		{
			// multiprocessing's header before a child's traceback: it names
			// the process that died, nothing more.
			Keywords: []string{"Process "},
			Pattern:  `(?:^|\] |\) )Process [A-Za-z_][\w-]*:\s*$`,
			Cause:    "child-failed", Wrapper: true, Relay: true,
			Summary: "a child process of the engine died",
			Hint:    hintWrapper,
		},
		{
			// A group's thousandth collective or later: a start-up runs far
			// fewer on torch's process groups (the model's own all-reduces
			// go through pynccl or the custom all-reduce), serving runs one
			// or more per step. Where the log shows no phase, that count
			// says the server was serving when a rank stopped joining.
			Keywords: []string{"Watchdog caught collective operation timeout"},
			Pattern:  `WorkNCCL\(SeqNum=[1-9]\d{3,},`,
			Cause:    "nccl-timeout", Wrapper: true, Usual: Serving,
			Summary: ncclTimeoutSummary,
			Hint:    ncclTimeoutHint,
		},
		{
			Keywords: []string{"Watchdog caught collective operation timeout", "watchdog got stuck"},
			Cause:    "nccl-timeout", Wrapper: true,
			Summary: ncclTimeoutSummary,
			Hint:    ncclTimeoutHint,
		},
		{
			Keywords: []string{"Connection closed by peer", "Connection reset by peer", "pair.cc:534] Connection"},
			Cause:    "peer-crashed", Wrapper: true,
			Summary: "a peer worker closed its connection (it probably crashed)",
			Hint:    "look at the other node's log; this node is only the victim",
		},
		{
			Keywords: []string{"operation failed due to a previous error during capture", "Capture cuda graph failed", "Capture CUDA graph failed", "Capture prefill CUDA graph failed"},
			Cause:    "graph-capture-failed", Phase: GraphCapture, Wrapper: true,
			Summary: "CUDA graph capture failed",
			Hint:    "read the first error above (or after the colon); usual fixes: lower --mem-fraction-static or --cuda-graph-max-bs, drop --enable-torch-compile",
		},
		{
			// An error logged without a traceback; a traceback's own
			// exception line is recognised by its shape (traceback.go).
			Keywords: []string{"Error: ", "Exception: ", "ERROR "},
			// or a line logged at ERROR: vLLM's `ERROR 10-26 11:35:32
			// registry.py:267] …`, a tracing layer's `2025-11-05T01:56:54Z
			// ERROR scheduler.run: …`.
			Pattern: `(?:^|[\s:\]])[A-Za-z_][\w.]*(?:Error|Exception): |^(?:\([^)]*\) )?ERROR \d\d-\d\d \d\d:\d\d:\d\d\S* \S+\] \S|^\d{4}-\d\d-\d\dT\S+\s+ERROR \S`,
			Cause:   CauseUnrecognised,
			Summary: unrecognisedRule.Summary,
			Hint:    hintUnrecognised,
		},
	}
}
