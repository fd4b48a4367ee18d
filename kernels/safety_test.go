package kernels

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPreflightWith(t *testing.T) {
	k, _ := DefaultCatalog().Kernel("kdtree-verify")
	const graphsOn = "/usr/bin/python3 -m sglang.launch_server --model m"
	const graphsOff = graphsOn + " --disable-cuda-graph"
	lintSync := Evidence{Source: SourceLint, Detail: "kdtree_verify/marshal.py:13 offsets.max().item()"}
	checkFail := Evidence{Source: SourceCheck, Detail: "graph-capture-host-sync: CUDA error: operation not permitted when stream is capturing", Took: 4200 * time.Millisecond}
	checkPass := Evidence{Source: SourceCheck, Safe: true, Detail: "captured and replayed", Took: 3 * time.Second}
	tests := []struct {
		name, mode, exec string
		ev               []Evidence
		ok               bool
		refused          []SafetySource
		reason           string
	}{
		{"declared safe, nothing else", "on", graphsOn, nil, true, nil, ""},
		{"declared safe, check passes", "on", graphsOn, []Evidence{checkPass}, true, nil, ""},
		{"declared safe, the lint finds a sync", "on", graphsOn, []Evidence{lintSync, checkPass}, false, []SafetySource{SourceLint},
			"kdtree-verify=on is declared capture-safe, but the lint says not: kdtree_verify/marshal.py:13 offsets.max().item(); refused before the restart"},
		{"declared safe, the check fails", "on", graphsOn, []Evidence{checkFail}, false, []SafetySource{SourceCheck},
			"kdtree-verify=on is declared capture-safe, but the check (4.2s) says not: graph-capture-host-sync: CUDA error: operation not permitted when stream is capturing; refused before the restart"},
		{"declared unsafe, all agree", "validate", graphsOn, []Evidence{lintSync, checkFail}, false, []SafetySource{SourceDeclared, SourceLint, SourceCheck},
			"; the lint agrees: kdtree_verify/marshal.py:13 offsets.max().item()"},
		{"declared unsafe, the check passes: the declaration stands", "validate", graphsOn, []Evidence{checkPass}, false, []SafetySource{SourceDeclared}, "is not capture-safe"},
		{"a skipped check counts neither way", "on", graphsOn, []Evidence{{Source: SourceCheck, Skipped: true}}, true, nil, ""},
		{"graphs off: nothing refuses", "validate", graphsOff, []Evidence{lintSync, checkFail}, true, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := PreflightWith(k, tt.mode, tt.exec, "", tt.ev)
			if res.OK != tt.ok || !slices.Equal(res.RefusedBy, tt.refused) || !strings.Contains(res.Reason, tt.reason) || tt.ok && res.Reason != "" {
				t.Errorf("PreflightWith = ok %v, refused by %q, reason %q", res.OK, res.RefusedByText(), res.Reason)
			}
			if len(res.Evidence) != len(tt.ev) {
				t.Errorf("evidence not kept: %v", res.Evidence)
			}
		})
	}
}
