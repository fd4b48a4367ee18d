package startup

import (
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/event"
)

// timedLine is a log line at an offset from the log's start.
type timedLine struct {
	at   time.Duration
	line string
}

// explainTimed folds timed lines through Explain, as bringup explain does.
func explainTimed(engine string, lines []timedLine) Explanation {
	evs := make([]event.Event, 0, len(lines))
	for _, l := range lines {
		evs = append(evs, event.Event{Kind: event.KindJournal, Host: "gpu1", Time: t0.Add(l.at),
			Journal: &event.Journal{Unit: "svc", InvocationID: "inv-1", Priority: 6, Message: l.line}})
	}
	return Explain(evs, Options{Engine: engine, Kernels: kernels.DefaultCatalog()})
}

// TestExplainNewestStrings: logs made only of the newest releases' strings
// (vLLM Model Runner V2 without a shard bar, spec-decode capture; SGLang's
// NPU and XPU capture lines and post-capture KV sizing) put each phase's
// time in its phase.
func TestExplainNewestStrings(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name   string
		engine string
		lines  []timedLine
		want   map[Phase]time.Duration
	}{
		{
			name: "vllm V2 weights without shard bar, spec-decode capture", engine: "vllm",
			lines: []timedLine{
				{0, "(APIServer pid=1) INFO 09-11 23:46:30 [api_utils.py:325] vLLM server version 0.27.1, serving model Qwen/Qwen3-8B"},
				{1 * s, "(EngineCore pid=2) INFO 09-11 23:46:31 [core.py:123] Initializing a V1 LLM engine (v0.27.1) with config: model='Qwen/Qwen3-8B'"},
				{2 * s, "(EngineCore pid=2) INFO 09-11 23:46:32 [gpu_worker.py:386] Using V2 Model Runner"},
				{3 * s, "(EngineCore pid=2) INFO 09-11 23:46:33 [model_runner.py:353] Loading model from scratch..."},
				{21 * s, "(EngineCore pid=2) INFO 09-11 23:46:51 [default_loader.py:431] Loading weights took 17.50 seconds"},
				{22 * s, "(EngineCore pid=2) INFO 09-11 23:46:52 [model_runner.py:375] Model loading took 15.3 GiB and 19.010000 seconds"},
				{30 * s, "(EngineCore pid=2) INFO 09-11 23:47:00 [gpu_worker.py:565] Available KV cache memory: 50.1 GiB"},
				{32 * s, "Capturing CUDA graphs (FULL): 100%|██████████| 67/67 [00:03<00:00, 19.06it/s]"},
				{40 * s, "Capturing prefill CUDA graphs (FULL): 100%|██████████| 67/67 [00:08<00:00, 8.00it/s]"},
				{42 * s, "(EngineCore pid=2) INFO 09-11 23:47:12 [model_runner.py:888] Graph capturing finished in 12 secs, took 1.20 GiB"},
				{43 * s, "(EngineCore pid=2) INFO 09-11 23:47:13 [core.py:336] init engine (profile, create kv cache, warmup model) took 25.00 seconds"},
				{45 * s, "(APIServer pid=1) INFO 09-11 23:47:15 [launcher.py:51] Available routes are:"},
				{46 * s, "(APIServer pid=1) INFO:     Application startup complete."},
			},
			// Weights from "Loading model from scratch" to "Model loading
			// took": 19 s, not counted as init.
			want: map[Phase]time.Duration{Init: 3 * s, Weights: 19 * s, KVCache: 10 * s, GraphCapture: 11 * s, HTTP: 3 * s},
		},
		{
			name: "sglang NPU capture and post-capture KV sizing", engine: "sglang",
			lines: []timedLine{
				{0, "[2026-09-11 23:46:30] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', device='npu')"},
				{2 * s, "[2026-09-11 23:46:32 TP0] Load weight begin. avail mem=60.00 GB"},
				{20 * s, "[2026-09-11 23:46:50 TP0] Load weight end. elapsed=18.00 s, type=Qwen3ForCausalLM, avail mem=44.00 GB, mem usage=16.00 GB."},
				{22 * s, "[2026-09-11 23:46:52 TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 400000, K size: 15.00 GB, V size: 15.00 GB"},
				{23 * s, "[2026-09-11 23:46:53 TP0] Memory pool end. avail mem=12.00 GB"},
				{24 * s, "[2026-09-11 23:46:54 TP0] Capture target decode NPU graph begin. backend=full, num_tokens_per_req=1, bs=[1, 2, 4, 8], avail mem=12.00 GB"},
				{47 * s, "[2026-09-11 23:47:17 TP0] Capture target decode NPU graph end. elapsed=23.00 s, mem usage=1.00 GB, avail mem=11.00 GB."},
				{48 * s, "[2026-09-11 23:47:18 TP0] Post-capture KV sizing: max_total_num_tokens=400000, free memory=11.00 GB"},
				{49 * s, "[2026-09-11 23:47:19 TP0] max_total_num_tokens=400000, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=256, context_len=40960"},
				{51 * s, "[2026-09-11 23:47:21] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)"},
				{53 * s, "[2026-09-11 23:47:23] The server is fired up and ready to roll!"},
			},
			want: map[Phase]time.Duration{Init: 2 * s, Weights: 18 * s, KVCache: 4 * s, GraphCapture: 25 * s},
		},
		{
			name: "sglang XPU capture", engine: "sglang",
			lines: []timedLine{
				{0, "[2026-09-11 23:46:30] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', device='xpu')"},
				{1 * s, "[2026-09-11 23:46:31 TP0] Load weight begin. avail mem=60.00 GB"},
				{11 * s, "[2026-09-11 23:46:41 TP0] Load weight end. elapsed=10.00 s, type=Qwen3ForCausalLM, avail mem=44.00 GB, mem usage=16.00 GB."},
				{13 * s, "[2026-09-11 23:46:43 TP0] Memory pool end. avail mem=12.00 GB"},
				{14 * s, "[2026-09-11 23:46:44 TP0] Capture target decode XPU graph begin. backend=full, num_tokens_per_req=1, bs=[1, 2, 4, 8], avail mem=12.00 GB"},
				{37 * s, "[2026-09-11 23:47:07 TP0] Capture target decode XPU graph end. elapsed=23.00 s, mem usage=1.00 GB, avail mem=11.00 GB."},
				{38 * s, "[2026-09-11 23:47:08 TP0] max_total_num_tokens=400000, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=256, context_len=40960"},
				{40 * s, "[2026-09-11 23:47:10] The server is fired up and ready to roll!"},
			},
			want: map[Phase]time.Duration{Init: 1 * s, Weights: 10 * s, KVCache: 3 * s, GraphCapture: 24 * s},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := explainTimed(tt.engine, tt.lines)
			got := map[Phase]time.Duration{}
			for _, sp := range x.Startup.Spans {
				if sp.Inferred {
					t.Errorf("%s span inferred: its begin line was not matched", sp.Phase)
				}
				got[sp.Phase] += sp.Duration(sp.End)
			}
			for ph, want := range tt.want {
				if got[ph] != want {
					t.Errorf("%s: %v, want %v (spans %+v)", ph, got[ph], want, x.Startup.Spans)
				}
			}
			if x.Outcome != OutcomeServed && x.Startup.Phase.Rank() < HTTP.Rank() {
				t.Errorf("outcome %s, phase %s: the log reached the server", x.Outcome, x.Startup.Phase)
			}
		})
	}
}

