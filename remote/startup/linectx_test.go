package startup

import (
	"strings"
	"testing"
)

// TestContinuation follows an error message over its lines: after a line
// ending in ":" the next is the real error (quoted), an indented line goes
// on with it, and anything else ends it.
func TestContinuation(t *testing.T) {
	const tp0, tp1 = "[2025-01-24 09:39:31 TP0] ", "[2025-01-24 09:39:31 TP1] "
	type step struct {
		line              string
		continues         bool
		quote, grew, ok   bool
		text              string // the joined text after it, where ok
		colonAfter, after bool   // after: still followed
	}
	for _, tc := range []struct {
		name  string
		first string
		steps []step
	}{
		{name: "the line after a colon is the real error", first: tp0 + "Failed running call_function <built-in>(*(FakeTensor(...)), **{}):",
			steps: []step{
				{line: tp0 + "Cannot access data pointer of Tensor", continues: true, quote: true, grew: true, ok: true,
					text: "Failed running call_function <built-in>(*(FakeTensor(...)), **{}): Cannot access data pointer of Tensor", after: true},
				{line: tp0 + "from user code:", continues: false, ok: false},
			}},
		{name: "indented lines go on with the message", first: tp0 + "RuntimeError: the kernel",
			steps: []step{
				{line: tp0 + "  failed to compile for sm_90", continues: true, grew: true, ok: true, text: "RuntimeError: the kernel failed to compile for sm_90", after: true},
				{line: tp0 + "  with nvcc 12.1:", continues: true, grew: true, ok: true, text: "RuntimeError: the kernel failed to compile for sm_90 with nvcc 12.1:", colonAfter: true, after: true},
				{line: tp0 + "ptxas fatal", continues: true, quote: true, grew: true, ok: true,
					text: "RuntimeError: the kernel failed to compile for sm_90 with nvcc 12.1: ptxas fatal", after: true},
			}},
		{name: "another process ends it", first: tp0 + "Scheduler hit an exception:",
			steps: []step{{line: tp1 + "CUDA out of memory", continues: false, ok: false}}},
		{name: "a line neither after a colon nor indented ends it", first: tp0 + "RuntimeError: failed",
			steps: []step{{line: tp0 + "Load weight begin.", continues: false, ok: false}}},
		{name: "pip's advice ends it", first: tp0 + "ERROR: No matching distribution:",
			steps: []step{{line: tp0 + "Possible solutions: upgrade pip", continues: true, ok: false}}},
		{name: "a blank line ends it", first: tp0 + "ValueError:",
			steps: []step{{line: tp0 + "   ", continues: false, ok: false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c continuation
			c.stop()
			if c.continues(tc.first, 1) {
				t.Fatal("continues with no message followed")
			}
			c.start(0, tc.first)
			for i, st := range tc.steps {
				if got := c.continues(st.line, 1); got != st.continues {
					t.Errorf("step %d: continues %v, want %v", i, got, st.continues)
				}
				quote, grew, ok := c.next(st.line)
				if quote != st.quote || grew != st.grew || ok != st.ok {
					t.Errorf("step %d: quote %v grew %v ok %v, want %v %v %v", i, quote, grew, ok, st.quote, st.grew, st.ok)
				}
				if ok && (c.text != st.text || c.colon != st.colonAfter) {
					t.Errorf("step %d: text %q (colon %v)\nwant        %q (colon %v)", i, c.text, c.colon, st.text, st.colonAfter)
				}
				if on := c.on(1); on != st.after {
					t.Errorf("step %d: still followed %v, want %v", i, on, st.after)
				}
			}
		})
	}
}

// TestContinuationBound: the joined text stops growing at maxMessage, and
// a candidate index past the ledger's follows nothing.
func TestContinuationBound(t *testing.T) {
	var c continuation
	c.start(0, "RuntimeError: "+strings.Repeat("x", maxMessage))
	if _, grew, ok := c.next("  more"); grew || !ok {
		t.Errorf("at the bound: grew %v ok %v, want false true", grew, ok)
	}
	if c.on(0) || c.continues("  more", 0) {
		t.Error("a message whose candidate is gone is still followed")
	}
}
