package main

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/sanitize"
	"github.com/bringup-dev/bringup/remote/sim/sglang"
	"github.com/bringup-dev/bringup/remote/startup"
)

func TestVLLMConfig(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want func(cfg config) string // "" when cfg is right
		err  string
	}{
		{
			name: "serve with a positional model",
			env:  map[string]string{"INFERSIM_ENGINE": "vllm"},
			args: []string{"serve", "/models/x", "--port", "30000", "--tensor-parallel-size", "8", "--enforce-eager"},
			want: func(cfg config) string {
				p := cfg.params
				if p.ModelPath != "/models/x" || p.Port != 30000 || p.TP != 8 || !p.DisableCUDAGraph {
					return fmt.Sprintf("%+v", p)
				}
				if got := nonDefaultArgs(cfg); got != "{'model_tag': '/models/x', 'port': 30000, 'model': '/models/x', 'enforce_eager': True, 'tensor_parallel_size': 8}" {
					return "non-default args " + got
				}
				return ""
			},
		},
		{
			name: "--engine, flags before the model, vLLM's default port",
			args: []string{"--engine", "vllm", "-tp", "2", "/m"},
			want: func(cfg config) string {
				if _, ok := cfg.engine.(*vllmEngine); !ok || cfg.params.Port != 8000 || cfg.params.TP != 2 || cfg.params.ModelPath != "/m" || cfg.params.DisableCUDAGraph {
					return fmt.Sprintf("%T %+v", cfg.engine, cfg.params)
				}
				return ""
			},
		},
		{name: "SGLang's flag under vLLM", env: map[string]string{"INFERSIM_ENGINE": "vllm"}, args: []string{"--disable-cuda-graph"}, err: "disable-cuda-graph"},
		{name: "vLLM's flag under SGLang", args: []string{"--enforce-eager"}, err: "enforce-eager"},
		{name: "two models", args: []string{"--engine=vllm", "serve", "/a", "/b"}, err: "unrecognized arguments: /b"},
		{name: "unknown engine", env: map[string]string{"INFERSIM_ENGINE": "trtllm"}, err: `engine "trtllm"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseConfig(tc.args, func(k string) string { return tc.env[k] })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one naming %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if msg := tc.want(cfg); msg != "" {
				t.Error(msg)
			}
		})
	}
}

func TestVLLMHandlers(t *testing.T) {
	var access bytes.Buffer
	p := sglang.Params{ModelPath: "/models/demo", PID: 7}
	s := newServer(&vllmEngine{}, p, &logWriter{stdout: &access, stderr: &access})
	s.ready.Store(true)
	ts := httptest.NewServer(s)
	defer ts.Close()
	for _, c := range []struct {
		method, path, ct, body string
		code                   int
		want                   string
	}{
		{"GET", "/health", "", "", 200, ""},
		{"GET", "/version", "", "", 200, `{"version":"0.11.0"}`},
		{"GET", "/v1/models", "", "", 200, `"owned_by":"vllm"`},
		{"POST", "/v1/completions", "application/json", `{"model":"/models/demo","prompt":"The capital of France is","max_tokens":1}`, 200, `"stop_reason":null,"text":" Paris."`},
		{"POST", "/v1/completions", "text/plain", `{}`, 400, `"type":"Bad Request"`},
		{"GET", "/model_info", "", "", 404, ""}, // SGLang's, not vLLM's
	} {
		code, body := call(t, ts.URL, c.method, c.path, c.ct, c.body)
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("%s %s = %d %s, want %d with %s", c.method, c.path, code, body, c.code, c.want)
		}
	}
	if want := `(APIServer pid=7) INFO:     127.0.0.1:`; !strings.Contains(access.String(), want) || !strings.Contains(access.String(), `"GET /health HTTP/1.1" 200 OK`) {
		t.Errorf("access log lacks %q:\n%s", want, access.String())
	}
}

// nonDefaultArgs is the dict of the "non-default args" line that the
// engine of cfg logs.
func nonDefaultArgs(cfg config) string {
	const key = "non-default args: "
	for _, l := range cfg.engine.play(sglang.New(cfg.params)).lines {
		if l.text == nil {
			continue
		}
		if _, dict, ok := strings.Cut(l.text(time.Time{}), key); ok {
			return dict
		}
	}
	return ""
}

// startVLLM runs infersim as vLLM (`vllm serve`) on port with tp GPUs.
func startVLLM(t *testing.T, dir string, port, tp int, env []string, args ...string) *proc {
	t.Helper()
	return launch(t, dir, append([]string{"INFERSIM_ENGINE=vllm"}, env...),
		append([]string{"serve", "/models/demo", "--port", fmt.Sprint(port), "--host", "127.0.0.1", "--tensor-parallel-size", fmt.Sprint(tp)}, args...))
}

// probe is one /health answer (status 0: no answer, err says why).
type probe struct {
	at     time.Time
	status int
	err    error
}

// vllmRun is what one vLLM startup did.
type vllmRun struct {
	out    []outLine
	probes []probe
	code   int // exit status; after SIGTERM once serving when it served
}

// runVLLM runs a startup to its end: it probes /health as bringup does
// until it answers 200 (then stops the server) or the process exits.
func runVLLM(t *testing.T, tp int, env []string, args ...string) vllmRun {
	t.Helper()
	dir := build(t)
	port := freePort(t)
	p := startVLLM(t, dir, port, tp, env, args...)
	client := &http.Client{Timeout: time.Second}
	var run vllmRun
	deadline := time.Now().Add(15 * time.Second)
	exited := false
	for !exited && time.Now().Before(deadline) {
		select {
		case <-p.done:
			exited = true
		case <-time.After(50 * time.Millisecond):
		}
		pr := probe{at: time.Now()}
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/health", port))
		if err == nil {
			pr.status = resp.StatusCode
			resp.Body.Close()
		}
		pr.err = err
		run.probes = append(run.probes, pr)
		if pr.status == 200 {
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Errorf("SIGTERM: %v", err)
			}
			break
		}
	}
	run.code = p.exit(t, 5*time.Second)
	run.out = p.output()
	return run
}

// track feeds a run to the phase engine as a host's events would reach
// it: the unit (with its Environment) going active, every output line as
// a journal entry (sanitised, as the fleet does), the probes, and
// systemd's lines when the process failed.
func track(run vllmRun, mode string) (*startup.Tracker, []startup.Phase) {
	type timed struct {
		at time.Time
		ev event.Event
	}
	const unit, inv = "vllm.service", "inv-1"
	t0 := run.out[0].at.Add(-time.Millisecond)
	evs := []timed{{t0, event.Event{Kind: event.KindUnit, Unit: &event.Unit{Name: unit, ActiveState: "active", SubState: "running",
		InvocationID: inv, ExecMainStart: t0, Environment: []string{"KDTREE_MODE=" + mode, "PYTHONPATH=/opt/kdtree/site"}}}}}
	for _, l := range run.out {
		msg, _ := sanitize.Line(l.text, sanitize.DefaultMax)
		evs = append(evs, timed{l.at, event.Event{Kind: event.KindJournal, Journal: &event.Journal{Unit: unit, InvocationID: inv, Priority: 6, Message: msg}}})
	}
	for _, pr := range run.probes {
		p := &event.Probe{Path: "/health", Status: pr.status, OK: pr.status == 200}
		if pr.err != nil {
			p.Err = pr.err.Error()
		}
		evs = append(evs, timed{pr.at, event.Event{Kind: event.KindProbe, Probe: p}})
	}
	slices.SortStableFunc(evs, func(a, b timed) int { return a.at.Compare(b.at) })
	if run.code != 0 {
		end := evs[len(evs)-1].at
		for i, msg := range []string{unit + ": Main process exited, code=exited, status=1/FAILURE", unit + ": Failed with result 'exit-code'."} {
			evs = append(evs, timed{end.Add(time.Duration(i+1) * time.Millisecond), event.Event{Kind: event.KindJournal, Journal: &event.Journal{Unit: unit, InvocationID: inv, PID: 1, Priority: 6, Message: msg}}})
		}
		evs = append(evs, timed{end.Add(3 * time.Millisecond), event.Event{Kind: event.KindUnit, Unit: &event.Unit{Name: unit, ActiveState: "failed", SubState: "failed", Result: "exit-code", InvocationID: inv}}})
	}
	tr := startup.NewTracker(startup.Options{Engine: "auto", Kernels: kernels.DefaultCatalog()})
	var phases []startup.Phase
	for _, e := range evs {
		e.ev.Host, e.ev.Time = "gpu1", e.at
		for _, c := range tr.Apply(e.ev) {
			if c.Kind == startup.ChangePhase {
				phases = append(phases, c.Phase)
			}
		}
	}
	return tr, phases
}

// TestVLLMStartupPhases runs vLLM startups and feeds every line through
// the phase engine with the engine left to detection: it must recognise
// vLLM and follow the real phases, and explain every failure.
func TestVLLMStartupPhases(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tp   int
		mode string
		env  []string
		args []string
		// phases must appear in this order (serving last for a start that serves).
		phases []startup.Phase
		// cause, phase and kernel mode of the failure ("" when it serves).
		cause   string
		failIn  startup.Phase
		kernel  string
		hint    []string
		logHave []string
	}{
		{
			name: "serves", tp: 8, mode: "on",
			// No warmup: vLLM's ready line, with the unit active and no
			// probe waited for, is serving's last piece of evidence.
			phases: []startup.Phase{startup.Init, startup.Weights, startup.KVCache, startup.GraphCapture, startup.HTTP, startup.Serving},
			logHave: []string{
				"kdtree-verify: sitecustomize loaded from ", ") INFO ", " [api_server.py:1839] vLLM API server version 0.11.0",
				"(EngineCore_DP0 pid=", "(Worker_TP7 pid=", "\rLoading safetensors checkpoint shards:  25% Completed | 1/4 [",
				"Model loading took 81.1699 GiB memory and ", "Available KV cache memory: 43.92 GiB", "GPU KV cache size: 671,087 tokens",
				"\rCapturing CUDA graphs (decode, FULL): 100%|██████████| 35/35 [", "Graph capturing finished in 0 secs, took 0.49 GiB",
				"init engine (profile, create kv cache, warmup model) took ", "Starting vLLM API server 0 on http://127.0.0.1:",
				"Route: /health, Methods: GET", ") INFO:     Application startup complete.", `"GET /health HTTP/1.1" 200 OK`, ") INFO:     Shutting down",
			},
		},
		{
			name: "validate fails at graph capture", tp: 8, mode: "validate",
			phases: []startup.Phase{startup.Init, startup.Weights, startup.KVCache, startup.Failed},
			cause:  "graph-capture-host-sync", failIn: startup.GraphCapture, kernel: "kdtree-verify=validate",
			hint: []string{"switch kdtree-verify to a capture-safe mode (on, off)", "--enforce-eager"},
			logHave: []string{
				"\rCapturing CUDA graphs (mixed prefill-decode, PIECEWISE):   0%|          | 0/67 [",
				"(Worker_TP0 pid=", "[multiproc_executor.py:671] WorkerProc hit an exception.",
				`/kdtree_verify/validate.py", line 57, in checked_forward`,
				"] torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing",
				"[core.py:708] EngineCore failed to start.", "RuntimeError: Worker failed with error 'CUDA error: operation failed due to a previous error during capture",
				") Process EngineCore_DP0:",
				"RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}",
			},
		},
		{
			name: "validate on one GPU: the engine core captures", tp: 1, mode: "validate",
			cause: "graph-capture-host-sync", failIn: startup.GraphCapture, kernel: "kdtree-verify=validate",
			logHave: []string{"(EngineCore_DP0 pid=", "[core.py:708] torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing", "Engine core initialization failed. See root cause above."},
		},
		{
			name: "validate with --enforce-eager serves", tp: 8, mode: "validate", args: []string{"--enforce-eager"},
			phases:  []startup.Phase{startup.Init, startup.Weights, startup.KVCache, startup.HTTP, startup.Serving},
			logHave: []string{"'enforce_eager': True", "enforce_eager=True", "Application startup complete."},
		},
		{
			name: "GPU out of memory at weight load", tp: 8, mode: "on", env: []string{"INFERSIM_FAIL=oom"},
			cause: "gpu-oom", failIn: startup.Weights,
			logHave: []string{"WorkerProc failed to start.", "torch.OutOfMemoryError: CUDA out of memory.", "Exception: WorkerProc initialization failed due to an exception in a background process."},
		},
		{
			name: "NCCL error at init", tp: 8, mode: "on", env: []string{"INFERSIM_FAIL=crashloop"},
			cause: "nccl-error", failIn: startup.Init,
			logHave: []string{"RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)", "EngineCore failed to start."},
		},
		{
			name: "port in use: the early bind fails", tp: 8, mode: "on", env: []string{"INFERSIM_FAIL=port"},
			cause: "port-in-use", failIn: startup.Init,
			logHave: []string{"non-default args:", `in create_server_socket`, ") OSError: [Errno 98] Address already in use"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run := runVLLM(t, tc.tp, append([]string{"KDTREE_MODE=" + tc.mode, "INFERSIM_NCCL_TIMEOUT_SECONDS=0.3"}, tc.env...), tc.args...)
			var all []string
			for _, l := range run.out {
				all = append(all, l.text)
			}
			log := strings.Join(all, "\n")
			for _, want := range tc.logHave {
				if !strings.Contains(log, want) {
					t.Errorf("output lacks %q", want)
				}
			}
			tr, phases := track(run, tc.mode)
			st := tr.State()
			t.Logf("phases %v", phases)
			if st.Diag != nil {
				t.Logf("diagnosis %s in %s: %s; hint: %s", st.Diag.Cause, st.Diag.Phase, st.Diag.Summary, st.Diag.Hint)
			}
			if st.Engine != "vllm" {
				t.Errorf("engine detected %q, want vllm", st.Engine)
			}
			if !inOrder(phases, tc.phases) {
				t.Errorf("phases %v, want %v in order", phases, tc.phases)
			}
			if tc.cause == "" {
				if st.Phase != startup.Serving || run.code != 0 {
					t.Errorf("phase %s, exit %d; want serving and 0 after SIGTERM\n%s", st.Phase, run.code, tail(log))
				}
				if slices.Contains(tc.args, "--enforce-eager") && slices.Contains(phases, startup.GraphCapture) {
					t.Errorf("--enforce-eager went through graph capture: %v", phases)
				}
				return
			}
			d := st.Diag
			if st.Phase != startup.Failed || run.code != 1 || d == nil {
				t.Fatalf("phase %s, exit %d, diagnosis %+v; want failed, 1\n%s", st.Phase, run.code, d, tail(log))
			}
			if d.Cause != tc.cause || d.Phase != tc.failIn || d.KernelMode != tc.kernel {
				t.Errorf("diagnosis %s in %s (kernel %q), want %s in %s (kernel %q); evidence:\n%s",
					d.Cause, d.Phase, d.KernelMode, tc.cause, tc.failIn, tc.kernel, strings.Join(d.Evidence, "\n"))
			}
			for _, h := range tc.hint {
				if !strings.Contains(d.Hint, h) {
					t.Errorf("hint %q lacks %q", d.Hint, h)
				}
			}
		})
	}
}

