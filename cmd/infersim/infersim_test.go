package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/sim/sglang"
	"github.com/bringup-dev/bringup/remote/testkit/e2e"
)

func TestHandlers(t *testing.T) {
	var access bytes.Buffer
	s := newServer(sglangEngine{}, sglang.Params{ModelPath: "/models/demo"}, &logWriter{stdout: &access, stderr: &access})
	ts := httptest.NewServer(s)
	defer ts.Close()
	get := func(path string) (int, string) { return call(t, ts.URL, "GET", path, "", "") }
	post := func(path, ct, body string) (int, string) { return call(t, ts.URL, "POST", path, ct, body) }
	if code, _ := get("/health"); code != 503 {
		t.Errorf("/health before ready = %d, want 503", code)
	}
	s.ready.Store(true)
	if code, _ := get("/health"); code != 200 {
		t.Errorf("/health when ready = %d, want 200", code)
	}
	if code, body := get("/v1/models"); code != 200 || !strings.Contains(body, `"id":"/models/demo"`) {
		t.Errorf("/v1/models = %d %s", code, body)
	}
	if code, body := get("/model_info"); code != 200 || !strings.Contains(body, `"model_path":"/models/demo"`) {
		t.Errorf("/model_info = %d %s", code, body)
	}
	if code, body := post("/v1/completions", "application/json", `{"model":"/models/demo","prompt":"The capital of France is","max_tokens":1}`); code != 200 ||
		!strings.Contains(body, `"text":" Paris."`) || !strings.Contains(body, `"completion_tokens":1`) {
		t.Errorf("/v1/completions = %d %s", code, body)
	}
	if code, _ := post("/v1/completions", "text/plain", `{}`); code != 400 {
		t.Errorf("/v1/completions with text/plain = %d, want 400", code)
	}
	if code, body := post("/generate", "application/json", `{"text":"The capital city of France is","sampling_params":{"max_new_tokens":8}}`); code != 200 ||
		!strings.Contains(body, `"meta_info"`) {
		t.Errorf("/generate = %d %s", code, body)
	}
	if !strings.Contains(access.String(), `] INFO:     127.0.0.1:`) || !strings.Contains(access.String(), `"GET /health HTTP/1.1" 503 Service Unavailable`) {
		t.Errorf("access log:\n%s", access.String())
	}
}

// call makes one request to the server at base and returns the status
// and body.
func call(t *testing.T, base, method, path, ct, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return resp.StatusCode, b.String()
}

