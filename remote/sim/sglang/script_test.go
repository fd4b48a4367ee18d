package sglang

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// prefixRE is the SGLang prefix pattern of logformats.md §1.1.
var prefixRE = regexp.MustCompile(`^\[(?:(\d{4}-\d{2}-\d{2}) )?(\d{2}:\d{2}:\d{2})((?: (?:DP|PP|TP|EP|ATTN_CP|MOE_DP)\d+)*)\] (.*)$`)

var base = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func kernel(mode string, safe bool) Kernel {
	return Kernel{Name: "kdtree-verify", Mode: mode, CaptureSafe: safe, Path: "/opt/kdtree/site", Hash: "ab12cd"}
}

// rendered returns the lines a journal would hold: partial bar refreshes
// are left out.
func rendered(s *Script) []string {
	var out []string
	for _, l := range s.Lines {
		if !l.Partial {
			out = append(out, l.Render(base.Add(l.At)))
		}
	}
	return out
}

// inOrder reports the first of want that does not occur, as a substring,
// after the previous one.
func inOrder(lines, want []string) (string, bool) {
	i := 0
	for _, w := range want {
		for i < len(lines) && !strings.Contains(lines[i], w) {
			i++
		}
		if i == len(lines) {
			return w, false
		}
		i++
	}
	return "", true
}

