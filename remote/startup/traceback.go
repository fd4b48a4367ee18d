package startup

import "strings"

// FrameRule maps traceback frames to the phase a process was in when it
// raised: a frame of `init_memory_pool` means the KV cache was being sized,
// one of `capture_one_batch_size` that CUDA graphs were being captured. An
// excerpt that holds only a traceback still says where it died.
type FrameRule struct {
	// Funcs are function names, matched exactly against the frame's
	// `in <func>`.
	Funcs []string `json:"funcs,omitempty" yaml:"funcs,omitempty"`
	// Files are substrings of the frame's file path.
	Files []string `json:"files,omitempty" yaml:"files,omitempty"`
	Phase Phase    `json:"phase,omitempty" yaml:"phase,omitempty"`
	// Cause, when set, names what a native crash (a segmentation fault
	// whose crash dump has this frame innermost) is: a crash inside
	// ncclCommInitRank is NCCL's.
	Cause string `json:"cause,omitempty" yaml:"cause,omitempty"`
}

// tbKind is what a line is to the traceback parser.
type tbKind uint8

const (
	tbNone      tbKind = iota // not part of a traceback
	tbStart                   // "Traceback (most recent call last):" (maybe after a log message)
	tbFrame                   // `File "…", line N, in f`
	tbCode                    // the source line under a frame, carets, "[Previous line repeated …]"
	tbException               // the exception line that ends a traceback
)

const (
	tbHeader    = "Traceback (most recent call last)"
	faultHeader = "(most recent call first)"
)

// maxTBSources bounds the per-process traceback states: ranks and
// processes of one host, not an attacker's choice of tags.
const maxTBSources = 64

// tbState is one process's traceback in progress.
type tbState struct {
	open      bool
	afterFile bool   // the previous line was a frame: this one is its source
	phase     Phase  // the deepest phase the frames named
	code      string // the last source line: what a bare AssertionError quotes
	head      string // the line that opened it: what a traceback cut short quotes
	// innermost is faulthandler's dump's first frame: the call a native
	// crash happened in ("most recent call first").
	innermost string
	reverse   bool
	// fn is the function of the last frame so far (traceback order): when
	// the exception line comes, the one that raised it.
	fn string
}

// tbParser follows Python tracebacks in a stream of lines, per process tag,
// so interleaved ranks do not mix their frames, and without relying on
// indentation, which pastes lose.
//
// A chain ("The above exception was the direct cause of the following
// exception:", "During handling of the above exception, another exception
// occurred:") is a run of tracebacks here, each ending in its exception
// line; the diagnosis takes the most specific of those lines, the earliest
// on a tie, which in a chain is the innermost cause, not the re-raise.
type tbParser struct {
	frames *frameIndex
	by     map[string]*tbState
	nOpen  int
	// last is the traceback opened most recently: SGLang logs a traceback
	// as one multi-line message, so only its first line carries the rank
	// tag and the rest arrive bare.
	last *tbState
	// raised is the function that raised the exception of the line fed
	// last, when that line ended a traceback ("" otherwise).
	raised string
}

func newTBParser(f *frameIndex) tbParser { return tbParser{frames: f, by: map[string]*tbState{}} }

func (p *tbParser) reset() {
	clear(p.by)
	p.nOpen, p.last = 0, nil
}

