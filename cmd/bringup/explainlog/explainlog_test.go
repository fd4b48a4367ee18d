package explainlog

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/cmd/bringup/output"
)

func corpus(name string) string {
	return filepath.Join("..", "..", "..", "remote", "startup", "testdata", "corpus", name)
}

// TestExplainDeployment: two real multi-node logs of the corpus given
// as one deployment's nodes: the node whose log failed (a TCPStore
// timeout) is blamed whichever order the files come in, the other lost
// its peer; text and JSON agree, and the JSON holds to the schema.
func TestExplainDeployment(t *testing.T) {
	running := corpus("sglang-4417-mtp-multinode-weights-pool-cut.log")
	failed := corpus("sglang-7478-multinode-ipv6-store-timeout.log")
	for _, tt := range []struct {
		name  string
		files []string
		rank  int
	}{
		{"failed node second", []string{running, failed}, 1},
		{"failed node first", []string{failed, running}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := append([]string{"--deployment", "r1"}, tt.files...)
			code := Command(context.Background(), Streams{Out: &out, Err: &errOut}, args)
			if code != Failed || errOut.Len() > 0 {
				t.Fatalf("exit %d, stderr %q", code, errOut.String())
			}
			text := out.String()
			for _, want := range []string{"deployment r1 (declared, 2 nodes): FAILED: node", "failed first: torch.distributed could not connect the ranks", "[dist-init-failed]", "peer lost (node"} {
				if !strings.Contains(text, want) {
					t.Errorf("text lacks %q:\n%s", want, text)
				}
			}
			out.Reset()
			if code := Command(context.Background(), Streams{Out: &out, Err: &errOut}, append([]string{"--json"}, args...)); code != Failed {
				t.Fatalf("--json: exit %d", code)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			for _, l := range lines {
				if err := output.ValidateLine([]byte(l)); err != nil {
					t.Errorf("%s: %v", l, err)
				}
			}
			var sum output.Line
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
				t.Fatal(err)
			}
			if len(sum.Deployments) != 1 || sum.Deployments[0].Blamed != failed || *sum.Deployments[0].BlamedRank != tt.rank || sum.Deployments[0].Cause != "dist-init-failed" || len(sum.Hosts) != 2 {
				t.Errorf("summary %s", lines[len(lines)-1])
			}
		})
	}
}

// TestSplitMergedJournal: a journal of two hosts merged by time (lines
// of infersim's node 0 and node 1, as journalctl -o short prints them)
// is two logs, each with its own role from its server_args line, one
// deployment inferred; the same hosts' lines one after the other stay
// one unit's log.
func TestSplitMergedJournal(t *testing.T) {
	const (
		args0 = "server_args=ServerArgs(model_path='m', dist_init_addr='10.0.0.1:5000', nnodes=2, node_rank=0, enable_lora=None)"
		args1 = "server_args=ServerArgs(model_path='m', dist_init_addr='10.0.0.1:5000', nnodes=2, node_rank=1, enable_lora=None)"
	)
	merged := strings.Join([]string{
		"Dec 01 10:00:00 n0 python3[10]: [2026-12-01 10:00:00] " + args0,
		"Dec 01 10:00:01 n1 python3[20]: [2026-12-01 10:00:01] " + args1,
		"Dec 01 10:00:02 n0 python3[10]: [2026-12-01 10:00:02 TP0] Init torch distributed begin.",
		"Dec 01 10:00:03 n1 python3[20]: [2026-12-01 10:00:03 TP0] Init torch distributed begin.",
	}, "\n") + "\n"
	nodes, err := readLog(strings.NewReader(merged), "-", defaultOptions(), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 2 || nodes[0].Name != "n0" || nodes[1].Name != "n1" || !nodes[1].HasRole || nodes[1].Role.Rank != 1 {
		t.Fatalf("nodes %+v", nodes)
	}
	deps := Deployments(nodes, "")
	if len(deps) != 1 || deps[0].Name != "10.0.0.1:5000" || strings.Join(deps[0].Hosts(), ",") != "n0,n1" {
		t.Errorf("deployments %+v", deps)
	}
	lines := strings.Split(strings.TrimSpace(merged), "\n")
	sequential := strings.Join([]string{lines[0], lines[2], lines[1], lines[3]}, "\n") + "\n"
	if nodes, err := readLog(strings.NewReader(sequential), "-", defaultOptions(), false); err != nil || len(nodes) != 1 || nodes[0].Name != "stdin" {
		t.Errorf("sequential: %d nodes, %v", len(nodes), err)
	}
}