func TestScripts(t *testing.T) {
	tests := []struct {
		name     string
		p        Params
		want     []string // substrings, in this order
		absent   []string
		exit     int // -1: keeps running
		ready    bool
		exitNear time.Duration
	}{
		{
			name: "serves",
			p:    Params{Kernel: kernel("on", true)},
			want: []string{
				"] kdtree-verify: sitecustomize loaded from /opt/kdtree/site, mode=on, content sha256=ab12cd",
				"] server_args=ServerArgs(model_path='/models/DeepSeek-V3',",
				" TP0] Init torch distributed begin.",
				" TP0] Init torch distributed ends. elapsed=24.00 s, mem usage=2.50 GB",
				" TP0] Load weight begin. avail mem=139.29 GB",
				" TP7] Load weight begin. avail mem=139.29 GB",
				"Loading safetensors checkpoint shards:   0% Completed | 0/65 [00:00<?, ?it/s]",
				"Loading safetensors checkpoint shards: 100% Completed | 65/65 [08:27<00:00,  7.81s/it]",
				" TP0] Load weight end. elapsed=510.00 s, type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=58.12 GB, mem usage=81.17 GB.",
				" TP0] KV Cache is allocated. #tokens: 1226984, K size: 20.95 GB, V size: 20.95 GB",
				" TP0] Memory pool end. avail mem=14.20 GB",
				" TP0] Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, bs=[1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152, 160], avail mem=14.10 GB",
				"Capturing batches (bs=1 avail_mem=13.61 GB): 100%|██████████| 23/23 [01:20<00:00,  3.48s/it]",
				" TP0] Capture target decode CUDA graph end. elapsed=80.00 s, mem usage=0.49 GB, avail mem=13.61 GB.",
				" TP0] max_total_num_tokens=1226984, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=163840, available_gpu_mem=13.61 GB",
				"] Engine startup timings (s): load_weight=510.00,",
				"] INFO:     Started server process [4242]",
				"] INFO:     Waiting for application startup.",
				"] INFO:     Application startup complete.",
				"] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
				`"GET /model_info HTTP/1.1" 200 OK`,
				`"POST /generate HTTP/1.1" 200 OK`,
				"] The server is fired up and ready to roll!",
			},
			absent: []string{"Traceback", "Capturing batches (bs=160"},
			exit:   -1, ready: true,
		},
		{
			name: "validate mode fails at capture",
			p:    Params{Kernel: kernel("validate", false)},
			want: []string{
				" TP0] Capture target decode CUDA graph begin.",
				" TP0] Scheduler hit an exception: Traceback (most recent call last):",
				`  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/model_executor/cuda_graph_runner.py", line 702, in capture_one_batch_size`,
				`  File "/opt/kdtree/site/kdtree_verify/validate.py", line 57, in checked_forward`,
				"    if err.max().item() > tol:",
				"       ^^^^^^^^^^^^^^^^",
				"torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing",
				"Search for `cudaErrorStreamCaptureUnsupported' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.",
				"During handling of the above exception, another exception occurred:",
				"torch.AcceleratorError: CUDA error: operation failed due to a previous error during capture",
				"Search for `cudaErrorStreamCaptureInvalidated'",
				"During handling of the above exception, another exception occurred:",
				"Exception: Capture cuda graph failed: CUDA error: operation failed due to a previous error during capture",
				"Possible solutions:",
				"4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)",
				"] Received sigquit from a child process. It usually means the child failed.",
			},
			absent: []string{"Capture target decode CUDA graph end", "fired up"},
			exit:   1, exitNear: 9*time.Minute + 47*time.Second,
		},
		{
			name:   "validate mode with graphs disabled serves",
			p:      Params{Kernel: kernel("validate", false), DisableCUDAGraph: true},
			want:   []string{"disable_cuda_graph=True", "Memory pool end.", "available_gpu_mem=14.20 GB", "fired up and ready to roll!"},
			absent: []string{"Capture target", "Capturing batches", "Traceback"},
			exit:   -1, ready: true,
		},
		{
			name: "oom at weight load",
			p:    Params{Failure: FailOOM},
			want: []string{"Load weight begin.", "Completed | 39/65", " TP0] Scheduler hit an exception: Traceback",
				"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU 0 has a total capacity of 139.80 GiB of which 1.02 GiB is free.",
				"Received sigquit from a child process."},
			absent: []string{"Completed | 40/65", "Load weight end", "kdtree-verify"},
			exit:   1,
		},
		{
			name: "port in use",
			p:    Params{Failure: FailPort, Port: 30001},
			want: []string{"Capture target decode CUDA graph end.", "INFO:     Application startup complete.",
				"] ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30001): address already in use",
				"INFO:     Waiting for application shutdown.", "INFO:     Application shutdown complete."},
			absent: []string{"Uvicorn running", "fired up"},
			exit:   1,
		},
		{
			name: "nccl timeout",
			p:    Params{Failure: FailNCCL, NCCLTimeout: 30 * time.Second},
			want: []string{"Capture target decode CUDA graph begin.",
				"[rank3]:[E1130 10:10:15.600000000 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9141, OpType=_ALLGATHER_BASE, NumelIn=19008, NumelOut=152064, Timeout(ms)=30000) ran for 30020 milliseconds before timing out.",
				"terminate called after throwing an instance of 'c10::DistBackendError'",
				"] Child process unexpectedly failed with an exit code 134. pid=4246"},
			absent: []string{"Capture target decode CUDA graph end."},
			exit:   1,
		},
		{
			name:   "hang in capture",
			p:      Params{Failure: FailHang},
			want:   []string{"Capture target decode CUDA graph begin."},
			absent: []string{"Capturing batches", "Capture target decode CUDA graph end.", "Traceback"},
			exit:   -1,
		},
		{
			name: "crash loop fails in init",
			p:    Params{Failure: FailCrashLoop},
			want: []string{"Init torch distributed begin.", "Scheduler hit an exception: Traceback",
				"RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)", "Received sigquit"},
			absent: []string{"Init torch distributed ends", "Load weight begin"},
			exit:   1, exitNear: 30 * time.Second,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New(tc.p)
			lines := rendered(s)
			if w, ok := inOrder(lines, tc.want); !ok {
				t.Errorf("line %q missing or out of order", w)
			}
			for _, a := range tc.absent {
				for _, l := range lines {
					if strings.Contains(l, a) {
						t.Errorf("unexpected line %q", l)
					}
				}
			}
			if s.Ready() != tc.ready {
				t.Errorf("Ready() = %v, want %v", s.Ready(), tc.ready)
			}
			switch {
			case tc.exit < 0 && s.Exit != Never:
				t.Errorf("exits at %v, want no exit", s.Exit)
			case tc.exit >= 0 && (s.Exit == Never || s.ExitCode != tc.exit):
				t.Errorf("exit at %v with %d, want status %d", s.Exit, s.ExitCode, tc.exit)
			case tc.exitNear > 0 && (s.Exit < tc.exitNear-2*time.Second || s.Exit > tc.exitNear+2*time.Second):
				t.Errorf("exit at %v, want about %v", s.Exit, tc.exitNear)
			}
			checkShape(t, s)
		})
	}
}

