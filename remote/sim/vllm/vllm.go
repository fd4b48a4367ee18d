// Package vllm generates the startup log of a vLLM server (0.11, V1
// engine, `vllm serve MODEL ...`) over the startup timeline that
// remote/sim/sglang computes: the same phase marks, shard times, failure
// moments and GPU readings, in vLLM's own texts (logformats.md §3): its
// per-process prefixes ("(APIServer pid=N) ", "(EngineCore_DP0 pid=N) ",
// "(Worker_TP0 pid=N) "), logger records on stdout, tqdm bars and
// tracebacks on stderr, and its failure reports (WorkerProc / EngineCore
// failed to start / Engine core initialization failed).
//
// It is pure: no IO, no clock, no HTTP. The stand-in server
// (cmd/infersim) writes these lines from a real process; the simulated
// hosts (remote/sim) turn them into journal entries.
package vllm

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bringup-dev/bringup/remote/sim/sglang"
)

// Version is the vLLM release whose log this package writes.
const Version = "0.11.0"

// timeLayout is vLLM's logger datefmt "%m-%d %H:%M:%S": no year.
const timeLayout = "01-02 15:04:05"

// Args are what a `vllm serve` command line says beyond the timeline's
// Params, for the "non-default args" line the API server logs first.
type Args struct {
	// ModelTag is the positional model of `vllm serve MODEL`; empty when
	// the model came from --model (or not at all).
	ModelTag string
	// Set names the flags given on the command line, without dashes
	// (host, port, model, tensor-parallel-size or tp,
	// gpu-memory-utilization).
	Set map[string]bool
	// GPUMemory is --gpu-memory-utilization, logged when Set has it.
	GPUMemory float64
}

// Line is one thing vLLM's startup does At after the process started:
// write a line, or (Text nil) act on the HTTP port.
type Line struct {
	At time.Duration
	// Text renders the line as the process writes it at t: the process
	// prefix, and a tqdm refresh's leading "\r", included; the newline not.
	Text func(t time.Time) string
	// Stdout: the line goes to stdout (logger records, uvicorn's access
	// log); otherwise to stderr (tqdm bars, Python's reports of uncaught
	// exceptions).
	Stdout bool
	// Partial leaves the line open: a tqdm bar that refreshes in place
	// writes its newline only when it closes, and the next write to the
	// stream continues the line.
	Partial bool
	// Bind binds the HTTP port without listening (vLLM does that before
	// it builds the engine); Listen starts accepting connections on it;
	// Ready marks the moment /health turns 200, after the line is written.
	Bind, Listen, Ready bool
}

// fixed is a line whose text does not depend on the time it is written.
func fixed(at time.Duration, s string) Line {
	return Line{At: at, Text: func(time.Time) string { return s }}
}

// Startup is one startup of vLLM as Play lays it out.
type Startup struct {
	Lines []Line // in order of At
	// Exit is when the process exits on its own (sglang.Never: it runs
	// until stopped, serving or hung), with ExitCode.
	Exit     time.Duration
	ExitCode int
}

// nonDefault renders the "non-default args" dict as vLLM logs it,
// with Python reprs, in vLLM's argument order.
func (a Args) nonDefault(p sglang.Params) string {
	var kv []string
	add := func(k, v string) { kv = append(kv, "'"+k+"': "+v) }
	if a.ModelTag != "" {
		add("model_tag", pyStr(a.ModelTag))
	}
	if a.Set["host"] {
		add("host", pyStr(p.Host))
	}
	if a.Set["port"] {
		add("port", strconv.Itoa(p.Port))
	}
	if a.ModelTag != "" || a.Set["model"] {
		add("model", pyStr(p.ModelPath))
	}
	if p.DisableCUDAGraph {
		add("enforce_eager", "True")
	}
	if a.Set["tensor-parallel-size"] || a.Set["tp"] {
		add("tensor_parallel_size", strconv.Itoa(p.TP))
	}
	if a.Set["gpu-memory-utilization"] {
		add("gpu_memory_utilization", strconv.FormatFloat(a.GPUMemory, 'f', -1, 64))
	}
	return "{" + strings.Join(kv, ", ") + "}"
}