// feed classifies one line. For tbException it also returns the phase the
// frames named ("" when none did). header and frame report whether the line
// holds the traceback header or a frame's `File "`, which callers learn
// from their keyword scan.
func (p *tbParser) feed(msg string, header, frame bool) (tbKind, Phase, string) {
	p.raised = ""
	if !header && !frame && p.nOpen == 0 {
		return tbNone, "", ""
	}
	src, body := splitLine(msg)
	if frame && !header && isFrame(strings.TrimSpace(body)) {
		// An excerpt that starts inside a traceback: its frames open it.
		if st := p.by[src]; (st == nil || !st.open) && (src != "" || p.last == nil || !p.last.open) {
			header = true
		}
	}
	if header {
		st := p.state(src)
		if st == nil {
			return tbNone, "", body
		}
		if !st.open {
			p.nOpen++
		}
		st.open, st.afterFile, st.phase, st.code, st.head = true, false, "", "", msg
		st.innermost, st.reverse, st.fn = "", strings.Contains(body, "most recent call first"), ""
		p.last = st
		if t := strings.TrimSpace(body); isFrame(t) {
			st.head = ""
			st.phase = p.frames.phase(t)
			if !st.reverse {
				st.fn = frameFunc(t)
			}
			st.afterFile = !st.reverse && strings.Contains(t, ", in ")
			return tbFrame, "", body
		}
		return tbStart, "", body
	}
	st := p.by[src]
	if (st == nil || !st.open) && src == "" && p.last != nil && p.last.open {
		st = p.last
	}
	if st == nil || !st.open {
		return tbNone, "", body
	}
	t := strings.TrimSpace(body)
	switch {
	case isFrame(t):
		// The deepest frame that names a phase wins, except that the
		// serving loop's frames count only when no startup frame is
		// above them (V0's profile run calls execute_model too).
		if st.reverse && st.innermost == "" {
			st.innermost = msg
		}
		if !st.reverse {
			st.fn = frameFunc(t)
		}
		// faulthandler lists the innermost call first: there the first
		// frame that names a phase wins.
		if ph := p.frames.phase(t); ph != "" && (ph != Serving || st.phase == "") && !(st.reverse && st.phase != "") {
			st.phase = ph
		}
		// faulthandler prints no source lines: `File "…", line 351 in f`.
		st.afterFile = !st.reverse && strings.Contains(t, ", in ")
		return tbFrame, "", body
	case t == "" || isCaretLine(t) || strings.HasPrefix(t, "[Previous line repeated"):
		st.afterFile = false
		return tbCode, "", body
	case !st.afterFile && isExceptionLine(t):
		st.open = false
		p.nOpen--
		p.raised = st.fn
		return tbException, st.phase, body
	case st.afterFile && isExceptionLine(t) && strings.Contains(t, ": ") && !looksLikeCode(t):
		// A frame without a source line (a .so, a frozen module).
		st.open = false
		p.nOpen--
		p.raised = st.fn
		return tbException, st.phase, body
	}
	if st.afterFile {
		st.afterFile = false
		st.code = msg
		// The call on the source line is the next frame down: where a
		// traceback is cut short, it is the deepest one shown.
		if ph := p.frames.callPhase(t); ph != "" && ph != Serving && !st.reverse {
			st.phase = ph
		}
		return tbCode, "", body
	}
	// Neither frame, code nor exception: another message printed while the
	// traceback is open (a rank's log line, Python 3.11's extra source
	// lines). It is read as a message; the traceback stays open.
	return tbNone, "", body
}

// raisedIn is the function that raised the exception of the line fed
// last, when that line ended a traceback; "" for any other line.
func (p *tbParser) raisedIn() string { return p.raised }

// lastCode is the source line under the last frame of the traceback that
// closed or is open on the line's process: a bare "AssertionError" is
// explained by the `assert …` above it.
func (p *tbParser) lastCode() string {
	if p.last != nil {
		return p.last.code
	}
	return ""
}

// head is the line that opened the traceback still open: a traceback cut
// before its exception is quoted by it.
func (p *tbParser) head() string {
	if p.last != nil && p.last.open {
		return p.last.head
	}
	return ""
}

// innermost is the first frame of the last faulthandler dump, if any.
func (p *tbParser) innermost() string {
	if p.last != nil && p.last.reverse {
		return p.last.innermost
	}
	return ""
}

// openPhase is the phase the frames of the traceback still open name.
func (p *tbParser) openPhase() Phase {
	if p.last != nil && p.last.open && p.last.phase != "" {
		return p.last.phase
	}
	for _, st := range p.by {
		if st.open && st.phase != "" {
			return st.phase
		}
	}
	return ""
}

func (p *tbParser) state(src string) *tbState {
	if st := p.by[src]; st != nil {
		return st
	}
	if len(p.by) >= maxTBSources {
		return nil
	}
	st := &tbState{}
	p.by[src] = st
	return st
}

// isFrame: `File "/x/model_runner.py", line 207, in initialize`.
func isFrame(t string) bool {
	return strings.HasPrefix(t, `File "`) && strings.Contains(t, `", line `)
}

// isCaretLine: Python 3.11's `^^^^^^` and `~~~~^^^^` markers.
func isCaretLine(t string) bool {
	for i := 0; i < len(t); i++ {
		if c := t[i]; c != '^' && c != '~' && c != ' ' {
			return false
		}
	}
	return true
}

