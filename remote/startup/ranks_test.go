package startup

import (
	"fmt"
	"strings"
	"testing"
)

// The lines are copied from corpus logs (testdata/corpus, each with its
// source), one per rank-tag shape the engines print.
func TestParseRankTag(t *testing.T) {
	for _, tt := range []struct {
		line string
		id   string
		nums string // Dim=Value of each rank number, as the line prints it
	}{
		// SGLang: TP only, DP+TP, DP+TP+EP, PP+TP, attention CP, v0.3's
		// time-only stamp, v0.2's gpu_id.
		{"[2025-03-14 06:55:25 TP6] Using model weights format ['*.safetensors']", "TP6", "TP=6"},
		{"[2026-01-20 02:39:57 DP1 TP0] Init torch distributed begin.", "DP1 TP0", "DP=1 TP=0"},
		{"[2026-05-07 13:39:13 DP1 TP1 EP1] Capture cuda graph begin. This can take up to several minutes. avail mem=27.46 GB", "DP1 TP1 EP1", "DP=1 TP=1 EP=1"},
		{"[2025-11-11 20:29:20 PP0 TP1] sglang is using nccl==2.27.3", "PP0 TP1", "PP=0 TP=1"},
		{"[2026-07-18 03:03:06 ATTN_CP1 TP1] Allocating 120.00 GB host memory for hierarchical KV cache.", "ATTN_CP1 TP1", "ATTN_CP=1 TP=1"},
		{"[23:17:08 TP4] Exception in run_tp_server:", "TP4", "TP=4"},
		{"[gpu_id=1] Memory pool end. avail mem=6.46 GB", "gpu_id=1", "gpu_id==1"},
		// vLLM: V1 workers, V0 workers (a pid only), rank=, stacked tags
		// (the outer engine core's, then a Ray worker's with its address).
		{"(Worker_TP1 pid=112) INFO 05-21 06:33:43 [gpu_worker.py:621] CUDA graph pool memory: 0.1 GiB (actual), 0.13 GiB (estimated), difference: 0.04 GiB (35.3%).", "Worker_TP1 pid=112", "TP=1"},
		{"(Worker_TP4_EP4 pid=2532) INFO 12-29 15:21:11 [multiproc_executor.py:709] Parent process exited, terminating worker", "Worker_TP4_EP4 pid=2532", "TP=4 EP=4"},
		{"(VllmWorkerProcess pid=13105) INFO 08-19 07:51:03 model_runner.py:732] Loading model weights took 2.3463 GB", "VllmWorkerProcess pid=13105", ""},
		{"(VllmWorker rank=3 pid=2187913) INFO 06-01 22:06:31 [parallel_state.py:1004] rank 3 in world size 4 is assigned as DP rank 0, PP rank 0, TP rank 3", "VllmWorker rank=3 pid=2187913", "rank==3"},
		{"(EngineCore_DP0 pid=6183) (RayWorkerWrapper pid=1672, ip=192.168.141.7) INFO 11-24 22:55:33 [parallel_state.py:1325] rank 1 in world size 2 is assigned as DP rank 0, PP rank 1, TP rank 0, EP rank 0", "EngineCore_DP0 pid=6183 RayWorkerWrapper pid=1672, ip=192.168.141.7", "DP=0"},
		{"[1;36m(EngineCore_0 pid=21098)[0;0m INFO 08-05 09:09:28 [gpu_model_runner.py:1953] Starting to load model", "EngineCore_0 pid=21098", "=0"},
		// torch's own prefix on every line of a rank's traceback.
		{"[rank6]:[E207 01:29:36.730311765 ProcessGroupNCCL.cpp:616] [Rank 6] Watchdog caught collective operation timeout", "rank6", "rank=6"},
	} {
		tag, ok := ParseRankTag(tt.line)
		if !ok || tag.ID != tt.id {
			t.Errorf("ParseRankTag(%q) = %q, %v; want %q", tt.line, tag.ID, ok, tt.id)
			continue
		}
		var nums []string
		for _, n := range tag.Nums {
			nums = append(nums, fmt.Sprintf("%s=%d", n.Dim, n.Value))
			if got := tt.line[n.Start:n.End]; got != fmt.Sprint(n.Value) {
				t.Errorf("%q: span of %s%d holds %q", tt.line, n.Dim, n.Value, got)
			}
		}
		if got := strings.Join(nums, " "); got != tt.nums {
			t.Errorf("%q: rank numbers %q, want %q", tt.line, got, tt.nums)
		}
	}
}