// pyStr is Python's repr of a plain string.
func pyStr(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// vproc is one process of a vLLM server as its log prefix names it.
type vproc struct {
	name string
	pid  int
}

// tag is vLLM's per-process prefix; uncoloured, as newer releases write it
// when the stream is not a terminal.
func (p vproc) tag() string { return "(" + p.name + " pid=" + strconv.Itoa(p.pid) + ") " }

// vbuilder lays vLLM's lines over the shared timeline.
type vbuilder struct {
	s     *sglang.Script
	p     sglang.Params
	lines []Line
	api   vproc
	core  vproc
	// workers are the tensor-parallel worker processes (TP > 1); with one
	// GPU the engine core runs the model itself.
	workers []vproc
	// open is the process whose tqdm bar left a line of the shared stderr
	// open: its next write continues that line, without a prefix.
	open string
}

func newVBuilder(s *sglang.Script) *vbuilder {
	p := s.Params
	b := &vbuilder{s: s, p: p, api: vproc{"APIServer", p.PID}, core: vproc{"EngineCore_DP0", p.PID + 43}}
	if p.TP > 1 {
		for r := range p.TP {
			b.workers = append(b.workers, vproc{fmt.Sprintf("Worker_TP%d", r), p.PID + 112 + 2*r})
		}
	}
	return b
}

// model is the process that runs rank r of the model.
func (b *vbuilder) model(r int) vproc {
	if len(b.workers) == 0 {
		return b.core
	}
	return b.workers[r]
}

// log adds one logger record to stdout. vLLM's NewLineFormatter repeats the
// header on every line of a multi-line message (a traceback), and the
// process prefix goes in front of each.
func (b *vbuilder) log(at time.Duration, p vproc, level, src, msg string) {
	for _, m := range strings.Split(msg, "\n") {
		b.lines = append(b.lines, Line{At: at, Stdout: true, Text: func(t time.Time) string {
			return p.tag() + level + " " + t.Format(timeLayout) + " [" + src + "] " + m
		}})
	}
}

func (b *vbuilder) info(at time.Duration, p vproc, src, format string, a ...any) {
	b.log(at, p, "INFO", src, fmt.Sprintf(format, a...))
}

// raw adds lines a process writes to stderr past the logger (Python's
// report of an uncaught exception, multiprocessing's), one a millisecond
// apart, and returns when the last is due.
func (b *vbuilder) raw(at time.Duration, p vproc, texts ...string) time.Duration {
	for i, s := range texts {
		tag := p.tag()
		if i == 0 && b.open == p.name {
			tag = ""
		}
		b.lines = append(b.lines, fixed(at+time.Duration(i)*time.Millisecond, tag+s))
	}
	b.open = ""
	return at + time.Duration(len(texts))*time.Millisecond
}

// bar adds one tqdm refresh to stderr. tqdm starts a refresh with "\r";
// the prefix goes in front when the refresh starts a line (vLLM's
// _add_prefix writes it after every newline), and an open refresh leaves
// the line open until the bar closes.
func (b *vbuilder) bar(at time.Duration, p vproc, text string, open bool) {
	tag := p.tag()
	if b.open == p.name {
		tag = ""
	}
	b.lines = append(b.lines, Line{At: at, Partial: open, Text: func(time.Time) string { return tag + "\r" + text }})
	b.open = ""
	if open {
		b.open = p.name
	}
}

// gib is how much GPU memory (GiB, device 0) the timeline took on between
// two moments: the engine's memory figures follow the GPU readings.
func (b *vbuilder) gib(from, to time.Duration) float64 {
	return float64(b.s.GPU(to, 0).MemUsedMiB-b.s.GPU(from, 0).MemUsedMiB) / 1024
}

// kvBytesPerToken is DeepSeek-V3's MLA cache per token: (512 + 64)
// elements of two bytes in each of 61 layers.
const kvBytesPerToken = 576 * 2 * 61

// Play lays vLLM's startup over the timeline s, as `vllm serve` started
// with a: the API server parses its arguments and binds its port (a port
// in use, sglang.FailPort, fails there), the engine core starts the workers, which
// load the weights, size the KV cache, compile and capture CUDA graphs;
// then the API server lists its routes and uvicorn takes the socket over.
func Play(s *sglang.Script, a Args) *Startup {
	b := newVBuilder(s)
	p, m := s.Params, s.Marks
	pl := &Startup{Exit: sglang.Never}
	defer func() {
		// Processes log a few milliseconds apart, so the builder's order
		// is not quite time order; lines due at the same moment (one
		// multi-line record) keep theirs.
		sort.SliceStable(b.lines, func(i, j int) bool { return b.lines[i].At < b.lines[j].At })
		pl.Lines = b.lines
	}()
	fail := failureAt(s)
	// The kernel's sitecustomize prints its line before vLLM's logging
	// exists: bare, in the same words and at the same moment as under SGLang.
	for _, l := range s.Lines {
		if strings.Contains(l.Text, ": sitecustomize loaded from ") {
			b.lines = append(b.lines, fixed(l.At, l.Text))
		}
	}
	b.info(p.Boot, b.api, "api_server.py:1839", "vLLM API server version %s", Version)
	b.info(p.Boot+time.Millisecond, b.api, "utils.py:233", "non-default args: %s", a.nonDefault(p))
	// vLLM binds its port before it builds the engine (vllm#8204): a port
	// in use fails here, seconds in.
	bind := p.Boot + 2*time.Millisecond
	b.lines = append(b.lines, Line{At: bind, Bind: true})
	if p.Failure == sglang.FailPort {
		for i, l := range BindFailed(p, syscall.EADDRINUSE) {
			l.At = bind + time.Duration(i)*time.Millisecond
			b.lines = append(b.lines, l)
		}
		pl.Exit, pl.ExitCode = bind+500*time.Millisecond, 1
		return pl
	}
	t := p.Boot + p.Init/10
	b.info(t, b.api, "model.py:547", "Resolved architecture: %s", p.ModelClass)
	b.info(t, b.api, "model.py:1510", "Using max model len %d", sglang.ContextLen)
	b.info(t+time.Millisecond, b.api, "scheduler.py:205", "Chunked prefill is enabled with max_num_batched_tokens=8192.")
	t = p.Boot + p.Init/5
	b.info(t, b.core, "core.py:644", "Waiting for init message from front-end.")
	b.info(t+time.Millisecond, b.core, "core.py:77", "Initializing a V1 LLM engine (v%s) with config: %s", Version, engineConfig(p))
	if len(b.workers) > 0 {
		b.log(t+2*time.Millisecond, b.core, "WARNING", "multiproc_executor.py:720", "Reducing Torch parallelism from 24 threads to 1 to avoid unnecessary CPU contention. Set OMP_NUM_THREADS in the external environment to tune this value as needed.")
	}
	b.info(m.InitBegin, b.model(0), "pynccl.py:103", "vLLM is using nccl==2.27.3")
	if p.Failure == sglang.FailCrashLoop {
		b.initFailed(fail, "init_device", pyChain{{frames: ncclInitFrames(), msg: timelineText(s, "RuntimeError: NCCL error: ", 1)}}, pl)
		return pl
	}
	for r := range p.TP {
		b.info(m.InitEnd+time.Duration(r)*time.Millisecond, b.model(r), "parallel_state.py:1208",
			"rank %d in world size %d is assigned as DP rank 0, PP rank 0, TP rank %d, EP rank %d", r, p.TP, r, r)
	}

	b.info(m.WeightsBegin, b.model(0), "gpu_model_runner.py:2602", "Starting to load model %s...", p.ModelPath)
	b.info(m.WeightsBegin+time.Millisecond, b.model(0), "cuda.py:297", "Using FlashMLA backend on V1 engine.")
	// The shard bar is the same safetensors bar as SGLang's, from rank 0.
	for _, l := range s.Lines {
		if l.Bar && strings.HasPrefix(l.Text, "Loading safetensors checkpoint shards:") {
			b.bar(l.At, b.model(0), l.Text, false)
		}
	}
	if p.Failure == sglang.FailOOM {
		b.initFailed(fail, "load_model", pyChain{{frames: loadFrames(modelFile(s)), msg: timelineText(s, "torch.OutOfMemoryError: ", 1)}}, pl)
		return pl
	}
	weights := b.gib(m.WeightsBegin, m.WeightsEnd)
	b.info(m.WeightsEnd, b.model(0), "default_loader.py:267", "Loading weights took %.2f seconds", (p.Weights - p.Weights/50).Seconds())
	b.info(m.WeightsEnd, b.model(0), "gpu_model_runner.py:2653", "Model loading took %.4f GiB memory and %.6f seconds", weights, p.Weights.Seconds())

	kv := b.gib(m.WeightsEnd, m.KVAllocated)
	if !p.DisableCUDAGraph {
		// torch.compile runs before the KV cache is sized.
		step := (m.KVAllocated - m.WeightsEnd) / 5
		b.info(m.WeightsEnd+step, b.model(0), "backends.py:548", "Using cache directory: /root/.cache/vllm/torch_compile_cache/%s/rank_0_0/backbone for vLLM's torch.compile", cacheHash(p))
		b.info(m.WeightsEnd+2*step, b.model(0), "backends.py:559", "Dynamo bytecode transform time: %.2f s", (2 * step).Seconds())
		b.info(m.WeightsEnd+4*step, b.model(0), "backends.py:164", "Directly load the compiled graph(s) for dynamic shape from the cache, took %.3f s", (2 * step).Seconds())
		b.info(m.WeightsEnd+4*step+time.Millisecond, b.model(0), "monitor.py:34", "torch.compile takes %.2f s in total", (4 * step).Seconds())
	}
	tokens := int(kv * (1 << 30) / kvBytesPerToken)
	b.info(m.KVAllocated, b.model(0), "gpu_worker.py:298", "Available KV cache memory: %.2f GiB", kv)
	b.info(m.KVAllocated+time.Millisecond, b.core, "kv_cache_utils.py:1087", "GPU KV cache size: %s tokens", commas(tokens))
	b.info(m.KVAllocated+2*time.Millisecond, b.core, "kv_cache_utils.py:1091", "Maximum concurrency for %s tokens per request: %.2fx", commas(sglang.ContextLen), float64(tokens)/sglang.ContextLen)

	t = m.KVEnd
	if !p.DisableCUDAGraph {
		if !b.capture(pl, fail) {
			return pl
		}
		t = m.CaptureEnd
		b.info(t, b.model(0), "gpu_model_runner.py:3480", "Graph capturing finished in %.0f secs, took %.2f GiB", p.Capture.Seconds(), b.gib(m.CaptureBegin, m.CaptureEnd))
	}
	t += 200 * time.Millisecond
	b.info(t, b.core, "core.py:210", "init engine (profile, create kv cache, warmup model) took %.2f seconds", (t - p.Boot - p.Init/5).Seconds())
	b.info(t+100*time.Millisecond, b.api, "loggers.py:147", "Engine 000: vllm cache_config_info with initialization after num_gpu_blocks is: %d", tokens/64)

	// The API server comes up: routes, then uvicorn on the bound socket.
	listen := m.Listening
	at := listen - p.HTTP/2
	b.info(at, b.api, "api_server.py:1634", "Supported_tasks: ['generate']")
	b.info(at+time.Millisecond, b.api, "api_server.py:1912", "Starting vLLM API server 0 on http://%s:%d", cmp.Or(p.Host, "0.0.0.0"), p.Port)
	b.info(at+2*time.Millisecond, b.api, "launcher.py:34", "Available routes are:")
	for i, r := range routeList() {
		b.info(at+time.Duration(3+i)*time.Millisecond, b.api, "launcher.py:42", "Route: %s, Methods: %s", r[0], r[1])
	}
	uv := func(at time.Duration, msg string) Line {
		l := Uvicorn(p, "INFO", msg, false)
		l.At = at
		return l
	}
	ready := uv(listen, "Application startup complete.")
	ready.Ready = true
	b.lines = append(b.lines,
		uv(listen-2*time.Millisecond, fmt.Sprintf("Started server process [%d]", p.PID)),
		uv(listen-time.Millisecond, "Waiting for application startup."),
		Line{At: listen, Listen: true}, ready)
	return pl
}

// capture adds the CUDA graph capture: a bar per runtime mode, mixed
// prefill-decode batches piecewise, then decode batches as full graphs,
// each refreshing in place. It reports whether the capture completes; if
// not, the failure (or the hang) is in place.
func (b *vbuilder) capture(pl *Startup, fail time.Duration) bool {
	p, m := b.p, b.s.Marks
	bars := []struct {
		desc string
		n    int
		from time.Duration
	}{
		{"Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)", 67, m.CaptureBegin},
		{"Capturing CUDA graphs (decode, FULL)", 35, m.CaptureBegin + p.Capture*2/3},
	}
	r0 := b.model(0)
	switch p.Failure {
	case sglang.FailCapture, sglang.FailHang, sglang.FailNCCL:
		// The first batch never completes: the bar shows 0 %.
		bar := bars[0]
		b.bar(bar.from, r0, tqdmBar(bar.desc, 0, bar.n, 0), true)
		switch p.Failure {
		case sglang.FailCapture:
			b.captureFailed(fail, tqdmBar(bar.desc, 0, bar.n, fail-bar.from), pl)
		case sglang.FailNCCL:
			b.collectiveTimeout(fail, pl)
		default: // a hang: the bar stays at 0 %
		}
		return false
	case sglang.FailNone, sglang.FailOOM, sglang.FailPort, sglang.FailCrashLoop: // capture succeeds
	case sglang.FailPeerLost: // multi-node SGLang only; a vLLM script captures
	}
	for i, bar := range bars {
		end := m.CaptureEnd - 50*time.Millisecond
		if i == 0 {
			end = bars[1].from - 10*time.Millisecond
		}
		span := end - bar.from
		const refreshes = 10
		for k := 0; k <= refreshes; k++ {
			done := bar.n * k / refreshes
			b.bar(bar.from+span*time.Duration(k)/refreshes, r0, tqdmBar(bar.desc, done, bar.n, span*time.Duration(k)/refreshes), k < refreshes)
		}
	}
	return true
}

// tqdmBar is one refresh of a normal tqdm bar with description desc. The
// bar's machinery (ten cells of eighth blocks, tqdm's intervals and rates)
// is the one of SGLang's capture bar; only the description differs.
func tqdmBar(desc string, n, total int, elapsed time.Duration) string {
	_, rest, _ := strings.Cut(sglang.CaptureBarLine(1, 0, n, total, elapsed), "): ")
	return desc + ": " + rest
}

// failureAt is when the timeline's failure strikes: its first error line.
func failureAt(s *sglang.Script) time.Duration {
	for _, l := range s.Lines {
		if l.Prefix == sglang.PrefixGlog || strings.HasPrefix(l.Text, "Scheduler hit an exception") {
			return l.At
		}
	}
	return sglang.Never
}

// engineConfig is the config the engine core logs when it starts.
func engineConfig(p sglang.Params) string {
	eager, compile := "False", `{"level":3,"debug_dump_path":"","cache_dir":"","backend":"","custom_ops":[],"splitting_ops":["vllm.unified_attention","vllm.unified_attention_with_output","vllm.mamba_mixer2","vllm.mamba_mixer","vllm.short_conv","vllm.linear_attention","vllm.plamo2_mamba_mixer","vllm.gdn_attention","vllm.sparse_attn_indexer"],"use_inductor":true,"compile_sizes":[],"inductor_compile_config":{"enable_auto_functionalized_v2":false},"inductor_passes":{},"cudagraph_mode":[2,1],"use_cudagraph":true,"cudagraph_num_of_warmups":1,"cudagraph_capture_sizes":[512,504,496,488,480,472,464,456,448,440,432,424,416,408,400,392,384,376,368,360,352,344,336,328,320,312,304,296,288,280,272,264,256,248,240,232,224,216,208,200,192,184,176,168,160,152,144,136,128,120,112,104,96,88,80,72,64,56,48,40,32,24,16,8,4,2,1],"cudagraph_copy_inputs":false,"full_cuda_graph":false,"use_inductor_graph_partition":false,"pass_config":{},"max_capture_size":512,"local_cache_dir":null}`
	if p.DisableCUDAGraph {
		eager, compile = "True", `{"level":0,"debug_dump_path":"","cache_dir":"","backend":"","custom_ops":[],"splitting_ops":null,"use_inductor":true,"compile_sizes":[],"inductor_compile_config":{"enable_auto_functionalized_v2":false},"inductor_passes":{},"cudagraph_mode":0,"use_cudagraph":true,"cudagraph_num_of_warmups":0,"cudagraph_capture_sizes":[],"cudagraph_copy_inputs":false,"full_cuda_graph":false,"use_inductor_graph_partition":false,"pass_config":{},"max_capture_size":0,"local_cache_dir":null}`
	}
	return fmt.Sprintf("model=%s, speculative_config=None, tokenizer=%s, skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, tokenizer_revision=None, "+
		"trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=%d, download_dir=None, load_format=auto, tensor_parallel_size=%d, pipeline_parallel_size=1, "+
		"data_parallel_size=1, disable_custom_all_reduce=False, quantization=fp8, enforce_eager=%s, kv_cache_dtype=auto, device_config=cuda, "+
		"structured_outputs_config=StructuredOutputsConfig(backend='auto', disable_fallback=False, disable_any_whitespace=False, disable_additional_properties=False, reasoning_parser=''), "+
		"observability_config=ObservabilityConfig(show_hidden_metrics_for_version=None, otlp_traces_endpoint=None, collect_detailed_traces=None), seed=0, served_model_name=%s, "+
		"enable_prefix_caching=True, chunked_prefill_enabled=True, pooler_config=None, compilation_config=%s",
		pyStr(p.ModelPath), pyStr(p.ModelPath), sglang.ContextLen, p.TP, eager, p.ModelPath, compile)
}

// cacheHash names torch.compile's cache directory, which depends on the
// model and the parallel layout.
func cacheHash(p sglang.Params) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s/tp%d", p.ModelPath, p.TP)))
	return hex.EncodeToString(h[:5])
}

