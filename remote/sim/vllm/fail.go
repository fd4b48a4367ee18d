package vllm

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/bringup-dev/bringup/remote/sim/sglang"
)

// Paths in vLLM's tracebacks: a pip install into the system Python of a
// CUDA image, as vLLM's own image lays it out.
const (
	pyLib   = "/usr/lib/python3.12"
	distPkg = "/usr/local/lib/python3.12/dist-packages"
	vllmDir = distPkg + "/vllm"
	vTorch  = distPkg + "/torch"
)

// The vLLM source files the tracebacks pass through.
const (
	vCore     = vllmDir + "/v1/engine/core.py"
	vMP       = vllmDir + "/v1/executor/multiproc_executor.py"
	vWorker   = vllmDir + "/v1/worker/gpu_worker.py"
	vRunner   = vllmDir + "/v1/worker/gpu_model_runner.py"
	vAPI      = vllmDir + "/entrypoints/openai/api_server.py"
	vClient   = vllmDir + "/v1/engine/core_client.py"
	vUniproc  = vllmDir + "/executor/uniproc_executor.py"
	vParallel = vllmDir + "/distributed/parallel_state.py"
)

// pyExc is one exception of a chain: the frames from where it was caught
// down to where it was raised, and its message lines.
type pyExc struct {
	frames []string
	msg    []string
}

// pyChain is an exception with the ones it was raised while handling,
// oldest first, as Python prints them.
type pyChain []pyExc

// lines renders the chain.
func (c pyChain) lines() []string {
	var out []string
	for i, e := range c {
		if i > 0 {
			out = append(out, "", "During handling of the above exception, another exception occurred:", "")
		}
		out = append(out, "Traceback (most recent call last):")
		out = append(out, e.frames...)
		out = append(out, e.msg...)
	}
	return out
}

// under is the chain as seen from a caller further out: its frames go in
// front of the last exception's, the one that propagated.
func (c pyChain) under(outer ...[]string) pyChain {
	c = slices.Clone(c)
	last := &c[len(c)-1]
	last.frames = append(slices.Concat(outer...), last.frames...)
	return c
}

// timelineText returns the timeline's line that starts with prefix and the
// n-1 lines after it: the texts of torch, CUDA and NCCL are the same under
// both engines, so vLLM's tracebacks quote the ones SGLang's carry.
func timelineText(s *sglang.Script, prefix string, n int) []string {
	for i, l := range s.Lines {
		if strings.HasPrefix(l.Text, prefix) && i+n <= len(s.Lines) {
			var out []string
			for _, m := range s.Lines[i : i+n] {
				out = append(out, m.Text)
			}
			return out
		}
	}
	return nil
}

// torchError is a torch.AcceleratorError message with the advice lines
// PyTorch appends and the newline str(e) ends with.
func torchError(s *sglang.Script, msg string) []string {
	return append(timelineText(s, "torch.AcceleratorError: CUDA error: "+msg, 5), "")
}

// apiFrames are the API server's outer frames: `vllm serve` runs the
// server in uvloop.
func apiFrames() []string {
	return slices.Concat(
		sglang.Frame("/usr/local/bin/vllm", 10, "<module>", "sys.exit(main())", "main()"),
		sglang.Frame(vllmDir+"/entrypoints/cli/main.py", 54, "main", "args.dispatch_function(args)", ""),
		sglang.Frame(vllmDir+"/entrypoints/cli/serve.py", 57, "cmd", "uvloop.run(run_server(args))", ""),
		sglang.Frame(distPkg+"/uvloop/__init__.py", 109, "run", "return __asyncio.run(", "__asyncio.run("),
		sglang.Frame(pyLib+"/asyncio/runners.py", 195, "run", "return runner.run(main)", "runner.run(main)"),
		sglang.Frame(pyLib+"/asyncio/runners.py", 118, "run", "return self._loop.run_until_complete(task)", "self._loop.run_until_complete(task)"),
		[]string{`  File "uvloop/loop.pyx", line 1518, in uvloop.loop.Loop.run_until_complete`},
		sglang.Frame(distPkg+"/uvloop/__init__.py", 61, "wrapper", "return await main", "await main"),
	)
}

