package sglang

import (
	"fmt"
	"strings"
)

// Paths of the installed packages as a pip install into the system Python
// of a CUDA image lays them out; the tracebacks name them.
const (
	sglangDir = "/usr/local/lib/python3.12/dist-packages/sglang/srt"
	torchDir  = "/usr/local/lib/python3.12/dist-packages/torch"
)

// Frame renders one frame of a Python 3.12 traceback: the File line, the
// source line and, when the failing expression expr is only part of the
// line, the carets Python puts under it (none for an empty expr or one
// that is the whole line). Both engines' tracebacks (SGLang's here,
// vLLM's in remote/sim/vllm) are built from it.
func Frame(file string, line int, fn, code, expr string) []string {
	out := []string{
		fmt.Sprintf("  File %q, line %d, in %s", file, line, fn),
		"    " + code,
	}
	if i := strings.Index(code, expr); expr != "" && expr != code && i >= 0 {
		out = append(out, "    "+strings.Repeat(" ", i)+strings.Repeat("^", len(expr)))
	}
	return out
}

// torchCUDAError renders a torch.AcceleratorError with the four lines of
// advice PyTorch appends to every CUDA error (fixtures/gpu/graph-capture-item.txt).
func torchCUDAError(msg, errName string) []string {
	return append([]string{"torch.AcceleratorError: CUDA error: " + msg}, cudaAdvice(errName)...)
}

func cudaAdvice(errName string) []string {
	return []string{
		"Search for `" + errName + "' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.",
		"CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
		"For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
		"Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
	}
}

// duringHandling is the separator Python prints between chained exceptions.
func duringHandling() []string {
	return []string{"", "", "During handling of the above exception, another exception occurred:", "", "Traceback (most recent call last):"}
}

// schedulerFrames are the outer frames of every scheduler start-up
// failure: run_scheduler_process builds the Scheduler, which builds the
// model runner.
func schedulerFrames() []string {
	var out []string
	out = append(out, Frame(sglangDir+"/managers/scheduler.py", 3127, "run_scheduler_process", "scheduler = Scheduler(", "Scheduler(")...)
	out = append(out, Frame(sglangDir+"/managers/scheduler.py", 372, "__init__", "self.init_model_worker()", "")...)
	out = append(out, Frame(sglangDir+"/managers/scheduler.py", 561, "init_model_worker", "self.tp_worker = TpModelWorker(", "TpModelWorker(")...)
	out = append(out, Frame(sglangDir+"/managers/tp_worker.py", 247, "__init__", "self._model_runner = ModelRunner(", "ModelRunner(")...)
	out = append(out, Frame(sglangDir+"/model_executor/model_runner.py", 368, "__init__", "self.initialize(min_per_gpu_memory)", "")...)
	return out
}

// modelModule is the sglang/srt/models file that implements a model class.
func modelModule(class string) string {
	switch {
	case strings.HasPrefix(class, "Deepseek"):
		return "deepseek_v2.py"
	case strings.HasPrefix(class, "Qwen3"):
		return "qwen3.py"
	default:
		return "llama.py"
	}
}

