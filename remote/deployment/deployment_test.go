package deployment

import (
	"reflect"
	"testing"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
)

// Real command lines, each from the public page its comment names.
const (
	// https://github.com/sgl-project/sglang/pull/550 (SGLang's first
	// multi-node release: --nccl-init-addr, the old name of
	// --dist-init-addr).
	sglang550Rank0 = `GLOO_SOCKET_IFNAME=eth0 python3 -m sglang.launch_server --model-path meta-llama/Meta-Llama-3-70B-Instruct --tp 16 --nccl-init-addr 172.16.5.82:20000 --nnodes 2 --node-rank 0`
	sglang550Rank1 = `GLOO_SOCKET_IFNAME=eth0 python3 -m sglang.launch_server --model-path meta-llama/Meta-Llama-3-70B-Instruct --tp 16 --nccl-init-addr 172.16.5.82:20000 --nnodes 2 --node-rank 1`

	// https://github.com/sgl-project/sglang/issues/2591 (four nodes of
	// DeepSeek V3; only node 1 sets --host and --port).
	sglang2591Node1 = `python3 -m sglang.launch_server --model-path /models/dsv3 --tp 14 --dist-init-addr 10.21.99.116:5000 --nnodes 4 --node-rank 0 --trust-remote-code --enable-torch-compile --host 0.0.0.0 --port 30000 --grammar-backend xgrammar`
	sglang2591Node2 = `python3 -m sglang.launch_server --model-path /models/dsv3 --tp 14 --dist-init-addr 10.21.99.116:5000 --nnodes 4 --node-rank 1 --trust-remote-code --enable-torch-compile --grammar-backend xgrammar`
	sglang2591Node3 = `python3 -m sglang.launch_server --model-path /models/dsv3 --tp 14 --dist-init-addr 10.21.99.116:5000 --nnodes 4 --node-rank 2 --trust-remote-code --enable-torch-compile --grammar-backend xgrammar`
	sglang2591Node4 = `python3 -m sglang.launch_server --model-path /models/dsv3 --tp 14 --dist-init-addr 10.21.99.116:5000 --nnodes 4 --node-rank 3 --trust-remote-code --enable-torch-compile --grammar-backend xgrammar`

	// https://github.com/sgl-project/sglang/pull/5190 (--node-rank last,
	// after the rendezvous).
	sglang5190Rank0 = `python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3-0324 --trust-remote-code --tp 16 --dp 16 --enable-dp-attention --enable-deepep-moe --deepep-mode normal --disable-cuda-graph --enable-flashmla --disable-radix-cache --decode-log-interval 1 --host 0.0.0.0 --port 20000 --nnodes 2 --dist-init-addr 10.10.38.10:23456 --chunked-prefill-size 16384 --node-rank 0`

	// https://github.com/sgl-project/sglang/issues/3206 (under
	// singularity's bash -c, in double quotes, with line continuations).
	sglang3206Rank1 = `singularity exec --env http_proxy=$HTTP_PROXY --env https_proxy=$HTTPS_PROXY --nv --bind $MOUNT $IMAGE_NAME bash -c "export OUTLINES_CACHE_DIR=/ocache/${SLURM_JOB_ID}_1 && \
                export HF_HOME=/hf_cache \
                export HF_TOKEN=$HF_TOKEN && \
                python3 -m sglang.launch_server \
                --model-path meta-llama/Llama-3.1-70B \
                --tp 16 \
                --dist-init-addr $(hostname):5000 \
                --nnodes 2 \
                --node-rank 1 \
                --trust-remote-code \
                --host 0.0.0.0 \
                --port 40000 \`

	// https://github.com/devopsrustem/slurmv4/blob/main/3/4.sh (a
	// prefill pair of a disaggregated DeepSeek R1, environment first).
	slurmv4Rank1 = `NCCL_SOCKET_IFNAME=bond0 NCCL_DEBUG=WARN NCCL_IB_DISABLE=0 NCCL_NET_GDR_LEVEL=PIX NCCL_IB_GID_INDEX=3 NCCL_IB_TC=106 NCCL_NVLS_ENABLE=1 NCCL_IB_HCA=mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11 NCCL_CROSS_NIC=1 CUDA_DEVICE_MAX_CONNECTIONS=1 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,max_split_size_mb:256 TOKENIZERS_PARALLELISM=false /opt/mooncake-libs/run-with-new-libstdc.sh /app/sglang/sglang-latest/bin/python3 -m sglang.launch_server --model-path /app/models/Deepseek-R1/ --trust-remote-code --tp-size 16 --host 10.99.91.41 --port 30000 --dist-init-addr 10.82.101.193:5000 --nnodes 2 --node-rank 1 --mem-fraction-static 0.8 --disaggregation-mode prefill --disaggregation-ib-device mlx5_0 --disaggregation-bootstrap-port 8998`

	// https://github.com/sgl-project/sglang/blob/main/ms_example/start_server.sh
	// (the head at loopback, commented out there: its peers must name
	// the head's real address).
	sglangLoopbackHead = `python3 -m sglang.launch_server --model-path /home/ckpt/Qwen3-8B --host 0.0.0.0 --port 37654 --device npu --dist-init-addr 127.0.0.1:29500 --nnodes 2 --node-rank 0`

	// https://github.com/vllm-project/vllm/pull/15977 (vLLM's multi-node
	// data parallel: DP ranks 0-1 on the head, 2-3 headless).
	vllmDPHead     = `vllm serve $MODEL --data-parallel-size 4 --data-parallel-size-local 2 --data-parallel-address 10.99.48.128 --data-parallel-rpc-port 13345`
	vllmDPHeadless = `vllm serve $MODEL --headless --data-parallel-size-local 2 --data-parallel-start-rank 2 --data-parallel-address 10.99.48.128 --data-parallel-rpc-port 13345`

	// https://github.com/getainode/ainode/pull/85 (vLLM's own
	// --nnodes/--master-addr, no Ray).
	vllmMasterRank1 = `... --nnodes 2 --node-rank 1 --master-addr 10.100.0.11 --master-port 29501 --headless`

	// https://github.com/vllm-project/vllm/issues/13521 (a Ray head and
	// worker, the head's address named).
	rayHead13521   = `RAY_num_heartbeats_timeout=600 ray start --head --node-ip-address HEAD-IP --port 6379 --ray-client-server-port 10001 --object-manager-port=8076 --node-manager-port=8077`
	rayWorker13521 = `ray start --object-manager-port=8076 --address='HEAD-IP:6379' --node-manager-port=8077`

	// https://github.com/amd/playbooks/pull/395 (--flag=value).
	rayHead395 = `ray start --head --port=6379 --node-ip-address=<MACHINE_1_IP> --num-gpus=1`

	// https://github.com/vllm-project/vllm-metal/issues/39 (a worker
	// whose head is known by a variable's value).
	rayWorkerMetal = `ray start --address="$HEAD_IP:6379" --num-gpus=$TOT_GPU --object-store-memory=5368709120 --resources='{"Node3": 1, "2xM2UltraCluster": 1, "type_worker": 1}' --disable-usage-stats`

	// https://github.com/LTH14/rcg/issues/39 (a training launcher: a
	// node rank but no inference rendezvous).
	trainingLauncher = `python -m torch.distributed.launch --nproc_per_node=8 --nnodes=8 --node_rank=0 main_ldm.py --config config/ldm/cin-ldm-vq-f8-repcond.yaml --batch_size 4 --epochs 40 --blr 2.5e-7 --weight_decay 0.01 --output_dir ${OUTPUT_DIR} --data_path ${IMAGENET_DIR} --dist_url tcp://${MASTER_SERVER_ADDRESS}:2214`

	// https://github.com/sgl-project/sglang/pull/3314 (one node).
	sglangOneNode = `python3 -m sglang.launch_server --model deepseek-ai/DeepSeek-R1 --tp 8 --trust-remote-code`
)

