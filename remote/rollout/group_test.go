package rollout

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/deployment"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
)

// llama is a two-node deployment: gpu2 its head, gpu3 rank 1.
var llama = deployment.Deployment{Name: "llama", Kind: deployment.KindSGLang, Size: 2,
	Nodes: []deployment.Node{{Host: "gpu2", Rank: 0}, {Host: "gpu3", Rank: 1}}}

func TestDeploymentCountsAsOneInABatch(t *testing.T) {
	for _, tc := range []struct {
		name    string
		hosts   []string
		batch   int
		want    map[string]int // host → batch
		order   []string       // the lanes' order
		wantStr string
	}{
		{"one at a time", []string{"gpu1", "gpu2", "gpu3", "gpu4"}, 1,
			map[string]int{"gpu1": 0, "gpu2": 1, "gpu3": 1, "gpu4": 2}, []string{"gpu1", "gpu2", "gpu3", "gpu4"},
			"restart, on gpu1, deployment llama (gpu2, gpu3), gpu4 one at a time, waiting for serving (a deployment counts as one: its nodes stopped together, started head first, serving together)"},
		{"two at a time", []string{"gpu1", "gpu2", "gpu3", "gpu4"}, 2,
			map[string]int{"gpu1": 0, "gpu2": 0, "gpu3": 0, "gpu4": 1}, []string{"gpu1", "gpu2", "gpu3", "gpu4"},
			"restart, on gpu1, deployment llama (gpu2, gpu3), gpu4 2 at a time, waiting for serving (a deployment counts as one: its nodes stopped together, started head first, serving together)"},
		{"nodes listed apart, the worker first", []string{"gpu3", "gpu1", "gpu2"}, 1,
			map[string]int{"gpu2": 0, "gpu3": 0, "gpu1": 1}, []string{"gpu2", "gpu3", "gpu1"},
			"restart, on deployment llama (gpu2, gpu3), gpu1 one at a time, waiting for serving (a deployment counts as one: its nodes stopped together, started head first, serving together)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFleet(t, "gpu1", "gpu2", "gpu3", "gpu4")
			r, err := New(Plan{Hosts: tc.hosts, Batch: tc.batch, Deployments: []deployment.Deployment{llama}}, f.cat)
			if err != nil {
				t.Fatal(err)
			}
			var order []string
			for _, l := range r.Lanes() {
				order = append(order, l.Host)
				if l.Batch != tc.want[l.Host] {
					t.Errorf("%s: batch %d, want %d", l.Host, l.Batch, tc.want[l.Host])
				}
				if dep := map[bool]string{true: "llama"}[l.Host == "gpu2" || l.Host == "gpu3"]; l.Deployment != dep {
					t.Errorf("%s: deployment %q, want %q", l.Host, l.Deployment, dep)
				}
			}
			if !slices.Equal(order, tc.order) || !slices.Equal(r.Plan().Hosts, tc.order) {
				t.Errorf("lanes %v, plan hosts %v, want %v", order, r.Plan().Hosts, tc.order)
			}
			if got := r.Plan().String(); got != tc.wantStr {
				t.Errorf("plan:\n got %s\nwant %s", got, tc.wantStr)
			}
		})
	}
}

func TestDeploymentMustBeWhole(t *testing.T) {
	f := newFleet(t, "gpu1", "gpu2", "gpu3")
	_, err := New(Plan{Hosts: []string{"gpu1", "gpu2"}, Deployments: []deployment.Deployment{llama}}, f.cat)
	if err == nil || !strings.Contains(err.Error(), "deployment llama") || !strings.Contains(err.Error(), "gpu3") {
		t.Fatalf("err %v, want one naming deployment llama and its missing gpu3", err)
	}
}

// issuedSince are the steps issued since from, as "host action".
func (f *fakeFleet) issuedSince(from int) []string {
	var out []string
	for _, s := range f.steps[from:] {
		out = append(out, s.Host+" "+strings.Fields(s.Action.String())[0])
	}
	return out
}

// deploymentFleet is a rollout of kdtree-verify=on over gpu1 and llama,
// one at a time, with gpu1 already serving its new run.
func deploymentFleet(t *testing.T) *fakeFleet {
	t.Helper()
	f := newFleet(t, "gpu1", "gpu2", "gpu3")
	f.plan(Plan{Hosts: []string{"gpu1", "gpu2", "gpu3"}, Mode: &ModeChange{Kernel: "kdtree-verify", Mode: "on"},
		Deployments: []deployment.Deployment{llama}})
	f.through("gpu1", "gpu1-inv1")
	return f
}

// restartDeployment takes llama through its mode change, stop and
// ranked restart, checking the order of the steps.
func (f *fakeFleet) restartDeployment() {
	t := f.t
	t.Helper()
	want := [][]string{
		{"gpu2 mode", "gpu3 mode"}, // every node's mode, together
		{"gpu2 stop", "gpu3 stop"}, // every node stopped
		{"gpu2 restart"},           // the head started first
		{"gpu3 restart"},           // then the worker
	}
	from := slices.IndexFunc(f.steps, func(s Step) bool { return s.Host == "gpu2" })
	for i, w := range want {
		if got := f.issuedSince(from); !slices.Equal(got, w) {
			t.Fatalf("stage %d: issued %v, want %v", i, got, w)
		}
		from = len(f.steps)
		for _, s := range w {
			f.done(strings.Fields(s)[0])
		}
	}
}