// commas renders n with Python's "{:,}".
func commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// routeList is what vLLM's launcher lists at startup: path, methods.
func routeList() [][2]string {
	return [][2]string{
		{"/openapi.json", "GET, HEAD"}, {"/docs", "GET, HEAD"}, {"/docs/oauth2-redirect", "GET, HEAD"}, {"/redoc", "GET, HEAD"},
		{"/health", "GET"}, {"/load", "GET"}, {"/ping", "POST"}, {"/ping", "GET"}, {"/tokenize", "POST"}, {"/detokenize", "POST"},
		{"/v1/models", "GET"}, {"/version", "GET"}, {"/v1/responses", "POST"}, {"/v1/responses/{response_id}", "GET"},
		{"/v1/responses/{response_id}/cancel", "POST"}, {"/v1/chat/completions", "POST"}, {"/v1/completions", "POST"},
		{"/v1/embeddings", "POST"}, {"/pooling", "POST"}, {"/classify", "POST"}, {"/score", "POST"}, {"/v1/score", "POST"},
		{"/v1/audio/transcriptions", "POST"}, {"/v1/audio/translations", "POST"}, {"/rerank", "POST"}, {"/v1/rerank", "POST"},
		{"/v2/rerank", "POST"}, {"/scale_elastic_ep", "POST"}, {"/is_scaling_elastic_ep", "POST"}, {"/invocations", "POST"},
		{"/metrics", "GET"},
	}
}