// TestVLLMHealthRefusedUntilReady: vLLM binds its port early but listens
// only when it is ready, so a probe is refused (never 503) until /health
// answers 200.
func TestVLLMHealthRefusedUntilReady(t *testing.T) {
	t.Parallel()
	dir := build(t)
	port := freePort(t)
	p := startVLLM(t, dir, port, 8, []string{"KDTREE_MODE=on"})
	deadline := time.Now().Add(15 * time.Second)
	var refused, other int
	for time.Now().Before(deadline) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/health", port))
		if err == nil {
			code := resp.StatusCode
			resp.Body.Close()
			if code == 200 {
				break
			}
			other++
			continue
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			other++
		}
		refused++
		time.Sleep(20 * time.Millisecond)
	}
	if refused == 0 || other != 0 {
		t.Errorf("/health before ready: %d refused, %d other answers; want only refusals", refused, other)
	}
	if !strings.Contains(p.lines(), "Application startup complete.") {
		t.Errorf("never ready:\n%s", tail(p.lines()))
	}
}

// TestVLLMStaysUp: a collective that times out in capture kills a worker,
// and the engine core waits for it for ever; a capture that hangs shows
// nothing after the KV cache (its bar line never closes). Both keep the
// process up until it is stopped.
func TestVLLMStaysUp(t *testing.T) {
	t.Parallel()
	dir := build(t)
	for _, tc := range []struct {
		fail, want, lastLine string
	}{
		{"nccl", "Watchdog caught collective operation timeout", "Worker proc VllmWorker-3 died unexpectedly, shutting down executor."},
		{"hang", "", "Maximum concurrency for 163,840 tokens per request"},
	} {
		t.Run(tc.fail, func(t *testing.T) {
			p := startVLLM(t, dir, freePort(t), 8, []string{"INFERSIM_FAIL=" + tc.fail, "INFERSIM_NCCL_TIMEOUT_SECONDS=0.3"})
			time.Sleep(3 * time.Second) // well past the failure
			out := p.output()
			last := out[len(out)-1].text
			if !strings.Contains(last, tc.lastLine) || !strings.Contains(p.lines(), tc.want) {
				t.Errorf("last line %q, want %q (and %q in the log)\n%s", last, tc.lastLine, tc.want, tail(p.lines()))
			}
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Errorf("SIGTERM: %v", err)
			}
			if code := p.exit(t, 5*time.Second); code != 0 {
				t.Errorf("exit %d after SIGTERM, want 0", code)
			}
		})
	}
}

// inOrder reports whether want appears in got in order (other phases may
// come between).
func inOrder(got, want []startup.Phase) bool {
	for _, w := range want {
		i := slices.Index(got, w)
		if i < 0 {
			return false
		}
		got = got[i+1:]
	}
	return true
}

// tail is the end of a log, for failure messages.
func tail(log string) string {
	lines := strings.Split(log, "\n")
	return strings.Join(lines[max(0, len(lines)-40):], "\n")
}
