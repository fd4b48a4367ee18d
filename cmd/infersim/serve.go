package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"bringup/remote/sim/sglang"
)

// logWriter writes log lines with SGLang's prefix at the real time, each
// with one write so that nothing sits in a buffer when the process dies.
type logWriter struct {
	mu  sync.Mutex
	out io.Writer
}

// line writes l as the process writes it at t: tqdm refreshes start with
// "\r", and a partial refresh has no newline.
func (w *logWriter) line(l sglang.Line, t time.Time) {
	s := l.Render(t)
	if l.Bar {
		s = "\r" + s
	}
	if !l.Partial {
		s += "\n"
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	io.WriteString(w.out, s)
}

// logf writes an untagged main-process line.
func (w *logWriter) logf(format string, a ...any) {
	w.line(sglang.Line{Prefix: sglang.PrefixLogger, Text: fmt.Sprintf(format, a...)}, time.Now())
}

// serve plays the startup script, serves HTTP from the moment uvicorn
// would listen, and returns the exit status.
func serve(ctx context.Context, cfg config, stdout, stderr io.Writer) int {
	p := cfg.params
	if p.Failure == sglang.FailPort {
		// The port failure is real here: a squatter holds the port (below)
		// and the bind at the end fails with the system's own error.
		p.Failure = sglang.FailNone
	}
	script := sglang.New(p)
	logs := &logWriter{out: stderr}
	access := &logWriter{out: stdout}
	start := time.Now()
	srv := newServer(cfg.params, access)

	// The state file lets the nvidia-smi stand-in show this process's memory.
	state := newGPUState(cfg.stateDir, os.Getpid())
	stateCtx, stopState := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		state.follow(stateCtx, func() time.Duration { return time.Since(start) }, script)
	}()
	defer func() {
		stopState()
		wg.Wait()
		state.remove()
	}()

	// A leftover process holding the port, for INFERSIM_FAIL=port: the
	// real bind below then fails as it would.
	if cfg.params.Failure == sglang.FailPort {
		if squatter, err := net.Listen("tcp", net.JoinHostPort(cfg.host, strconv.Itoa(cfg.params.Port))); err == nil {
			defer squatter.Close()
		}
	}

	var httpDone chan error
	var hs *http.Server
	defer func() {
		if hs != nil {
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			hs.Shutdown(sctx)
			<-httpDone
		}
	}()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for _, l := range script.Lines {
		if !wait(ctx, timer, start.Add(l.At)) {
			logs.line(sglang.Line{Prefix: sglang.PrefixLogger, Text: "SIGTERM received. signum=None frame=None. Draining requests and shutting down..."}, time.Now())
			return 0
		}
		if l.At == script.Marks.Listening && strings.Contains(l.Text, "Uvicorn running on") {
			ln, err := net.Listen("tcp", net.JoinHostPort(cfg.host, strconv.Itoa(cfg.params.Port)))
			if err != nil {
				logs.logf("ERROR:    %s", bindError(cfg.host, cfg.params.Port, err))
				logs.logf("INFO:     Waiting for application shutdown.")
				logs.logf("INFO:     Application shutdown complete.")
				return 1
			}
			hs = &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
			httpDone = make(chan error, 1)
			go func() { httpDone <- hs.Serve(ln) }()
		}
		logs.line(l, time.Now())
		if l.At == script.Marks.Ready && strings.Contains(l.Text, "fired up") {
			srv.ready.Store(true)
		}
	}
	if script.Exit != sglang.Never {
		wait(ctx, timer, start.Add(script.Exit))
		return script.ExitCode
	}
	// Serving, or hung in capture: run until stopped.
	<-ctx.Done()
	logs.line(sglang.Line{Prefix: sglang.PrefixLogger, Text: "SIGTERM received. signum=None frame=None. Draining requests and shutting down..."}, time.Now())
	return 0
}

// wait sleeps until t and reports false if ctx ended first.
func wait(ctx context.Context, timer *time.Timer, t time.Time) bool {
	timer.Reset(time.Until(t))
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// bindError renders a failed bind the way asyncio's create_server does,
// which uvicorn logs as is: "[Errno 98] error while attempting to bind on
// address ('0.0.0.0', 30000): address already in use".
func bindError(host string, port int, err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return fmt.Sprintf("[Errno %d] error while attempting to bind on address ('%s', %d): %s", int(errno), host, port, strings.ToLower(errno.Error()))
	}
	return fmt.Sprintf("error while attempting to bind on address ('%s', %d): %v", host, port, err)
}

// server is the HTTP side: SGLang's endpoints that matter for readiness
// and a smoke test.
type server struct {
	mux    *http.ServeMux
	model  string
	ready  atomic.Bool
	access *logWriter
	nextID atomic.Int64
}

func newServer(p sglang.Params, access *logWriter) *server {
	s := &server{mux: http.NewServeMux(), model: p.ModelPath, access: access}
	s.mux.HandleFunc("GET /health", s.health)
	s.mux.HandleFunc("GET /health_generate", s.health)
	s.mux.HandleFunc("GET /model_info", s.modelInfo)
	s.mux.HandleFunc("GET /get_model_info", s.modelInfo)
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("POST /v1/completions", s.completions)
	s.mux.HandleFunc("POST /generate", s.generate)
	return s
}