// BindFailed is what the API server writes when its early bind fails with
// err: Python's traceback of the OSError, before any engine process
// exists. The process then exits with status 1.
func BindFailed(p sglang.Params, err error) []Line {
	msg := "OSError: " + err.Error()
	if n, ok := errnoOf(err); ok {
		msg = fmt.Sprintf("OSError: [Errno %d] %s", int(n), pyErrnoText(n))
	}
	frames := slices.Concat(apiFrames(),
		sglang.Frame(vllmDir+"/entrypoints/openai/api_server.py", 1884, "run_server", "listen_address, sock = setup_server(args)", "setup_server(args)"),
		sglang.Frame(vllmDir+"/entrypoints/openai/api_server.py", 1864, "setup_server", "sock = create_server_socket(sock_addr)", "create_server_socket(sock_addr)"),
		sglang.Frame(vllmDir+"/entrypoints/openai/api_server.py", 1818, "create_server_socket", "sock.bind(addr)", ""),
	)
	api := vproc{"APIServer", p.PID}
	var out []Line
	for _, s := range (pyChain{{frames: frames, msg: []string{msg}}}).lines() {
		out = append(out, fixed(0, api.tag()+s))
	}
	return out
}

// Stopped is what vLLM writes on SIGTERM: uvicorn shuts down when it
// listens; before that the API server goes quietly.
func Stopped(p sglang.Params, listening bool) []Line {
	if !listening {
		return nil
	}
	var out []Line
	for _, msg := range []string{"Shutting down", "Waiting for application shutdown.", "Application shutdown complete.", fmt.Sprintf("Finished server process [%d]", p.PID)} {
		out = append(out, Uvicorn(p, "INFO", msg, false))
	}
	return out
}

