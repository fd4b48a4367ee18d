package startup

import (
	"strings"
	"testing"
	"time"
)

// The prefixes below are copied from corpus logs (testdata/corpus), one per
// shape, so the table checks the shapes real logs have.
func TestSplitLine(t *testing.T) {
	for _, tt := range []struct {
		line, src, body string
	}{
		{"[2025-03-17 17:15:55 TP1] Scheduler hit an exception: Traceback (most recent call last):", "TP1", "Scheduler hit an exception: Traceback (most recent call last):"},
		{"[23:17:08 TP4] Exception in run_tp_server:", "TP4", "Exception in run_tp_server:"},
		{"[2025-06-19 15:12:27] Capture cuda graph bs [1, 2, 4, 8]", "", "Capture cuda graph bs [1, 2, 4, 8]"},
		{"[12-31 11:58:46] Initializing distributed environment with world_size=1, device=cuda:0", "", "Initializing distributed environment with world_size=1, device=cuda:0"},
		{"(VllmWorker rank=6 pid=409) ERROR 07-23 19:34:51 [multiproc_executor.py:487] RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)", "VllmWorker rank=6 pid=409", "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)"},
		{"ERROR 10-26 11:35:32 registry.py:267] Error in inspecting model architecture 'LlamaForCausalLM'", "", "Error in inspecting model architecture 'LlamaForCausalLM'"},
		{"[rank6]:[E207 01:29:36.730311765 ProcessGroupNCCL.cpp:616] [Rank 6] Watchdog caught collective operation timeout", "rank6", "[Rank 6] Watchdog caught collective operation timeout"},
		{"deepseek-v32-exp  | Exception: Capture cuda graph failed: ", "deepseek-v32-exp", "Exception: Capture cuda graph failed: "},
		{"2025-04-25 10:11:34,979 - __main__ - INFO -   File \"<frozen runpy>\", line 198, in _run_module_as_main", "", "File \"<frozen runpy>\", line 198, in _run_module_as_main"},
		{"Dec 01 04:14:03 gpu1 sh[1234]: [2025-01-24 09:39:20 TP0] Load weight end.", "TP0", "Load weight end."},
		{"авг 18 14:15:04 llm python3[28059]: INFO 08-18 14:15:04 [api_server.py:1090] Starting vLLM API server", "python3[28059]", "Starting vLLM API server"},
		{"[1;36m(EngineCore_0 pid=21098)[0;0m INFO 08-05 09:09:28 [gpu_model_runner.py:1953] Starting to load model", "EngineCore_0 pid=21098", "Starting to load model"},
		{"Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.17s/it]", "", "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.17s/it]"},
		{"  File \"/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py\", line 1748, in run_scheduler_process", "", "File \"/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py\", line 1748, in run_scheduler_process"},
		// A log quoted in an issue ("> "), a CI console's stamp before the engine's.
		{">   File \"/root/.local/lib/python3.10/site-packages/sglang/srt/models/gemma.py\", line 327, in load_weights", "", "File \"/root/.local/lib/python3.10/site-packages/sglang/srt/models/gemma.py\", line 327, in load_weights"},
		{"> ", "", ""},
		{"> [2025-11-06T02:10:00.703Z] [2025-11-06 02:10:00] Received sigquit from a child process. It usually means the child failed.", "", "Received sigquit from a child process. It usually means the child failed."},
		{"[2025-11-06T02:10:00.702Z] KeyError: 'lm_head.weight'", "", "KeyError: 'lm_head.weight'"},
	} {
		src, body := splitLine(tt.line)
		if src != tt.src || body != tt.body {
			t.Errorf("splitLine(%q) = %q, %q; want %q, %q", tt.line, src, body, tt.src, tt.body)
		}
	}
}