// statusWriter remembers the status for the access line.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// ServeHTTP serves r and writes uvicorn's access line to stdout.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	s.mux.ServeHTTP(sw, r)
	s.access.logf("INFO:     %s - \"%s %s HTTP/%d.%d\" %d %s", r.RemoteAddr, r.Method, r.URL.RequestURI(), r.ProtoMajor, r.ProtoMinor, sw.status, http.StatusText(sw.status))
}

// health is 503 until the warmup has passed, as in SGLang's
// ServerStatus.Starting, and 200 after.
func (s *server) health(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func (s *server) modelInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, map[string]any{"model_path": s.model, "tokenizer_path": s.model, "is_generation": true,
		"preferred_sampling_params": nil, "weight_version": "default"})
}

func (s *server) models(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, map[string]any{"object": "list", "data": []map[string]any{{
		"id": s.model, "object": "model", "created": time.Now().Unix(), "owned_by": "sglang", "root": s.model, "max_model_len": 163840,
	}}})
}

// cannedText is the completion every request gets.
const cannedText = " Paris. It is the largest city in France."

// request is the part of a completion or generate request infersim reads.
type request struct {
	Prompt         any `json:"prompt"`
	Text           any `json:"text"`
	MaxTokens      int `json:"max_tokens"`
	SamplingParams struct {
		MaxNewTokens int `json:"max_new_tokens"`
	} `json:"sampling_params"`
}

// decode reads a JSON request body; SGLang's OpenAI routes want
// application/json and answer 400 otherwise.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		http.Error(w, `{"object":"error","message":"Unsupported Media Type: Only 'application/json' is allowed","type":"BadRequest","code":400}`, http.StatusBadRequest)
		return false
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(v); err != nil {
		http.Error(w, fmt.Sprintf(`{"object":"error","message":%q,"type":"BadRequest","code":400}`, err.Error()), http.StatusBadRequest)
		return false
	}
	return true
}

// completion returns the canned text cut to n words (tokens, roughly).
func completion(n int) (string, int) {
	words := strings.SplitAfter(cannedText, " ")[1:]
	if n <= 0 || n > len(words) {
		n = len(words)
	}
	return " " + strings.TrimSpace(strings.Join(words[:n], "")), n
}

func promptTokens(p any) int {
	s, _ := p.(string)
	return max(1, len(strings.Fields(s)))
}

func (s *server) completions(w http.ResponseWriter, r *http.Request) {
	var req request
	if !decode(w, r, &req) {
		return
	}
	text, n := completion(req.MaxTokens)
	pt := promptTokens(req.Prompt)
	writeJSON(w, map[string]any{
		"id": fmt.Sprintf("cmpl-%016x", s.nextID.Add(1)), "object": "text_completion", "created": time.Now().Unix(), "model": s.model,
		"choices": []map[string]any{{"index": 0, "text": text, "logprobs": nil, "finish_reason": "length", "matched_stop": nil}},
		"usage":   map[string]int{"prompt_tokens": pt, "completion_tokens": n, "total_tokens": pt + n},
	})
}

func (s *server) generate(w http.ResponseWriter, r *http.Request) {
	var req request
	if !decode(w, r, &req) {
		return
	}
	text, n := completion(req.SamplingParams.MaxNewTokens)
	writeJSON(w, map[string]any{"text": text, "meta_info": map[string]any{
		"id": fmt.Sprintf("%032x", s.nextID.Add(1)), "finish_reason": map[string]any{"type": "length", "length": n},
		"prompt_tokens": promptTokens(req.Text), "completion_tokens": n, "cached_tokens": 0, "e2e_latency": 0.042,
	}})
}

// gpuState is the file through which the nvidia-smi stand-in learns the
// simulated memory of the running infersim.
type gpuState struct {
	path string
	pid  int
}

// stateFile is the JSON in the state file.
type stateFile struct {
	PID     int              `json:"pid"`
	Updated time.Time        `json:"updated"`
	Devices []sglang.Reading `json:"devices"`
}

func newGPUState(dir string, pid int) *gpuState {
	return &gpuState{path: filepath.Join(dir, "gpu.json"), pid: pid}
}

// follow writes the script's GPU readings every half second until ctx
// ends. A state directory that cannot be written is not an error: the
// server's log must stay the SGLang log, and nvidia-smi then shows idle GPUs.
func (g *gpuState) follow(ctx context.Context, elapsed func() time.Duration, s *sglang.Script) {
	if err := os.MkdirAll(filepath.Dir(g.path), 0o755); err != nil {
		return
	}
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		at := elapsed()
		st := stateFile{PID: g.pid, Updated: time.Now(), Devices: make([]sglang.Reading, 8)}
		for i := range st.Devices {
			st.Devices[i] = s.GPU(at, i)
		}
		if b, err := json.Marshal(st); err == nil {
			tmp := g.path + ".tmp"
			if os.WriteFile(tmp, b, 0o644) == nil {
				os.Rename(tmp, g.path)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (g *gpuState) remove() { os.Remove(g.path) }