// checkShape checks what every script must satisfy: time order, and the
// SGLang prefix on every logger line with a date and the TP tags.
func checkShape(t *testing.T, s *Script) {
	t.Helper()
	for i, l := range s.Lines {
		if i > 0 && l.At < s.Lines[i-1].At {
			t.Fatalf("line %d at %v before line %d at %v", i, l.At, i-1, s.Lines[i-1].At)
		}
		r := l.Render(base.Add(l.At))
		m := prefixRE.FindStringSubmatch(r)
		switch l.Prefix {
		case PrefixLogger:
			if m == nil || m[1] == "" {
				t.Fatalf("logger line does not match the SGLang prefix: %q", r)
			}
			if m[3] != l.Tag {
				t.Fatalf("tags %q, want %q in %q", m[3], l.Tag, r)
			}
		default:
			if m != nil {
				t.Fatalf("unprefixed line matches the prefix: %q", r)
			}
		}
		if i > 0 && s.Lines[i-1].Partial && !l.Bar {
			t.Fatalf("a partial bar refresh is followed by a non-bar line %q", r)
		}
		if strings.ContainsAny(l.Text, "\r\n") {
			t.Fatalf("line holds a line break: %q", l.Text)
		}
	}
}

func TestShortPhasesKeepOrder(t *testing.T) {
	// The phase lengths infersim's tests use.
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	checkShape(t, New(Params{Boot: ms(100), Init: ms(100), Weights: ms(300), KV: ms(100), Capture: ms(200), HTTP: ms(100), Warmup: ms(100)}))
}

func TestTPOneIsUntagged(t *testing.T) {
	s := New(Params{TP: 1})
	for _, l := range s.Lines {
		if l.Tag != "" {
			t.Fatalf("tag %q at TP=1: %q", l.Tag, l.Text)
		}
	}
	if !strings.Contains(rendered(s)[0], "tp_size=1,") {
		t.Errorf("server_args does not say tp_size=1")
	}
}

func TestDeterministic(t *testing.T) {
	a, b := rendered(New(Params{Seed: 7})), rendered(New(Params{Seed: 7}))
	c := rendered(New(Params{Seed: 8}))
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Error("equal seeds gave different scripts")
	}
	if strings.Join(a, "\n") == strings.Join(c, "\n") {
		t.Error("different seeds gave equal scripts")
	}
}

func TestTqdmFormat(t *testing.T) {
	tests := []struct{ got, want string }{
		{ShardLine(8, 65, 58*time.Second), "Loading safetensors checkpoint shards:  12% Completed | 8/65 [00:58<06:53,  7.25s/it]"},
		{ShardLine(1, 2, 1170*time.Millisecond), "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.17s/it]"},
		{ShardLine(3, 4, 2*time.Hour), "Loading safetensors checkpoint shards:  75% Completed | 3/4 [2:00:00<40:00, 2400.00s/it]"},
		{CaptureBarLine(128, 57.52, 1, 20, 190*time.Millisecond), "Capturing batches (bs=128 avail_mem=57.52 GB):   5%|▌         | 1/20 [00:00<00:04,  5.26it/s]"},
		{CaptureBarLine(1, 13.61, 23, 23, 72*time.Second), "Capturing batches (bs=1 avail_mem=13.61 GB): 100%|██████████| 23/23 [01:12<00:00,  3.13s/it]"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got  %q\nwant %q", tc.got, tc.want)
		}
	}
}

func TestGPUMemoryClimbs(t *testing.T) {
	s := New(Params{})
	m := s.Marks
	at := func(d time.Duration) int { return s.GPU(d, 0).MemUsedMiB }
	if got := at(0); got != 0 {
		t.Errorf("before start: %d MiB used, want 0", got)
	}
	mid, end := at(m.WeightsBegin+(m.WeightsEnd-m.WeightsBegin)/2), at(m.WeightsEnd)
	if !(at(m.WeightsBegin) < mid && mid < end) {
		t.Errorf("memory does not climb during load: %d, %d, %d", at(m.WeightsBegin), mid, end)
	}
	if end < 80*1024 || end > 85*1024 {
		t.Errorf("after load %d MiB, want about 82 GiB", end)
	}
	if ready := at(m.Ready); ready < 125*1024 || ready > GPUTotalMiB {
		t.Errorf("serving %d MiB, want about 127 GiB of %d", ready, GPUTotalMiB)
	}
	f := New(Params{Failure: FailCrashLoop})
	if got := f.GPU(f.Exit, 3).MemUsedMiB; got != 0 {
		t.Errorf("after exit %d MiB used, want 0", got)
	}
}

func TestParseFailure(t *testing.T) {
	for _, f := range KnownFailures() {
		if got, err := ParseFailure(string(f)); err != nil || got != f {
			t.Errorf("ParseFailure(%q) = %q, %v", f, got, err)
		}
	}
	if _, err := ParseFailure("bogus"); err == nil || !strings.Contains(err.Error(), "oom") {
		t.Errorf("ParseFailure(bogus) error = %v, want one naming the known failures", err)
	}
}