// TestEngineVersion: the lines in which an engine states its release.
func TestEngineVersion(t *testing.T) {
	tests := []struct{ line, want string }{
		{"(APIServer pid=1) INFO 09-11 23:46:30 [api_utils.py:325] vLLM server version 0.27.1, serving model Qwen/Qwen3-8B", "0.27.1"},
		{"INFO 07-10 12:00:00 [api_server.py:1457] vLLM API server version 0.9.2", "0.9.2"},
		{"INFO 07-10 12:00:00 [api_server.py:1457] vLLM API server version 0.9.2.dev209+g2dd24ebe1", "0.9.2.dev209+g2dd24ebe1"},
		{" ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.27.1", "0.27.1"},
		{"INFO 05-20 10:00:00 llm_engine.py:161] Initializing an LLM engine (v0.4.0.post1) with config: model='m'", "0.4.0.post1"},
		{"INFO 02-01 10:00:00 [core.py:54] Initializing a V1 LLM engine (v0.7.2) with config: model='m'", "0.7.2"},
		{"sglang: 0.4.10.post2", "0.4.10.post2"},
		{"docker run --gpus all lmsysorg/sglang:v0.5.6-rocm700-mi35x python3 -m sglang.launch_server", "0.5.6"},
		{"[2026-09-11 23:46:30] server_args=ServerArgs(model_path='Qwen/Qwen3-8B')", ""},
		{"INFO 09-11 23:46:33 [model_runner.py:353] Loading model from scratch...", ""},
	}
	for _, tt := range tests {
		if got := EngineVersion(tt.line); got != tt.want {
			t.Errorf("EngineVersion(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
	x := explainTimed("vllm", []timedLine{
		{0, "(APIServer pid=1) INFO 09-11 23:46:30 [api_utils.py:325] vLLM server version 0.27.1, serving model Qwen/Qwen3-8B"},
		{time.Second, "(EngineCore pid=2) INFO 09-11 23:46:31 [core.py:123] Initializing a V1 LLM engine (v0.26.0) with config: model='m'"},
	})
	if x.Startup.EngineVersion != "0.27.1" {
		t.Errorf("Explain's engine version = %q, want the first stated, 0.27.1", x.Startup.EngineVersion)
	}
}

// TestEngineVersionPerRun: the tracker's engine version is the current
// run's first stated one; a run that states none keeps the last earlier
// run's (a restart after an upgrade states the new release).
func TestEngineVersionPerRun(t *testing.T) {
	at := time.Date(2026, 9, 11, 23, 46, 30, 0, time.UTC)
	tr := NewTracker(Options{Engine: "vllm"})
	for i, l := range []struct{ inv, msg, want string }{
		{"run1", "(APIServer pid=1) INFO 09-11 23:46:30 [api_utils.py:325] vLLM server version 0.26.0, serving model Qwen/Qwen3-8B", "0.26.0"},
		{"run1", "(EngineCore pid=2) INFO 09-11 23:46:31 [core.py:123] Initializing a V1 LLM engine (v0.27.1) with config: model='m'", "0.26.0"},
		{"run2", "(APIServer pid=1) INFO 09-11 23:50:30 [api_utils.py:325] vLLM server version 0.27.1, serving model Qwen/Qwen3-8B", "0.27.1"},
		{"run3", "(APIServer pid=1) INFO 09-11 23:55:30 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000", "0.27.1"},
	} {
		tr.Apply(event.Event{Kind: event.KindJournal, Time: at.Add(time.Duration(i) * time.Minute),
			Journal: &event.Journal{Message: l.msg, InvocationID: l.inv, PID: 100 + i}})
		if got := tr.State().EngineVersion; got != l.want {
			t.Errorf("after line %d (%s): engine version %q, want %q", i+1, l.inv, got, l.want)
		}
	}
}