func TestParse(t *testing.T) {
	cases := []struct {
		name string
		line string
		want Role
		ok   bool
	}{
		{"sglang nccl-init-addr rank 0", sglang550Rank0, Role{Kind: KindSGLang, Rendezvous: "172.16.5.82:20000", Nodes: 2, Rank: 0, RankKnown: true}, true},
		{"sglang nccl-init-addr rank 1", sglang550Rank1, Role{Kind: KindSGLang, Rendezvous: "172.16.5.82:20000", Nodes: 2, Rank: 1, RankKnown: true}, true},
		{"sglang four nodes, rank 3", sglang2591Node4, Role{Kind: KindSGLang, Rendezvous: "10.21.99.116:5000", Nodes: 4, Rank: 3, RankKnown: true}, true},
		{"sglang rank after the address", sglang5190Rank0, Role{Kind: KindSGLang, Rendezvous: "10.10.38.10:23456", Nodes: 2, Rank: 0, RankKnown: true}, true},
		{"sglang under bash -c with continuations", sglang3206Rank1, Role{Kind: KindSGLang, Rendezvous: "$(hostname):5000", Nodes: 2, Rank: 1, RankKnown: true}, true},
		{"sglang behind a wrapper and environment", slurmv4Rank1, Role{Kind: KindSGLang, Rendezvous: "10.82.101.193:5000", Nodes: 2, Rank: 1, RankKnown: true}, true},
		{"vllm dp head", vllmDPHead, Role{Kind: KindVLLMDP, Rendezvous: "10.99.48.128:13345", Nodes: 2, Rank: 0, RankKnown: true}, true},
		{"vllm dp headless from start rank 2", vllmDPHeadless, Role{Kind: KindVLLMDP, Rendezvous: "10.99.48.128:13345", Rank: 1, RankKnown: true}, true},
		{"vllm master-addr", vllmMasterRank1, Role{Kind: KindVLLM, Rendezvous: "10.100.0.11:29501", Nodes: 2, Rank: 1, RankKnown: true}, true},
		{"ray head", rayHead13521, Role{Kind: KindRay, Rendezvous: "HEAD-IP:6379", Rank: 0, RankKnown: true}, true},
		{"ray head flag=value", rayHead395, Role{Kind: KindRay, Rendezvous: "<MACHINE_1_IP>:6379", Rank: 0, RankKnown: true}, true},
		{"ray worker", rayWorker13521, Role{Kind: KindRay, Rendezvous: "HEAD-IP:6379"}, true},
		{"ray worker in double quotes", rayWorkerMetal, Role{Kind: KindRay, Rendezvous: "$HEAD_IP:6379"}, true},
		{"a training launcher is none", trainingLauncher, Role{}, false},
		{"one node is none", sglangOneNode, Role{}, false},
		{"--nnodes 1 is none", `python3 -m sglang.launch_server --nnodes 1 --dist-init-addr 10.0.0.1:5000`, Role{}, false},
		{"a rank past nnodes is none", `python3 -m sglang.launch_server --nnodes 2 --node-rank 2 --dist-init-addr 10.0.0.1:5000`, Role{}, false},
		{"empty", "", Role{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := Parse(c.line)
			if ok != c.ok || got != c.want {
				t.Errorf("Parse = %+v, %v; want %+v, %v", got, ok, c.want, c.ok)
			}
		})
	}
}

