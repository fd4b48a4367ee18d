package ui

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
)

// BenchmarkConsoleBusyBatch is the console's handling of one batch while
// units start at 1 000 and 10 000 hosts side by side: 20 hosts'
// snapshots taken anew (each a phase and progress step further), the
// batch's Update and the frame after it at 200×60; as a whole snapshot
// (every host looked at), as a Delta naming the hosts taken, and as a
// fleet with Options.Deltas hands it out (only the states of the hosts
// taken). With a Delta the cost should follow the hosts taken, not the
// fleet.
func BenchmarkConsoleBusyBatch(b *testing.B) {
	const changed = 20
	for _, n := range []int{1000, 10000} {
		for _, mode := range []string{"whole", "delta", "states"} {
			b.Run(fmt.Sprintf("hosts=%d/%s", n, mode), func(b *testing.B) {
				m, _ := newTestModel(b, 200, 60)
				first := fleetOf(n, "node%05d")
				m.Update(batchMsg(first))
				// Two batches in turn, each the hosts of the other with
				// 20 of them taken anew: against the other, 40 differ.
				var next [2]remote.Batch
				var taken []int
				for j := range next {
					hosts := slices.Clone(first.Hosts)
					for c := range changed {
						i := (c*97 + j*13) % n
						hosts[i].Startup.PhaseSince = hosts[i].Startup.PhaseSince.Add(time.Duration(j+1) * time.Second)
						hosts[i].Startup.Progress.Done = j + 1
						taken = append(taken, i)
					}
					next[j] = remote.Batch{Hosts: hosts}
				}
				slices.Sort(taken)
				for j := range next {
					switch mode {
					case "delta":
						next[j].Delta, next[j].Taken = true, slices.Clip(taken)
					case "states":
						states := make([]remote.HostState, len(taken))
						for k, i := range taken {
							states[k] = next[j].Hosts[i]
						}
						next[j] = remote.Batch{Delta: true, Taken: slices.Clip(taken), States: states}
					}
				}
				m.Update(batchMsg(next[1]))
				b.ReportAllocs()
				b.ResetTimer()
				i := 0
				for b.Loop() {
					m.Update(batchMsg(next[i%2]))
					_ = m.View()
					i++
				}
			})
		}
	}
}

// TestDeltaBatchDrawsAsAWholeSnapshot: a console fed batches as the fleet
// hands them out (a Delta naming the hosts taken anew; with
// Options.Deltas, only their states) draws every frame as one fed the
// same snapshots whole, through changes to what the
// header and table count (phases, a host key, an action under way, a
// kernel's hash, a unit's command line: a deployment).
func TestDeltaBatchDrawsAsAWholeSnapshot(t *testing.T) {
	whole, _ := newTestModel(t, 200, 30)
	delta, _ := newTestModel(t, 200, 30)
	states, _ := newTestModel(t, 200, 30)
	hosts := fleetOf(40, "node%02d").Hosts
	for _, m := range []*Model{whole, delta, states} {
		m.Update(batchMsg(remote.Batch{Hosts: hosts}))
	}
	// A whole batch's hosts are shared (the fleet's copy, the rollout's):
	// the states that come after are put in the console's own.
	shared, was := hosts, slices.Clone(hosts)
	steps := []struct {
		name   string
		taken  []int
		change func(h *remote.HostState)
	}{
		{"a phase", []int{3}, func(h *remote.HostState) { h.Startup.Phase = startup.Failed }},
		{"a host key", []int{5}, func(h *remote.HostState) { h.Conn.HostKeyRisk = 1 }},
		{"an action", []int{7, 9}, func(h *remote.HostState) {
			h.Action = &event.ActionResult{ID: 4, Name: "restart", Stage: event.ActionProgress, Percent: 40}
		}},
		{"the action done", []int{7}, func(h *remote.HostState) {
			h.Action = &event.ActionResult{ID: 4, Name: "restart", Stage: event.ActionDone}
		}},
		{"a kernel hash", []int{11}, func(h *remote.HostState) { h.KernelHashes = map[string]string{"kdtree-verify": "5e6f7a8b9c0d1e2f"} }},
		{"another", []int{12, 14}, func(h *remote.HostState) { h.KernelHashes = map[string]string{"kdtree-verify": "0123456789abcdef"} }},
		{"two nodes' command lines: a deployment", []int{2, 13}, func(h *remote.HostState) {
			h.UnitState.ExecStart = fmt.Sprintf("python3 -m sglang.launch_server --tp 16 --nccl-init-addr 172.16.5.82:20000 --nnodes 2 --node-rank %d", min(1, strings.Compare(h.Name, "node03")))
		}},
		{"the host key checked", []int{5}, func(h *remote.HostState) { h.Conn.HostKeyRisk = 0 }},
		{"nothing", nil, nil},
	}
	for _, s := range steps {
		hosts = slices.Clone(hosts)
		for _, i := range s.taken {
			s.change(&hosts[i])
		}
		whole.Update(batchMsg(remote.Batch{Hosts: hosts}))
		delta.Update(batchMsg(remote.Batch{Hosts: hosts, Delta: true, Taken: s.taken}))
		var taken []remote.HostState
		for _, i := range s.taken {
			taken = append(taken, hosts[i])
		}
		states.Update(batchMsg(remote.Batch{Delta: true, Taken: s.taken, States: taken}))
		for _, m := range []*Model{delta, states} {
			if w, d := whole.View().Content, m.View().Content; w != d {
				t.Fatalf("after %s, the Delta's frame differs:\n%s\nwant:\n%s", s.name, d, w)
			}
			if w, d := whole.table.sums, m.table.sums; w.counts != d.counts || len(w.risky) != len(d.risky) || w.busy != d.busy || w.history != d.history || w.stats != d.stats {
				t.Fatalf("after %s, sums %+v, want %+v", s.name, d, w)
			}
		}
	}
	if !reflect.DeepEqual(shared, was) {
		t.Error("the states were written into the whole batch's hosts")
	}
}