// engineStartupFailed is the API server's report that the engine core did
// not come up, with the exit codes of the core processes that ended.
func engineStartupFailed(failed string) pyChain {
	aenter := sglang.Frame(pyLib+"/contextlib.py", 210, "__aenter__", "return await anext(self.gen)", "await anext(self.gen)")
	return pyChain{{
		frames: slices.Concat(apiFrames(),
			sglang.Frame(vAPI, 1889, "run_server", "await run_server_worker(listen_address, sock, args, **uvicorn_kwargs)", ""),
			sglang.Frame(vAPI, 1905, "run_server_worker", "async with build_async_engine_client(", ""),
			aenter,
			sglang.Frame(vAPI, 180, "build_async_engine_client", "async with build_async_engine_client_from_engine_args(", ""),
			aenter,
			sglang.Frame(vAPI, 225, "build_async_engine_client_from_engine_args", "async_llm = AsyncLLM.from_vllm_config(", "AsyncLLM.from_vllm_config("),
			sglang.Frame(vllmDir+"/utils/__init__.py", 1572, "inner", "return fn(*args, **kwargs)", "fn(*args, **kwargs)"),
			sglang.Frame(vllmDir+"/v1/engine/async_llm.py", 207, "from_vllm_config", "return cls(", "cls("),
			sglang.Frame(vllmDir+"/v1/engine/async_llm.py", 134, "__init__", "self.engine_core = EngineCoreClient.make_async_mp_client(", "EngineCoreClient.make_async_mp_client("),
			sglang.Frame(vClient, 102, "make_async_mp_client", "return AsyncMPClient(*client_args)", "AsyncMPClient(*client_args)"),
			sglang.Frame(vClient, 769, "__init__", "super().__init__(", ""),
			sglang.Frame(vClient, 448, "__init__", "with launch_core_engines(vllm_config, executor_class,", ""),
			sglang.Frame(pyLib+"/contextlib.py", 144, "__exit__", "next(self.gen)", ""),
			sglang.Frame(vllmDir+"/v1/engine/utils.py", 732, "launch_core_engines", "wait_for_engine_startup(", ""),
			sglang.Frame(vllmDir+"/v1/engine/utils.py", 785, "wait_for_engine_startup", `raise RuntimeError("Engine core initialization failed. "`, ""),
		),
		msg: []string{"RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): " + failed},
	}}
}

// coreFrames lead from the engine core process's entry to its engine's
// constructor.
func coreFrames() []string {
	return slices.Concat(
		sglang.Frame(vCore, 699, "run_engine_core", "engine_core = EngineCoreProc(*args, **kwargs)", "EngineCoreProc(*args, **kwargs)"),
		sglang.Frame(vCore, 498, "__init__", "super().__init__(vllm_config, executor_class, log_stats,", ""),
	)
}

// executorFrames lead from the engine's constructor into building its
// executor, which starts the workers.
func executorFrames() []string {
	return slices.Concat(
		sglang.Frame(vCore, 83, "__init__", "self.model_executor = executor_class(vllm_config)", "executor_class(vllm_config)"),
		sglang.Frame(vllmDir+"/executor/executor_base.py", 54, "__init__", "self._init_executor()", ""),
	)
}

// uniprocFrames call method on the engine core's own worker (one GPU)
// while the executor starts.
func uniprocFrames(at int, method string) []string {
	return slices.Concat(sglang.Frame(vUniproc, at, "_init_executor", `self.collective_rpc("`+method+`")`, ""), rpcFrames())
}

// rpcFrames run a method on the engine core's own worker (one GPU).
func rpcFrames() []string {
	return slices.Concat(
		sglang.Frame(vUniproc, 58, "collective_rpc", "answer = run_method(self.driver_worker, method, args, kwargs)", "run_method(self.driver_worker, method, args, kwargs)"),
		sglang.Frame(vllmDir+"/utils/__init__.py", 3122, "run_method", "return func(*args, **kwargs)", "func(*args, **kwargs)"),
	)
}

// kvCacheFrames lead from the engine's constructor to the workers'
// compile_or_warm_up_model, which captures the CUDA graphs.
func kvCacheFrames() []string {
	return slices.Concat(
		sglang.Frame(vCore, 92, "__init__", "num_gpu_blocks, num_cpu_blocks, kv_cache_config = self._initialize_kv_caches(", "self._initialize_kv_caches("),
		sglang.Frame(vCore, 199, "_initialize_kv_caches", "self.model_executor.initialize_from_config(kv_cache_configs)", ""),
		sglang.Frame(vllmDir+"/v1/executor/abstract.py", 75, "initialize_from_config", `self.collective_rpc("compile_or_warm_up_model")`, ""),
	)
}