// Uvicorn is one line of uvicorn's logger at level (INFO, ERROR), or of
// its access logger (access), which writes to stdout: the API server's
// prefix and uvicorn's default format without a time,
// "(APIServer pid=1) INFO:     Application startup complete.".
func Uvicorn(p sglang.Params, level, msg string, access bool) Line {
	l := fixed(0, vproc{"APIServer", p.PID}.tag()+sglang.Uvicorn(level, msg))
	l.Stdout = access
	return l
}

// StatsLine is vLLM V1's periodic stats record (loggers.py,
// LoggingStatLogger.log) as the API server logs it at t: "(APIServer
// pid=1) INFO 05-19 10:13:11 [loggers.py:271] Engine 000: Avg prompt
// throughput: 0.0 tokens/s, Avg generation throughput: 1055.3 tokens/s,
// Running: 18 reqs, Waiting: 43 reqs, GPU KV cache usage: 95.9%, Prefix
// cache hit rate: 0.0%".
func StatsLine(p sglang.Params, b sglang.Batch, t time.Time) string {
	return vproc{"APIServer", p.PID}.tag() + "INFO " + t.Format(timeLayout) + " [loggers.py:271] " +
		fmt.Sprintf("Engine 000: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, Running: %d reqs, Waiting: %d reqs, GPU KV cache usage: %.1f%%, Prefix cache hit rate: %.1f%%",
			0.0, b.GenTPS, b.Running, b.Queued, b.Usage*100, 0.0)
}
