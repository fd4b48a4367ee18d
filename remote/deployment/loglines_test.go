package deployment

import (
	"slices"
	"testing"
)

func TestFromLogLine(t *testing.T) {
	// The server_args line as SGLang 0.5 prints it (the test kit's
	// stand-in prints the same fields in the same order).
	const serverArgs = `[2025-08-06 10:01:02] server_args=ServerArgs(model_path='deepseek-ai/DeepSeek-V3', tokenizer_path='deepseek-ai/DeepSeek-V3', tp_size=16, dp_size=1, load_balance_method='round_robin', dist_init_addr='10.0.0.1:5000', nnodes=2, node_rank=1, json_model_override_args='{}', enable_lora=None)`
	tests := []struct {
		name string
		line string
		want Role
		ok   bool
	}{
		{"server args, node 1", serverArgs, Role{Kind: KindSGLang, Rendezvous: "10.0.0.1:5000", Nodes: 2, Rank: 1, RankKnown: true}, true},
		{"server args, one node", `server_args=ServerArgs(model_path='m', dist_init_addr=None, nnodes=1, node_rank=0)`, Role{}, false},
		{"server args of an older release", `server_args=ServerArgs(model_path='m', nccl_init_addr='h:20000', nnodes=2, node_rank=0)`, Role{Kind: KindSGLang, Rendezvous: "h:20000", Nodes: 2, Rank: 0, RankKnown: true}, true},
		{"server args without the address", `server_args=ServerArgs(model_path='m', dist_init_addr=None, nnodes=2, node_rank=1)`, Role{}, false},
		{"a command line", `$ python3 -m sglang.launch_server --tp 16 --dist-init-addr 10.0.0.1:5000 --nnodes 2 --node-rank 0`, Role{Kind: KindSGLang, Rendezvous: "10.0.0.1:5000", Nodes: 2, Rank: 0, RankKnown: true}, true},
		{"a Ray worker", `ray start --address=10.0.0.1:6379 --block`, Role{Kind: KindRay, Rendezvous: "10.0.0.1:6379"}, true},
		{"an ordinary line", `[2025-08-06 10:01:05 TP0] Init torch distributed begin.`, Role{}, false},
		{"a line naming the flag only", `Try --nnodes with a larger value`, Role{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := FromLogLine(tt.line)
			if ok != tt.ok || got != tt.want {
				t.Errorf("FromLogLine = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestNamed(t *testing.T) {
	sg := func(rank int) Role {
		return Role{Kind: KindSGLang, Rendezvous: "h:1", Nodes: 2, Rank: rank, RankKnown: true}
	}
	tests := []struct {
		name     string
		members  []Member
		hosts    []string
		kind     string
		problems int
	}{
		{"the logs' ranks win over the order given", []Member{{Host: "b.log", Role: sg(1)}, {Host: "a.log", Role: sg(0)}}, []string{"a.log", "b.log"}, KindSGLang, 0},
		{"no roles: the order given", []Member{{Host: "z.log"}, {Host: "a.log"}}, []string{"z.log", "a.log"}, KindDeclared, 0},
		{"a rank given twice", []Member{{Host: "x", Role: sg(0)}, {Host: "y", Role: sg(0)}}, []string{"x", "y"}, KindSGLang, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Named("dep", tt.members)
			if d.Name != "dep" || d.Kind != tt.kind || len(d.Problems) != tt.problems || !slices.Equal(d.Hosts(), tt.hosts) {
				t.Errorf("Named = %+v; want hosts %v, kind %s, %d problems", d, tt.hosts, tt.kind, tt.problems)
			}
		})
	}
}
