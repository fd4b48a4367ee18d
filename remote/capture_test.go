package remote

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/event"
)

// checkedCatalog is the demo's catalog with the reference check command.
func checkedCatalog(validateDeclaredSafe bool) kernels.Catalog {
	cat := kernels.DefaultCatalog()
	cat.Kernels[0].Check = "python3 -m kdtree_ext.capture_check --mode {mode}"
	cat.Kernels[0].Modes[1].CaptureSafe = validateDeclaredSafe
	return cat
}

const (
	graphsOn  = "/usr/local/bin/infersim --model-path /models/demo --port 30000"
	graphsOff = graphsOn + " --disable-cuda-graph"
)

func TestCheckPlan(t *testing.T) {
	host := func(name, mode, exec string) HostState {
		return HostState{Name: name, UnitState: event.Unit{ExecStart: exec, Environment: []string{"PYTHONPATH=/opt/kdtree/site", "KDTREE_MODE=" + mode}}}
	}
	setValidate := []Action{{Kind: ActSetMode, Kernel: "kdtree-verify", Mode: "validate"}, {Kind: ActRestart}}
	tests := []struct {
		name    string
		cat     kernels.Catalog
		hosts   []HostState
		actions []Action
		want    []string // host kernel=mode command
	}{
		{"mode in force", checkedCatalog(false), []HostState{host("gpu1", "on", graphsOn)}, nil,
			[]string{"gpu1 kdtree-verify=on python3 -m kdtree_ext.capture_check --mode 'on'"}},
		{"the mode the change sets", checkedCatalog(false), []HostState{host("gpu1", "on", graphsOn), host("gpu2", "off", graphsOn)}, setValidate,
			[]string{"gpu1 kdtree-verify=validate python3 -m kdtree_ext.capture_check --mode 'validate'", "gpu2 kdtree-verify=validate python3 -m kdtree_ext.capture_check --mode 'validate'"}},
		{"off loads no kernel", checkedCatalog(false), []HostState{host("gpu1", "off", graphsOn)}, nil, nil},
		{"graphs off: nothing to capture", checkedCatalog(false), []HostState{host("gpu1", "validate", graphsOff)}, nil, nil},
		{"no check command", kernels.DefaultCatalog(), []HostState{host("gpu1", "validate", graphsOn)}, nil, nil},
		{"unknown mode", checkedCatalog(false), []HostState{host("gpu1", "fast", graphsOn)}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, w := range CheckPlan(tt.hosts, tt.cat, tt.actions) {
				got = append(got, w.Host+" "+w.Kernel+"="+w.Mode+" "+w.Command)
				if !slices.Contains(w.Env, "KDTREE_MODE="+w.Mode) || !slices.Contains(w.Env, "PYTHONPATH=/opt/kdtree/site") {
					t.Errorf("%s: env %q lacks the mode or the unit's PYTHONPATH", w.Host, w.Env)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("CheckPlan = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestPreflightPlan: the lint looks at every kernel mode a restart
// loads with CUDA graphs on, a check command or not; CheckPlan keeps the
// ones with one.
func TestPreflightPlan(t *testing.T) {
	hosts := []HostState{
		{Name: "gpu1", UnitState: event.Unit{ExecStart: graphsOn, Environment: []string{"KDTREE_MODE=on"}}},
		{Name: "gpu2", UnitState: event.Unit{ExecStart: graphsOff, Environment: []string{"KDTREE_MODE=validate"}}},
		{Name: "gpu3", UnitState: event.Unit{ExecStart: graphsOn, Environment: []string{"KDTREE_MODE=off"}}},
	}
	setValidate := []Action{{Kind: ActSetMode, Kernel: "kdtree-verify", Mode: "validate"}}
	var got []string
	for _, w := range PreflightPlan(hosts, kernels.DefaultCatalog(), setValidate) {
		got = append(got, w.Host+" "+w.Kernel+"="+w.Mode+" "+w.Command)
	}
	if want := []string{"gpu1 kdtree-verify=validate ", "gpu3 kdtree-verify=validate "}; !slices.Equal(got, want) {
		t.Errorf("PreflightPlan = %q, want %q", got, want)
	}
	if w := CheckPlan(hosts, kernels.DefaultCatalog(), setValidate); len(w) != 0 {
		t.Errorf("CheckPlan without a check command = %+v", w)
	}
	if w := CheckPlan(hosts, checkedCatalog(false), setValidate); len(w) != 2 || w[0].Command == "" {
		t.Errorf("CheckPlan with one = %+v", w)
	}
}

func TestSafetyEvidenceMerge(t *testing.T) {
	hk := HostKernel{"gpu1", "kdtree-verify"}
	lint := SafetyEvidence{hk: {{Source: kernels.SourceLint, Safe: true}}}
	check := SafetyEvidence{hk: {{Source: kernels.SourceCheck}}, {"gpu2", "kdtree-verify"}: {{Source: kernels.SourceCheck, Safe: true}}}
	got := lint.Merge(check)
	if len(got) != 2 || len(got[hk]) != 2 || got[hk][0].Source != kernels.SourceLint || got[hk][1].Source != kernels.SourceCheck {
		t.Errorf("Merge = %+v", got)
	}
	if len(lint[hk]) != 1 {
		t.Errorf("Merge changed its receiver: %+v", lint)
	}
	var none SafetyEvidence
	if got := none.Merge(check); len(got) != 2 {
		t.Errorf("nil.Merge = %+v", got)
	}
}

// TestPreflightAllWith is the preflight's one decision: the declaration,
// the lint and the check, and who refused.
func TestPreflightAllWith(t *testing.T) {
	hk := HostKernel{"gpu1", "kdtree-verify"}
	failed := kernels.Evidence{Source: kernels.SourceCheck, Took: 7 * time.Second,
		Detail: "graph-capture-host-sync: torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing"}
	passed := kernels.Evidence{Source: kernels.SourceCheck, Safe: true, Took: 600 * time.Millisecond, Detail: "capture-check: PASS mode=on"}
	skipped := kernels.Evidence{Source: kernels.SourceCheck, Skipped: true, Detail: "skipped by --skip-check"}
	lintFound := kernels.Evidence{Source: kernels.SourceLint, Detail: "marshal.py:13 pack: .item()"}
	tests := []struct {
		name      string
		cat       kernels.Catalog
		mode      string
		exec      string
		ev        SafetyEvidence
		refusedBy []kernels.SafetySource // nil: goes ahead
		reason    string
	}{
		{"declared unsafe, no check", kernels.DefaultCatalog(), "validate", graphsOn, nil, []kernels.SafetySource{kernels.SourceDeclared}, "is not capture-safe"},
		{"declared unsafe, the check agrees", checkedCatalog(false), "validate", graphsOn, SafetyEvidence{hk: {failed}},
			[]kernels.SafetySource{kernels.SourceDeclared, kernels.SourceCheck}, "the check agrees: graph-capture-host-sync"},
		{"declared safe, the check refuses", checkedCatalog(true), "validate", graphsOn, SafetyEvidence{hk: {failed}},
			[]kernels.SafetySource{kernels.SourceCheck}, "declared capture-safe, but the check (7s) says not: graph-capture-host-sync"},
		{"declared safe, the lint refuses", checkedCatalog(true), "validate", graphsOn, SafetyEvidence{hk: {lintFound}},
			[]kernels.SafetySource{kernels.SourceLint}, "the lint says not: marshal.py:13"},
		{"declared safe, the check passes", checkedCatalog(false), "on", graphsOn, SafetyEvidence{hk: {passed}}, nil, ""},
		{"declared safe, the check skipped", checkedCatalog(true), "validate", graphsOn, SafetyEvidence{hk: {skipped}}, nil, ""},
		{"declared unsafe, the check skipped", checkedCatalog(false), "validate", graphsOn, SafetyEvidence{hk: {skipped}},
			[]kernels.SafetySource{kernels.SourceDeclared}, "is not capture-safe"},
		{"graphs off: a failed check is moot", checkedCatalog(true), "validate", graphsOff, SafetyEvidence{hk: {failed}}, nil, ""},
		{"another host's evidence", checkedCatalog(true), "validate", graphsOn, SafetyEvidence{{"gpu2", "kdtree-verify"}: {failed}}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hosts := []HostState{{Name: "gpu1", UnitState: event.Unit{ExecStart: tt.exec, Environment: []string{"KDTREE_MODE=" + tt.mode}}}}
			got := PreflightAllWith(hosts, tt.cat, []Action{{Kind: ActRestart}}, tt.ev)
			if tt.refusedBy == nil {
				if len(got) != 0 {
					t.Fatalf("refused: %v", got[0])
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("got %d refusals, want 1", len(got))
			}
			pe := got[0]
			if !slices.Equal(pe.RefusedBy, tt.refusedBy) || !strings.Contains(pe.Reason, tt.reason) || !slices.Equal(pe.SafeModes, []string{"on", "off"}) {
				t.Errorf("refusal = %+v, want by %v saying %q", pe, tt.refusedBy, tt.reason)
			}
		})
	}
}