// ncclInitFrames lead from a worker's init_device to NCCL's failing
// communicator init.
func ncclInitFrames() []string {
	comm := vllmDir + "/distributed/device_communicators"
	return slices.Concat(
		sglang.Frame(vWorker, 189, "init_device", "init_worker_distributed_environment(self.vllm_config, self.rank,", ""),
		sglang.Frame(vWorker, 702, "init_worker_distributed_environment", "ensure_model_parallel_initialized(", ""),
		sglang.Frame(vParallel, 1271, "ensure_model_parallel_initialized", "initialize_model_parallel(tensor_model_parallel_size,", ""),
		sglang.Frame(vParallel, 1198, "initialize_model_parallel", "_TP = init_model_parallel_group(group_ranks,", "init_model_parallel_group(group_ranks,"),
		sglang.Frame(vParallel, 1010, "init_model_parallel_group", "return GroupCoordinator(", "GroupCoordinator("),
		sglang.Frame(vParallel, 273, "__init__", "self.device_communicator = device_comm_cls(", "device_comm_cls("),
		sglang.Frame(comm+"/cuda_communicator.py", 52, "__init__", "self.pynccl_comm = PyNcclCommunicator(", "PyNcclCommunicator("),
		sglang.Frame(comm+"/pynccl.py", 106, "__init__", "self.comm: ncclComm_t = self.nccl.ncclCommInitRank(", "self.nccl.ncclCommInitRank("),
		sglang.Frame(comm+"/pynccl_wrapper.py", 292, "ncclCommInitRank", `self.NCCL_CHECK(self._funcs["ncclCommInitRank"](ctypes.byref(comm),`, ""),
		sglang.Frame(comm+"/pynccl_wrapper.py", 271, "NCCL_CHECK", `raise RuntimeError(f"NCCL error: {error_str}")`, ""),
	)
}

// loadFrames lead from a worker's load_model to the weight copy that runs
// out of GPU memory.
func loadFrames(model string) []string {
	loader := vllmDir + "/model_executor/model_loader"
	return slices.Concat(
		sglang.Frame(vWorker, 227, "load_model", "self.model_runner.load_model(eep_scale_up=eep_scale_up)", ""),
		sglang.Frame(vRunner, 2610, "load_model", "self.model = model_loader.load_model(", "model_loader.load_model("),
		sglang.Frame(loader+"/base_loader.py", 49, "load_model", "self.load_weights(model, model_config)", ""),
		sglang.Frame(loader+"/default_loader.py", 264, "load_weights", "loaded_weights = model.load_weights(", "model.load_weights("),
		sglang.Frame(vllmDir+"/model_executor/models/"+model, 1323, "load_weights", "weight_loader(param, loaded_weight, shard_id)", ""),
		sglang.Frame(vllmDir+"/model_executor/layers/linear.py", 1280, "weight_loader", "param_data.copy_(loaded_weight)", ""),
	)
}

// modelFile is the source file of the model's class as the timeline's
// own traceback names it (SGLang and vLLM name their model files alike).
func modelFile(s *sglang.Script) string {
	for _, l := range s.Lines {
		if _, rest, ok := strings.Cut(l.Text, "/srt/models/"); ok && strings.HasPrefix(l.Text, "  File ") {
			name, _, _ := strings.Cut(rest, `"`)
			return name
		}
	}
	return "llama.py"
}