func TestParseJournalLine(t *testing.T) {
	for _, tt := range []struct {
		line       string
		ok         bool
		when       time.Time
		monthKnown bool
		ident      string
		pid        int
		msg        string
	}{
		{"Dec 01 04:14:03 gpu1 systemd[1]: Started sglang.service - SGLang.", true, time.Date(0, 12, 1, 4, 14, 3, 0, time.UTC), true, "systemd", 1, "Started sglang.service - SGLang."},
		{"Dec  1 04:14:03.123456 gpu1 sh[77]: x", true, time.Date(0, 12, 1, 4, 14, 3, 123456000, time.UTC), true, "sh", 77, "x"},
		{"2026-12-01T04:14:03+0000 gpu1 sh[77]: x", true, time.Date(2026, 12, 1, 4, 14, 3, 0, time.UTC), true, "sh", 77, "x"},
		{"2026-12-01T04:14:03.500000+00:00 gpu1 sh[77]: x", true, time.Date(2026, 12, 1, 4, 14, 3, 500000000, time.UTC), true, "sh", 77, "x"},
		{"авг 18 14:15:04 llm python3[28059]: INFO", true, time.Date(0, 1, 18, 14, 15, 4, 0, time.UTC), false, "python3", 28059, "INFO"},
		{"[2025-01-24 09:39:20 TP0] Load weight end.", false, time.Time{}, false, "", 0, ""},
		{"Loading safetensors checkpoint shards: 100% Completed | 2/2", false, time.Time{}, false, "", 0, ""},
		{"Exception: Capture cuda graph failed: x", false, time.Time{}, false, "", 0, ""},
	} {
		jl, ok := ParseJournalLine(tt.line)
		if ok != tt.ok {
			t.Errorf("%q: ok = %v", tt.line, ok)
			continue
		}
		if !ok {
			continue
		}
		if !jl.Time.Equal(tt.when) || jl.MonthKnown != tt.monthKnown || jl.Ident != tt.ident || jl.PID != tt.pid || tt.line[jl.Len:] != tt.msg {
			t.Errorf("%q: %+v, message %q", tt.line, jl, tt.line[jl.Len:])
		}
	}
}

// TestTracebacks checks the traceback parser on the shapes real logs have:
// SGLang's multi-line message (only the first line tagged), vLLM's tag on
// every line, two ranks interleaved, indentation lost, an excerpt that
// starts mid-traceback, chained exceptions.
func TestTracebacks(t *testing.T) {
	capture := `File "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", line 267, in __init__`
	load := `File "/x/vllm/model_executor/model_loader/loader.py", line 20, in load_model`
	for _, tt := range []struct {
		name  string
		lines []string
		want  []Phase // the phase of each exception line, in order
	}{
		{"sglang multi-line", []string{"[2025-04-14 15:27:35 TP0] Scheduler hit an exception: Traceback (most recent call last):", "  " + capture, "    self.capture()", "RuntimeError: boom"}, []Phase{GraphCapture}},
		{"lost indentation", []string{"Traceback (most recent call last):", capture, "self.capture()", "ValueError: x"}, []Phase{GraphCapture}},
		{"mid-traceback excerpt", []string{"  " + load, "    raise ValueError(", "ValueError: x"}, []Phase{Weights}},
		{"interleaved ranks", []string{
			"(Worker_TP0 pid=1) Traceback (most recent call last):",
			"(Worker_TP1 pid=2) Traceback (most recent call last):",
			"(Worker_TP0 pid=1)   " + load,
			"(Worker_TP1 pid=2)   " + capture,
			"(Worker_TP1 pid=2) RuntimeError: b",
			"(Worker_TP0 pid=1) RuntimeError: a",
		}, []Phase{GraphCapture, Weights}},
		{"chained", []string{"Traceback (most recent call last):", "  " + load, "    f()", "KeyError: 'x'", "", "The above exception was the direct cause of the following exception:", "", "Traceback (most recent call last):", `  File "/x/y.py", line 1, in <module>`, "Exception: wrapped"}, []Phase{Weights, ""}},
		{"frame without source", []string{"Traceback (most recent call last):", "  " + capture, "torch.AcceleratorError: CUDA error: x"}, []Phase{GraphCapture}},
		{"not an exception", []string{"Traceback (most recent call last):", "  " + capture, "    x = foo()", "[2025-01-01 00:00:00 TP0] Capture cuda graph begin.", "AssertionError"}, []Phase{GraphCapture}},
	} {
		p := newTBParser(builtinSet().frames)
		var got []Phase
		for _, l := range tt.lines {
			k, ph, _ := p.feed(l, strings.Contains(l, tbHeader), strings.Contains(l, `File "`))
			if k == tbException {
				got = append(got, ph)
			}
		}
		if len(got) != len(tt.want) {
			t.Errorf("%s: exceptions in %v, want %v", tt.name, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%s: exceptions in %v, want %v", tt.name, got, tt.want)
				break
			}
		}
	}
}

