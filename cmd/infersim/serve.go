package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
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

	"github.com/bringup-dev/bringup/remote/sim/sglang"
)

// serve plays the engine's startup, serves HTTP from the moment the engine
// would listen, and returns the exit status.
func serve(ctx context.Context, cfg config, stdout, stderr io.Writer) int {
	p := cfg.params
	timeline := p
	if p.Failure == sglang.FailPort {
		// The port failure is real here: a squatter holds the port (below)
		// and the engine's bind fails with the system's own error.
		timeline.Failure = sglang.FailNone
	}
	script := sglang.New(timeline)
	pl := cfg.engine.play(script)
	logs := &logWriter{stdout: stdout, stderr: stderr}
	start := time.Now()
	srv := newServer(cfg.engine, p, logs)
	srv.dec.load, srv.dec.interval = cfg.load, cfg.stats

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
	if p.Failure == sglang.FailPort {
		if squatter, err := net.Listen("tcp", net.JoinHostPort(bindHost(cfg.host), strconv.Itoa(p.Port))); err == nil {
			defer squatter.Close()
		}
	}

	var port *boundPort
	var httpDone chan error
	var hs *http.Server
	defer func() {
		if hs != nil {
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			// The process is ending: a shutdown cut short by its
			// deadline, and the server's own return, change nothing.
			_ = hs.Shutdown(sctx)
			_ = <-httpDone
		}
		port.close()
	}()
	timer := time.NewTimer(0)
	defer timer.Stop()
	// A node of a multi-node deployment meets the others once its
	// distributed init begins; the rest of its startup comes as much
	// later as the meeting took, and a peer's death ends it (peerLost).
	lineStart := start
	var nodes *mesh
	defer func() { nodes.close() }()
	var lost <-chan struct{}
	met := p.NNodes <= 1 || script.Marks.InitBegin == sglang.Never // nobody to meet
	stopped := func() int {
		logs.writeAll(cfg.engine.stopped(p, hs != nil), time.Now())
		return 0
	}
	lostPeer := func() int {
		inInit := script.Marks.InitEnd == sglang.Never || time.Since(lineStart) < script.Marks.InitEnd
		return playPeerLost(ctx, timer, p, inInit, 0, logs)
	}
	for _, l := range pl.lines {
		if !met && l.At > script.Marks.InitBegin {
			met = true
			from := time.Now()
			m, err := joinMesh(ctx, p.NodeRank, p.NNodes, p.DistInitAddr, cfg.rendezvous)
			switch {
			case ctx.Err() != nil:
				return stopped()
			case err != nil:
				// The store timed out waiting for them, as it would.
				waited := p
				waited.PeerWait = time.Since(from)
				return playPeerLost(ctx, timer, waited, true, waited.PeerWait, logs)
			}
			nodes, lost = m, m.lost
			lineStart = lineStart.Add(time.Since(from))
		}
		switch waitOrLost(ctx, timer, lineStart.Add(l.At), lost) {
		case waitStopped:
			return stopped()
		case waitLost:
			return lostPeer()
		case waitDone:
		}
		if nodes != nil && script.Died != sglang.Never && l.At >= script.Died {
			// The ranks die with their links: the peers hear of it now,
			// not when the main process exits.
			nodes.close()
			nodes, lost = nil, nil
		}
		switch {
		case l.bind:
			var err error
			if port, err = bindPort(bindHost(cfg.host), p.Port); err != nil {
				logs.writeAll(cfg.engine.bindFailed(p, err), time.Now())
				return 1
			}
		case l.listen:
			ln, err := port.listen()
			if err != nil {
				logs.writeAll(cfg.engine.bindFailed(p, err), time.Now())
				return 1
			}
			hs = &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
			httpDone = make(chan error, 1)
			go func() { httpDone <- hs.Serve(ln) }()
		}
		logs.write(l, time.Now())
		if l.ready {
			srv.ready.Store(true)
		}
	}
	if pl.exit != sglang.Never {
		if waitOrLost(ctx, timer, lineStart.Add(pl.exit), lost) == waitLost {
			return lostPeer()
		}
		return pl.exitCode
	}
	// Serving, or hung: run until stopped.
	if srv.ready.Load() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			srv.dec.report(stateCtx, cfg.engine, p, logs)
		}()
	}
	if cfg.flood > 0 && srv.ready.Load() {
		flood(ctx, cfg.flood, logs)
	}
	select {
	case <-ctx.Done():
	case <-lost:
		return lostPeer()
	}
	return stopped()
}

// The ends of a wait.
type waitEnd uint8

const (
	waitDone    waitEnd = iota // the time came
	waitStopped                // ctx ended
	waitLost                   // a peer node died
)

// waitOrLost sleeps until t, unless ctx ends or lost says a peer died.
func waitOrLost(ctx context.Context, timer *time.Timer, t time.Time, lost <-chan struct{}) waitEnd {
	timer.Reset(time.Until(t))
	select {
	case <-ctx.Done():
		return waitStopped
	case <-lost:
		return waitLost
	case <-timer.C:
		return waitDone
	}
}

