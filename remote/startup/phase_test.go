package startup

import (
	"slices"
	"testing"
)

// TestPhaseFacts pins every predicate of every phase, so that a new row in
// phaseTable or a changed column shows here as a decision.
func TestPhaseFacts(t *testing.T) {
	tests := []struct {
		p                                           Phase
		rank                                        int
		path, underway, up, steady, terminal, quiet bool
		attention                                   int
	}{
		{Stopped, 0, true, false, false, true, false, true, 2},
		{Starting, 1, true, true, true, false, false, false, 2},
		{Init, 2, true, true, true, false, false, false, 2},
		{Weights, 3, true, true, true, false, false, false, 2},
		{KVCache, 4, true, true, true, false, false, false, 2},
		{GraphCapture, 5, true, true, true, false, false, false, 2},
		{HTTP, 6, true, true, true, false, false, false, 2},
		{Warmup, 7, true, true, true, false, false, false, 2},
		{Serving, 8, true, false, true, true, true, true, 3},
		{Failed, -1, false, false, false, true, true, false, 0},
		{Restarting, -1, false, false, false, false, false, false, 2},
		{Stuck, -1, false, false, false, false, false, false, 1},
		{Unknown, -1, false, false, false, false, false, true, 1},
		{"", -1, false, false, false, false, false, true, 2},
		{"from-a-newer-writer", -1, false, false, false, false, false, false, 2},
	}
	for _, tt := range tests {
		t.Run(string(tt.p), func(t *testing.T) {
			p := tt.p
			got := []any{p.Rank(), p.Path(), p.Underway(), p.Up(), p.Steady(), p.Terminal(), p.Quiet(), p.Attention()}
			want := []any{tt.rank, tt.path, tt.underway, tt.up, tt.steady, tt.terminal, tt.quiet, tt.attention}
			names := []string{"Rank", "Path", "Underway", "Up", "Steady", "Terminal", "Quiet", "Attention"}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("%s() = %v, want %v", names[i], got[i], want[i])
				}
			}
		})
	}
}

// TestPhaseLists checks the path and the full list the table yields.
func TestPhaseLists(t *testing.T) {
	wantOrder := []Phase{Stopped, Starting, Init, Weights, KVCache, GraphCapture, HTTP, Warmup, Serving}
	if !slices.Equal(Order, wantOrder) {
		t.Errorf("Order = %v, want %v", Order, wantOrder)
	}
	wantAll := append(slices.Clone(wantOrder), Failed, Restarting, Stuck, Unknown)
	if got := All(); !slices.Equal(got, wantAll) {
		t.Errorf("All() = %v, want %v", got, wantAll)
	}
}