// captureTraceback is what SGLang's scheduler logs when a kernel syncs with
// the host (.item()) inside CUDA graph capture: the item() error, the
// capture_end error it causes, and SGLang's "Capture cuda graph failed"
// wrapper with its list of possible solutions.
func captureTraceback(p Params) []string {
	runner := sglangDir + "/model_executor/cuda_graph_runner.py"
	pkg := p.Kernel.Path + "/" + strings.ReplaceAll(p.Kernel.Name, "-", "_")
	out := []string{"Traceback (most recent call last):"}
	out = append(out, Frame(runner, 702, "capture_one_batch_size", "out = run_once()", "run_once()")...)
	out = append(out, Frame(runner, 689, "run_once", "logits_output_or_pp_proxy_tensors = forward(", "forward(")...)
	out = append(out, Frame(torchDir+"/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)", "func(*args, **kwargs)")...)
	out = append(out, Frame(sglangDir+"/models/"+modelModule(p.ModelClass), 2815, "forward", "hidden_states = self.model(", "self.model(")...)
	out = append(out, Frame(torchDir+"/nn/modules/module.py", 1779, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)", "self._call_impl(*args, **kwargs)")...)
	out = append(out, Frame(torchDir+"/nn/modules/module.py", 1790, "_call_impl", "return forward_call(*args, **kwargs)", "forward_call(*args, **kwargs)")...)
	out = append(out, Frame(pkg+"/patch.py", 88, "forward", "out = validate.checked_forward(self, orig_forward, *args, **kwargs)", "validate.checked_forward(self, orig_forward, *args, **kwargs)")...)
	out = append(out, Frame(pkg+"/validate.py", 57, "checked_forward", "if err.max().item() > tol:", "err.max().item()")...)
	out = append(out, torchCUDAError("operation not permitted when stream is capturing", "cudaErrorStreamCaptureUnsupported")...)
	out = append(out, duringHandling()...)
	out = append(out, Frame(runner, 394, "__init__", "self.capture()", "")...)
	out = append(out, Frame(runner, 521, "capture", ") = self.capture_one_batch_size(bs, forward)", "self.capture_one_batch_size(bs, forward)")...)
	out = append(out, Frame(runner, 700, "capture_one_batch_size", "with torch.cuda.graph(graph, pool=global_graph_memory_pool, stream=stream):", "")...)
	out = append(out, Frame(torchDir+"/cuda/graphs.py", 265, "__exit__", "self.cuda_graph.capture_end()", "")...)
	out = append(out, Frame(torchDir+"/cuda/graphs.py", 126, "capture_end", "super().capture_end()", "")...)
	secondary := torchCUDAError("operation failed due to a previous error during capture", "cudaErrorStreamCaptureInvalidated")
	out = append(out, secondary...)
	out = append(out, duringHandling()...)
	out = append(out, schedulerFrames()...)
	out = append(out, Frame(sglangDir+"/model_executor/model_runner.py", 552, "initialize", "self.init_device_graphs()", "")...)
	out = append(out, Frame(sglangDir+"/model_executor/model_runner.py", 2411, "init_device_graphs", "self.graph_runner = graph_runners[self.device](self)", "graph_runners[self.device](self)")...)
	out = append(out, Frame(runner, 396, "__init__", "raise Exception(", "")...)
	// str(e) of the torch error carries its advice lines, so the wrapper
	// repeats them before SGLang's own list.
	out = append(out, "Exception: Capture cuda graph failed: "+strings.TrimPrefix(secondary[0], "torch.AcceleratorError: "))
	out = append(out, secondary[1:]...)
	out = append(out, "",
		"Possible solutions:",
		"1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)",
		"2. set --cuda-graph-max-bs to a smaller value (e.g., 16)",
		"3. disable torch compile by not using --enable-torch-compile",
		"4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)",
		"Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose ",
		"")
	return out
}

// oomTraceback is a CUDA out-of-memory error while a weight shard is
// copied to the GPU (fixtures/gpu/oom.txt's text with load-time numbers).
func oomTraceback(p Params) []string {
	out := []string{"Traceback (most recent call last):"}
	out = append(out, schedulerFrames()...)
	out = append(out, Frame(sglangDir+"/model_executor/model_runner.py", 528, "initialize", "self.load_model()", "")...)
	out = append(out, Frame(sglangDir+"/model_executor/model_runner.py", 1002, "load_model", "self.model = get_model(", "get_model(")...)
	out = append(out, Frame(sglangDir+"/model_loader/loader.py", 660, "load_model", "self.load_weights_and_postprocess(", "")...)
	out = append(out, Frame(sglangDir+"/models/"+modelModule(p.ModelClass), 3204, "load_weights", "weight_loader(param, loaded_weight, shard_id)", "")...)
	out = append(out, Frame(sglangDir+"/layers/linear.py", 431, "weight_loader", "param_data.copy_(loaded_weight)", "")...)
	out = append(out, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU 0 has a total capacity of 139.80 GiB of which 1.02 GiB is free. "+
		"Including non-PyTorch memory, this process has 138.77 GiB memory in use. Of the allocated memory 136.90 GiB is allocated by PyTorch, and 1.21 GiB is reserved by PyTorch but unallocated. "+
		"If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  "+
		"See documentation for Memory Management  (https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)", "")
	return out
}

// ncclInitTraceback is a NCCL failure while the process groups are set up:
// the fast, repeatable failure of a crash loop.
func ncclInitTraceback() []string {
	out := []string{"Traceback (most recent call last):"}
	out = append(out, schedulerFrames()...)
	out = append(out, Frame(sglangDir+"/model_executor/model_runner.py", 512, "initialize", "min_per_gpu_memory = self.init_torch_distributed()", "self.init_torch_distributed()")...)
	out = append(out, Frame(sglangDir+"/distributed/parallel_state.py", 1490, "initialize_model_parallel", "_TP = init_model_parallel_group(", "init_model_parallel_group(")...)
	out = append(out, Frame(torchDir+"/distributed/distributed_c10d.py", 4811, "barrier", "work = group.barrier(opts=opts)", "group.barrier(opts=opts)")...)
	out = append(out, "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)", "")
	return out
}

// storeTimeout is what c10d's client socket prints on each rank when the
// rendezvous store sends nothing for timeoutMS (a peer never came): the
// two lines of sglang issue 7478, its addresses and timeout filled in.
func storeTimeout(host string, port, localPort, timeoutMS int) []string {
	sock := fmt.Sprintf("SocketImpl(fd=100, addr=[%s]:%d, remote=[%s]:%d)", host, localPort, host, port)
	return []string{
		"socket.cpp:460] [c10d] waitForInput: poll for socket " + sock + " returned 0, likely a timeout",
		fmt.Sprintf("socket.cpp:485] [c10d] waitForInput: socket %s timed out after %dms", sock, timeoutMS),
	}
}

// ncclWatchdog returns the c10d lines of a collective that never
// completed: the watchdog fires after the timeout and aborts the process.
// The first lines carry c10's glog prefix (rendered by Line.Render), the
// last two are bare, as std::terminate prints them.
func ncclWatchdog(timeoutMS int) (glog, bare []string) {
	work := fmt.Sprintf("WorkNCCL(SeqNum=9141, OpType=_ALLGATHER_BASE, NumelIn=19008, NumelOut=152064, Timeout(ms)=%d) ran for %d milliseconds before timing out.", timeoutMS, timeoutMS+20)
	glog = []string{
		"ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation timeout: " + work,
		"ProcessGroupNCCL.cpp:2271] [PG ID 2 PG GUID 3(default_pg) Rank 3]  failure detected by watchdog at work sequence id: 9141 PG status: last enqueued work: 9141, last completed work: 9140",
		"ProcessGroupNCCL.cpp:670] Stack trace of the failed collective not found, potentially because FlightRecorder is disabled. You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.",
		"ProcessGroupNCCL.cpp:684] [Rank 3] To avoid data inconsistency, we are taking the entire process down.",
	}
	bare = []string{
		"terminate called after throwing an instance of 'c10::DistBackendError'",
		"  what():  [PG ID 2 PG GUID 3(default_pg) Rank 3] Process group watchdog thread terminated with exception: [Rank 3] Watchdog caught collective operation timeout: " + work,
	}
	return glog, bare
}