// playPeerLost writes what the node writes once a peer is gone
// (sglang.PeerLost: in init its store sockets time out, later the NCCL
// watchdog fires), and exits 1; waited is how much of the wait is over.
func playPeerLost(ctx context.Context, timer *time.Timer, p sglang.Params, inInit bool, waited time.Duration, logs *logWriter) int {
	lines, exit := sglang.PeerLost(p, inInit)
	from := time.Now().Add(-waited)
	for _, l := range lines {
		if !wait(ctx, timer, from.Add(l.At)) {
			return 0
		}
		logs.write(line{text: l.Render}, time.Now())
	}
	wait(ctx, timer, from.Add(exit))
	return 1
}

// flood writes "soak flood seq=N" lines, perSecond a second in bursts
// every 10 ms, numbered from 1, until ctx ends.
func flood(ctx context.Context, perSecond int, logs *logWriter) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	start, seq := time.Now(), 0
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			for due := int(now.Sub(start).Seconds() * float64(perSecond)); seq < due; {
				seq++
				n := seq
				logs.write(line{stdout: true, text: func(time.Time) string { return fmt.Sprintf("soak flood seq=%d", n) }}, now)
			}
		}
	}
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

// bindHost is the address to bind: all IPv4 addresses when none is given,
// as vLLM's create_server_socket binds ("", port).
func bindHost(host string) string {
	if host == "" {
		return "0.0.0.0"
	}
	return host
}

// boundPort is a TCP socket that is bound but not yet listening. vLLM
// binds its port before it builds the engine and listens only when
// uvicorn takes the socket over, so until then connections are refused
// rather than queued; SGLang binds and listens at once.
type boundPort struct{ fd int }

// bindPort binds a socket to host:port with SO_REUSEADDR, as Python's
// servers do.
func bindPort(host string, port int) (*boundPort, error) {
	ip := net.ParseIP(host)
	if ip == nil {
		addr, err := net.ResolveIPAddr("ip", host)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", host, err)
		}
		ip = addr.IP
	}
	var family int
	var sa syscall.Sockaddr
	if ip4 := ip.To4(); ip4 != nil {
		family, sa = syscall.AF_INET, &syscall.SockaddrInet4{Port: port, Addr: [4]byte(ip4)}
	} else {
		family, sa = syscall.AF_INET6, &syscall.SockaddrInet6{Port: port, Addr: [16]byte(ip.To16())}
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		syscall.Close(fd)
		return nil, os.NewSyscallError("setsockopt", err)
	}
	if err := syscall.Bind(fd, sa); err != nil {
		syscall.Close(fd)
		return nil, os.NewSyscallError("bind", err)
	}
	return &boundPort{fd: fd}, nil
}

// listen starts accepting on the bound socket and hands it to a
// net.Listener, which then owns it.
func (b *boundPort) listen() (net.Listener, error) {
	if err := syscall.Listen(b.fd, 2048); err != nil {
		return nil, os.NewSyscallError("listen", err)
	}
	f := os.NewFile(uintptr(b.fd), "http")
	b.fd = -1
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	return ln, nil
}