// captureChain is the .item() failure in graph capture (the fixture
// graph-capture-item.txt in vLLM's frames): the host sync raises inside
// the captured forward, and capture_end then fails on the invalidated
// capture. The second exception's frames start at the worker's
// compile_or_warm_up_model.
func (b *vbuilder) captureChain() pyChain {
	k := b.p.Kernel
	pkg := k.Path + "/" + strings.ReplaceAll(k.Name, "-", "_")
	module := vTorch + "/nn/modules/module.py"
	graph := vllmDir + "/compilation/cuda_graph.py"
	return pyChain{
		{
			frames: slices.Concat(
				sglang.Frame(graph, 185, "__call__", "output = self.runnable(*args, **kwargs)", "self.runnable(*args, **kwargs)"),
				sglang.Frame(module, 1775, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)", "self._call_impl(*args, **kwargs)"),
				sglang.Frame(module, 1786, "_call_impl", "return forward_call(*args, **kwargs)", "forward_call(*args, **kwargs)"),
				sglang.Frame(pkg+"/patch.py", 88, "forward", "out = validate.checked_forward(self, orig_forward, *args, **kwargs)", "validate.checked_forward(self, orig_forward, *args, **kwargs)"),
				sglang.Frame(pkg+"/validate.py", 57, "checked_forward", "if err.max().item() > tol:", "err.max().item()"),
			),
			msg: torchError(b.s, "operation not permitted when stream is capturing"),
		},
		{
			frames: slices.Concat(
				sglang.Frame(vWorker, 391, "compile_or_warm_up_model", "self.model_runner.capture_model()", ""),
				sglang.Frame(vRunner, 3531, "capture_model", "self._capture_cudagraphs(", ""),
				sglang.Frame(vRunner, 3588, "_capture_cudagraphs", "self._dummy_run(num_tokens,", ""),
				sglang.Frame(vTorch+"/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)", "func(*args, **kwargs)"),
				sglang.Frame(vRunner, 3167, "_dummy_run", "outputs = self.model(", "self.model("),
				sglang.Frame(module, 1775, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)", "self._call_impl(*args, **kwargs)"),
				sglang.Frame(module, 1786, "_call_impl", "return forward_call(*args, **kwargs)", "forward_call(*args, **kwargs)"),
				sglang.Frame(vllmDir+"/compilation/decorators.py", 305, "__call__", "output = self.compiled_callable(*args, **kwargs)", "self.compiled_callable(*args, **kwargs)"),
				sglang.Frame(graph, 184, "__call__", "with torch.cuda.graph(", ""),
				sglang.Frame(vTorch+"/cuda/graphs.py", 265, "__exit__", "self.cuda_graph.capture_end()", ""),
				sglang.Frame(vTorch+"/cuda/graphs.py", 126, "capture_end", "super().capture_end()", ""),
			),
			msg: torchError(b.s, "operation failed due to a previous error during capture"),
		},
	}
}

// coreFailed is how vLLM reports an engine core that did not start: the
// core's logger.exception, multiprocessing's report of the process's
// uncaught exception on stderr, then the API server's own traceback. The
// process exits with status 1.
func (b *vbuilder) coreFailed(at time.Duration, chain pyChain, failed string, pl *Startup) {
	b.log(at, b.core, "ERROR", "core.py:708", "EngineCore failed to start.\n"+strings.Join(chain.lines(), "\n"))
	exited := chain.under(
		sglang.Frame(pyLib+"/multiprocessing/process.py", 314, "_bootstrap", "self.run()", ""),
		sglang.Frame(pyLib+"/multiprocessing/process.py", 108, "run", "self._target(*self._args, **self._kwargs)", ""),
		sglang.Frame(vCore, 712, "run_engine_core", "raise e", ""),
	)
	end := b.raw(at+20*time.Millisecond, b.core, append([]string{"Process EngineCore_DP0:"}, exited.lines()...)...)
	end = b.raw(end+300*time.Millisecond, b.api, engineStartupFailed(failed).lines()...)
	pl.Exit = max(b.s.Exit, end+500*time.Millisecond)
	pl.ExitCode = 1
}

// initFailed is a failure while the workers start (init_device,
// load_model): with TP > 1 the worker reports it and the engine core only
// learns that a worker did not start; with one GPU the engine core runs
// the worker and reports the error itself.
func (b *vbuilder) initFailed(at time.Duration, method string, root pyChain, pl *Startup) {
	if len(b.workers) == 0 {
		b.coreFailed(at, root.under(coreFrames(), executorFrames(), uniprocFrames(map[string]int{"init_device": 47, "load_model": 48}[method], method)), "{'EngineCore_DP0': 1}", pl)
		return
	}
	worker := root.under(
		sglang.Frame(vMP, 533, "worker_main", "worker = WorkerProc(*args, **kwargs)", "WorkerProc(*args, **kwargs)"),
		sglang.Frame(vMP, 402, "__init__", "self.worker."+method+"()", ""),
	)
	b.log(at, b.model(0), "ERROR", "multiproc_executor.py:559", "WorkerProc failed to start.\n"+strings.Join(worker.lines(), "\n"))
	core := pyChain{{
		frames: slices.Concat(coreFrames(), executorFrames(),
			sglang.Frame(vMP, 106, "_init_executor", "self.workers = WorkerProc.wait_for_ready(unready_workers)", "WorkerProc.wait_for_ready(unready_workers)"),
			sglang.Frame(vMP, 469, "wait_for_ready", "raise e from None", ""),
		),
		msg: []string{"Exception: WorkerProc initialization failed due to an exception in a background process. See stack trace for root cause."},
	}}
	b.coreFailed(at+200*time.Millisecond, core, "{'EngineCore_DP0': 1}", pl)
}

