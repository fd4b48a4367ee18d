package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"bringup/remote/sim/sglang"
)

// vllmVersion is the vLLM release whose log infersim writes: V1 engine,
// process prefixes "(APIServer pid=N)", "(EngineCore_DP0 pid=N)",
// "(Worker_TP0 pid=N)" (logformats.md §3.1-3.3).
const vllmVersion = "0.11.0"

// vllmTimeLayout is vLLM's logger datefmt "%m-%d %H:%M:%S": no year.
const vllmTimeLayout = "01-02 15:04:05"

// vllmEngine plays vLLM's OpenAI server (`vllm serve MODEL ...`).
type vllmEngine struct {
	modelTag  string  // the positional model of `vllm serve MODEL`
	gpuMemory float64 // --gpu-memory-utilization
	// set holds the flags given on the command line, in vLLM's argument
	// order, for the "non-default args" line.
	set map[string]bool
}

// parse reads vLLM's arguments: an optional `serve`, the model as a
// positional argument or --model, --port (8000 by default, as vLLM's),
// --host, --tensor-parallel-size (-tp), --enforce-eager and
// --gpu-memory-utilization.
func (e *vllmEngine) parse(fs *flag.FlagSet, args []string, p *sglang.Params) error {
	p.Host = ""
	fs.StringVar(&p.ModelPath, "model", "/models/demo", "model directory")
	fs.IntVar(&p.Port, "port", 8000, "HTTP port")
	fs.StringVar(&p.Host, "host", "", "address to listen on (all when empty)")
	fs.IntVar(&p.TP, "tensor-parallel-size", 1, "tensor parallel size")
	fs.IntVar(&p.TP, "tp", 1, "tensor parallel size")
	fs.BoolVar(&p.DisableCUDAGraph, "enforce-eager", false, "run eagerly: no torch.compile, no CUDA graphs")
	fs.Float64Var(&e.gpuMemory, "gpu-memory-utilization", 0.9, "fraction of GPU memory for the engine")
	// flag stops at the first positional argument; vLLM's argparse takes
	// them anywhere.
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) > 0 && pos[0] == "serve" {
		pos = pos[1:]
	}
	switch len(pos) {
	case 0:
	case 1:
		e.modelTag = pos[0]
		p.ModelPath = pos[0]
	default:
		return fmt.Errorf("unrecognized arguments: %s", strings.Join(pos[1:], " "))
	}
	e.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { e.set[f.Name] = true })
	return nil
}