// isExceptionLine reports whether t has the shape of the line that ends a
// traceback: a dotted class name whose last part starts upper-case,
// optionally called with arguments, then ":" and the message or nothing.
// ("torch.OutOfMemoryError: CUDA out of memory…", "AssertionError",
// "ray.exceptions.RayTaskError(ValueError): …".)
func isExceptionLine(t string) bool {
	i, last := 0, 0
	for i < len(t) {
		c := t[i]
		if c == '.' {
			if i == last {
				return false
			}
			last = i + 1
			i++
			continue
		}
		if c == '_' || isDigit(c) && i > last || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			i++
			continue
		}
		break
	}
	if i == 0 || last >= i || !(t[last] >= 'A' && t[last] <= 'Z') {
		return false
	}
	rest := t[i:]
	if strings.HasPrefix(rest, "(") {
		j := strings.IndexByte(rest, ')')
		if j < 0 {
			return false
		}
		rest = rest[j+1:]
	}
	if rest == "" || rest == ":" {
		// A bare name ("AssertionError", "KeyboardInterrupt") must look
		// like an exception class, not a cut line ("A", "Loading").
		return bareException(t[last:i])
	}
	return strings.HasPrefix(rest, ": ")
}

// bareException reports whether a class name reads as an exception's.
func bareException(name string) bool {
	for _, suf := range []string{"Error", "Exception", "Interrupt", "Exit", "Iteration", "Failure", "Fault", "Timeout"} {
		if strings.HasSuffix(name, suf) {
			return true
		}
	}
	return false
}

// looksLikeCode rules out source lines that happen to fit the exception
// shape ("Exception: …" cannot be code, but "Foo: int = 3" can).
func looksLikeCode(t string) bool { return strings.Contains(t, " = ") }

// frameIndex looks frames up in the rules of every pack.
type frameIndex struct {
	funcs map[string]Phase
	files []fileRule
	crash []FrameRule // the rules that name a native crash's cause
}

type fileRule struct {
	sub   string
	phase Phase
}

func newFrameIndex(packs []*CompiledPack) *frameIndex {
	x := &frameIndex{funcs: map[string]Phase{}}
	for _, c := range packs {
		for _, r := range c.frames {
			if r.Cause != "" {
				x.crash = append(x.crash, r)
			}
			if r.Phase == "" {
				continue
			}
			for _, f := range r.Funcs {
				if _, dup := x.funcs[f]; !dup {
					x.funcs[f] = r.Phase
				}
			}
			for _, f := range r.Files {
				x.files = append(x.files, fileRule{f, r.Phase})
			}
		}
	}
	return x
}

// phase maps a frame line (`File "/x/model_runner.py", line 207, in
// initialize`) to a phase, by function name first, then by file.
func (x *frameIndex) phase(frame string) Phase {
	if fn := frameFunc(frame); fn != "" {
		if p, ok := x.funcs[fn]; ok {
			return p
		}
		if p := phaseByName(fn); p != "" {
			return p
		}
	}
	file := frame
	if j := strings.Index(frame[6:], `"`); j >= 0 {
		file = frame[6 : 6+j]
	}
	for _, r := range x.files {
		if strings.Contains(file, r.sub) {
			return r.phase
		}
	}
	return ""
}

// crashCause is the cause a native crash whose innermost frame is frame
// has, or "".
func (x *frameIndex) crashCause(frame string) string {
	fn := frameFunc(frame)
	for _, r := range x.crash {
		for _, f := range r.Funcs {
			if f == fn {
				return r.Cause
			}
		}
		for _, f := range r.Files {
			if strings.Contains(frame, f) {
				return r.Cause
			}
		}
	}
	return ""
}

// callPhase maps the function a source line calls (`self._initialize_kv_caches(vllm_config)`)
// to a phase, as a frame of that function would be.
func (x *frameIndex) callPhase(code string) Phase {
	i := strings.IndexByte(code, '(')
	if i <= 0 {
		return ""
	}
	name := code[:i]
	if j := strings.LastIndexAny(name, ". =\t"); j >= 0 {
		name = name[j+1:]
	}
	if name == "" {
		return ""
	}
	if p, ok := x.funcs[name]; ok {
		return p
	}
	return phaseByName(name)
}

// frameFunc is the function a frame names: `…, line 207, in initialize`
// (a traceback) or `…, line 351 in ncclCommInitRank` (faulthandler).
func frameFunc(frame string) string {
	i := strings.Index(frame, `", line `)
	if i < 0 {
		return ""
	}
	rest := frame[i+8:]
	j := strings.Index(rest, " in ")
	if j < 0 {
		return ""
	}
	fn := rest[j+4:]
	if k := strings.IndexByte(fn, ' '); k >= 0 {
		fn = fn[:k] // Ray's " [repeated 2x across cluster]"
	}
	return fn
}