func FuzzSplitLine(f *testing.F) {
	f.Add("[2025-03-17 17:15:55 TP1] x")
	f.Add("(VllmWorker rank=6 pid=409) ERROR 07-23 19:34:51 [m.py:4] x")
	f.Add("Dec 01 04:14:03 gpu1 sh[1]: y")
	f.Add("2025-04-25 10:11:34,979 - a - INFO - z")
	f.Fuzz(func(t *testing.T, s string) {
		_, body := splitLine(s)
		if !strings.HasSuffix(s, body) {
			t.Fatalf("body %q is not a suffix of %q", body, s)
		}
		ParseJournalLine(s)
	})
}

func FuzzTracebackFeed(f *testing.F) {
	f.Add("Traceback (most recent call last):\n  File \"a\", line 1, in load_model\nValueError: x")
	f.Fuzz(func(t *testing.T, s string) {
		p := newTBParser(builtinSet().frames)
		for _, l := range strings.Split(s, "\n") {
			p.feed(l, strings.Contains(l, tbHeader), strings.Contains(l, `File "`))
		}
		if p.nOpen < 0 || len(p.by) > maxTBSources {
			t.Fatalf("open %d, sources %d", p.nOpen, len(p.by))
		}
	})
}

func TestEngineStamp(t *testing.T) {
	for _, tt := range []struct{ line, want string }{
		{"[2025-03-17 17:15:55 TP1] Scheduler hit an exception", "2025-03-17 17:15:55"},
		{"[23:17:08 TP4] Exception in run_tp_server:", "23:17:08"},
		{"[2025-06-19 15:12:27] Capture cuda graph bs [1, 2, 4, 8]", "2025-06-19 15:12:27"},
		{"[12-31 11:58:46] Initializing distributed environment", "12-31 11:58:46"},
		{"(VllmWorker rank=6 pid=409) ERROR 07-23 19:34:51 [multiproc_executor.py:487] x", "07-23 19:34:51"},
		{"deepseek-v32-exp  | [2025-11-05 01:56:54 DP0 TP0] x", "2025-11-05 01:56:54"},
		{"Dec 01 04:14:03 gpu1 sh[1234]: [2025-01-24 09:39:20 TP0] Load weight end.", "2025-01-24 09:39:20"},
		{"[1;36m(EngineCore_0 pid=21098)[0;0m INFO 08-05 09:09:28 [gpu_model_runner.py:1953] x", "08-05 09:09:28"},
		{"Loading safetensors checkpoint shards:  50% Completed | 1/2", ""},
		{"[gpu_id=0] Load weight end.", ""},
		{"> [2025-11-06T02:10:00.703Z] [2025-11-06 02:10:00] Received sigquit", "2025-11-06 02:10:00"},
		{"[2025-11-06T02:10:00.702Z] KeyError: 'lm_head.weight'", ""},
	} {
		if got := EngineStamp(tt.line); got != tt.want {
			t.Errorf("EngineStamp(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}