// close releases a socket that never listened.
func (b *boundPort) close() {
	if b != nil && b.fd >= 0 {
		syscall.Close(b.fd)
		b.fd = -1
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

// server is the HTTP side: the endpoints of the engine that matter for
// readiness and a smoke test.
type server struct {
	mux    *http.ServeMux
	eng    engine
	p      sglang.Params
	model  string
	ready  atomic.Bool
	logs   *logWriter
	nextID atomic.Int64
	// dec times completions at the kernel mode's rate and counts the
	// tokens for the stats lines.
	dec *decoder
	// badRequest renders the engine's JSON error body for a 400.
	badRequest func(msg string) string
}

func newServer(eng engine, p sglang.Params, logs *logWriter) *server {
	s := &server{mux: http.NewServeMux(), eng: eng, p: p, model: p.ModelPath, logs: logs,
		dec: &decoder{rate: p.Rates.Rate(p.Kernel.Mode), interval: sglang.StatsEvery}}
	eng.routes(s)
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

// Flush passes a streamed answer's chunks on as they are written.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// ServeHTTP serves r and writes uvicorn's access line to stdout.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	s.mux.ServeHTTP(sw, r)
	msg := fmt.Sprintf("%s - \"%s %s HTTP/%d.%d\" %d %s", r.RemoteAddr, r.Method, r.URL.RequestURI(), r.ProtoMajor, r.ProtoMinor, sw.status, http.StatusText(sw.status))
	s.logs.write(s.eng.uvicorn(s.p, "INFO", msg, true), time.Now())
}

// health is 503 until the engine is ready and 200 after. SGLang answers
// 503 while its warmup runs (ServerStatus.Starting); vLLM does not listen
// before it is ready, so it never answers 503 at startup.
func (s *server) health(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v) // a client gone away is no error of the server's
}

// cannedText is the completion every request gets.
const cannedText = " Paris. It is the largest city in France."

// request is the part of a completion or generate request infersim reads.
type request struct {
	Prompt    any  `json:"prompt"`
	Text      any  `json:"text"`
	MaxTokens int  `json:"max_tokens"`
	Stream    bool `json:"stream"`
	// StreamOptions.IncludeUsage adds the usage chunk to a stream, as
	// the OpenAI API (and both engines) do.
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	SamplingParams struct {
		MaxNewTokens int `json:"max_new_tokens"`
	} `json:"sampling_params"`
}

// decode reads a JSON request body; both engines' OpenAI routes want
// application/json and answer 400 otherwise.
func (s *server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	fail := func(msg string) bool {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, s.badRequest(msg)) // as writeJSON
		return false
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fail("Unsupported Media Type: Only 'application/json' is allowed")
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(v); err != nil {
		return fail(err.Error())
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

// complete answers an OpenAI completion request: the engine adds its own
// fields to the choice and the response.
func (s *server) complete(w http.ResponseWriter, r *http.Request, id string, choice, extra map[string]any) {
	var req request
	if !s.decode(w, r, &req) {
		return
	}
	text, n := completion(req.MaxTokens)
	pt := promptTokens(req.Prompt)
	if req.Stream {
		s.stream(w, r, id, text, n, pt, req.StreamOptions.IncludeUsage)
		return
	}
	if !s.dec.generate(r.Context(), n, nil) {
		return // the client went away
	}
	c := map[string]any{"index": 0, "text": text, "logprobs": nil, "finish_reason": "length"}
	maps.Copy(c, choice)
	resp := map[string]any{
		"id": id, "object": "text_completion", "created": time.Now().Unix(), "model": s.model,
		"choices": []map[string]any{c},
		"usage":   map[string]any{"prompt_tokens": pt, "completion_tokens": n, "total_tokens": pt + n},
	}
	maps.Copy(resp, extra)
	writeJSON(w, resp)
}

// stream answers a completion as server-sent events, a chunk a token as
// the tokens are decoded, then the usage (when asked) and [DONE], the way
// both engines' OpenAI routes stream.
func (s *server) stream(w http.ResponseWriter, r *http.Request, id, text string, n, pt int, usage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	words := strings.SplitAfter(strings.TrimPrefix(text, " "), " ")
	created := time.Now().Unix()
	send := func(v any) {
		b, _ := json.Marshal(v)                  // maps of strings and numbers
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b) // a client gone away is no error of the server's
		if fl != nil {
			fl.Flush()
		}
	}
	sent := 0
	ok := s.dec.generate(r.Context(), n, func(done int) {
		for ; sent < done && sent < len(words); sent++ {
			finish := any(nil)
			if sent == n-1 {
				finish = "length"
			}
			send(map[string]any{"id": id, "object": "text_completion", "created": created, "model": s.model,
				"choices": []map[string]any{{"index": 0, "text": " " + strings.TrimSpace(words[sent]), "logprobs": nil, "finish_reason": finish}}})
		}
	})
	if !ok {
		return
	}
	if usage {
		send(map[string]any{"id": id, "object": "text_completion", "created": created, "model": s.model, "choices": []any{},
			"usage": map[string]any{"prompt_tokens": pt, "completion_tokens": n, "total_tokens": pt + n}})
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
}

// sglangRoutes are SGLang's endpoints.
func (sglangEngine) routes(s *server) {
	s.badRequest = func(msg string) string {
		b, _ := json.Marshal(map[string]any{"object": "error", "message": msg, "type": "BadRequest", "code": 400})
		return string(b)
	}
	s.mux.HandleFunc("GET /health", s.health)
	s.mux.HandleFunc("GET /health_generate", s.health)
	s.mux.HandleFunc("GET /model_info", s.modelInfo)
	s.mux.HandleFunc("GET /get_model_info", s.modelInfo)
	s.mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"object": "list", "data": []map[string]any{{
			"id": s.model, "object": "model", "created": time.Now().Unix(), "owned_by": "sglang", "root": s.model, "max_model_len": sglang.ContextLen,
		}}})
	})
	s.mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		s.complete(w, r, fmt.Sprintf("cmpl-%016x", s.nextID.Add(1)), map[string]any{"matched_stop": nil}, nil)
	})
	s.mux.HandleFunc("POST /generate", s.generate)
}

func (s *server) modelInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, map[string]any{"model_path": s.model, "tokenizer_path": s.model, "is_generation": true,
		"preferred_sampling_params": nil, "weight_version": "default"})
}

func (s *server) generate(w http.ResponseWriter, r *http.Request) {
	var req request
	if !s.decode(w, r, &req) {
		return
	}
	text, n := completion(req.SamplingParams.MaxNewTokens)
	if !s.dec.generate(r.Context(), n, nil) {
		return
	}
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
			// Best effort: a sample that is not written is replaced by the
			// next one.
			if os.WriteFile(tmp, b, 0o644) == nil {
				_ = os.Rename(tmp, g.path)
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