// phaseByName guesses a phase from a function's name when no rule names
// it exactly: engines rename functions between releases, but a function
// called *_kv_cache* sizes the KV cache in every one of them.
func phaseByName(fn string) Phase {
	switch {
	case strings.Contains(fn, "kv_cache") || strings.Contains(fn, "memory_pool"):
		return KVCache
	case strings.Contains(fn, "cuda_graph") || strings.Contains(fn, "cudagraph"):
		return GraphCapture
	case strings.Contains(fn, "load_weight"):
		return Weights
	case strings.Contains(fn, "init_distributed") || strings.Contains(fn, "process_group"):
		return Init
	}
	return ""
}

// commonFrames are the frames both engines raise through, by phase. Where a
// traceback passes through several, the deepest one wins.
func commonFrames() []FrameRule {
	return []FrameRule{
		{Phase: Init, Funcs: []string{
			"init_torch_distributed", "init_distributed_environment", "init_process_group",
			"initialize_model_parallel", "ensure_model_parallel_initialized",
			"init_worker_distributed_environment", "_init_distributed_environment",
			"init_device", "rendezvous", "_create_c10d_store", "_store_based_barrier",
			"init_model_parallel_group", "_init_process_group", "_tcp_rendezvous_handler",
			"initialize_ray_cluster", "_get_executor_cls", "_init_executor",
			"_env_rendezvous_handler", "_create_store_from_options",
		}},
		{Phase: Weights, Funcs: []string{
			"load_model", "load_weights", "_load_weights", "load_model_weights",
			"download_weights_from_hf", "download_model", "get_model", "_initialize_model",
			"load_weights_and_postprocess", "_prepare_weights", "safetensors_weights_iterator",
			"create_weights", "process_weights_after_loading", "initialize_model",
			"gptq_marlin_repack", "awq_marlin_repack",
		}, Files: []string{
			"model_loader/",
			// torch's device context: the engines build the model
			// under `with torch.device(…)`.
			"torch/utils/_device.py",
		}},
		{Phase: KVCache, Funcs: []string{
			"init_memory_pool", "profile_max_num_token", "profile_run",
			"determine_num_available_blocks", "determine_available_memory",
			"initialize_kv_cache", "_initialize_kv_caches", "initialize_cache",
			"init_cache_engine", "_init_cache_engine", "get_kv_cache_config",
			"get_kv_cache_configs", "_check_enough_kv_cache_memory", "check_enough_kv_cache_memory",
			"raise_if_cache_size_invalid", "_allocate_kv_cache", "initialize_kv_cache_tensors",
			"_allocate_kv_cache_tensors", "_init_cache",
			"init_cache_with_memory_pool", "get_attn_backends_for_group", "initialize_attn_backend",
		}, Files: []string{"mem_cache/", "kv_cache_utils.py"}},
		{Phase: GraphCapture, Funcs: []string{
			"init_cuda_graphs", "init_device_graphs", "capture", "capture_one_batch_size",
			"capture_model", "_capture_cudagraphs", "capture_decode_graph",
			"capture_prefill_graph", "_capture_graph", "init_piecewise_cuda_graphs",
			"capture_begin", "capture_end",
		}, Files: []string{"cuda_graph_runner.py", "torch/cuda/graphs.py", "cuda_graph_setup.py"}},
		{Phase: Warmup, Funcs: []string{"_execute_server_warmup", "_wait_and_warmup", "execute_warmups"}},
		// Native crashes inside NCCL's own calls are NCCL's.
		{Cause: "nccl-error", Funcs: []string{"ncclCommInitRank", "ncclCommInitAll", "ncclAllReduce", "ncclGetUniqueId"}, Files: []string{"pynccl_wrapper.py"}},
		{Phase: Serving, Funcs: []string{
			"event_loop_normal", "event_loop_overlap", "event_loop_pp", "run_batch",
			"step", "step_with_batch_queue", "execute_model", "output_handler",
			"process_input_sockets", "run_busy_loop",
			// SGLang ≤0.1's router: its step loop serves the batches.
			"exposed_step", "forward_step", "forward_fill_batch", "forward_decode_batch",
		}},
	}
}
