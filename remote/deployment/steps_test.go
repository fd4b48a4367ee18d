package deployment

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/remote"
)

var twoPairs = []Deployment{
	{Name: "a:5000", Nodes: []Node{{"a0", 0}, {"a1", 1}}},
	{Name: "b:5000", Nodes: []Node{{"b0", 0}, {"b1", 1}, {"b2", 2}}},
	{Name: "c:5000", Size: 2, Nodes: []Node{{"c0", 0}}},
}

// stepsText is steps as "host:action@group/stage^head" words.
func stepsText(steps []remote.Step) string {
	var out []string
	for _, s := range steps {
		w := fmt.Sprintf("%s:%s", s.Host, s.Action.Kind)
		if s.Group != "" {
			w += fmt.Sprintf("@%d", s.Stage)
		}
		if s.Head != "" {
			w += "^" + s.Head
		}
		out = append(out, w)
	}
	return strings.Join(out, " ")
}

func TestSteps(t *testing.T) {
	restart := remote.Action{Kind: remote.ActRestart}
	mode := remote.Action{Kind: remote.ActSetMode, Kernel: "k", Mode: "on"}
	bench := remote.Action{Kind: remote.ActBench, Requests: 8, Concurrency: 2}
	for _, c := range []struct {
		name    string
		hosts   []string
		actions []remote.Action
		want    string
		wantErr string
	}{
		{name: "hosts alone: their actions in order", hosts: []string{"solo", "x"}, actions: []remote.Action{mode, restart},
			want: "solo:mode solo:restart x:mode x:restart"},
		{name: "a restart stops every node, then starts them head first; the others settle through the head",
			hosts: []string{"b2", "b0", "b1"}, actions: []remote.Action{restart},
			want: "b0:stop@0 b1:stop@0 b2:stop@0 b0:restart@1 b1:restart@2^b0 b2:restart@3^b0"},
		{name: "a mode change on every node, then the restart", hosts: []string{"a0", "a1", "solo"}, actions: []remote.Action{mode, restart},
			want: "a0:mode@0 a1:mode@0 a0:stop@1 a1:stop@1 a0:restart@2 a1:restart@3^a0 solo:mode solo:restart"},
		{name: "a smoke load on the head only", hosts: []string{"a1", "a0"}, actions: []remote.Action{bench},
			want: "a0:bench@0"},
		{name: "a deployment whose command lines say more nodes than are named is refused", hosts: []string{"c0"}, actions: []remote.Action{restart},
			wantErr: "c0 is a node of deployment c:5000, which is acted on as a whole: it has 2 nodes, and only [c0] are named"},
		{name: "one node named alone is refused", hosts: []string{"a1"}, actions: []remote.Action{restart},
			wantErr: "a1 is a node of deployment a:5000, which is acted on as a whole: name [a0] too"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Steps(twoPairs, c.hosts, c.actions)
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := stepsText(got); s != c.want {
				t.Errorf("steps\n %s\nwant\n %s", s, c.want)
			}
		})
	}
}

// TestSchedule drives a deployment's restart and a host alone through a
// schedule: each step is issued only once those it waits for are done,
// and a failed stop skips the starts after it but not the other host.
func TestSchedule(t *testing.T) {
	steps, err := Steps(twoPairs, []string{"a0", "a1", "solo"}, []remote.Action{{Kind: remote.ActRestart}})
	if err != nil {
		t.Fatal(err)
	}
	names := func(is []int) string {
		var out []string
		for _, i := range is {
			out = append(out, fmt.Sprintf("%s:%s", steps[i].Host, steps[i].Action.Kind))
		}
		return strings.Join(out, " ")
	}
	index := func(host string, kind remote.ActionKind) int {
		for i, s := range steps {
			if s.Host == host && s.Action.Kind == kind {
				return i
			}
		}
		t.Fatalf("no step %s:%s", host, kind)
		return -1
	}
	type end struct {
		host string
		kind remote.ActionKind
		ok   bool
	}
	for _, c := range []struct {
		name       string
		ends       []end // in order, Next after each
		wantIssued []string
		wantSkip   string
	}{
		{name: "in order", ends: []end{
			{"a0", remote.ActStop, true}, {"a1", remote.ActStop, true}, {"a0", remote.ActRestart, true}, {"solo", remote.ActRestart, true},
		}, wantIssued: []string{"a0:stop a1:stop solo:restart", "", "a0:restart", "a1:restart", ""}},
		{name: "a node's stop fails: no node starts, the host alone goes on", ends: []end{
			{"a1", remote.ActStop, false}, {"a0", remote.ActStop, true},
		}, wantIssued: []string{"a0:stop a1:stop solo:restart", "", ""}, wantSkip: "a0:restart a1:restart"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := NewSchedule(steps)
			var issued []string
			var skipped []int
			is, sk := s.Next()
			issued, skipped = append(issued, names(is)), append(skipped, sk...)
			for _, e := range c.ends {
				s.Ended(index(e.host, e.kind), e.ok)
				is, sk := s.Next()
				issued, skipped = append(issued, names(is)), append(skipped, sk...)
			}
			if got, want := strings.Join(issued, " | "), strings.Join(c.wantIssued, " | "); got != want {
				t.Errorf("issued %q, want %q", got, want)
			}
			if got := names(skipped); got != c.wantSkip {
				t.Errorf("skipped %q, want %q", got, c.wantSkip)
			}
		})
	}
}