// TestParseEqualsForm: argparse takes --flag=value as well as --flag
// value, and _ for - in long names.
func TestParseEqualsForm(t *testing.T) {
	spaced, _ := Parse(sglang550Rank1)
	for _, line := range []string{
		`python3 -m sglang.launch_server --tp 16 --nccl-init-addr=172.16.5.82:20000 --nnodes=2 --node-rank=1`,
		`python3 -m sglang.launch_server --tp 16 --nccl_init_addr 172.16.5.82:20000 --nnodes=2 --node_rank=1`,
	} {
		if got, ok := Parse(line); !ok || got != spaced {
			t.Errorf("Parse(%q) = %+v, %v; want %+v as the spaced form", line, got, ok, spaced)
		}
	}
}

func TestInfer(t *testing.T) {
	cases := []struct {
		name  string
		units []Unit
		want  []Deployment
	}{
		{
			name: "two sglang pairs and a single node, heads named by their rendezvous",
			units: []Unit{
				{Host: "gpu1", ExecStart: sglang550Rank1},
				{Host: "gpu0", ExecStart: sglang550Rank0},
				{Host: "solo", ExecStart: sglangOneNode},
				{Host: "gpu4", ExecStart: slurmv4Rank1},
				{Host: "gpu3", ExecStart: `/app/sglang/sglang-latest/bin/python3 -m sglang.launch_server --model-path /app/models/Deepseek-R1/ --trust-remote-code --tp-size 16 --host 10.99.91.39 --port 30000 --dist-init-addr 10.82.101.193:5000 --nnodes 2 --node-rank 0`},
			},
			want: []Deployment{
				{Name: "172.16.5.82:20000", Kind: KindSGLang, Rendezvous: "172.16.5.82:20000", Size: 2, Nodes: []Node{{"gpu0", 0}, {"gpu1", 1}}},
				{Name: "10.82.101.193:5000", Kind: KindSGLang, Rendezvous: "10.82.101.193:5000", Size: 2, Nodes: []Node{{"gpu3", 0}, {"gpu4", 1}}},
			},
		},
		{
			name: "four nodes, two watched",
			units: []Unit{
				{Host: "n1", ExecStart: sglang2591Node1},
				{Host: "n3", ExecStart: sglang2591Node3},
			},
			want: []Deployment{{Name: "10.21.99.116:5000", Kind: KindSGLang, Rendezvous: "10.21.99.116:5000", Size: 4,
				Nodes: []Node{{"n1", 0}, {"n3", 2}}, Problems: []string{"2 of 4 nodes watched"}}},
		},
		{
			name: "rank given twice",
			units: []Unit{
				{Host: "a", ExecStart: sglang2591Node1},
				{Host: "b", ExecStart: sglang2591Node2},
				{Host: "c", ExecStart: sglang2591Node2},
				{Host: "d", ExecStart: sglang2591Node4},
			},
			want: []Deployment{{Name: "10.21.99.116:5000", Kind: KindSGLang, Rendezvous: "10.21.99.116:5000", Size: 4,
				Nodes:    []Node{{"a", 0}, {"b", 1}, {"d", 3}, {"c", 4}},
				Problems: []string{"b and c both say node rank 1"}}},
		},
		{
			name: "a loopback head is known by its own address",
			units: []Unit{
				{Host: "worker", ExecStart: `python3 -m sglang.launch_server --dist-init-addr 10.0.0.7:29500 --nnodes 2 --node-rank 1`},
				{Host: "head", Addrs: []string{"10.0.0.7"}, ExecStart: sglangLoopbackHead},
			},
			want: []Deployment{{Name: "10.0.0.7:29500", Kind: KindSGLang, Rendezvous: "10.0.0.7:29500", Size: 2, Nodes: []Node{{"head", 0}, {"worker", 1}}}},
		},
		{
			name:  "vllm data parallel over two nodes",
			units: []Unit{{Host: "b", ExecStart: vllmDPHeadless}, {Host: "a", ExecStart: vllmDPHead}},
			want: []Deployment{{Name: "10.99.48.128:13345", Kind: KindVLLMDP, Rendezvous: "10.99.48.128:13345", Size: 2,
				Nodes: []Node{{"a", 0}, {"b", 1}}}},
		},
		{
			name: "ray head without an address, workers by its host name",
			units: []Unit{
				{Host: "w2", ExecStart: `ray start --address=head-node:6379 --block`},
				{Host: "w1", ExecStart: `ray start --address='head-node:6379' --block`},
				{Host: "h", Addrs: []string{"head-node", "10.1.1.1"}, ExecStart: `ray start --head --block`},
			},
			want: []Deployment{{Name: "head-node:6379", Kind: KindRay, Rendezvous: "head-node:6379",
				Nodes: []Node{{"h", 0}, {"w1", 1}, {"w2", 2}}}},
		},
		{
			name:  "ray head and worker that name it",
			units: []Unit{{Host: "head", ExecStart: rayHead13521}, {Host: "worker", ExecStart: rayWorker13521}},
			want: []Deployment{{Name: "HEAD-IP:6379", Kind: KindRay, Rendezvous: "HEAD-IP:6379",
				Nodes: []Node{{"head", 0}, {"worker", 1}}}},
		},
		{
			name:  "a lone ray worker is no deployment",
			units: []Unit{{Host: "w", ExecStart: rayWorker13521}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Infer(c.units); !reflect.DeepEqual(got, c.want) {
				t.Errorf("Infer =\n%+v\nwant\n%+v", got, c.want)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	inferred := Infer([]Unit{
		{Host: "gpu0", ExecStart: sglang550Rank0}, {Host: "gpu1", ExecStart: sglang550Rank1},
		{Host: "a", ExecStart: vllmDPHead}, {Host: "b", ExecStart: vllmDPHeadless},
	})
	cases := []struct {
		name     string
		declared []Declared
		want     []Deployment
	}{
		{
			name: "nothing declared: the inferred ones",
			want: inferred,
		},
		{
			name:     "declared in the lines' order: the config's name, the lines' rendezvous",
			declared: []Declared{{Name: "llama", Hosts: []string{"gpu0", "gpu1"}}},
			want: []Deployment{
				{Name: "llama", Kind: KindDeclared, Rendezvous: "172.16.5.82:20000", Size: 2, Nodes: []Node{{"gpu0", 0}, {"gpu1", 1}}},
				inferred[1],
			},
		},
		{
			name:     "declared against the lines: the config wins, the disagreement is said",
			declared: []Declared{{Name: "llama", Hosts: []string{"gpu1", "gpu0"}}, {Name: "half", Hosts: []string{"a"}}},
			want: []Deployment{
				{Name: "llama", Kind: KindDeclared, Rendezvous: "172.16.5.82:20000", Size: 2, Nodes: []Node{{"gpu1", 0}, {"gpu0", 1}},
					Problems: []string{"gpu0 is node 1 in the config, node-rank 0 on its command line", "gpu1 is node 0 in the config, node-rank 1 on its command line"}},
				{Name: "half", Kind: KindDeclared, Rendezvous: "10.99.48.128:13345", Size: 1, Nodes: []Node{{"a", 0}},
					Problems: []string{"b meets half at 10.99.48.128:13345 but is not declared in it"}},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Merge(c.declared, inferred); !reflect.DeepEqual(got, c.want) {
				t.Errorf("Merge =\n%+v\nwant\n%+v", got, c.want)
			}
		})
	}
}

func TestOf(t *testing.T) {
	deps := Infer([]Unit{{Host: "gpu0", ExecStart: sglang550Rank0}, {Host: "gpu1", ExecStart: sglang550Rank1}})
	d, n, ok := Of(deps, "gpu1")
	if !ok || d.Name != "172.16.5.82:20000" || n != (Node{"gpu1", 1}) {
		t.Errorf("Of(gpu1) = %v %v %v", d.Name, n, ok)
	}
	if _, _, ok := Of(deps, "solo"); ok {
		t.Error("Of(solo) found a deployment")
	}
	if got := deps[0].Hosts(); !reflect.DeepEqual(got, []string{"gpu0", "gpu1"}) {
		t.Errorf("Hosts = %v", got)
	}
}

func TestFromStates(t *testing.T) {
	hosts := []remote.HostState{
		{Name: "gpu0", UnitState: event.Unit{ExecStart: sglang550Rank0}},
		{Name: "gpu1", UnitState: event.Unit{ExecStart: sglang550Rank1}},
		{Name: "solo", UnitState: event.Unit{ExecStart: sglangOneNode}},
		{Name: "new"},
		{Name: "a"}, {Name: "b"},
	}
	// "elsewhere" holds none of the watched hosts (-H picked others): it
	// is left out rather than shown as two unknown nodes.
	got := FromStates([]Declared{{Name: "pair", Hosts: []string{"a", "b"}}, {Name: "elsewhere", Hosts: []string{"x", "y"}}}, hosts)
	want := []Deployment{
		{Name: "pair", Kind: KindDeclared, Size: 2, Nodes: []Node{{"a", 0}, {"b", 1}}},
		{Name: "172.16.5.82:20000", Kind: KindSGLang, Rendezvous: "172.16.5.82:20000", Size: 2, Nodes: []Node{{"gpu0", 0}, {"gpu1", 1}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FromStates =\n%+v\nwant\n%+v", got, want)
	}
}