// Lines the main process prints (and other prefixes that name no rank)
// are not ranked.
func TestParseRankTagNone(t *testing.T) {
	for _, line := range []string{
		"[2026-01-20 02:39:49] Launch DP0 starting at GPU #0.",
		"INFO 08-19 07:51:03 model_runner.py:732] Loading model weights took 2.3463 GB",
		"Loading safetensors checkpoint shards:  99% Completed | 161/163 [01:15<00:00,  2.24it/s]",
		"[Gloo] Rank 0 is connected to 1 peer ranks. Expected number of connected peer ranks is : 1",
		"Dec 01 04:14:03 gpu1 sh[1234]: hello",
		"deepseek-v32-exp  | Exception: Capture cuda graph failed: ",
		"",
	} {
		if tag, ok := ParseRankTag(line); ok {
			t.Errorf("ParseRankTag(%q) = %+v, want no rank", line, tag)
		}
	}
}

// Two ranks' lines are the same when they differ only in numbers; a word
// apart and they are not. Pairs from the corpus (sglang-4417, sglang-1479,
// sglang-31600, vllm-15277).
func TestSameBlanked(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		same bool
	}{
		{"[2025-03-14 06:56:42 TP1] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=35.52 GB, mem usage=40.46 GB.",
			"[2025-03-14 06:56:46 TP7] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=36.63 GB, mem usage=40.46 GB.", true},
		{"[2025-03-14 06:56:46 TP0] Memory pool end. avail mem=16.08 GB",
			"[2025-03-14 06:56:42 TP0] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=35.52 GB, mem usage=40.46 GB.", false},
		{"[2026-07-18 03:04:05 ATTN_CP1 TP1] Unsupported element_size = 656 for JIT HiCache kernel",
			"[2026-07-18 03:04:05 ATTN_CP3 TP3] Unsupported element_size = 656 for J", false},
		{"(VllmWorker rank=3 pid=2187913) INFO 06-01 22:06:31 [parallel_state.py:1004] rank 3 in world size 4 is assigned as DP rank 0, PP rank 0, TP rank 3",
			"(VllmWorker rank=2 pid=2187854) INFO 06-01 22:06:31 [parallel_state.py:1004] rank 2 in world size 4 is assigned as DP rank 0, PP rank 0, TP rank 2", true},
		// A hex number is one number: ids that differ in their letters.
		{"node01:322:322 [3] NCCL INFO comm 0x55f5be32f460 rank 3", "node01:323:323 [4] NCCL INFO comm 0x7f00aa12c0 rank 4", true},
		// Tags of another shape are another process's.
		{"(Worker_TP0 pid=111) INFO 05-21 06:33:43 [gpu_worker.py:621] x", "(EngineCore_DP0 pid=111) INFO 05-21 06:33:43 [gpu_worker.py:621] x", false},
	} {
		if got := SameBlanked(tt.a, tt.b); got != tt.same {
			t.Errorf("SameBlanked(%q, %q) = %v", tt.a, tt.b, got)
		}
		if tt.same && BlankedHash(tt.a) != BlankedHash(tt.b) {
			t.Errorf("same lines, different hashes: %q, %q", tt.a, tt.b)
		}
	}
}

func FuzzParseRankTag(f *testing.F) {
	f.Add("[2026-05-07 13:39:13 DP1 TP1 EP1] Capture cuda graph begin.")
	f.Add("(EngineCore_DP0 pid=6183) (RayWorkerWrapper pid=1672, ip=192.168.141.7) INFO x")
	f.Add("(VllmWorker rank=3 pid=2187913) INFO 06-01 22:06:31 [p.py:1] y")
	f.Add("[rank6]:[E207 01:29:36.730311765 P.cpp:616] z")
	f.Fuzz(func(t *testing.T, s string) {
		tag, ok := ParseRankTag(s)
		if ok != (tag.ID != "") {
			t.Fatalf("ok %v with ID %q", ok, tag.ID)
		}
		at := 0
		for _, n := range tag.Nums {
			if n.Start < at || n.End > len(s) || n.Start >= n.End {
				t.Fatalf("rank number span %d-%d out of order in %q", n.Start, n.End, s)
			}
			at = n.End
		}
		if !SameBlanked(s, s) {
			t.Fatalf("%q is not the same as itself", s)
		}
	})
}