// nonDefaultArgs renders the "non-default args" dict as vLLM logs it,
// with Python reprs, in vLLM's argument order.
func (e *vllmEngine) nonDefaultArgs(p sglang.Params) string {
	var kv []string
	add := func(k, v string) { kv = append(kv, "'"+k+"': "+v) }
	if e.modelTag != "" {
		add("model_tag", pyStr(e.modelTag))
	}
	if e.set["host"] {
		add("host", pyStr(p.Host))
	}
	if e.set["port"] {
		add("port", strconv.Itoa(p.Port))
	}
	if e.modelTag != "" || e.set["model"] {
		add("model", pyStr(p.ModelPath))
	}
	if p.DisableCUDAGraph {
		add("enforce_eager", "True")
	}
	if e.set["tensor-parallel-size"] || e.set["tp"] {
		add("tensor_parallel_size", strconv.Itoa(p.TP))
	}
	if e.set["gpu-memory-utilization"] {
		add("gpu_memory_utilization", strconv.FormatFloat(e.gpuMemory, 'f', -1, 64))
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
	e     *vllmEngine
	lines []line
	api   vproc
	core  vproc
	// workers are the tensor-parallel worker processes (TP > 1); with one
	// GPU the engine core runs the model itself.
	workers []vproc
	// open is the process whose tqdm bar left a line of the shared stderr
	// open: its next write continues that line, without a prefix.
	open string
}

func newVBuilder(s *sglang.Script, e *vllmEngine) *vbuilder {
	p := s.Params
	b := &vbuilder{s: s, p: p, e: e, api: vproc{"APIServer", p.PID}, core: vproc{"EngineCore_DP0", p.PID + 43}}
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
		b.lines = append(b.lines, line{At: at, stdout: true, text: func(t time.Time) string {
			return p.tag() + level + " " + t.Format(vllmTimeLayout) + " [" + src + "] " + m
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
	b.lines = append(b.lines, line{At: at, partial: open, text: func(time.Time) string { return tag + "\r" + text }})
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

// play lays vLLM's startup over the timeline: the API server parses its
// arguments and binds its port, the engine core starts the workers, which
// load the weights, size the KV cache, compile and capture CUDA graphs;
// then the API server lists its routes and uvicorn takes the socket over.
func (e *vllmEngine) play(s *sglang.Script) *play {
	b := newVBuilder(s, e)
	p, m := s.Params, s.Marks
	pl := &play{exit: sglang.Never}
	defer func() {
		sortLines(b.lines)
		pl.lines = b.lines
	}()
	fail := failureAt(s)
	// The kernel's sitecustomize prints its line before vLLM's logging
	// exists: bare, in the same words and at the same moment as under SGLang.
	for _, l := range s.Lines {
		if strings.Contains(l.Text, ": sitecustomize loaded from ") {
			b.lines = append(b.lines, fixed(l.At, l.Text))
		}
	}
	b.info(p.Boot, b.api, "api_server.py:1839", "vLLM API server version %s", vllmVersion)
	b.info(p.Boot+time.Millisecond, b.api, "utils.py:233", "non-default args: %s", e.nonDefaultArgs(p))
	// vLLM binds its port before it builds the engine (vllm#8204): a port
	// in use fails here, seconds in.
	b.lines = append(b.lines, line{At: p.Boot + 2*time.Millisecond, bind: true})
	t := p.Boot + p.Init/10
	b.info(t, b.api, "model.py:547", "Resolved architecture: %s", p.ModelClass)
	b.info(t, b.api, "model.py:1510", "Using max model len %d", maxModelLen)
	b.info(t+time.Millisecond, b.api, "scheduler.py:205", "Chunked prefill is enabled with max_num_batched_tokens=8192.")
	t = p.Boot + p.Init/5
	b.info(t, b.core, "core.py:644", "Waiting for init message from front-end.")
	b.info(t+time.Millisecond, b.core, "core.py:77", "Initializing a V1 LLM engine (v%s) with config: %s", vllmVersion, engineConfig(p))
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
	b.info(m.KVAllocated+2*time.Millisecond, b.core, "kv_cache_utils.py:1091", "Maximum concurrency for %s tokens per request: %.2fx", commas(maxModelLen), float64(tokens)/maxModelLen)

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
	b.info(at+time.Millisecond, b.api, "api_server.py:1912", "Starting vLLM API server 0 on http://%s:%d", bindHost(p.Host), p.Port)
	b.info(at+2*time.Millisecond, b.api, "launcher.py:34", "Available routes are:")
	for i, r := range vllmRouteList() {
		b.info(at+time.Duration(3+i)*time.Millisecond, b.api, "launcher.py:42", "Route: %s, Methods: %s", r[0], r[1])
	}
	uv := func(at time.Duration, msg string) line {
		l := e.uvicorn(p, "INFO", msg, false)
		l.At = at
		return l
	}
	ready := uv(listen, "Application startup complete.")
	ready.ready = true
	b.lines = append(b.lines,
		uv(listen-2*time.Millisecond, fmt.Sprintf("Started server process [%d]", p.PID)),
		uv(listen-time.Millisecond, "Waiting for application startup."),
		line{At: listen, listen: true}, ready)
	return pl
}

// capture adds the CUDA graph capture: a bar per runtime mode, mixed
// prefill-decode batches piecewise, then decode batches as full graphs,
// each refreshing in place. It reports whether the capture completes; if
// not, the failure (or the hang) is in place.
func (b *vbuilder) capture(pl *play, fail time.Duration) bool {
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
		}
		return false
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
		pyStr(p.ModelPath), pyStr(p.ModelPath), maxModelLen, p.TP, eager, p.ModelPath, compile)
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

// vllmRouteList is what vLLM's launcher lists at startup: path, methods.
func vllmRouteList() [][2]string {
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

// bindFailed is the API server's early bind failing: Python's traceback of
// the OSError, before any engine process exists.
func (e *vllmEngine) bindFailed(p sglang.Params, err error) []line {
	msg := "OSError: " + err.Error()
	if n, ok := errnoOf(err); ok {
		msg = fmt.Sprintf("OSError: [Errno %d] %s", int(n), pyErrnoText(n))
	}
	frames := slices.Concat(apiFrames(),
		frame(vllmDir+"/entrypoints/openai/api_server.py", 1884, "run_server", "listen_address, sock = setup_server(args)", "setup_server(args)"),
		frame(vllmDir+"/entrypoints/openai/api_server.py", 1864, "setup_server", "sock = create_server_socket(sock_addr)", "create_server_socket(sock_addr)"),
		frame(vllmDir+"/entrypoints/openai/api_server.py", 1818, "create_server_socket", "sock.bind(addr)", ""),
	)
	api := vproc{"APIServer", p.PID}
	var out []line
	for _, s := range (pyChain{{frames: frames, msg: []string{msg}}}).lines() {
		out = append(out, fixed(0, api.tag()+s))
	}
	return out
}

// stopped: uvicorn shuts down when it serves; before that the API server
// goes quietly.
func (e *vllmEngine) stopped(p sglang.Params, listening bool) []line {
	if !listening {
		return nil
	}
	var out []line
	for _, msg := range []string{"Shutting down", "Waiting for application shutdown.", "Application shutdown complete.", fmt.Sprintf("Finished server process [%d]", p.PID)} {
		out = append(out, e.uvicorn(p, "INFO", msg, false))
	}
	return out
}

// uvicorn lines carry the API server's prefix and uvicorn's default format
// without a time: "(APIServer pid=1) INFO:     Application startup complete.".
func (e *vllmEngine) uvicorn(p sglang.Params, level, msg string, access bool) line {
	l := fixed(0, vproc{"APIServer", p.PID}.tag()+uvicornLevel(level, msg))
	l.stdout = access
	return l
}

// routes are vLLM's endpoints that matter for readiness and a smoke test.
// The server listens only once the engine is ready, so /health is 200 from
// its first answer.
func (e *vllmEngine) routes(s *server) {
	s.badRequest = func(msg string) string {
		b, _ := json.Marshal(map[string]any{"object": "error", "message": msg, "type": "Bad Request", "param": nil, "code": 400})
		return string(b)
	}
	s.mux.HandleFunc("GET /health", s.health)
	s.mux.HandleFunc("GET /ping", s.health)
	s.mux.HandleFunc("GET /version", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]string{"version": vllmVersion})
	})
	s.mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		now := time.Now().Unix()
		writeJSON(w, map[string]any{"object": "list", "data": []map[string]any{{
			"id": s.model, "object": "model", "created": now, "owned_by": "vllm", "root": s.model, "parent": nil, "max_model_len": maxModelLen,
			"permission": []map[string]any{{
				"id": fmt.Sprintf("modelperm-%032x", s.nextID.Add(1)), "object": "model_permission", "created": now,
				"allow_create_engine": false, "allow_sampling": true, "allow_logprobs": true, "allow_search_indices": false,
				"allow_view": true, "allow_fine_tuning": false, "organization": "*", "group": nil, "is_blocking": false,
			}},
		}}})
	})
	s.mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		s.complete(w, r, fmt.Sprintf("cmpl-%032x", s.nextID.Add(1)),
			map[string]any{"stop_reason": nil, "prompt_logprobs": nil, "token_ids": nil, "prompt_token_ids": nil},
			map[string]any{"service_tier": nil, "system_fingerprint": nil, "kv_transfer_params": nil})
	})
}