// captureFailed is the .item() capture failure as vLLM reports it. With
// TP > 1 each worker runs the capture as an RPC: rank 0 logs the
// exception (with the traceback again as the note vLLM attaches), its bar
// closes as the frame is released, and the engine core fails on the
// worker's error string. With one GPU the engine core captures itself and
// its open bar line is continued by multiprocessing's report.
func (b *vbuilder) captureFailed(at time.Duration, barClose string, pl *Startup) {
	root := b.captureChain()
	if len(b.workers) == 0 {
		b.coreFailed(at, root.under(coreFrames(), kvCacheFrames(), rpcFrames()), "{'EngineCore_DP0': 1}", pl)
		return
	}
	worker := root.under(sglang.Frame(vMP, 666, "worker_busy_loop", "output = func(*args, **kwargs)", "func(*args, **kwargs)"))
	text := worker.lines()
	text = append(text, text...)
	b.log(at, b.model(0), "ERROR", "multiproc_executor.py:671", "WorkerProc hit an exception.\n"+strings.Join(text, "\n"))
	b.bar(at+5*time.Millisecond, b.model(0), barClose, false)
	secondary := root[len(root)-1].msg
	msg := []string{"RuntimeError: Worker failed with error '" + strings.TrimPrefix(secondary[0], "torch.AcceleratorError: ")}
	msg = append(msg, secondary[1:len(secondary)-1]...)
	msg = append(msg, "', please check the stack trace above for the root cause")
	core := pyChain{{
		frames: slices.Concat(coreFrames(), kvCacheFrames(),
			sglang.Frame(vMP, 243, "collective_rpc", "result = get_response(w, dequeue_timeout)", "get_response(w, dequeue_timeout)"),
			sglang.Frame(vMP, 227, "get_response", "raise RuntimeError(", ""),
		),
		msg: msg,
	}}
	b.coreFailed(at+100*time.Millisecond, core, "{'EngineCore_DP0': 1}", pl)
}

// collectiveTimeout is a collective that never completes during capture:
// the NCCL watchdog of rank 3 takes its worker down (the c10d lines are
// the same as under SGLang). The engine core's monitor sees the worker
// die, but the engine core itself waits on the worker's answer for ever,
// saying so every 60 s: the unit stays up. With one GPU the engine core is
// the process that aborts, and the API server fails.
func (b *vbuilder) collectiveTimeout(at time.Duration, pl *Startup) {
	r := min(3, b.p.TP-1)
	w := b.model(r)
	var bare []string
	seen := false
	for _, l := range b.s.Lines {
		switch {
		case l.Prefix == sglang.PrefixGlog:
			b.lines = append(b.lines, Line{At: l.At, Text: func(t time.Time) string { return w.tag() + l.Render(t) }})
			seen = true
		case seen && l.Prefix == sglang.PrefixNone:
			bare = append(bare, l.Text)
		}
	}
	end := b.raw(at+5*time.Millisecond, w, bare...)
	if len(b.workers) == 0 {
		b.raw(end+300*time.Millisecond, b.api, engineStartupFailed("{'EngineCore_DP0': -6}").lines()...)
		pl.Exit, pl.ExitCode = max(b.s.Exit, end+800*time.Millisecond), 1
		return
	}
	b.log(end+100*time.Millisecond, b.core, "ERROR", "multiproc_executor.py:162", fmt.Sprintf("Worker proc VllmWorker-%d died unexpectedly, shutting down executor.", r))
	const warnEvery = 60 * time.Second
	for i := 1; i <= 60; i++ {
		b.info(end+time.Duration(i)*warnEvery, b.core, "shm_broadcast.py:466",
			"No available shared memory broadcast block found in 60 seconds. This typically happens when some processes are hanging or doing some time-consuming work (e.g. compilation).")
	}
}

// errnoOf is the system error behind err, if any.
func errnoOf(err error) (syscall.Errno, bool) {
	var n syscall.Errno
	return n, errors.As(err, &n)
}

// pyErrnoText is Python's strerror text for n: glibc's, capitalised.
func pyErrnoText(n syscall.Errno) string {
	r := []rune(n.Error())
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}