func TestBindError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	_, err = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	want := fmt.Sprintf("[Errno 98] error while attempting to bind on address ('127.0.0.1', %d): address already in use", port)
	if got := bindError("127.0.0.1", port, err); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestConfig(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "a.py"), []byte("x"), 0o644)
	env := map[string]string{"PYTHONPATH": dir + ":/other", "MY_MODE": "check", "INFERSIM_UNSAFE_MODES": "validate,check", "INFERSIM_WEIGHTS_SECONDS": "0.5"}
	cfg, err := parseConfig([]string{"--model-path", "/m", "--tp", "8", "--kernel-env", "MY_MODE"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	k := cfg.params.Kernel
	if k.Mode != "check" || k.CaptureSafe || k.Path != dir || len(k.Hash) != 64 || cfg.params.Weights != 500*time.Millisecond || cfg.params.TP != 8 {
		t.Errorf("config %+v", cfg.params)
	}
	h1 := k.Hash
	mustWrite(t, filepath.Join(dir, "a.py"), []byte("y"), 0o644)
	h2, _ := dirHash(dir)
	if h2 == h1 {
		t.Error("hash did not change with the content")
	}
	// Python's byte-code caches are not part of the build.
	if err := os.MkdirAll(filepath.Join(dir, "__pycache__"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(dir, "__pycache__", "a.cpython-312.pyc"), []byte("bytecode"), 0o644)
	if h3, _ := dirHash(dir); h3 != h2 {
		t.Error("__pycache__ changed the hash")
	}
	// Behind a symlink, the same build hashes the same.
	link := filepath.Join(t.TempDir(), "site")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if h4, _ := dirHash(link); h4 != h2 {
		t.Errorf("hash through a symlink = %s, want %s", h4, h2)
	}
	env["INFERSIM_FAIL"] = "bogus"
	if _, err := parseConfig(nil, func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "crashloop") {
		t.Errorf("bad INFERSIM_FAIL: %v", err)
	}
}

// binDir holds the infersim binary and its nvidia-smi symlink, built once
// by TestMain for the end-to-end tests, which run the real process; the
// unit tier (no BRINGUP_E2E) builds nothing.
var binDir string

func TestMain(m *testing.M) {
	if !e2e.Enabled() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "infersim-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "infersim"), ".").CombinedOutput()
	if err == nil {
		err = os.Symlink("infersim", filepath.Join(dir, "nvidia-smi"))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "build infersim: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// build returns a fresh directory with the binaries, so each test has its
// own state directory beside them. A test that calls it runs the real
// process: it is an end-to-end test (see package e2e).
func build(t *testing.T) string {
	t.Helper()
	e2e.Require(t)
	dir := t.TempDir()
	for _, name := range []string{"infersim", "nvidia-smi"} {
		if err := os.Symlink(filepath.Join(binDir, "infersim"), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// mustWrite writes a file the test needs, failing t when it cannot.
func mustWrite(t testing.TB, path string, data []byte, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, perm); err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// proc is a running infersim whose output is collected the way journald
// collects a unit's: stdout and stderr as two streams, line by line, in
// the order the lines arrive, each with its arrival time.
type proc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  []outLine
	done chan struct{}
}

// outLine is one line of a process's output and when it arrived.
type outLine struct {
	at   time.Time
	text string
}

func (p *proc) lines() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for i, l := range p.out {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l.text)
	}
	return b.String()
}

// output returns the lines so far.
func (p *proc) output() []outLine {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.out)
}

// start runs infersim as SGLang on port with eight GPUs, short phases
// and a kernel directory on PYTHONPATH.
func start(t *testing.T, dir string, port int, env []string, args ...string) *proc {
	t.Helper()
	return launch(t, dir, env, append([]string{"--model-path", "/models/demo", "--port", fmt.Sprint(port), "--host", "127.0.0.1", "--tp", "8"}, args...))
}

// launch runs infersim with args and the test environment plus env.
func launch(t *testing.T, dir string, env, args []string) *proc {
	t.Helper()
	site := filepath.Join(t.TempDir(), "site")
	if err := os.MkdirAll(filepath.Join(site, "kdtree_verify"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(site, "kdtree_verify", "validate.py"), []byte("def checked_forward(): pass\n"), 0o644)
	cmd := exec.Command(filepath.Join(dir, "infersim"), args...)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"), "PYTHONPATH=" + site, "INFERSIM_STATE_DIR=" + filepath.Join(dir, "state"),
		"INFERSIM_BOOT_SECONDS=0.1", "INFERSIM_INIT_SECONDS=0.2", "INFERSIM_WEIGHTS_SECONDS=0.6", "INFERSIM_KV_SECONDS=0.1",
		"INFERSIM_CAPTURE_SECONDS=0.3", "INFERSIM_HTTP_SECONDS=0.1", "INFERSIM_WARMUP_SECONDS=0.6", "INFERSIM_SHARDS=4",
	}, env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	var readers sync.WaitGroup
	for _, r := range []io.Reader{stdout, stderr} {
		readers.Go(func() {
			sc := bufio.NewScanner(r)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				p.mu.Lock()
				p.out = append(p.out, outLine{time.Now(), sc.Text()})
				p.mu.Unlock()
			}
		})
	}
	go func() {
		readers.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // it may have ended already
		<-p.done
		_ = cmd.Wait() // its status is the kill's, or was read by exit
	})
	return p
}

// exit waits for the process to end and returns its status.
func (p *proc) exit(t *testing.T, within time.Duration) int {
	t.Helper()
	res := make(chan error, 1)
	go func() { <-p.done; res <- p.cmd.Wait() }()
	select {
	case err := <-res:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(within):
		t.Fatalf("still running after %v:\n%s", within, p.lines())
		return -1
	}
}

func TestBinaryServes(t *testing.T) {
	t.Parallel()
	dir := build(t)
	port := freePort(t)
	p := start(t, dir, port, []string{"KDTREE_MODE=on"})
	url := fmt.Sprintf("http://127.0.0.1:%d/health", port)
	var codes []int
	deadline := time.Now().Add(15 * time.Second)
	sawBusy := false
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if len(codes) == 0 || codes[len(codes)-1] != resp.StatusCode {
				codes = append(codes, resp.StatusCode)
			}
			if resp.StatusCode == 200 {
				break
			}
		}
		// The GPU state climbs while the server loads.
		if !sawBusy {
			smi := exec.Command(filepath.Join(dir, "nvidia-smi"), "--query-gpu=memory.used", "--format=csv,noheader,nounits")
			smi.Env = []string{"INFERSIM_STATE_DIR=" + filepath.Join(dir, "state")}
			out, _ := smi.Output()
			sawBusy = len(out) > 0 && !strings.HasPrefix(string(out), "0\n")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if fmt.Sprint(codes) != "[503 200]" {
		t.Errorf("/health went %v, want [503 200]", codes)
	}
	if !sawBusy {
		t.Error("nvidia-smi never showed memory in use while infersim ran")
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("SIGTERM: %v", err)
	}
	if code := p.exit(t, 5*time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0", code)
	}
	log := p.lines()
	for _, want := range []string{
		"kdtree-verify: sitecustomize loaded from ", ", mode=on, content sha256=",
		" TP0] Load weight begin. avail mem=139.29 GB",
		"\rLoading safetensors checkpoint shards:  25% Completed | 1/4 [",
		" TP0] Capture target decode CUDA graph begin.",
		"Capturing batches (bs=1 avail_mem=13.61 GB): 100%|██████████| 23/23",
		" TP0] Capture target decode CUDA graph end.",
		"] INFO:     Uvicorn running on http://127.0.0.1:", "The server is fired up and ready to roll!",
		"SIGTERM received.",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	for _, l := range strings.Split(log, "\n") {
		if strings.HasPrefix(l, "[") && !strings.HasPrefix(l, "[rank") {
			if _, err := time.Parse(sglang.TimeLayout, l[1:20]); err != nil {
				t.Errorf("line without SGLang's timestamp: %q", l)
			}
		}
	}
	// Without infersim the GPUs are idle again.
	smi := exec.Command(filepath.Join(dir, "nvidia-smi"), "--query-gpu=memory.used", "--format=csv,noheader,nounits")
	smi.Env = []string{"INFERSIM_STATE_DIR=" + filepath.Join(dir, "state")}
	out, err := smi.Output()
	if err != nil || string(out) != strings.Repeat("0\n", 8) {
		t.Errorf("nvidia-smi after exit: %q %v", out, err)
	}
}

func TestBinaryValidateFailsCapture(t *testing.T) {
	t.Parallel()
	dir := build(t)
	p := start(t, dir, freePort(t), []string{"KDTREE_MODE=validate"})
	if code := p.exit(t, 10*time.Second); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	log := p.lines()
	for _, want := range []string{
		", mode=validate, content sha256=",
		" TP0] Capture target decode CUDA graph begin.",
		" TP0] Scheduler hit an exception: Traceback (most recent call last):",
		"/kdtree_verify/validate.py\", line 57, in checked_forward",
		"torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing",
		"Exception: Capture cuda graph failed: CUDA error: operation failed due to a previous error during capture",
		"Received sigquit from a child process. It usually means the child failed.",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	// --disable-cuda-graph avoids the capture, and with it the failure.
	p = start(t, dir, freePort(t), []string{"KDTREE_MODE=validate"}, "--disable-cuda-graph")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(p.lines(), "fired up") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if log := p.lines(); !strings.Contains(log, "fired up") || strings.Contains(log, "Traceback") {
		t.Errorf("validate with --disable-cuda-graph did not serve:\n%s", log)
	}
}

func TestBinaryPortInUse(t *testing.T) {
	t.Parallel()
	dir := build(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	p := start(t, dir, port, []string{"KDTREE_MODE=on"})
	if code := p.exit(t, 10*time.Second); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	want := fmt.Sprintf("] ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', %d): address already in use", port)
	if log := p.lines(); !strings.Contains(log, want) || !strings.Contains(log, "INFO:     Application shutdown complete.") || strings.Contains(log, "Uvicorn running") {
		t.Errorf("stderr lacks %q:\n%s", want, log)
	}
}

func TestBinaryScriptedFailures(t *testing.T) {
	t.Parallel()
	dir := build(t)
	tests := []struct {
		fail, want string
		code       int
	}{
		{"oom", "torch.OutOfMemoryError: CUDA out of memory.", 1},
		{"port", "error while attempting to bind on address", 1},
		{"nccl", "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9141, OpType=_ALLGATHER_BASE, NumelIn=19008, NumelOut=152064, Timeout(ms)=300) ran for 320 milliseconds", 1},
		{"crashloop", "RuntimeError: NCCL error: unhandled system error", 1},
	}
	for _, tc := range tests {
		t.Run(tc.fail, func(t *testing.T) {
			p := start(t, dir, freePort(t), []string{"INFERSIM_FAIL=" + tc.fail, "INFERSIM_NCCL_TIMEOUT_SECONDS=0.3"})
			if code := p.exit(t, 10*time.Second); code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			if log := p.lines(); !strings.Contains(log, tc.want) {
				t.Errorf("stderr lacks %q:\n%s", tc.want, log)
			}
		})
	}
	t.Run("hang", func(t *testing.T) {
		p := start(t, dir, freePort(t), []string{"INFERSIM_FAIL=hang"})
		time.Sleep(2 * time.Second) // well past when capture would end
		log := p.lines()
		if !strings.Contains(log, "Capture target decode CUDA graph begin.") || strings.Contains(log, "CUDA graph end") {
			t.Errorf("hang: log\n%s", log)
		}
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Errorf("SIGTERM: %v", err)
		}
		if code := p.exit(t, 5*time.Second); code != 0 {
			t.Errorf("hung process exit %d after SIGTERM, want 0", code)
		}
	})
}

func TestNvidiaSMI(t *testing.T) {
	// The header of fixtures/gpu/nvsmi-stream.csv (a real H200's output),
	// copied here so the test needs no file outside the repository.
	header := "timestamp, index, name, uuid, memory.used [MiB], memory.total [MiB], utilization.gpu [%], temperature.gpu, power.draw [W], power.limit [W], clocks.current.sm [MHz]"
	fields := "timestamp,index,name,uuid,memory.used,memory.total,utilization.gpu,temperature.gpu,power.draw,power.limit,clocks.current.sm"
	var out, errOut bytes.Buffer
	getenv := func(k string) string {
		if k == "INFERSIM_STATE_DIR" {
			return t.TempDir()
		}
		return ""
	}
	if code := nvidiaSMI([]string{"--query-gpu=" + fields, "--format=csv"}, getenv, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if lines[0] != header {
		t.Errorf("header\n got %q\nwant %q", lines[0], header)
	}
	if len(lines) != 9 || !strings.HasSuffix(lines[1], ", 0, NVIDIA H200, GPU-3f1c2a9e-5b7d-4c1e-9a2b-6d8e0f4a7c21, 0 MiB, 143771 MiB, 0 %, 34, 79.00 W, 700.00 W, 345 MHz") {
		t.Errorf("rows:\n%s", out.String())
	}
	if _, err := time.Parse("2006/01/02 15:04:05.000", strings.Split(lines[1], ", ")[0]); err != nil {
		t.Errorf("timestamp: %v", err)
	}
	out.Reset()
	nvidiaSMI([]string{"--query-gpu=memory.used,index", "--format=csv,noheader,nounits"}, getenv, &out, &errOut)
	if !strings.HasPrefix(out.String(), "0, 0\n0, 1\n") {
		t.Errorf("noheader,nounits: %q", out.String())
	}
	if code := nvidiaSMI([]string{"--query-gpu=bogus", "--format=csv"}, getenv, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), `Field "bogus" is not a valid field to query.`) {
		t.Errorf("bogus field: %d %q", code, errOut.String())
	}
	out.Reset()
	nvidiaSMI([]string{"-L"}, getenv, &out, &errOut)
	if !strings.HasPrefix(out.String(), "GPU 0: NVIDIA H200 (UUID: GPU-3f1c2a9e-5b7d-4c1e-9a2b-6d8e0f4a7c21)\n") {
		t.Errorf("-L: %q", out.String())
	}
}

// TestNvidiaSMILoop checks that -lms prints the header once and a block
// of eight rows per period until its reader goes away.
func TestNvidiaSMILoop(t *testing.T) {
	t.Parallel()
	dir := build(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "nvidia-smi"), "--query-gpu=index,memory.used", "--format=csv", "-lms", "100")
	cmd.Env = []string{"INFERSIM_STATE_DIR=" + t.TempDir()}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(outPipe)
	var got []string
	for len(got) < 1+3*8 && sc.Scan() {
		got = append(got, sc.Text())
	}
	_ = cmd.Process.Kill() // it loops until stopped
	_ = cmd.Wait()
	if len(got) != 25 || got[0] != "index, memory.used [MiB]" || got[9] != "0, 0 MiB" || strings.Count(strings.Join(got, "\n"), "index,") != 1 {
		t.Errorf("loop output:\n%s", strings.Join(got, "\n"))
	}
}

// TestFlood: INFERSIM_FLOOD numbers its lines from 1, in order, at about
// the rate asked; a rate that is not a count is refused.
func TestFlood(t *testing.T) {
	if _, err := parseConfig(nil, func(k string) string {
		if k == "INFERSIM_FLOOD" {
			return "lots"
		}
		return ""
	}); err == nil || !strings.Contains(err.Error(), "INFERSIM_FLOOD") {
		t.Fatalf("INFERSIM_FLOOD=lots: err = %v", err)
	}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	flood(ctx, 1000, &logWriter{stdout: &out, stderr: io.Discard})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 100 {
		t.Fatalf("%d lines in 300 ms at 1000/s", len(lines))
	}
	for i, l := range lines {
		if want := fmt.Sprintf("soak flood seq=%d", i+1); l != want {
			t.Fatalf("line %d = %q, want %q", i, l, want)
		}
	}
}