func TestDeploymentRestartsHeadFirstAndServesTogether(t *testing.T) {
	f := deploymentFleet(t)
	f.restartDeployment()
	f.run("gpu3", "gpu3-inv1", startup.Init, nil) // the worker waits for its head
	f.run("gpu2", "gpu2-inv1", startup.Weights, nil)
	for _, l := range f.r.Lanes()[1:] {
		if l.Stage != StageStarting {
			t.Fatalf("%s: stage %s before the head serves, want starting", l.Host, l.Stage)
		}
	}
	f.run("gpu2", "gpu2-inv1", startup.Serving, nil) // only the head says it serves
	for _, l := range f.r.Lanes() {
		if l.Stage != StageServing {
			t.Errorf("%s: stage %s, want serving", l.Host, l.Stage)
		}
	}
	if s := f.r.State(); s.Status != Done {
		t.Fatalf("state %+v, want done", s)
	}
}

func TestDeploymentGateBlamesTheNodeThatFailedFirst(t *testing.T) {
	for _, tc := range []struct {
		name         string
		first, other string // the node whose log failed first, and its peer
	}{
		{"the worker died first", "gpu3", "gpu2"},
		{"the head died first", "gpu2", "gpu3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := deploymentFleet(t)
			f.restartDeployment()
			f.run("gpu2", "gpu2-inv1", startup.Weights, nil)
			f.run("gpu3", "gpu3-inv1", startup.Init, nil)
			// Both seen failed in one batch: the journals' times decide,
			// the peer's symptom being a later line.
			for host, d := range map[string]*startup.Diagnosis{
				tc.first: {Cause: "gpu-oom", Summary: "out of memory", Time: f.now.Add(-5 * time.Second)},
				tc.other: {Cause: "peer-crashed", Summary: "peer gone", Time: f.now},
			} {
				h := f.host(host)
				h.Startup.Phase, h.Startup.Diag = startup.Failed, d
				h.UnitState.ActiveState, h.UnitState.SubState = "failed", "failed"
			}
			f.observe()
			s := f.r.State()
			if s.Status != Halted || s.Host != tc.first || s.Diag == nil || s.Diag.Cause != "gpu-oom" {
				t.Fatalf("state %+v, want halted on %s (gpu-oom), the node that failed first", s, tc.first)
			}
			rank := map[string]string{"gpu2": "0", "gpu3": "1"}[tc.first]
			for _, l := range f.r.Lanes()[1:] {
				if l.Stage != StageFailed {
					t.Errorf("%s: %s, want failed", l.Host, l.Stage)
				}
				if want := "peer lost (node " + rank + ", " + tc.first + ", failed first)"; l.Host == tc.other && l.Err != want {
					t.Errorf("%s: err %q, want %q", l.Host, l.Err, want)
				}
			}
			if l := f.r.Lanes()[0]; l.Stage != StageServing {
				t.Errorf("gpu1 %s, want serving (it went before)", l.Stage)
			}
		})
	}
}

func TestDeploymentRollsBackAsAWhole(t *testing.T) {
	f := deploymentFleet(t)
	f.restartDeployment()
	f.run("gpu2", "gpu2-inv1", startup.Failed, &startup.Diagnosis{Cause: "gpu-oom", Time: f.now})
	f.run("gpu3", "gpu3-inv1", startup.Failed, &startup.Diagnosis{Cause: "peer-crashed", Time: f.now})
	if s := f.r.State(); s.Status != Halted || s.Host != "gpu2" {
		t.Fatalf("state %+v, want halted on the head", s)
	}
	steps, err := f.r.Rollback("gpu3") // a worker's rollback is its deployment's
	if err != nil {
		t.Fatal(err)
	}
	from := len(f.steps)
	f.issue(steps)
	want := [][]string{{"gpu2 undo", "gpu3 undo"}, {"gpu2 stop", "gpu3 stop"}, {"gpu2 restart"}, {"gpu3 restart"}}
	for i, w := range want {
		if got := f.issuedSince(from); !slices.Equal(got, w) {
			t.Fatalf("rollback stage %d: issued %v, want %v", i, got, w)
		}
		from = len(f.steps)
		for _, s := range w {
			f.done(strings.Fields(s)[0])
		}
	}
	if _, err := f.r.Rollback("gpu2"); err == nil {
		t.Error("a second rollback of the deployment was accepted")
	}
	f.run("gpu2", "gpu2-inv2", startup.Serving, nil)
	f.run("gpu3", "gpu3-inv2", startup.Starting, nil)
	for _, l := range f.r.Lanes()[1:] {
		if l.Stage != StageRolledBack {
			t.Errorf("%s: %s, want rolled-back", l.Host, l.Stage)
		}
	}
	if !f.r.Settled() {
		t.Error("not settled after the deployment rolled back")
	}
}

func TestDeploymentStepFailureFailsItsPeers(t *testing.T) {
	f := deploymentFleet(t)
	f.done("gpu2") // gpu2's mode set; gpu3's fails
	f.observe(f.action("gpu3", event.ActionFailed, "drop-in: permission denied"))
	s := f.r.State()
	if s.Status != Halted || s.Host != "gpu3" {
		t.Fatalf("state %+v, want halted on gpu3", s)
	}
	if got := f.issuedSince(len(f.steps) - 1); !slices.Equal(got, []string{"gpu3 mode"}) {
		t.Errorf("last step %v: nothing more must be issued (no stop, no restart)", got)
	}
	if l := f.r.Lanes()[1]; l.Stage != StageHalted {
		t.Errorf("head %s, want halted (before its restart)", l.Stage)
	}
	if _, err := f.r.Rollback("gpu2"); err != nil {
		t.Errorf("rollback of the deployment after a failed mode change: %v", err)
	}
}
